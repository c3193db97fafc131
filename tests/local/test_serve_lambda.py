"""`serve` speaks the Lambda Invoke API for every function of the template, checked by clients we did not write:
boto3 (endpoint_url), the AWS CLI (--endpoint-url) and `AWS_ENDPOINT_URL_LAMBDA` for `request --function`."""

import base64
import json
import os
import re
import subprocess
import sys
import threading
import time

import boto3
import chrf_core
import lambda_handlers
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from functions_on_disk import function_folder, serving
from in_process import run
from support import CONTRACT, ROOT

from chrf_components_cli.main import main

EXAMPLE = CONTRACT["examples"][0]
TEMPLATE = ROOT / "template.yaml"
BATCH = {"BatchInput": {"settings": {"word_order": 2}},
         "Items": [{"line": 0, "item": {"hypothesis": "the cat sat", "reference": "the cat sat down"}},
                   {"line": 1, "item": {"hypothesis": "a dog", "reference": "the dog"}}]}
FAKE = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def endpoint(running):
    return f"http://127.0.0.1:{running.server_address[1]}"


@pytest.fixture(scope="module")
def lambda_client(endpoint):
    return boto3.client("lambda", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing", config=Config(retries={"max_attempts": 1}))


def invoke(client, name, payload, **options):
    response = client.invoke(FunctionName=name, Payload=json.dumps(payload).encode(), **options)
    return response, json.loads(response["Payload"].read() or b"null")


def in_process(name, event):
    """What the handler itself returns (or raises, as Lambda reports it), loaded as Lambda loads it."""
    return lambda_handlers.invoke(lambda_handlers.load(name), event)


def test_boto3_invokes_each_function_and_gets_exactly_what_its_handler_returns(lambda_client):
    response, payload = invoke(lambda_client, "ChrfComponentsFunction", EXAMPLE["input"])
    assert response["StatusCode"] == 200 and "FunctionError" not in response and payload == EXAMPLE["output"]
    assert response["ExecutedVersion"] == "$LATEST"
    response, payload = invoke(lambda_client, "ScoreBatchFunction", BATCH)
    assert "FunctionError" not in response and payload == in_process("ScoreBatchFunction", BATCH)
    response, payload = invoke(lambda_client, "MergeReportFunction", {"settings": {}})  # answered as data
    assert "FunctionError" not in response and payload == in_process("MergeReportFunction", {"settings": {}})
    assert payload["error"] == "InvalidInputError" and payload["field"] == "output"
    response, payload = invoke(lambda_client, "MergeReportFunction", {"check": None})
    assert "FunctionError" not in response and payload == in_process("MergeReportFunction", {"check": None})


def test_a_function_arn_names_the_function_by_its_logical_id(lambda_client):
    arn = "arn:aws:lambda:us-east-1:123456789012:function:ChrfComponentsFunction"
    assert invoke(lambda_client, arn, EXAMPLE["input"])[1] == EXAMPLE["output"]


def test_invalid_input_is_an_unhandled_function_error_whose_message_is_the_error_json(lambda_client):
    response, payload = invoke(lambda_client, "ChrfComponentsFunction", {"hypotheses": ["a"], "references": []})
    assert response["StatusCode"] == 200 and response["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "InvalidInputError"
    assert json.loads(payload["errorMessage"]) == {"code": "invalid_input", "field": "references",
                                                   "message": "references: at least 1 segment, got 0"}


def test_event_invocations_are_accepted_with_202_and_dry_runs_with_204(lambda_client):
    response = lambda_client.invoke(FunctionName="ScoreBatchFunction", InvocationType="Event",
                                    Payload=json.dumps(BATCH).encode())
    assert response["StatusCode"] == 202 and response["Payload"].read() == b""
    response = lambda_client.invoke(FunctionName="ChrfComponentsFunction", InvocationType="DryRun",
                                    Payload=json.dumps(EXAMPLE["input"]).encode())
    assert response["StatusCode"] == 204


def test_log_type_tail_returns_the_invocations_log_lines_without_its_texts(lambda_client):
    request = {"hypotheses": ["CONFIDENTIAL sentence"], "references": ["CONFIDENTIAL reference"]}
    response, _ = invoke(lambda_client, "ChrfComponentsFunction", request, LogType="Tail")
    log = base64.b64decode(response["LogResult"]).decode("utf-8")
    assert log.startswith("START RequestId: ") and "END RequestId: " in log and "REPORT RequestId: " in log
    assert '"message":"scored"' in log and "CONFIDENTIAL" not in log


@pytest.mark.parametrize(("name", "body", "status", "code"), [
    ("NoSuchFunction", b"{}", 404, "ResourceNotFoundException"),
    ("ChrfComponentsFunction", b"{not json", 400, "InvalidRequestContentException"),
    ("ChrfComponentsFunction", b'"' + b"x" * (6 * 1024 * 1024) + b'"', 413, "RequestTooLargeException"),
])
def test_lambda_api_errors_come_back_in_aws_shape(lambda_client, name, body, status, code):
    with pytest.raises(ClientError) as caught:
        lambda_client.invoke(FunctionName=name, Payload=body)
    assert caught.value.response["Error"]["Code"] == code
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == status


CALLS = [("ChrfComponentsFunction", EXAMPLE["input"]), ("ScoreBatchFunction", BATCH),
         ("MergeReportFunction", {"settings": {}})]  # the merge without S3: its InvalidInputError


def as_lambda_returns(name, event):
    """The handler's answer as a caller sees it (an error without its stack trace)."""
    expected = in_process(name, event)
    return {key: expected[key] for key in ("errorType", "errorMessage")} if "errorType" in expected else expected


def without_trace(payload):
    return {key: payload[key] for key in ("errorType", "errorMessage")} if "errorType" in payload else payload


@pytest.mark.parametrize(("name", "event"), CALLS, ids=[name for name, _ in CALLS])
def test_the_aws_cli_invokes_each_function(endpoint, tmp_path, name, event):
    (tmp_path / "request.json").write_text(json.dumps(event), encoding="utf-8")
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "aws"), "lambda", "invoke", "--function-name", name,
         "--endpoint-url", endpoint,  # AWS CLI v1: the payload is raw JSON
         "--payload", f"file://{tmp_path / 'request.json'}", str(tmp_path / "out.json")],
        env={**os.environ, **FAKE, "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["StatusCode"] == 200
    got = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert without_trace(got) == as_lambda_returns(name, event)


@pytest.mark.parametrize(("name", "event"), CALLS, ids=[name for name, _ in CALLS])
def test_request_function_reaches_serve_through_aws_endpoint_url_lambda(endpoint, tmp_path, capsys, monkeypatch,
                                                                        name, event):
    for variable, value in {**FAKE, "AWS_ENDPOINT_URL_LAMBDA": endpoint}.items():
        monkeypatch.setenv(variable, value)
    (tmp_path / "request.json").write_text(json.dumps(event), encoding="utf-8")
    expected = as_lambda_returns(name, event)
    capsys.readouterr()  # the in-process handler's own logs
    code = main(["request", str(tmp_path / "request.json"), "--function", name])
    assert code == (1 if "errorType" in expected else 0)
    assert without_trace(json.loads(capsys.readouterr().out)) == expected


def test_the_http_api_and_the_invoke_api_answer_on_the_same_port_at_once(lambda_client, endpoint):
    import http.client

    results = []

    def http_request():
        connection = http.client.HTTPConnection(endpoint.removeprefix("http://").split(":")[0],
                                                int(endpoint.rsplit(":", 1)[1]), timeout=30)
        connection.request("POST", chrf_core.contract.EXECUTE_PATH, body=json.dumps(EXAMPLE["input"]))
        results.append(json.loads(connection.getresponse().read()))

    threads = [threading.Thread(target=http_request) for _ in range(3)]
    for thread in threads:
        thread.start()
    results.append(invoke(lambda_client, "ChrfComponentsFunction", EXAMPLE["input"])[1])
    for thread in threads:
        thread.join(30)
    assert results == [EXAMPLE["output"]] * 4


# ---- each function as Lambda runs it: its Timeout, its environment ---------------------------------------------

SLOW_TEMPLATE = """
Globals:
  Function:
    Environment:
      Variables:
        GREETING: from-the-globals
Resources:
  ChrfComponentsFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: slow.handler
      Timeout: 1
      Environment:
        Variables:
          WHO: from-the-function
"""
SLOW_HANDLER = """
import os, time

def handler(event, context):
    if event.get("exit"):
        with open(event["exit"], "a") as ran:
            ran.write("ran\\n")
        os._exit(3)
    time.sleep(event.get("sleep", 0))
    return {"greeting": os.environ.get("GREETING"), "who": os.environ.get("WHO"),
            "remaining_ms": context.get_remaining_time_in_millis(),
            "context": {name: getattr(context, name) for name in ("function_name", "function_version",
                        "memory_limit_in_mb", "aws_request_id", "log_group_name", "identity", "client_context",
                        "tenant_id")}}
"""


@pytest.fixture(scope="module")
def slow_function(tmp_path_factory):
    template = function_folder(tmp_path_factory.mktemp("slow"), SLOW_TEMPLATE, {"slow": SLOW_HANDLER})
    with serving(template, workers=1) as server:
        yield boto3.client("lambda", endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
                           region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x",
                           config=Config(retries={"max_attempts": 1}, read_timeout=30))


def test_a_function_gets_its_environment_variables_and_timeout_from_the_template(slow_function):
    _, payload = invoke(slow_function, "ChrfComponentsFunction", {})
    assert payload["greeting"] == "from-the-globals" and payload["who"] == "from-the-function"
    assert 0 < payload["remaining_ms"] <= 1000


def test_the_context_has_every_attribute_of_lambdas_python_context(slow_function):
    """https://docs.aws.amazon.com/lambda/latest/dg/python-context.html: on 72c9660 reading client_context or
    identity was an AttributeError (Lambda gives None without a mobile SDK, and tenant_id None without tenant
    isolation)."""
    _, payload = invoke(slow_function, "ChrfComponentsFunction", {})
    context = payload["context"]
    assert {key: context[key] for key in ("identity", "client_context", "tenant_id")} == dict.fromkeys(
        ("identity", "client_context", "tenant_id"))
    assert context["function_name"] == "ChrfComponentsFunction" and context["function_version"] == "$LATEST"
    assert context["log_group_name"] == "/aws/lambda/ChrfComponentsFunction" and len(context["aws_request_id"]) == 36


def test_an_invocation_past_the_timeout_is_killed_and_answered_as_lambda_answers_it(slow_function):
    started = time.monotonic()
    response, payload = invoke(slow_function, "ChrfComponentsFunction", {"sleep": 10})
    assert time.monotonic() - started < 5
    assert response["FunctionError"] == "Unhandled" and payload["errorType"] == "Sandbox.Timedout"
    assert payload["errorMessage"].endswith("Task timed out after 1.00 seconds")
    # The environment was replaced: the next invocation runs in a fresh one.
    assert invoke(slow_function, "ChrfComponentsFunction", {})[1]["who"] == "from-the-function"


def test_an_environment_that_dies_is_answered_as_lambda_answers_it_replaced_and_not_run_again(slow_function,
                                                                                             tmp_path):
    ran = tmp_path / "ran"
    response, payload = invoke(slow_function, "ChrfComponentsFunction", {"exit": str(ran)})
    assert response["FunctionError"] == "Unhandled" and payload["errorType"] == "Runtime.ExitError"
    assert ran.read_text() == "ran\n"  # it began, so it is not retried in a fresh environment
    assert invoke(slow_function, "ChrfComponentsFunction", {})[1]["who"] == "from-the-function"


# ---- one marshalling: `invoke` and `serve` answer alike ----------------------------------------------------------

EVENTS = sorted(path for path in (ROOT / "events").glob("*.json") if not path.name.endswith(".expected.json"))


@pytest.mark.parametrize("event", EVENTS, ids=[path.name for path in EVENTS])
def test_invoke_and_serve_answer_every_sample_event_with_the_same_bytes(lambda_client, capsys, event):
    code, out, _ = run(capsys, "invoke", "-e", event)
    response = lambda_client.invoke(FunctionName="ChrfComponentsFunction", Payload=event.read_bytes())
    served = response["Payload"].read().decode("utf-8")
    assert code == 0
    if "FunctionError" in response:  # the same bytes but for the requestId, which each invocation has its own
        served = served.replace(json.loads(served)["requestId"], json.loads(out)["requestId"])
    assert out == served + "\n"


def test_the_function_error_shape_is_written_in_one_place():
    sources = {path.name: path.read_text(encoding="utf-8") for path in (ROOT / "local").rglob("*.py")}
    assert [name for name, text in sources.items() if re.search(r'"errorMessage"\s*:', text)] == ["answers.py"]
