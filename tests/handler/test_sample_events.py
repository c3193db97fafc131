"""Every sample event in events/ replayed through lambda_handler, as `sam local invoke -e events/X.json` would.

Each ``X.expected.json`` is exactly what the handler returns for ``X.json`` (for a failing direct invocation,
Lambda's ``{"errorType", "errorMessage"}``), so it can be compared with `chrf-components invoke` or a real
`sam local invoke` as it is.
"""

import json

import lambda_handlers
import pytest
from http_events import EVENTS
from jsonschema import Draft202012Validator
from naive_chrf import naive_score
from support import CONTRACT

SAMPLES = sorted(path for path in EVENTS.glob("*.json") if not path.name.endswith(".expected.json"))
OUTPUT_VALIDATOR = Draft202012Validator(CONTRACT["output_schema"])


def expected_for(path):
    return json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))


def test_every_sample_event_has_an_expected_response_beside_it():
    assert len(SAMPLES) >= 8
    for path in SAMPLES:
        assert path.with_name(path.stem + ".expected.json").exists(), path.name


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_sample_event_yields_exactly_its_stored_response(handler, path):
    event = json.loads(path.read_text(encoding="utf-8"))
    assert lambda_handlers.invoke(handler, event) == expected_for(path)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_stored_responses_are_lambda_responses(path):
    expected = expected_for(path)
    if "statusCode" in expected:
        assert isinstance(expected["body"], str) and expected["isBase64Encoded"] is False
        assert ("headers" in expected) != ("multiValueHeaders" in expected)
    elif "errorType" in expected:
        assert set(expected) == {"errorType", "errorMessage"} and isinstance(expected["errorMessage"], str)
    else:
        OUTPUT_VALIDATOR.validate(expected)


SCORED = [path for path in SAMPLES if expected_for(path).get("statusCode") == 200
          or not ({"statusCode", "errorType"} & set(expected_for(path)))]


@pytest.mark.parametrize("path", SCORED, ids=lambda p: p.stem)
def test_stored_outputs_agree_with_the_naive_implementation(path):
    event, expected = json.loads(path.read_text(encoding="utf-8")), expected_for(path)
    if "statusCode" in expected:
        from http_adapter import parse_body

        request, output = parse_body(event), json.loads(expected["body"])
    else:
        request, output = event, expected
    OUTPUT_VALIDATOR.validate(output)
    assert output == naive_score(request)


def test_the_step_functions_sample_is_the_payload_a_lambda_invoke_task_sends():
    # arn:aws:states:::lambda:invoke with "Payload.$": "$.request" hands the function the request itself.
    event = json.loads((EVENTS / "stepfunctions-task.json").read_text(encoding="utf-8"))
    assert set(event) <= {"hypotheses", "references", "char_order", "word_order", "beta", "lowercase",
                          "include_whitespace", "averaging"}
