"""Unit tests of evaluation.asl.json's states with TestState and mocks, as AWS recommends testing a state machine
(https://docs.aws.amazon.com/step-functions/latest/dg/test-state-isolation.html): each state on an input, its
function's answer or error mocked, without deploying or running the whole machine.

Run them against `chrf-components serve` (AWS_ENDPOINT_URL=http://127.0.0.1:3000), or against AWS with a role
(EVALUATION_ROLE_ARN). botocore sends TestState to the host ``sync-<endpoint>``; for a local endpoint,
AWS_DISABLE_HOST_PREFIX_INJECTION=true (set below) keeps the endpoint as given.
"""

import json
import os
import pathlib

import boto3
import pytest
from botocore.config import Config

DEFINITION = (pathlib.Path(__file__).parent / "evaluation.asl.json").read_text(encoding="utf-8")
ROLE = os.environ.get("EVALUATION_ROLE_ARN", "arn:aws:iam::123456789012:role/local")
SCORES = [{"system": "baseline", "score": "61.234567", "fraction": "1/1"},
          {"system": "candidate", "score": "58.100000", "fraction": "1/1"}]


@pytest.fixture(scope="module")
def sfn():
    if "AWS_ENDPOINT_URL" not in os.environ and "EVALUATION_ROLE_ARN" not in os.environ:
        pytest.skip("set AWS_ENDPOINT_URL to a running `chrf-components serve` (or EVALUATION_ROLE_ARN for AWS)")
    local = "AWS_ENDPOINT_URL" in os.environ
    session = boto3.session.Session()
    return session.client("stepfunctions", region_name=session.region_name or "us-east-1",
                          config=Config(inject_host_prefix=not local))


def state_answer(sfn, state, data, **options):
    return sfn.test_state(definition=DEFINITION, stateName=state, roleArn=ROLE, input=json.dumps(data), **options)


def test_score_systems_puts_the_branches_scores_under_scores(sfn):
    answer = state_answer(sfn, "ScoreSystems", {"word_order": 2}, mock={"result": json.dumps(SCORES)},
                        inspectionLevel="DEBUG")
    assert answer["status"] == "SUCCEEDED" and answer["nextState"] == "PickBest"
    assert json.loads(answer["output"]) == {"word_order": 2, "scores": SCORES}
    assert json.loads(answer["inspectionData"]["afterResultPath"])["scores"] == SCORES


def test_an_invalid_input_is_caught_and_goes_to_invalid_input(sfn):
    answer = state_answer(sfn, "ScoreSystems", {}, mock={"errorOutput": {"error": "InvalidInputError",
                                                                       "cause": "references: must not be empty"}})
    assert (answer["status"], answer["nextState"]) == ("CAUGHT_ERROR", "InvalidInput")
    assert json.loads(answer["output"])["error"]["Cause"] == "references: must not be empty"


@pytest.mark.parametrize(("retries", "status"), [(0, "RETRIABLE"), (2, "RETRIABLE"), (3, "FAILED")])
def test_a_branch_retries_throttling_three_times_then_fails(sfn, retries, status):
    """The retrier is the branch's task's: tested alone, as its own definition."""
    task = json.loads(DEFINITION)["States"]["ScoreSystems"]["Branches"][0]["States"]["ScoreBaseline"]
    data = {"systems": {"baseline": ["a cat"]}, "references": ["the cat"], "word_order": 2}
    answer = sfn.test_state(definition=json.dumps(task), roleArn=ROLE, input=json.dumps(data),
                            mock={"errorOutput": {"error": "Lambda.TooManyRequestsException", "cause": "Rate"}},
                            stateConfiguration={"retrierRetryCount": retries})
    assert answer["status"] == status and answer["error"] == "Lambda.TooManyRequestsException"


def test_a_branch_keeps_the_system_and_its_score_of_the_functions_answer(sfn):
    task = json.loads(DEFINITION)["States"]["ScoreSystems"]["Branches"][1]["States"]["ScoreCandidate"]
    answer = sfn.test_state(definition=json.dumps(task), roleArn=ROLE, input=json.dumps(
        {"systems": {"candidate": ["a cat"]}, "references": ["the cat"], "word_order": 2}),
        mock={"result": json.dumps({"StatusCode": 200, "Payload": {"score": "58.100000", "score_fraction": "1/1"}})},
        inspectionLevel="DEBUG")
    assert json.loads(answer["output"]) == SCORES[1]
    assert json.loads(answer["inspectionData"]["afterParameters"])["Payload"] == \
        {"hypotheses": ["a cat"], "references": ["the cat"], "word_order": 2}


def test_pick_best_assigns_the_better_system_and_passes_the_scores_on(sfn):
    answer = state_answer(sfn, "PickBest", {"scores": SCORES}, inspectionLevel="DEBUG")
    assert answer["status"] == "SUCCEEDED" and answer["nextState"] == "Settle"
    assert json.loads(answer["output"]) == {"scores": SCORES}
    assert json.loads(answer["inspectionData"]["variables"])["best"]["system"] == "baseline"


def test_report_says_which_system_is_better_from_the_variable_and_the_scores(sfn):
    answer = state_answer(sfn, "Report", {"scores": SCORES}, variables=json.dumps({"best": SCORES[0]}))
    assert answer["status"] == "SUCCEEDED" and "nextState" not in answer
    assert json.loads(answer["output"])["summary"] == \
        "baseline is better: chrF++ 61.234567 (baseline 61.234567, candidate 58.100000)"


def test_settle_waits_and_passes_its_input_on(sfn):
    answer = state_answer(sfn, "Settle", {"scores": SCORES})
    assert (answer["status"], answer["nextState"], json.loads(answer["output"])) == \
        ("SUCCEEDED", "Report", {"scores": SCORES})
