"""The real SAM CLI runs this template offline, and `chrf-components serve` answers as it does.

* Every sample event through `sam local invoke` equals its expected file (what the handler returns; for a failing
  direct invocation, Lambda's errorType and errorMessage).
* One warm `sam local start-lambda`, for boto3 and the AWS CLI, and `serve`'s Invoke API get the same calls: every
  sample event and a few hundred generated requests, valid and invalid, to all three functions; the same status,
  payload, FunctionError and error shape.
* One warm `sam local start-api` and `serve`'s HTTP API get the same requests: the same status and body, where SAM
  does what API Gateway does (SAM does not check IAM: the tests run `serve` without --iam, and
  tests/local/test_serve_iam.py pins what AWS does with signatures).
* The corpus pipeline (its own definition, on the local runner) with invalid input fails through SAM as it does on
  AWS: InvalidInputError naming the line.
"""

import http.client
import json
import os
import random
import shlex
import subprocess
import sys
from urllib.parse import urlsplit

import boto3
import harness
import pytest
from botocore.config import Config
from payloads import real_pairs
from support import ROOT
from validation_cases import RULE_CASES

EVENTS = ROOT / "events"
SAMPLES = sorted(path for path in EVENTS.glob("*.json") if not path.name.endswith(".expected.json"))
FAKE = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def expected_for(path):
    return json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))


def without_trace(payload):
    if isinstance(payload, dict) and "errorType" in payload:
        return {key: payload[key] for key in ("errorType", "errorMessage")}
    return payload


SAM_ON_PATH = os.path.join(os.path.dirname(sys.executable), "sam")  # the project's, as make setup-sam puts it


@pytest.mark.parametrize("path", SAMPLES, ids=lambda path: path.stem)
def test_every_sample_event_through_sam_local_invoke_equals_its_expected_file(docker_host, lambda_image,
                                                                             sam_project, path):
    """docs/deploy-and-pipelines.md's x86_64 `sam local invoke`, as typed, in the project its `sam build` built, on
    every sample event: with the image flags a machine without a container registry needs."""
    _, command = harness.x86_64_commands()
    words = shlex.split(command)
    assert words[:3] == ["sam", "local", "invoke"] and words[4] == "-e", command
    words[5] = str(path)
    completed = subprocess.run(
        [SAM_ON_PATH, *words[1:], "--invoke-image", lambda_image, "--skip-pull-image",
         "--container-host-interface", "127.0.0.1"],
        env=harness.docker_env(docker_host), capture_output=True, text=True, timeout=300, cwd=sam_project)
    harness.remove_sam_containers(docker_host)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert without_trace(json.loads(completed.stdout)) == expected_for(path)


def lambda_client(endpoint):
    return boto3.client("lambda", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing",
                        config=Config(retries={"max_attempts": 1}, read_timeout=120, connect_timeout=10))


def answer(client, name, payload):
    """What a caller sees of one invocation: status, FunctionError, payload (an error without its trace)."""
    from botocore.exceptions import ClientError

    try:
        response = client.invoke(FunctionName=name, Payload=payload)
    except ClientError as error:
        return error.response["ResponseMetadata"]["HTTPStatusCode"], error.response["Error"]["Code"], None
    body = response["Payload"].read()
    return response["StatusCode"], response.get("FunctionError"), without_trace(json.loads(body or b"null"))


BATCH = {"BatchInput": {"settings": {"word_order": 2}},
         "Items": [{"line": 0, "item": {"hypothesis": "the cat sat", "reference": "the cat sat down"}},
                   {"line": 1, "item": {"hypothesis": "a dog", "reference": "the dog"}}]}


def serialisable(event):
    try:
        json.dumps(event, allow_nan=False)
    except ValueError:  # NaN, or an integer past Python's 4300-digit limit: no client can send it
        return False
    return True


def generated_calls():
    """A few hundred calls, valid and invalid, to all three functions (deterministic)."""
    rng = random.Random(2026)
    pairs = real_pairs()
    calls = [("ChrfComponentsFunction", json.loads(path.read_text(encoding="utf-8"))) for path in SAMPLES]
    for _ in range(120):
        chosen = rng.sample(pairs, rng.randint(1, 6))
        request = {"hypotheses": [h for h, _ in chosen], "references": [r for _, r in chosen]}
        request.update(rng.choice([{}, {"word_order": 2}, {"char_order": 10, "word_order": 4, "beta": 3},
                                   {"lowercase": True, "averaging": "per_order_f"}, {"include_whitespace": True}]))
        calls.append(("ChrfComponentsFunction", request))
    calls += [("ChrfComponentsFunction", case[0]) for case in RULE_CASES if serialisable(case[0])]
    mutations = [lambda r: {**r, "beta": rng.choice([0, 17, 2.5, "2", True, None])},
                 lambda r: {**r, "char_order": rng.choice([-1, 11, 6.0, [6]])},
                 lambda r: {**r, "averaging": rng.choice(["mean", "", 0])},
                 lambda r: {**r, "references": r["references"][:-1]},
                 lambda r: {**r, "hypotheses": [*r["hypotheses"][:-1], "\ud800 lone"]},
                 lambda r: {**r, "references": [*r["references"][:-1], 7]},
                 lambda r: {**r, "extra\u0000key": 1},
                 lambda r: {key: value for key, value in r.items() if key != "hypotheses"}]
    for _ in range(60):
        chosen = rng.sample(pairs, rng.randint(1, 4))
        request = {"hypotheses": [h for h, _ in chosen], "references": [r for _, r in chosen]}
        calls.append(("ChrfComponentsFunction", rng.choice(mutations)(request)))
    calls += [("ScoreBatchFunction", BATCH), ("ScoreBatchFunction", {"Items": []}),
              ("ScoreBatchFunction", {**BATCH, "BatchInput": {"settings": {"beta": 0}}}),
              ("MergeReportFunction", {"settings": {}}), ("MergeReportFunction", []),
              ("MergeReportFunction", {"output": {"bucket": "corpus", "key": "r.json"}, "settings": {}, "map_result": [
                  {"invalid_input": {"Error": "InvalidInputError", "Cause": "{}"}}]})]
    return calls


CALLS = generated_calls()


def test_start_lambda_and_serve_answer_every_call_alike(sam_lambda, serve):
    sam, ours = lambda_client(sam_lambda), lambda_client(serve)
    differences = []
    for name, event in CALLS:
        payload = json.dumps(event).encode()
        theirs, mine = answer(sam, name, payload), answer(ours, name, payload)
        if theirs != mine:
            differences.append((name, event if len(payload) < 300 else "...", theirs, mine))
    assert len(CALLS) >= 220 and differences == []


def test_the_aws_cli_invokes_through_start_lambda(sam_lambda, tmp_path):
    event = json.loads((EVENTS / "direct-invoke.json").read_text(encoding="utf-8"))
    (tmp_path / "request.json").write_text(json.dumps(event), encoding="utf-8")
    completed = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "aws"), "lambda", "invoke", "--function-name",
         "ChrfComponentsFunction", "--endpoint-url", sam_lambda, "--payload", f"file://{tmp_path / 'request.json'}",
         str(tmp_path / "out.json")], env={**os.environ, **FAKE, "HOME": str(tmp_path)}, capture_output=True,
        text=True, timeout=180)
    assert completed.returncode == 0, completed.stderr
    assert json.loads((tmp_path / "out.json").read_text()) == expected_for(EVENTS / "direct-invoke.json")


def http_call(base, method, path, body=None, headers=None):
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        connection.close()


EXECUTE = "/v1/tools/chrf-components/versions/1.0.0/execute"


def http_requests():
    requests = [("POST", EXECUTE, json.dumps(event)) for _, event in CALLS[:140] if isinstance(event, dict)
                and "version" not in event and "httpMethod" not in event]
    requests += [("POST", EXECUTE, body) for body in ("", "{not json", "[]", '{"hypotheses": NaN}')]
    return requests


def test_start_api_and_serve_answer_every_request_alike(sam_api, serve):
    differences = []
    requests = http_requests()
    for method, path, body in requests:
        theirs, mine = http_call(sam_api, method, path, body), http_call(serve, method, path, body)
        if theirs != mine:
            differences.append((method, path, body[:80], theirs, mine))
    assert len(requests) >= 100 and differences == []


def test_a_body_that_is_not_utf8_fails_in_sam_start_api_where_serve_answers_as_api_gateway(sam_api, serve):
    """SAM CLI's own limitation (docs/deploy-and-pipelines.md): API Gateway hands such a body to the function
    base64-encoded, as serve does, and the function answers 400; start-api answers 502."""
    assert http_call(sam_api, "POST", EXECUTE, b"\xe9")[0] == 502
    assert http_call(serve, "POST", EXECUTE, b"\xe9") == (400, {"error": {
        "code": "invalid_input", "field": None, "message": "body: not valid UTF-8 (byte 0)"}})


UNROUTED = [("GET", EXECUTE), ("DELETE", EXECUTE), ("POST", EXECUTE.upper()),
            ("POST", "/v1/tools/chrf-components/versions/9.9.9/execute"), ("POST", "/")]


def test_a_request_no_route_matches_is_404_in_serve_as_on_aws_where_start_api_answers_403(sam_api, serve):
    """API Gateway (HTTP API) answers a method and path the template declares no route for with 404 Not Found,
    without reaching the function; SAM CLI's start-api with 403 Missing Authentication Token, as a REST API does,
    and it hands a path with a trailing slash to the function, which answers it with its own 404
    (docs/building-and-testing.md)."""
    for method, path in UNROUTED + [("POST", EXECUTE + "/")]:
        assert http_call(serve, method, path, "{}") == (404, {"message": "Not Found"}), (method, path)
    for method, path in UNROUTED:
        assert http_call(sam_api, method, path, "{}") == (403, {"message": "Missing Authentication Token"}), \
            (method, path)
    status, body = http_call(sam_api, "POST", EXECUTE + "/", "{}")
    assert status == 404 and body["error"]["code"] == "not_found"


def preflight(base):
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        connection.request("OPTIONS", EXECUTE, headers={"Origin": "https://example.org",
                                                        "Access-Control-Request-Method": "POST"})
        response = connection.getresponse()
        response.read()
        return response.status, {name.lower(): value for name, value in response.getheaders()
                                 if name.lower().startswith("access-control-")}
    finally:
        connection.close()


def test_a_cors_preflight_is_answered_by_the_gateway_in_serve_and_in_start_api(sam_api, serve):
    """Both from the template's CorsConfiguration, the same headers; API Gateway's status is 204, start-api's 200."""
    (mine, my_headers), (theirs, their_headers) = preflight(serve), preflight(sam_api)
    assert (mine, theirs) == (204, 200)
    assert my_headers["access-control-allow-origin"] == their_headers["access-control-allow-origin"] == "*"
    for header in ("access-control-allow-methods", "access-control-allow-headers"):
        assert sorted(my_headers[header].split(",")) == sorted(their_headers[header].split(","))
    assert my_headers["access-control-max-age"] == their_headers["access-control-max-age"]


@pytest.mark.parametrize("through", ["sam", "serve"])
def test_the_corpus_pipeline_with_invalid_input_fails_naming_the_line_through_sam_as_on_aws(sam_lambda, serve,
                                                                                         through):
    """The state machine's own definition on the local runner (`pipeline run --local`'s), its ScoreBatch tasks
    through start-lambda (or `serve`), the rest as `pipeline run --local` runs it (the merge reads S3 on this
    machine's loopback, which functions in SAM's containers do not reach)."""
    from chrf_components_local import states
    from chrf_components_local.definitions import load_definition
    from chrf_components_local.pipeline import LocalStack

    items = [{"hypothesis": f"the cat sat {k}", "reference": "the cat sat down"} for k in range(600)]
    items[400] = {"hypothesis": 5, "reference": "a"}
    with LocalStack(ROOT / "template.yaml", workers=2) as local:
        session = local.session()
        s3 = session.client("s3", endpoint_url=local.url)
        own = states.invoke_api(session.client("lambda", endpoint_url=local.url))
        elsewhere = states.invoke_api(lambda_client(sam_lambda if through == "sam" else serve))
        batches = []

        def routed(function, payload):
            if function.endswith(":function:ScoreBatchFunction"):
                batches.append(payload)
                return elsewhere("ScoreBatchFunction", payload)
            return own(function, payload)

        definition, name = load_definition(ROOT / "template.yaml")
        machine = states.StateMachine(definition, name, states.Services(
            routed, s3, local.server.gateway.stepfunctions.map_runs, 2))
        bucket = local.outputs["CorpusBucketName"]
        body = "\n".join(json.dumps(item) for item in items).encode()
        s3.put_object(Bucket=bucket, Key="inputs/x.jsonl", Body=body)
        execution = machine.execute({"input": {"bucket": bucket, "key": "inputs/x.jsonl"},
                                     "settings": {"word_order": 2},
                                     "output": {"bucket": bucket, "key": "reports/x.json"}}, "sam")
    assert len(batches) == 3
    assert (execution.status, execution.error) == ("FAILED", "InvalidInputError")
    assert execution.cause == "line 401 (hypothesis): must be a string"  # one readable line, as serve's run says
