"""`serve --iam` acts only on what a signature covers, as AWS does: every ``x-amz-*`` header sent must be among the
signed ones ("any x-amz-* headers that you plan to add to the request" are signed headers:
https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html; S3 answers AccessDenied, "There were
headers present in the request which were not signed"); and presigned URLs work in boto3's default form for S3
(SigV2's AWSAccessKeyId, Signature and Expires:
https://docs.aws.amazon.com/AmazonS3/latest/userguide/RESTAuthentication.html#RESTAuthenticationQueryStringAuth) and
SigV4's (https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html), until they expire.

Issue 65, on the code before: a signed empty PUT with an unsigned x-amz-copy-source copied a private object to the
signed key; an unsigned X-Amz-Target turned a signed DescribeExecution into StopExecution; unsigned
X-Amz-Invocation-Type, tagging and metadata headers were honoured; presigned URLs in boto3's default form answered
404 (with or without --iam)."""

import json
import time

import boto3
import pytest
from botocore.config import Config
from botocore.credentials import Credentials
from conftest import send_raw, serving_with
from support import ROOT

from chrf_components_local import sigv4

KEY, SECRET, REGION, BUCKET = "AKIDEXAMPLE", "the-secret", "eu-west-3", "corpusbucket"
CREDENTIALS = Credentials(KEY, SECRET)


def serving(monkeypatch, iam):
    return serving_with(monkeypatch, iam, REGION, KEY, SECRET)


@pytest.fixture(scope="module")
def iam_endpoint():
    with pytest.MonkeyPatch.context() as patch:
        server, url = serving(patch, True)
        yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def open_endpoint():
    with pytest.MonkeyPatch.context() as patch:
        server, url = serving(patch, False)
        yield url
    server.shutdown()
    server.server_close()


def client(service, url, **config):
    return boto3.client(service, endpoint_url=url, region_name=REGION, aws_access_key_id=KEY,
                        aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}, **config))


def signed(method, url, service, body=b"", headers=None):
    """The headers botocore signs for this request (every header given is signed: add others after)."""
    return sigv4.sign(method, url, body, CREDENTIALS, REGION, headers=headers, service=service)


def test_an_unsigned_copy_source_does_not_copy_a_private_object(iam_endpoint):
    s3 = client("s3", iam_endpoint)
    s3.put_object(Bucket=BUCKET, Key="private/secret.txt", Body=b"private")
    url = f"{iam_endpoint}/{BUCKET}/inputs/copy.txt"
    headers = signed("PUT", url, "s3", headers={"x-amz-content-sha256": sigv4.hashlib.sha256(b"").hexdigest()})
    status, data = send_raw("PUT", url, {**headers, "x-amz-copy-source": f"/{BUCKET}/private/secret.txt"})
    assert status == 403 and b"<Code>AccessDenied</Code>" in data, data
    assert b"not signed: x-amz-copy-source" in data
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix="inputs/copy.txt")


@pytest.mark.parametrize("header", ["x-amz-tagging", "x-amz-meta-owner", "x-amz-storage-class"])
def test_unsigned_tagging_metadata_and_other_s3_headers_are_refused(iam_endpoint, header):
    url = f"{iam_endpoint}/{BUCKET}/inputs/tagged.txt"
    headers = signed("PUT", url, "s3", b"data", headers={"x-amz-content-sha256": sigv4.hashlib.sha256(b"data")
                                                           .hexdigest()})
    status, data = send_raw("PUT", url, {**headers, header: "a=b"}, b"data")
    assert status == 403 and b"<Code>AccessDenied</Code>" in data and header.encode() in data, data


def test_an_unsigned_target_does_not_turn_a_describe_into_a_stop(iam_endpoint):
    stepfunctions = client("stepfunctions", iam_endpoint)
    (machine,) = stepfunctions.list_state_machines()["stateMachines"]
    body = json.dumps({"stateMachineArn": machine["stateMachineArn"]}).encode()
    headers = signed("POST", iam_endpoint + "/", "states", body, {"Content-Type": "application/x-amz-json-1.0"})
    forged = {**headers, "X-Amz-Target": "AWSStepFunctions.ListExecutions"}
    status, data = send_raw("POST", iam_endpoint + "/", forged, body)
    answer = json.loads(data)
    assert status == 400 and answer["__type"] == "InvalidSignatureException", answer
    assert answer["message"].endswith("not signed: x-amz-target")
    # signed, the same target is served
    headers = signed("POST", iam_endpoint + "/", "states", body, {"Content-Type": "application/x-amz-json-1.0",
                                                                   "X-Amz-Target": "AWSStepFunctions.ListExecutions"})
    assert send_raw("POST", iam_endpoint + "/", headers, body)[0] == 200


@pytest.mark.parametrize("header", [("X-Amz-Invocation-Type", "Event"), ("X-Amz-Log-Type", "Tail")])
def test_unsigned_invocation_and_log_types_are_refused(iam_endpoint, header):
    url = f"{iam_endpoint}/2015-03-31/functions/ChrfComponentsFunction/invocations"
    body = b'{"hypotheses": ["a"], "references": ["a"]}'
    status, data = send_raw("POST", url, {**signed("POST", url, "lambda", body), header[0]: header[1]}, body)
    answer = json.loads(data)
    assert status == 403 and answer["__type"] == "InvalidSignatureException", answer
    assert header[0].lower() in answer["message"]


@pytest.mark.parametrize("version", ["s3", "s3v4"], ids=["SigV2 (boto3's default in us-east-1)", "SigV4"])
@pytest.mark.parametrize("iam", [False, True], ids=["serve", "serve --iam"])
def test_presigned_urls_in_boto3s_forms_work_until_they_expire(iam_endpoint, open_endpoint, version, iam):
    endpoint = iam_endpoint if iam else open_endpoint
    client("s3", endpoint).put_object(Bucket=BUCKET, Key="inputs/shared.txt", Body=b"shared text")
    s3 = client("s3", endpoint, signature_version=version)  # the presigning client
    url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "inputs/shared.txt"},
                                    ExpiresIn=60)
    assert ("AWSAccessKeyId=" in url) == (version == "s3")
    assert send_raw("GET", url, {}) == (200, b"shared text")
    if not iam:
        return
    tampered = url.replace("inputs/shared.txt", "inputs/other.txt")
    status, data = send_raw("GET", tampered, {})
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in data, data
    expired = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "inputs/shared.txt"},
                                        ExpiresIn=1)
    time.sleep(2.1)
    status, data = send_raw("GET", expired, {})
    assert status == 403 and b"<Code>AccessDenied</Code>" in data and b"Request has expired" in data, data
    status, data = send_raw("GET", url, {"x-amz-request-payer": "requester"})  # an x-amz-* header it did not sign:
    assert status == 403 and (b"not signed" in data if version == "s3v4" else  # SigV2 signs every x-amz-* header
                              b"<Code>SignatureDoesNotMatch</Code>" in data), data


@pytest.mark.parametrize(("host", "iam", "warned"), [("0.0.0.0", False, True), ("192.0.2.7", False, True),
                                                      ("0.0.0.0", True, False), ("127.0.0.1", False, False),
                                                      ("127.0.0.2", False, False), ("localhost", False, False),
                                                      ("::1", False, False)])
def test_serve_beyond_loopback_without_iam_warns_in_one_line(monkeypatch, capsys, host, iam, warned):
    """Issue 65: `serve --host 0.0.0.0` without --iam said nothing. (The server itself is a stand-in here: the suite
    binds loopback only.)"""
    from types import SimpleNamespace

    from chrf_components_local import server as serve_module

    fake = SimpleNamespace(server_address=("", 1), region=REGION, functions=SimpleNamespace(runtimes=["F"]),
                           gateway=SimpleNamespace(buckets=["b"], stepfunctions=SimpleNamespace(machines={})),
                           serve_forever=lambda: None, server_close=lambda: None)
    monkeypatch.setattr(serve_module, "make_server", lambda *args, **kwargs: fake)
    assert serve_module.serve(host, 0, ROOT / "template.yaml", iam=iam) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == warned and (not warned or "without --iam" in warnings[0])
