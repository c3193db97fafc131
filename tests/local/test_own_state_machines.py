"""The engineer's own Step Functions code against `serve`: state machines created through the API
(CreateStateMachine, UpdateStateMachine, DeleteStateMachine), their executions' histories (GetExecutionHistory), and
TestState with mocks, through boto3, the AWS CLI and the example of examples/evaluation-pipeline, every answer
checked against botocore's service model.

On 652250a CreateStateMachine, TestState and GetExecutionHistory answered UnknownOperationException.

AWS's pages: https://docs.aws.amazon.com/step-functions/latest/apireference/API_CreateStateMachine.html
(InvalidDefinition, StateMachineAlreadyExists, idempotent with the same definition and role),
.../API_UpdateStateMachine.html, .../API_DeleteStateMachine.html, .../API_GetExecutionHistory.html (reverseOrder,
includeExecutionData, maxResults and nextToken), .../API_TestState.html and
https://docs.aws.amazon.com/step-functions/latest/dg/test-state-isolation.html (mock, inspectionLevel,
stateConfiguration, status and nextState), .../API_ListExecutions.html (mapRunArn).
"""

import json
import os
import subprocess
import sys
import time

import boto3
import pytest
from botocore.exceptions import ClientError
from service_model import checking
from support import ROOT
from support import finished_execution as finished

EXAMPLE = ROOT / "examples" / "evaluation-pipeline"
ROLE = "arn:aws:iam::123456789012:role/local"
REFERENCES = (ROOT / "tests/data/popovic/example.ref.en").read_text(encoding="utf-8").splitlines()
BASELINE = (ROOT / "tests/data/popovic/example.hyp.en").read_text(encoding="utf-8").splitlines()
CANDIDATE = (ROOT / "examples/lowercased.hyp.en").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def sfn(endpoint):
    """A client given the endpoint by AWS_ENDPOINT_URL alone, as the engineer's own code is; every answer it reads
    is checked against the model (``sfn.problems``, asserted empty at the end of the module)."""
    saved = {key: os.environ.get(key) for key in ("AWS_ENDPOINT_URL", "AWS_DISABLE_HOST_PREFIX_INJECTION")}
    os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_DISABLE_HOST_PREFIX_INJECTION="true")
    try:
        client = boto3.session.Session(aws_access_key_id="any", aws_secret_access_key="any",
                                       region_name="us-east-1").client("stepfunctions")
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    client.problems = checking(client)
    yield client
    assert client.problems == [] and client.problems.checked > 20


def error_of(call, **arguments):
    with pytest.raises(ClientError) as caught:
        call(**arguments)
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def test_an_own_definition_runs_to_the_two_systems_scores_and_its_history_tells_each_step(sfn):
    from chrf_core.service import score

    definition = (EXAMPLE / "evaluation.asl.json").read_text(encoding="utf-8")
    arn = sfn.create_state_machine(name="evaluation", definition=definition, roleArn=ROLE)["stateMachineArn"]
    started = sfn.start_execution(stateMachineArn=arn, input=json.dumps({
        "systems": {"baseline": BASELINE, "candidate": CANDIDATE}, "references": REFERENCES, "word_order": 2}))
    described = finished(sfn, started["executionArn"])
    assert described["status"] == "SUCCEEDED", described
    result = json.loads(described["output"])
    expected = {system: score({"hypotheses": hypotheses, "references": REFERENCES, "word_order": 2})["score"]
                for system, hypotheses in (("baseline", BASELINE), ("candidate", CANDIDATE))}
    assert {entry["system"]: entry["score"] for entry in result["scores"]} == expected
    assert result["best"] == max(expected, key=lambda system: float(expected[system]))

    events = sfn.get_execution_history(executionArn=started["executionArn"])["events"]
    kinds = [event["type"] for event in events]
    assert kinds[0] == "ExecutionStarted" and kinds[-1] == "ExecutionSucceeded"
    assert [event["id"] for event in events] == list(range(1, len(events) + 1))
    assert {"WaitStateEntered", "WaitStateExited", "ParallelStateStarted", "TaskScheduled", "TaskSucceeded"} \
        <= set(kinds)
    assert kinds.count("TaskSucceeded") == 2
    exited = next(event for event in events if event["type"] == "PassStateExited"
                  and event["stateExitedEventDetails"]["name"] == "PickBest")
    assert json.loads(exited["stateExitedEventDetails"]["assignedVariables"]["best"])["system"] == result["best"]

    newest = sfn.get_execution_history(executionArn=started["executionArn"], reverseOrder=True, maxResults=3,
                                       includeExecutionData=False)
    assert [event["type"] for event in newest["events"]] == kinds[::-1][:3] and newest["nextToken"]
    assert "output" not in newest["events"][0]["executionSucceededEventDetails"]
    rest = sfn.get_execution_history(executionArn=started["executionArn"], reverseOrder=True,
                                     nextToken=newest["nextToken"])
    assert len(newest["events"]) + len(rest["events"]) == len(events)


def test_the_examples_script_runs_as_the_readme_shows_it(endpoint):
    environment = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "any",
                   "AWS_SECRET_ACCESS_KEY": "any", "AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": os.devnull,
                   "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    done = subprocess.run([sys.executable, str(EXAMPLE / "run_evaluation.py"), "tests/data/popovic/example.hyp.en",
                           "examples/lowercased.hyp.en", "tests/data/popovic/example.ref.en",
                           "--name", "readme-evaluation"], capture_output=True, text=True, env=environment,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    summary, path = done.stdout.splitlines()
    assert summary.startswith("baseline is better: chrF++ ")
    assert path == "ParallelStateEntered -> TaskStateEntered -> TaskStateEntered -> PassStateEntered -> " \
                   "WaitStateEntered -> PassStateEntered"


def test_the_examples_testState_unit_tests_run_as_written(endpoint):
    environment = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "any",
                   "AWS_SECRET_ACCESS_KEY": "any", "AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": os.devnull,
                   "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "examples/evaluation-pipeline"],
                          capture_output=True, text=True, env=environment, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "9 passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-500:]


def template_machine(sfn):
    (machine,) = [machine for machine in sfn.list_state_machines()["stateMachines"]
                  if machine["name"] == "local-corpus-pipeline"]
    return sfn.describe_state_machine(stateMachineArn=machine["stateMachineArn"])["definition"]


def test_test_state_on_the_templates_merge_report_gives_the_mocked_payload_or_catches_the_mocked_error(sfn):
    definition = template_machine(sfn)
    report = {"score": "61.234567", "segment_count": 3}
    answer = sfn.test_state(definition=definition, stateName="MergeReport", input=json.dumps({"run": 1}),
                            mock={"result": json.dumps({"Payload": report, "StatusCode": 200})},
                            inspectionLevel="DEBUG")
    assert (answer["status"], answer["nextState"], json.loads(answer["output"])) == \
        ("SUCCEEDED", "ReportWritten", report)
    assert json.loads(answer["inspectionData"]["afterParameters"])["Payload"] == {"run": 1}
    caught = sfn.test_state(definition=definition, stateName="MergeReport", input=json.dumps({"run": 1}),
                            mock={"errorOutput": {"error": "InconsistentResultsError", "cause": "record 2"}})
    assert (caught["status"], caught["nextState"], caught["error"]) == \
        ("CAUGHT_ERROR", "Failed", "InconsistentResultsError")
    assert json.loads(caught["output"]) == {"run": 1, "error": {"Error": "InconsistentResultsError",
                                                               "Cause": "record 2"}}


def test_test_state_without_a_mock_calls_the_templates_function_and_shows_the_call_at_trace(sfn):
    state = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
             "Parameters": {"FunctionName": "ChrfComponentsFunction", "Payload.$": "$"},
             "OutputPath": "$.Payload.score", "Next": "Somewhere"}
    answer = sfn.test_state(definition=json.dumps(state), input=json.dumps({"hypotheses": ["aa"],
                                                                            "references": ["ab"], "beta": 3}),
                            inspectionLevel="TRACE")
    assert (answer["status"], answer["nextState"], json.loads(answer["output"])) == \
        ("SUCCEEDED", "Somewhere", "25.000000")
    assert answer["inspectionData"]["request"]["url"].endswith("/functions/ChrfComponentsFunction/invocations")
    assert json.loads(answer["inspectionData"]["response"]["body"])["Payload"]["score"] == "25.000000"


@pytest.mark.parametrize(("options", "code", "words"), [
    ({"definition": json.dumps({"Type": "Parallel", "Branches": [{"StartAt": "P", "States": {
        "P": {"Type": "Pass", "End": True}}}]})}, "ValidationException", "tested with a mock"),
    ({"definition": json.dumps({"Type": "Pass"}), "mock": {"result": "{}"}}, "ValidationException",
     "calls nothing to mock"),
    ({"definition": json.dumps({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                                "Parameters": {"FunctionName": "F", "Payload": {}}}),
      "mock": {"result": json.dumps({"Bogus": 1})}}, "ValidationException", "Bogus is not a field"),
    ({"definition": json.dumps({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                                "Parameters": {"FunctionName": "F", "Payload": {}}}),
      "mock": {"result": json.dumps({"StatusCode": "200"})}}, "ValidationException", "StatusCode must be an integer"),
    ({"definition": json.dumps({"Type": "Nope"})}, "InvalidDefinition", "the state type Nope"),
    ({"definition": "{}", "stateName": "X"}, "InvalidDefinition", "a machine without States"),
    ({"definition": json.dumps({"Type": "Pass"}), "inspectionLevel": "ALL"}, "ValidationException",
     "inspectionLevel"),
])
def test_test_state_refuses_what_aws_refuses_naming_the_field(sfn, options, code, words):
    found, message = error_of(sfn.test_state, **options)
    assert found == code and words in message, message


def test_field_validation_modes_strict_present_and_none(sfn):
    state = json.dumps({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                        "Parameters": {"FunctionName": "F", "Payload": {}}, "End": True})
    for mode, result, status in (("PRESENT", {"Extra": 1, "StatusCode": 200}, "SUCCEEDED"),
                                 ("NONE", {"StatusCode": "any"}, "SUCCEEDED")):
        answer = sfn.test_state(definition=state, mock={"result": json.dumps(result), "fieldValidationMode": mode})
        assert answer["status"] == status
    code, message = error_of(sfn.test_state, definition=state, mock={"result": json.dumps({"StatusCode": "x"}),
                                                                      "fieldValidationMode": "PRESENT"})
    assert code == "ValidationException" and "StatusCode" in message


def test_a_map_is_tested_with_its_item_reader_data_and_tolerated_failures(sfn):
    definition = template_machine(sfn)
    lines = "\n".join(json.dumps({"hypothesis": f"h{k}", "reference": f"r{k}"}) for k in range(3))
    configuration = {"mapItemReaderData": lines, "mapIterationFailureCount": 0}
    answer = sfn.test_state(definition=definition, stateName="ScoreSegments", inspectionLevel="DEBUG",
                            input=json.dumps({"input": {"bucket": "b", "key": "k"}, "settings": {}}),
                            mock={"result": json.dumps({"MapRunArn": "arn", "ResultWriterDetails": {}})},
                            stateConfiguration=configuration)
    assert answer["status"] == "SUCCEEDED", answer
    batches = json.loads(answer["inspectionData"]["afterItemBatcher"])
    assert sum(len(batch["Items"]) for batch in batches) == 3


def test_own_machines_are_checked_when_created_and_answer_as_aws_does(sfn):
    state = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": 1, "End": True}}}
    code, message = error_of(sfn.create_state_machine, name="bad", roleArn=ROLE, definition=json.dumps(
        {"StartAt": "P", "States": {"P": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                                          "End": True}}}))
    assert code == "InvalidDefinition" and "state P" in message and "sqs:sendMessage" in message
    assert error_of(sfn.create_state_machine, name="bad", roleArn=ROLE, definition="{")[0] == "InvalidDefinition"
    assert error_of(sfn.create_state_machine, name="bad", roleArn="role", definition=json.dumps(state))[0] == \
        "InvalidArn"
    assert error_of(sfn.create_state_machine, name="a b", roleArn=ROLE, definition=json.dumps(state))[0] == \
        "InvalidName"
    first = sfn.create_state_machine(name="mine", roleArn=ROLE, definition=json.dumps(state))
    again = sfn.create_state_machine(name="mine", roleArn=ROLE, definition=json.dumps(state))
    assert again["stateMachineArn"] == first["stateMachineArn"]  # the same definition and role: the same machine
    changed = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": 2, "End": True}}}
    assert error_of(sfn.create_state_machine, name="mine", roleArn=ROLE, definition=json.dumps(changed))[0] == \
        "StateMachineAlreadyExists"
    arn = first["stateMachineArn"]

    def run():
        return json.loads(finished(sfn, sfn.start_execution(stateMachineArn=arn)["executionArn"])["output"])

    assert run() == 1
    sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(changed))
    assert json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"]) == changed
    assert run() == 2
    assert error_of(sfn.update_state_machine, stateMachineArn=arn)[0] == "MissingRequiredParameter"
    assert sfn.validate_state_machine_definition(definition=json.dumps(changed))["result"] == "OK"
    assert sfn.validate_state_machine_definition(definition="{}")["result"] == "FAIL"
    sfn.delete_state_machine(stateMachineArn=arn)
    assert error_of(sfn.describe_state_machine, stateMachineArn=arn)[0] == "StateMachineDoesNotExist"


def test_the_aws_cli_creates_runs_reads_the_history_and_tests_a_state(endpoint, tmp_path):
    aws = [os.path.join(os.path.dirname(sys.executable), "aws"), "--region", "us-east-1", "--output", "json"]
    environment = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "any",
                   "AWS_SECRET_ACCESS_KEY": "any", "AWS_CONFIG_FILE": os.devnull,
                   "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_DISABLE_HOST_PREFIX_INJECTION": "true"}
    environment.pop("AWS_PROFILE", None)

    def run(*arguments):
        done = subprocess.run([*aws, *arguments], capture_output=True, text=True, env=environment, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    definition = tmp_path / "machine.json"
    definition.write_text(json.dumps({"StartAt": "Say", "States": {"Say": {
        "Type": "Pass", "Parameters": {"line.$": "States.Format('hello {}', $.name)"}, "End": True}}}))
    arn = run("stepfunctions", "create-state-machine", "--name", "cli", "--role-arn", ROLE,
              "--definition", f"file://{definition}")["stateMachineArn"]
    execution = run("stepfunctions", "start-execution", "--state-machine-arn", arn, "--input",
                    json.dumps({"name": "cli"}))["executionArn"]
    deadline = time.monotonic() + 60
    while (described := run("stepfunctions", "describe-execution", "--execution-arn", execution))["status"] == \
            "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert json.loads(described["output"]) == {"line": "hello cli"}
    history = run("stepfunctions", "get-execution-history", "--execution-arn", execution)["events"]
    assert [event["type"] for event in history] == ["ExecutionStarted", "PassStateEntered", "PassStateExited",
                                                    "ExecutionSucceeded"]
    tested = run("stepfunctions", "test-state", "--definition", json.dumps(
        {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input.n * 2 %}", "Next": "After"}),
        "--input", json.dumps({"n": 21}))
    assert (tested["status"], tested["nextState"], tested["output"]) == ("SUCCEEDED", "After", "42")


def test_the_model_check_finds_a_member_the_model_lacks_a_wrong_type_and_a_missing_required_member():
    import botocore.session
    from service_model import problems

    shape = botocore.session.get_session().get_service_model("stepfunctions").operation_model(
        "CreateStateMachine").output_shape
    assert problems(shape, {"stateMachineArn": "a", "creationDate": 1.5}) == []
    assert problems(shape, {"stateMachineArn": 1, "bogus": 2}) == [
        ".stateMachineArn: int, not a string", ".bogus: not a member of CreateStateMachineOutput",
        ".creationDate: required, missing"]
