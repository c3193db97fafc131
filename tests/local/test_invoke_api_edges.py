"""The local Lambda Invoke API under what careless and hostile callers send: payloads that cannot be handed over as
they are, environments that die while idle, floods of Event invocations, oversized payloads and responses, slow
functions and signals; and, case by case, the answer AWS gives (docs/deploy-and-pipelines.md has the table)."""

import base64
import contextlib
import http.client
import json
import os
import signal
import socket
import threading
import time
from urllib.parse import quote

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from functions_on_disk import function_folder, serving
from processes import alive, children_of, serving_process, status_of
from support import CONTRACT, ROOT

import chrf_components_local.runtime as runtime_module
from chrf_components_local.server import make_server

EXAMPLE = CONTRACT["examples"][0]
EXECUTE = CONTRACT["execute_url"]
FUNCTION = "ChrfComponentsFunction"


def invocations(name):
    return f"/2015-03-31/functions/{name}/invocations"


def post(port, path, body, headers=None, timeout=10):
    """(status, headers, body) of one POST on a new connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {name.lower(): value for name, value in response.getheaders()}, response.read()
    finally:
        connection.close()


def lambda_client(port, **config):
    return boto3.client("lambda", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                        aws_access_key_id="x", aws_secret_access_key="x",
                        config=Config(retries={"max_attempts": 1}, **config))


@pytest.fixture(scope="module")
def four_workers():
    """`serve` as it starts by default: four execution environments for the API function."""
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=4)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def answers_valid_calls_within_10_seconds(port):
    status, _, body = post(port, invocations(FUNCTION), json.dumps(EXAMPLE["input"]))
    assert (status, json.loads(body)) == (200, EXAMPLE["output"])
    status, _, body = post(port, EXECUTE, json.dumps(EXAMPLE["input"]))
    assert (status, json.loads(body)) == (200, EXAMPLE["output"])


@pytest.mark.parametrize("invocation_type", ["RequestResponse", "Event"])
def test_deeply_nested_payloads_are_answered_and_every_environment_keeps_serving(four_workers, invocation_type):
    port = four_workers.server_address[1]
    for depth in (500, 700, 985, 990, 5000):  # four and more: one per environment, and more than the parser takes
        status, headers, body = post(port, invocations(FUNCTION), b"[" * depth + b"]" * depth,
                                     {"X-Amz-Invocation-Type": invocation_type})
        if status == 400:
            assert headers["x-amzn-errortype"] == "InvalidRequestContentException"
        elif invocation_type == "Event":
            assert status == 202
        else:  # handed to the function, which refuses a list
            assert status == 200 and headers["x-amz-function-error"] == "Unhandled"
            assert json.loads(body)["errorType"] in ("InvalidInputError", "Runtime.UnmarshalError")
    answers_valid_calls_within_10_seconds(port)


def kill_every_idle_environment(server):
    """SIGKILL the four workers of the API function once all four are idle (an earlier test's Event invocation may
    still be running: waited for, up to a deadline) and wait until they are gone."""
    runtime = server.functions.get(FUNCTION)
    deadline = time.monotonic() + 30
    while True:
        with runtime.available:
            idle = [worker.process.pid for worker in runtime.idle]
            events_waiting = len(runtime.events)
        if (len(idle) == 4 and not events_waiting) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(idle) == 4, f"{len(idle)} of the 4 environments idle after 30 s"
    for pid in idle:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in idle) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_environments_that_died_while_idle_are_replaced_before_they_are_used(four_workers):
    port = four_workers.server_address[1]
    kill_every_idle_environment(four_workers)
    results = []
    calls = [threading.Thread(target=lambda: results.append(post(port, EXECUTE, json.dumps(EXAMPLE["input"]),
                                                                 timeout=60)[0])) for _ in range(4)]
    for call in calls:
        call.start()
    for call in calls:
        call.join(60)
    assert results == [200] * 4


def test_an_environment_that_dies_after_it_was_last_found_alive_is_replaced_and_the_invocation_runs_once(
        four_workers, monkeypatch):
    """A worker killed a moment before its turn can still look alive (its pipe open while its last thread exits):
    the invocation handed to it never began there, so it runs in a fresh environment, once."""
    port = four_workers.server_address[1]
    monkeypatch.setattr(runtime_module._Worker, "alive", lambda worker: True)  # as found just before the kill
    kill_every_idle_environment(four_workers)
    answers = []
    calls = [threading.Thread(target=lambda: answers.append(post(
        port, invocations(FUNCTION), json.dumps(EXAMPLE["input"]), {"X-Amz-Log-Type": "Tail"}, timeout=60)))
        for _ in range(4)]
    for call in calls:
        call.start()
    for call in calls:
        call.join(60)
    assert len(answers) == 4
    for status, headers, body in answers:
        assert (status, "x-amz-function-error" in headers, json.loads(body)) == (200, False, EXAMPLE["output"])
        log = base64.b64decode(headers["x-amz-log-result"]).decode()
        assert log.count("START RequestId:") == 1 and log.count("END RequestId:") == 1


def test_200_event_invocations_of_200_kb_stay_within_64_threads_and_150_mb(tmp_path):
    odd_function(tmp_path, 10)
    payload = json.dumps({"sleep": 0.1, "padding": "x" * 200_000}).encode()  # each runs for 0.1 s
    with serving_process(tmp_path / "stderr", cwd=tmp_path) as (process, port):
        client = lambda_client(port)
        client.invoke(FunctionName=FUNCTION, Payload=b"{}")  # warm
        threads_before, memory_before = status_of(process.pid)
        peaks = [threads_before, memory_before]
        sending = True

        def watch():
            while sending:
                threads, memory = status_of(process.pid)
                peaks[0], peaks[1] = max(peaks[0], threads), max(peaks[1], memory)
                time.sleep(0.01)

        statuses = []

        def send(count):
            sender = lambda_client(port)
            for _ in range(count):
                try:
                    statuses.append(sender.invoke(FunctionName=FUNCTION, InvocationType="Event",
                                                  Payload=payload)["StatusCode"])
                except ClientError as error:
                    statuses.append(error.response["ResponseMetadata"]["HTTPStatusCode"])

        watcher = threading.Thread(target=watch)
        watcher.start()
        senders = [threading.Thread(target=send, args=(25,)) for _ in range(8)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(120)
        started = time.monotonic()
        response = client.invoke(FunctionName=FUNCTION, Payload=b"{}")  # goes before the queued events
        behind_the_flood = time.monotonic() - started
        sending = False
        watcher.join()
    assert len(statuses) == 200 and set(statuses) <= {202, 429}, statuses
    assert json.loads(response["Payload"].read()) == {"ok": True} and behind_the_flood < 3, behind_the_flood
    assert peaks[0] <= 64, f"{peaks[0]} threads"
    assert peaks[1] - memory_before < 150 * 1024 * 1024, f"{(peaks[1] - memory_before) / 2**20:.0f} MB more"


@pytest.mark.parametrize(("invocation_type", "size", "limit"), [("Event", 2 * 1024 * 1024, 1048576),
                                                                 ("Event", 1048577, 1048576),
                                                                 ("RequestResponse", 7 * 1024 * 1024, 6291456)])
def test_a_payload_over_lambdas_limit_gets_a_readable_413_in_aws_shape(running, invocation_type, size, limit):
    client = lambda_client(running.server_address[1])
    with pytest.raises(ClientError) as caught:
        client.invoke(FunctionName=FUNCTION, InvocationType=invocation_type, Payload=b'"' + b"x" * (size - 2) + b'"')
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert caught.value.response["Error"]["Code"] == "RequestTooLargeException"
    assert str(limit) in caught.value.response["Error"]["Message"]


def test_an_event_payload_at_the_limit_is_accepted(running):
    client = lambda_client(running.server_address[1])
    payload = b'"' + b"x" * (1048576 - 2) + b'"'
    assert client.invoke(FunctionName=FUNCTION, InvocationType="Event", Payload=payload)["StatusCode"] == 202


# ---- each case as AWS answers it --------------------------------------------------------------------------------

OTHER_REGION_ARN = "arn:aws:lambda:eu-north-1:123456789012:function:ChrfComponentsFunction"
OTHER_ACCOUNT_ARN = "arn:aws:lambda:{region}:210987654321:function:ChrfComponentsFunction"
CASES = [  # (function name in the path, query, headers, body) -> (status, error type or None)
    ("ChrfComponentsFunction:$LATEST", "", {}, None, 200, None),
    ("ChrfComponentsFunction", "Qualifier=%24LATEST", {}, None, 200, None),
    ("123456789012:function:ChrfComponentsFunction", "", {}, None, 200, None),
    ("arn:aws:lambda:{region}:123456789012:function:ChrfComponentsFunction", "", {}, None, 200, None),
    ("ChrfComponentsFunction", "Qualifier=prod", {}, None, 404, "ResourceNotFoundException"),
    ("ChrfComponentsFunction:prod", "", {}, None, 404, "ResourceNotFoundException"),
    ("ChrfComponentsFunction:1", "", {}, None, 404, "ResourceNotFoundException"),
    (OTHER_REGION_ARN, "", {}, None, 404, "ResourceNotFoundException"),
    (OTHER_ACCOUNT_ARN, "", {}, None, 404, "ResourceNotFoundException"),
    ("ChrfComponentsFunction:prod", "Qualifier=dev", {}, None, 400, "InvalidParameterValueException"),
    ("%00", "", {}, None, 400, "ValidationException"),
    ("F" * 171, "", {}, None, 400, "ValidationException"),
    (quote("Función"), "", {}, None, 400, "ValidationException"),
    ("ChrfComponentsFunction", "Qualifier=" + "q" * 129, {}, None, 400, "ValidationException"),
    ("ChrfComponentsFunction", "", {"X-Amz-Log-Type": "bogus"}, None, 400, "ValidationException"),
    ("ChrfComponentsFunction", "", {"X-Amz-Invocation-Type": "Sync"}, None, 400, "ValidationException"),
    ("ChrfComponentsFunction", "", {}, b'{"hypotheses": NaN}', 400, "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {}, b"[Infinity]", 400, "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {}, b"{} {}", 400, "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {}, b"\xff{}", 400, "InvalidRequestContentException"),
    # Not UTF-8, though Python's json.loads would read each of them:
    ("ChrfComponentsFunction", "", {}, json.dumps(EXAMPLE["input"]).encode("utf-16"), 400,
     "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {}, json.dumps(EXAMPLE["input"]).encode("utf-16-le"), 400,
     "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {}, json.dumps(EXAMPLE["input"]).encode("utf-32"), 400,
     "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {}, json.dumps(EXAMPLE["input"]).encode("utf-8-sig"), 400,
     "InvalidRequestContentException"),
    # X-Amz-Client-Context: up to 3,583 bytes of base64 holding a JSON object (the Invoke API reference, ClientContext)
    ("ChrfComponentsFunction", "", {"X-Amz-Client-Context": base64.b64encode(b'{"custom": {"a": 1}}').decode()},
     None, 200, None),
    ("ChrfComponentsFunction", "", {"X-Amz-Client-Context": "not base64!"}, None, 400,
     "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {"X-Amz-Client-Context": base64.b64encode(b"[1, 2]").decode()}, None, 400,
     "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {"X-Amz-Client-Context": base64.b64encode(b"{not json").decode()}, None, 400,
     "InvalidRequestContentException"),
    ("ChrfComponentsFunction", "", {"X-Amz-Client-Context": base64.b64encode(
        json.dumps({"custom": {"pad": "x" * 2680}}).encode()).decode()}, None, 400,
     "InvalidRequestContentException"),  # 3,608 bytes of base64
]


@pytest.mark.parametrize(("name", "query", "headers", "body", "status", "error"), CASES,
                         ids=[f"{case[0][:40]}?{case[1][:20]}{case[2]}{str(case[3])[:40]}" for case in CASES])
def test_the_invoke_api_answers_each_case_as_aws_does(running, name, query, headers, body, status, error):
    path = invocations(name.format(region=running.region)) + (f"?{query}" if query else "")
    got, got_headers, data = post(running.server_address[1], path,
                                  json.dumps(EXAMPLE["input"]).encode() if body is None else body, headers)
    assert got == status, data
    if error:
        assert got_headers["x-amzn-errortype"] == error and json.loads(data)["__type"] == error
    else:
        assert json.loads(data) == EXAMPLE["output"]


@pytest.mark.parametrize("size", [300_000, 1_000_000, 8_000_000])
def test_headers_past_the_limit_are_answered_431_and_the_client_reads_it_instead_of_a_reset(running, size):
    """A request refused before it was read in full: the server reads on until the client has sent it (a lingering
    close), so that the client reads the answer; before, a 1 MB client context was a connection reset."""
    context = base64.b64encode(json.dumps({"custom": {"pad": "x" * size}}).encode()).decode()
    request = (f"POST {invocations(FUNCTION)} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Client-Context: {context}\r\n"
               f"Content-Length: 2\r\n\r\n{{}}").encode()
    with socket.create_connection(("127.0.0.1", running.server_address[1]), timeout=30) as connection:
        for start in range(0, len(request), 65536):  # as a client writes it, a piece at a time
            connection.sendall(request[start:start + 65536])
            time.sleep(0.0005)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.0 431 Request Header Fields Too Large\r\n")
    assert lambda_client(running.server_address[1]).invoke(FunctionName=FUNCTION, Payload=json.dumps(
        EXAMPLE["input"]))["StatusCode"] == 200  # and the server serves on


# ---- a function's own faults, its Timeout, and signals ----------------------------------------------------------

TEMPLATE = """
Resources:
  ChrfComponentsFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: odd.handler
      Timeout: {timeout}
"""
HANDLER = """
import time

def handler(event, context):
    if "sleep" in event:
        time.sleep(event["sleep"])
    if "big" in event:
        return "x" * event["big"]
    if "set" in event:
        return {1, 2}
    return {"ok": True}
"""


def odd_function(folder, timeout):
    return function_folder(folder, TEMPLATE.format(timeout=timeout), {"odd": HANDLER})


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    with serving(odd_function(tmp_path_factory.mktemp("odd"), 2), workers=1) as server:
        yield lambda_client(server.server_address[1], read_timeout=30)


def invoke(client, event):
    response = client.invoke(FunctionName=FUNCTION, Payload=json.dumps(event))
    return response, json.loads(response["Payload"].read())


def test_a_response_over_6_mb_is_a_function_error_as_lambda_reports_it(odd):
    response, payload = invoke(odd, {"big": 7 * 1024 * 1024})
    assert response["FunctionError"] == "Unhandled" and payload["errorType"] == "Function.ResponseSizeTooLarge"
    assert invoke(odd, {"big": 5 * 1024 * 1024})[1] == "x" * 5 * 1024 * 1024


def test_a_result_json_cannot_hold_is_a_runtime_marshal_error(odd):
    response, payload = invoke(odd, {"set": True})
    assert response["FunctionError"] == "Unhandled" and payload["errorType"] == "Runtime.MarshalError"
    assert payload["errorMessage"].startswith("Unable to marshal response: ")
    assert invoke(odd, {})[1] == {"ok": True}  # the environment is still there


def test_the_timeout_is_answered_at_the_timeout(odd):
    started = time.monotonic()
    _, payload = invoke(odd, {"sleep": 20})
    elapsed = time.monotonic() - started
    assert payload["errorType"] == "Sandbox.Timedout" and 2 <= elapsed < 5, elapsed  # not the 20 s sleep


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_with_invocations_in_flight_stops_everything_within_5_seconds(tmp_path, signal_number):
    odd_function(tmp_path, 60)
    with serving_process(tmp_path / "stderr", cwd=tmp_path) as (process, port):  # four environments, all busy
        outcomes = []

        def call():
            try:
                status, headers, _ = post(port, invocations(FUNCTION), json.dumps({"sleep": 50}), timeout=30)
                outcomes.append((status, headers.get("x-amz-function-error")))
            except (OSError, http.client.HTTPException) as error:
                outcomes.append(type(error).__name__)

        callers = [threading.Thread(target=call) for _ in range(4)]
        for caller in callers:
            caller.start()
        time.sleep(2.0)  # the invocations are running
        descendants = children_of(process.pid)
        assert len(descendants) >= 4
        stopped = time.monotonic()
        process.send_signal(signal_number)
        process.wait(5)
        while any(alive(pid) for pid in descendants) and time.monotonic() < stopped + 5:
            time.sleep(0.05)
        assert [pid for pid in descendants if alive(pid)] == []
        for caller in callers:
            caller.join(max(0.1, stopped + 5 - time.monotonic()))
        assert not any(caller.is_alive() for caller in callers), "a caller hangs"
        # Each caller gets an error (the connection closed, or Lambda's Runtime.ExitError), never a result.
        assert all(isinstance(outcome, str) or outcome == (200, "Unhandled") for outcome in outcomes), outcomes


# ---- environments while they load ----------------------------------------------------------------------------

LOADING_HANDLER = """
import os, pathlib, time

MARKS = pathlib.Path(__file__).parent.parent / "marks"
with open(MARKS / "loading", "a") as marks:  # this environment's pid, as it starts to load
    marks.write(f"{os.getpid()}\\n")
if not (MARKS / "first-load").exists():  # only the first environment loads slowly
    (MARKS / "first-load").write_text(str(os.getpid()))
    time.sleep(float((MARKS / "first-load-seconds").read_text()))
time.sleep(float((MARKS / "load-seconds").read_text()))


def handler(event, context):
    with open(MARKS / "ran", "a") as ran:
        ran.write(f"{context.aws_request_id}\\n")
    return {"ok": True}
"""


def loading_function(folder, timeout, first_load_seconds, load_seconds):
    (folder / "code").mkdir(exist_ok=True)
    (folder / "marks").mkdir(exist_ok=True)
    (folder / "code" / "odd.py").write_text(LOADING_HANDLER, encoding="utf-8")
    (folder / "marks" / "first-load-seconds").write_text(str(first_load_seconds))
    (folder / "marks" / "load-seconds").write_text(str(load_seconds))
    (folder / "template.yaml").write_text(TEMPLATE.format(timeout=timeout), encoding="utf-8")
    return folder / "template.yaml"


@pytest.mark.parametrize("first_load_seconds", [25, 100_000])  # slow, and a load that never ends
def test_a_module_that_loads_past_the_timeout_is_answered_at_the_timeout_and_its_environment_replaced(
        tmp_path, first_load_seconds):
    server = make_server("127.0.0.1", 0, loading_function(tmp_path, 2, first_load_seconds, 0), workers=1)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = lambda_client(server.server_address[1], read_timeout=60)
        started = time.monotonic()
        _, payload = invoke(client, {})
        elapsed = time.monotonic() - started
        assert payload["errorType"] == "Sandbox.Timedout" and 2 <= elapsed < 6, (payload, elapsed)  # not the load
        assert payload["errorMessage"].endswith("Task timed out after 2.00 seconds")
        first = int((tmp_path / "marks" / "first-load").read_text())
        deadline = time.monotonic() + 5
        while alive(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(first), "the environment that loaded past the Timeout was not ended"
        response, payload = invoke(client, {})  # a fresh environment, which loads at once
        assert "FunctionError" not in response and payload == {"ok": True}
    finally:
        server.shutdown()
        server.server_close()


def test_a_module_that_fails_to_load_is_an_import_module_error_with_its_reason(tmp_path):
    template = odd_function(tmp_path, 5)
    (tmp_path / "code" / "odd.py").write_text("import a_module_that_is_not_there\n", encoding="utf-8")
    server = make_server("127.0.0.1", 0, template, workers=1)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        response, payload = invoke(lambda_client(server.server_address[1], read_timeout=30), {})
        assert response["FunctionError"] == "Unhandled" and payload["errorType"] == "Runtime.ImportModuleError"
        assert "No module named 'a_module_that_is_not_there'" in payload["errorMessage"]
    finally:
        server.shutdown()
        server.server_close()


def test_environments_killed_while_they_load_are_replaced_and_every_invocation_runs_at_most_once(tmp_path):
    """Each environment is SIGKILLed while it loads, six in all, while eight invocations wait: an invocation
    runs in a fresh environment (or, past its tries, is Runtime.ExitError), never 'could not be loaded'."""
    marks = tmp_path / "marks"
    server = make_server("127.0.0.1", 0, loading_function(tmp_path, 30, 0, 1.0), workers=2)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    warm = set(map(int, (marks / "loading").read_text().split()))  # `serve` starts the API function's at once
    killed, stop = set(), threading.Event()

    def kill_while_loading():
        while not stop.is_set() and len(killed) < 6:
            for pid in map(int, (marks / "loading").read_text().split()):
                if pid not in warm | killed and len(killed) < 6:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            time.sleep(0.01)

    killer = threading.Thread(target=kill_while_loading)
    try:
        for pid in warm:  # so that every invocation needs a cold start
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in warm) and time.monotonic() < deadline:
            time.sleep(0.05)
        killer.start()
        answers = []
        client = lambda_client(server.server_address[1], read_timeout=60)
        calls = [threading.Thread(target=lambda: answers.append(invoke(client, {}))) for _ in range(8)]
        for call in calls:
            call.start()
        for call in calls:
            call.join(60)
    finally:
        stop.set()
        killer.join()
        server.shutdown()
        server.server_close()
    assert len(answers) == 8 and len(killed) == 6
    ran = (marks / "ran").read_text().split() if (marks / "ran").exists() else []
    assert len(ran) == len(set(ran))  # no invocation ran twice
    outcomes = [payload if "FunctionError" not in response else payload["errorType"] for response, payload in answers]
    assert all(outcome in ({"ok": True}, "Runtime.ExitError") for outcome in outcomes), outcomes
    assert outcomes.count({"ok": True}) == len(ran) >= 1, outcomes
