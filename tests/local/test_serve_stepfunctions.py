"""`serve` answers S3 and Step Functions on its one port, as LocalStack's gateway does: boto3 and the AWS CLI, given
only the endpoint, upload an input, start an execution of the template's CorpusPipeline, follow it to SUCCEEDED and
read the report; every action the endpoint does not implement and every bad input are refused as AWS refuses them.

On 72c9660 none of this existed: serve answered S3 and Step Functions requests as HTTP API routes (404), and only
`pipeline run --local` could start an execution (its own endpoint answered DescribeMapRun alone).

AWS's pages: StartExecution https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html
(InvalidName, InvalidExecutionInput, ExecutionAlreadyExists, StateMachineDoesNotExist, InvalidArn),
DescribeExecution .../API_DescribeExecution.html, StopExecution .../API_StopExecution.html (ABORTED, error and cause),
ListExecutions .../API_ListExecutions.html, ListMapRuns .../API_ListMapRuns.html, and the JSON 1.0 protocol's error
shape (``__type``, ``message``) https://docs.aws.amazon.com/step-functions/latest/apireference/CommonErrors.html.
"""

import json
import os
import subprocess
import sys
import threading
import time

import boto3
import pytest
from botocore.exceptions import ClientError
from service_model import checking
from support import ROOT
from support import finished_execution as wait

from chrf_components_local.server import make_server

INPUT_KEY, REPORT_KEY = "inputs/test.jsonl", "reports/test.json"
LINES = [{"hypothesis": f"the cat sat {k}", "reference": "the cat sat down"} for k in range(700)]


@pytest.fixture(scope="module")
def clients(endpoint):
    """S3 and Step Functions clients of serve; every Step Functions answer is checked against botocore's model."""
    session = boto3.session.Session(aws_access_key_id="any", aws_secret_access_key="any", region_name="us-east-1")
    stepfunctions = session.client("stepfunctions", endpoint_url=endpoint)
    problems = checking(stepfunctions)
    yield session.client("s3", endpoint_url=endpoint), stepfunctions
    assert problems == [] and problems.checked > 10


def machine_arn(stepfunctions):
    (machine,) = stepfunctions.list_state_machines()["stateMachines"]
    return machine["stateMachineArn"]


def execution_input(key=INPUT_KEY, report=REPORT_KEY):
    return json.dumps({"input": {"bucket": "corpusbucket", "key": key}, "settings": {"word_order": 2},
                       "output": {"bucket": "corpusbucket", "key": report}})


def code_of(call, **arguments):
    with pytest.raises(ClientError) as caught:
        call(**arguments)
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def test_boto3_runs_the_templates_corpus_pipeline_to_the_report_score_gives(clients):
    import chrf_core

    s3, stepfunctions = clients
    s3.put_object(Bucket="corpusbucket", Key=INPUT_KEY, Body="\n".join(map(json.dumps, LINES)).encode())
    (machine,) = stepfunctions.list_state_machines()["stateMachines"]
    assert (machine["name"], machine["type"]) == ("local-corpus-pipeline", "STANDARD")
    started = stepfunctions.start_execution(stateMachineArn=machine["stateMachineArn"], name="boto3-run",
                                            input=execution_input())
    assert started["executionArn"].endswith(":execution:local-corpus-pipeline:boto3-run")
    described = wait(stepfunctions, started["executionArn"])
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["input"]) == json.loads(execution_input())
    report = json.loads(s3.get_object(Bucket="corpusbucket", Key=REPORT_KEY)["Body"].read())
    expected = chrf_core.CHRF(word_order=2).corpus_score([line["hypothesis"] for line in LINES],
                                                         [[line["reference"] for line in LINES]])
    assert report == json.loads(json.dumps(expected.to_dict(signature=True) | {"nrefs": 1}))  # as score --json
    assert json.loads(described["output"])["segment_count"] == len(LINES)
    (run,) = stepfunctions.list_map_runs(executionArn=started["executionArn"])["mapRuns"]
    counts = stepfunctions.describe_map_run(mapRunArn=run["mapRunArn"])["itemCounts"]
    assert (counts["total"], counts["succeeded"]) == (len(LINES), len(LINES))
    children = stepfunctions.list_executions(mapRunArn=run["mapRunArn"])["executions"]  # API_ListExecutions.html
    assert len(children) == stepfunctions.describe_map_run(mapRunArn=run["mapRunArn"])["executionCounts"]["total"]
    assert {child["status"] for child in children} == {"SUCCEEDED"}
    assert sum(child["itemCount"] for child in children) == len(LINES)
    listed = stepfunctions.list_executions(stateMachineArn=machine["stateMachineArn"], statusFilter="SUCCEEDED")
    assert "boto3-run" in [execution["name"] for execution in listed["executions"]]
    assert json.loads(stepfunctions.describe_state_machine(
        stateMachineArn=machine["stateMachineArn"])["definition"])["StartAt"]


def test_the_aws_cli_uploads_starts_follows_and_reads_the_report(endpoint, tmp_path):
    """Given AWS_ENDPOINT_URL and nothing else
    (https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html)."""
    aws = [os.path.join(os.path.dirname(sys.executable), "aws"), "--region", "us-east-1", "--output", "json"]
    environment = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "any",
                   "AWS_SECRET_ACCESS_KEY": "any", "AWS_CONFIG_FILE": os.devnull,
                   "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    environment.pop("AWS_PROFILE", None)

    def run(*arguments):
        done = subprocess.run([*aws, *arguments], capture_output=True, text=True, env=environment, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    source = tmp_path / "input.jsonl"
    source.write_text("\n".join(map(json.dumps, LINES[:300])) + "\n")
    run("s3", "cp", str(source), "s3://corpusbucket/inputs/cli.jsonl")
    machine = json.loads(run("stepfunctions", "list-state-machines"))["stateMachines"][0]["stateMachineArn"]
    arn = json.loads(run("stepfunctions", "start-execution", "--state-machine-arn", machine, "--name", "cli-run",
                         "--input", execution_input("inputs/cli.jsonl", "reports/cli.json")))["executionArn"]
    deadline = time.monotonic() + 60
    while (status := json.loads(run("stepfunctions", "describe-execution", "--execution-arn", arn))["status"]) \
            == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert status == "SUCCEEDED"
    report = json.loads(run("s3", "cp", "s3://corpusbucket/reports/cli.json", "-"))
    assert report["segment_count"] == 300


def test_bad_requests_are_refused_with_aws_errors(clients):
    _, stepfunctions = clients
    machine = machine_arn(stepfunctions)
    assert code_of(stepfunctions.start_execution, stateMachineArn=machine, name="a b")[0] == "InvalidName"
    assert code_of(stepfunctions.start_execution, stateMachineArn=machine, name="x" * 81)[0] == "InvalidName"
    assert code_of(stepfunctions.start_execution, stateMachineArn=machine, input="{not json")[0] == \
        "InvalidExecutionInput"
    assert code_of(stepfunctions.start_execution, stateMachineArn=machine, input="[" * 10 + "1" + "]" * 10 +
                   " " * (256 * 1024))[0] == "InvalidExecutionInput"
    assert code_of(stepfunctions.start_execution, stateMachineArn="not-an-arn")[0] == "InvalidArn"
    assert code_of(stepfunctions.start_execution,
                   stateMachineArn=machine.replace("local-corpus-pipeline", "other"))[0] == "StateMachineDoesNotExist"
    assert code_of(stepfunctions.describe_execution,
                   executionArn=machine.replace(":stateMachine:", ":execution:") + ":nope")[0] == \
        "ExecutionDoesNotExist"
    assert code_of(stepfunctions.describe_map_run,
                   mapRunArn="arn:aws:states:us-east-1:123456789012:mapRun:x/y:z")[0] == "ResourceNotFound"
    assert code_of(stepfunctions.list_executions, stateMachineArn=machine, maxResults=5000)[0] == \
        "ValidationException"
    assert code_of(stepfunctions.get_execution_history,
                   executionArn="arn:aws:states:us-east-1:123456789012:execution:a:b")[0] == "ExecutionDoesNotExist"
    assert code_of(stepfunctions.create_state_machine, name="m", definition="{}",
                   roleArn="arn:aws:iam::1:r/x")[0] == "InvalidArn"
    code, message = code_of(stepfunctions.create_activity, name="worker")
    assert code == "UnknownOperationException" and "CreateActivity" in message


def raw(endpoint, action, body):
    """A Step Functions request as any client sends it (boto3 checks some of these before sending)."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", int(endpoint.rsplit(":", 1)[1]), timeout=30)
    connection.request("POST", "/", body=body, headers={"X-Amz-Target": f"AWSStepFunctions.{action}",
                                                        "Content-Type": "application/x-amz-json-1.0"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer.get("__type"), answer.get("message", "")


def test_requests_aws_refuses_are_refused_as_aws_refuses_them_never_a_500(endpoint, clients):
    """Issue 65, on the code before: JSON nested 10^5 deep (the body, or an execution's input) was a 500; NaN and
    Infinity input and the name "" were accepted; an ARN of another resource type answered ...DoesNotExist; an
    over-long nextToken InvalidToken; DescribeMapRun("foo") ResourceNotFound. AWS's pages: StartExecution (name 1..80
    characters, input JSON), the ARN types (InvalidArn), and the List actions' nextToken (at most 1,024 characters):
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html,
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeMapRun.html,
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html."""
    _, stepfunctions = clients
    machine = machine_arn(stepfunctions)
    deep = "[" * 100_000 + "]" * 100_000
    assert raw(endpoint, "ListStateMachines", deep.encode())[:2] == (400, "SerializationException")
    for action in ("DescribeStateMachine", "ListExecutions"):
        status, code, _ = raw(endpoint, action, b'{"stateMachineArn": ' + deep.encode() + b"}")
        assert (status, code) == (400, "SerializationException")
    for text in (deep, '{"a": NaN}', "Infinity", '[-Infinity]'):
        status, code, _ = raw(endpoint, "StartExecution", json.dumps({"stateMachineArn": machine,
                                                                      "input": text}).encode())
        assert (status, code) == (400, "InvalidExecutionInput"), text
    status, code, message = raw(endpoint, "StartExecution", json.dumps({"stateMachineArn": machine,
                                                                         "name": ""}).encode())
    assert (status, code) == (400, "InvalidName"), message
    execution = machine.replace(":stateMachine:", ":execution:") + ":x"
    assert code_of(stepfunctions.describe_state_machine, stateMachineArn=execution)[0] == "InvalidArn"
    assert code_of(stepfunctions.describe_execution, executionArn=machine)[0] == "InvalidArn"
    assert code_of(stepfunctions.describe_map_run, mapRunArn="foo")[0] == "InvalidArn"
    assert code_of(stepfunctions.describe_map_run, mapRunArn=execution)[0] == "InvalidArn"
    status, code, _ = raw(endpoint, "ListExecutions", json.dumps({"stateMachineArn": machine,
                                                                  "nextToken": "x" * 1025}).encode())
    assert (status, code) == (400, "ValidationException")
    assert code_of(stepfunctions.list_executions, stateMachineArn=machine, nextToken="x" * 10)[0] == "InvalidToken"


@pytest.mark.parametrize(("change", "message"), [
    ({"settings": {"word_order": 9}}, "word_order: must be an integer from 0 to 4, got 9"),
    ({"output": None}, "output: must be an object with string bucket and key"),
    ({"input": {"bucket": "corpusbucket"}}, "input: key must be a non-empty string"),
])
def test_the_execution_input_is_checked_before_the_map_reads_anything(clients, change, message):
    """Issue 65: a missing output or word_order 9 was found by the merge step after the whole Map had run."""
    _, stepfunctions = clients
    execution = {**json.loads(execution_input()), **change}
    execution = {key: value for key, value in execution.items() if value is not None}
    started = stepfunctions.start_execution(stateMachineArn=machine_arn(stepfunctions), input=json.dumps(execution))
    described = wait(stepfunctions, started["executionArn"])
    assert (described["status"], described["error"]) == ("FAILED", "InvalidInputError")
    assert described["cause"] == message  # one readable line: no Lambda error's JSON, no stack trace
    assert stepfunctions.list_map_runs(executionArn=started["executionArn"])["mapRuns"] == []  # no Map ran


def test_describe_execution_says_why_an_execution_cannot_be_redriven(clients):
    s3, stepfunctions = clients
    s3.put_object(Bucket="corpusbucket", Key="inputs/redrive.jsonl", Body=json.dumps(LINES[0]).encode())
    started = stepfunctions.start_execution(stateMachineArn=machine_arn(stepfunctions), input=execution_input(
        "inputs/redrive.jsonl", "reports/redrive.json"))
    described = wait(stepfunctions, started["executionArn"])
    assert (described["redriveCount"], described["redriveStatus"], described["redriveStatusReason"]) == (
        0, "NOT_REDRIVABLE", "Execution is SUCCEEDED and cannot be redriven")
    listed = stepfunctions.list_executions(stateMachineArn=machine_arn(stepfunctions))["executions"]
    assert all(item["redriveCount"] == 0 for item in listed)


def test_a_map_run_stopped_mid_run_settles_its_counts_to_aborted(clients):
    """Issue 65: a Map Run stopped mid-run stayed at itemCounts.running 355-458 and executionCounts.running 2,
    aborted 0, while the execution and the Map Run said ABORTED."""
    s3, stepfunctions = clients
    many = [{"hypothesis": "x " * 2000, "reference": "y " * 2000}] * 4000
    s3.put_object(Bucket="corpusbucket", Key="inputs/stopped.jsonl", Body="\n".join(map(json.dumps, many)).encode())
    running = stepfunctions.start_execution(stateMachineArn=machine_arn(stepfunctions), input=execution_input(
        "inputs/stopped.jsonl", "reports/stopped.json"))
    deadline = time.monotonic() + 60
    while True:  # until children are running
        runs = stepfunctions.list_map_runs(executionArn=running["executionArn"])["mapRuns"]
        if runs and stepfunctions.describe_map_run(mapRunArn=runs[0]["mapRunArn"])["itemCounts"]["running"]:
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stepfunctions.stop_execution(executionArn=running["executionArn"])
    assert wait(stepfunctions, running["executionArn"], seconds=30)["status"] == "ABORTED"
    deadline = time.monotonic() + 30
    while (run := stepfunctions.describe_map_run(mapRunArn=runs[0]["mapRunArn"]))["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert run["status"] == "ABORTED"
    for counts in (run["itemCounts"], run["executionCounts"]):
        assert counts["running"] == counts["pending"] == 0 and counts["aborted"] > 0, run
        assert counts["succeeded"] + counts["failed"] + counts["aborted"] == counts["total"], run


def test_a_definition_nested_too_deeply_is_one_line_at_start_not_a_crash(tmp_path, capsys):
    """Issue 65: Parameters nested 900 deep crashed serve at start (RecursionError) and `pipeline run --local`
    printed a traceback."""
    import shutil

    from in_process import run

    from chrf_components_local.server import make_server as make

    for name in ("template.yaml", "functions"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    definition = json.loads((ROOT / "statemachine" / "corpus_pipeline.asl.json").read_text(encoding="utf-8"))
    nested: dict = {}
    for _ in range(900):
        nested = {"a": nested}
    parameters = definition["States"]["MergeReport"]["Parameters"]
    parameters["Payload"] = {"all.$": parameters.pop("Payload.$"), "deep": nested}
    (tmp_path / "statemachine").mkdir()
    (tmp_path / "statemachine" / "corpus_pipeline.asl.json").write_text(json.dumps(definition), encoding="utf-8")
    server = make("127.0.0.1", 0, tmp_path / "template.yaml", workers=1, warm=())  # starts; the machine says why
    try:
        (machine,) = server.gateway.stepfunctions.machines.values()
        assert "nested too deeply" in machine.problem
    finally:
        server.server_close()
    (tmp_path / "h").write_text("a b\n", encoding="utf-8")
    code, out, err = run(capsys, "pipeline", "run", str(tmp_path / "h"), str(tmp_path / "h"), "--local",
                         "--template", str(tmp_path / "template.yaml"))
    assert code != 0 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert "nested too deeply" in err


def test_a_name_is_idempotent_while_running_with_the_same_input_and_taken_otherwise(clients):
    s3, stepfunctions = clients
    machine = machine_arn(stepfunctions)
    s3.put_object(Bucket="corpusbucket", Key="inputs/same.jsonl", Body=json.dumps(LINES[0]).encode())
    first = stepfunctions.start_execution(stateMachineArn=machine, name="same", input=execution_input(
        "inputs/same.jsonl", "reports/same.json"))
    again = stepfunctions.start_execution(stateMachineArn=machine, name="same", input=execution_input(
        "inputs/same.jsonl", "reports/same.json"))
    assert again["executionArn"] == first["executionArn"]  # still running or already ended: either holds below
    wait(stepfunctions, first["executionArn"])
    assert code_of(stepfunctions.start_execution, stateMachineArn=machine, name="same", input="{}")[0] == \
        "ExecutionAlreadyExists"


def test_a_failed_execution_names_its_error_and_stop_execution_aborts_a_running_one(clients):
    s3, stepfunctions = clients
    machine = machine_arn(stepfunctions)
    failed = stepfunctions.start_execution(stateMachineArn=machine, input=execution_input("inputs/missing.jsonl"))
    described = wait(stepfunctions, failed["executionArn"])
    assert described["status"] == "FAILED" and described["error"] == "States.ItemReaderFailed"
    many = [{"hypothesis": "x " * 2000, "reference": "y " * 2000}] * 4000
    s3.put_object(Bucket="corpusbucket", Key="inputs/long.jsonl", Body="\n".join(map(json.dumps, many)).encode())
    running = stepfunctions.start_execution(stateMachineArn=machine, input=execution_input("inputs/long.jsonl"))
    stopped = stepfunctions.stop_execution(executionArn=running["executionArn"], error="Mine", cause="enough")
    described = wait(stepfunctions, running["executionArn"], seconds=10)
    assert (described["status"], described["error"], described["cause"]) == ("ABORTED", "Mine", "enough")
    assert described["stopDate"] == stopped["stopDate"]


def test_with_iam_s3_and_step_functions_check_signatures_as_lambda_does(monkeypatch):
    """`serve --iam`: a request signed with the server's credentials is served; one signed with another secret is
    refused (S3 with its own error names, https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html), and
    the runner's and the functions' own requests, signed with the server's credentials, get through."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-secret")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=1, iam=True, region="eu-west-3", warm=())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        good = boto3.session.Session(region_name="eu-west-3")
        bad = boto3.session.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="wrong",
                                    region_name="eu-west-3")
        s3, stepfunctions = good.client("s3", endpoint_url=url), good.client("stepfunctions", endpoint_url=url)
        s3.put_object(Bucket="corpusbucket", Key=INPUT_KEY, Body="\n".join(map(json.dumps, LINES[:10])).encode())
        machine = machine_arn(stepfunctions)
        assert ":eu-west-3:" in machine
        arn = stepfunctions.start_execution(stateMachineArn=machine, input=execution_input())["executionArn"]
        assert wait(stepfunctions, arn)["status"] == "SUCCEEDED"
        assert json.loads(s3.get_object(Bucket="corpusbucket", Key=REPORT_KEY)["Body"].read())["segment_count"] == 10
        assert code_of(bad.client("s3", endpoint_url=url).get_object, Bucket="corpusbucket", Key=REPORT_KEY)[0] == \
            "SignatureDoesNotMatch"
        assert code_of(bad.client("stepfunctions", endpoint_url=url).list_state_machines)[0] == \
            "InvalidSignatureException"
    finally:
        server.shutdown()
        server.server_close()
