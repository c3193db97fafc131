"""Every sample event in events/ replayed through lambda_handler, as `sam local invoke -e events/X.json` would."""

import json

import pytest
from chrf_components_cli import local_lambda
from http_events import EVENTS
from jsonschema import Draft202012Validator
from naive_chrf import naive_score
from support import CONTRACT

SAMPLES = sorted(path for path in EVENTS.glob("*.json") if not path.name.endswith(".expected.json"))
OUTPUT_VALIDATOR = Draft202012Validator(CONTRACT["output_schema"])


def expected_for(path):
    return json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))


SUCCESSES = [p for p in SAMPLES if expected_for(p).get("statusCode") == 200 or "output" in expected_for(p)]


def test_every_sample_event_has_an_expected_response_beside_it():
    assert len(SAMPLES) >= 8
    for path in SAMPLES:
        assert path.with_name(path.stem + ".expected.json").exists(), path.name


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_sample_event_yields_its_stored_expected_response(handler, path):
    event = json.loads(path.read_text(encoding="utf-8"))
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))
    assert local_lambda.comparable(local_lambda.invoke(handler, event)) == expected


@pytest.mark.parametrize("path", SUCCESSES, ids=lambda p: p.stem)
def test_stored_successful_responses_agree_with_the_naive_implementation(path):
    event, expected = json.loads(path.read_text(encoding="utf-8")), expected_for(path)
    if "output" in expected:
        request, output = event, expected["output"]
    else:
        from app import parse_body

        request, output = parse_body(event), expected["body"]
    OUTPUT_VALIDATOR.validate(output)
    assert output == naive_score(request)
