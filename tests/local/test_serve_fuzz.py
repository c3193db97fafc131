"""A fuzz of `serve`'s S3 and Step Functions routes: generated requests (methods, paths, query strings, the headers
S3 and Step Functions read, bodies: JSON of any shape and depth, XML, aws-chunked, garbage), signed as a client
signs them, must never be answered with a 500 (issue 65: deep JSON, malformed XML, entity payloads, a missing or
negative decoded length and moto's own routes were). 2,000 requests a run on S3 and 1,500 on Step Functions (CI=1:
hypothesis derandomized, the same requests every run); the server still answers a valid request afterwards."""

import json
import threading

import pytest
from conftest import send_raw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import ROOT

from chrf_components_local import sigv4
from chrf_components_local.server import make_server

REGION = "us-east-1"
ACTIONS = ["StartExecution", "DescribeExecution", "StopExecution", "ListExecutions", "ListStateMachines",
           "DescribeStateMachine", "DescribeMapRun", "ListMapRuns", "GetExecutionHistory", "Nope", ""]
S3_COUNT, STATES_COUNT = 2000, 1500


@pytest.fixture(scope="module")
def endpoint():
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=1, region=REGION, warm=())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def credentials():
    from botocore.credentials import Credentials

    return Credentials("AKIDFUZZ", "fuzz-secret")


def signed(method, url, body, headers, service):
    return sigv4.sign(method, url, body, credentials(), REGION, headers=headers, service=service)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=4), max_leaves=20)
ARNS = st.sampled_from(["arn:aws:states:us-east-1:123456789012:stateMachine:local-corpus-pipeline",
                        "arn:aws:states:us-east-1:123456789012:execution:local-corpus-pipeline:x",
                        "arn:aws:states:us-east-1:123456789012:mapRun:a/b:c", "foo", "", "arn:aws:states:::x"])
DEEP = st.integers(1, 200_000).map(lambda depth: "[" * depth + "]" * depth)


@settings(max_examples=STATES_COUNT, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])
@given(st.sampled_from(ACTIONS), st.one_of(
    st.fixed_dictionaries({}, optional={"stateMachineArn": ARNS | JSON, "executionArn": ARNS | JSON,
                                        "mapRunArn": ARNS | JSON, "name": st.text(max_size=90) | JSON,
                                        "input": st.text(max_size=50) | DEEP | JSON, "maxResults": JSON,
                                        "nextToken": st.text(max_size=2000) | JSON, "statusFilter": JSON,
                                        "error": JSON, "cause": JSON}).map(lambda value: json.dumps(value).encode()),
    DEEP.map(str.encode), st.binary(max_size=200)))
def test_no_step_functions_request_is_answered_with_a_500(endpoint, action, body):
    headers = signed("POST", endpoint + "/", body, {"X-Amz-Target": f"AWSStepFunctions.{action}",
                                                    "Content-Type": "application/x-amz-json-1.0"}, "states")
    status, data = send_raw("POST", endpoint + "/", headers, body)
    assert status < 500 or status == 501, (status, data[:300])


KEYS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30) | st.sampled_from(
    ["k" * 2000, "moto-api/reset", "a\x00b", "", "inputs/x.jsonl"])
BUCKETS = st.sampled_from(["corpusbucket", "moto-api", "Bad_Bucket", "ab", "other-bucket", ""])
QUERIES = st.sampled_from(["", "delete", "uploads", "uploadId=x", "tagging", "acl", "versioning", "list-type=2",
                           "partNumber=1&uploadId=x", "cors", "lifecycle", "policy", "location", "x-id=PutObject"])
BODIES = st.one_of(st.binary(max_size=300), st.sampled_from([
    b"<Delete><Object><Key>a", b'<!DOCTYPE d [<!ENTITY a "x">]><Delete/>', b"<a>" * 100 + b"</a>" * 100,
    b"<Delete><Object><Key>k</Key></Object></Delete>", b"1;chunk-signature=" + b"0" * 64 + b"\r\nx\r\n"]))
STREAMING = st.sampled_from([None, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                             "STREAMING-NONSENSE"])


@settings(max_examples=S3_COUNT, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])
@given(st.sampled_from(["GET", "PUT", "POST", "DELETE", "HEAD"]), BUCKETS, KEYS, QUERIES, BODIES, STREAMING,
       st.sampled_from([None, "-5", "1000000000", "7", "x"]))
def test_no_s3_request_is_answered_with_a_500(endpoint, method, bucket, key, query, body, streaming, decoded):
    from urllib.parse import quote

    url = f"{endpoint}/{bucket}" + (f"/{quote(key)}" if key else "") + (f"?{query}" if query else "")
    headers = {"x-amz-content-sha256": streaming or sigv4.hashlib.sha256(body).hexdigest()}
    if decoded is not None:
        headers["x-amz-decoded-content-length"] = decoded
    status, data = send_raw(method, url, signed(method, url, body, headers, "s3"), body)
    assert status < 500 or status == 501, (status, data[:300])


def test_the_server_answers_a_valid_request_after_the_fuzz(endpoint):
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="AKIDFUZZ",
                      aws_secret_access_key="fuzz-secret")
    s3.create_bucket(Bucket="after-the-fuzz")  # its own: the fuzz may have deleted the template's (DELETE /bucket)
    s3.put_object(Bucket="after-the-fuzz", Key="inputs/after-fuzz.txt", Body=b"still here")
    assert s3.get_object(Bucket="after-the-fuzz", Key="inputs/after-fuzz.txt")["Body"].read() == b"still here"
