"""`serve --iam` checks SigV4 as API Gateway's IAM authorization does, against requests signed by clients this
project does not sign with (requests-aws4auth, awscurl) as well as botocore: every forged, tampered, mis-scoped,
mis-dated and mis-tokened request is refused with 403, and never reaches the function."""

import datetime
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading

import awscurl.awscurl as awscurl_module
import pytest
import requests
from botocore.credentials import Credentials
from requests_aws4auth import AWS4Auth
from support import CONTRACT, ROOT

from chrf_components_local import sigv4
from chrf_components_local.server import make_server

EXECUTE = CONTRACT["execute_url"]
EXAMPLE = CONTRACT["examples"][0]
BODY = json.dumps(EXAMPLE["input"]).encode()
KEY, SECRET, TOKEN, REGION = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-1", "eu-west-3"
# The same length as BODY and another length, both valid requests: a forgery is scored if it gets through.
SAME_LENGTH = json.dumps({**EXAMPLE["input"], "hypotheses": ["E" * len(EXAMPLE["input"]["hypotheses"][0])]}).encode()
OTHER_LENGTH = json.dumps({**EXAMPLE["input"], "hypotheses": ["EVIL"]}).encode()
FORGED = OTHER_LENGTH


def start(monkeypatch_env, token):
    monkeypatch_env.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch_env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    if token:
        monkeypatch_env.setenv("AWS_SESSION_TOKEN", token)
    else:
        monkeypatch_env.delenv("AWS_SESSION_TOKEN", raising=False)
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch_env.delenv(name, raising=False)
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=1, iam=True, region=REGION)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serving(token):
    """`serve --iam` on loopback with these credentials (and ``token``): its execute URL, while the test module runs."""
    with pytest.MonkeyPatch.context() as patch:
        server = start(patch, token)
        yield f"http://127.0.0.1:{server.server_address[1]}{EXECUTE}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def with_token():
    yield from serving(TOKEN)


@pytest.fixture(scope="module")
def without_token():
    yield from serving(None)


def send(url, headers, body):
    host, port = url.split("/")[2].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {name: value for name, value in headers.items() if name.lower() != "content-length"}
    connection.request("POST", url[url.index("/", 8):], body=body, headers=headers)
    response = connection.getresponse()
    data = json.loads(response.read())
    connection.close()
    return response.status, data


# ---- three signers: each returns the headers it would send for ``body`` ------------------------------------------


def botocore_headers(url, body, region=REGION, service="execute-api", token=TOKEN, key=KEY, extra=None):
    return sigv4.sign("POST", url, body, Credentials(key, SECRET, token), region,
                      {"Content-Type": "application/json", **(extra or {})}, service=service)


def aws4auth_headers(url, body, region=REGION, service="execute-api", token=TOKEN, key=KEY, extra=None):
    auth = AWS4Auth(key, SECRET, region, service, session_token=token)
    prepared = requests.Request("POST", url, data=body, headers={"Content-Type": "application/json", **(extra or {})},
                                auth=auth).prepare()
    return dict(prepared.headers)


def awscurl_headers(url, body, region=REGION, service="execute-api", token=TOKEN, key=KEY, extra=None,
                    monkeypatch=None):
    captured = {}

    def capture(uri, data, headers, *args):
        captured.update(headers)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(awscurl_module, "__send_request", capture)
        awscurl_module.make_request("POST", service, region, url, {"Content-Type": "application/json",
                                                                   **(extra or {})},
                                    body, key, SECRET, token, True)
    return captured


SIGNERS = {"botocore": botocore_headers, "requests-aws4auth": aws4auth_headers, "awscurl": awscurl_headers}


@pytest.mark.parametrize("signer", SIGNERS)
def test_a_request_signed_by_each_client_is_scored(with_token, signer):
    assert send(with_token, SIGNERS[signer](with_token, BODY), BODY) == (200, EXAMPLE["output"])


def test_requests_aws4auth_through_requests_itself_is_scored(with_token):
    response = requests.post(with_token, data=BODY, headers={"Content-Type": "application/json"}, timeout=30,
                             auth=AWS4Auth(KEY, SECRET, REGION, "execute-api", session_token=TOKEN))
    assert response.status_code == 200 and response.json() == EXAMPLE["output"]


def test_the_awscurl_command_is_scored_and_refused_when_scoped_to_another_region(with_token, tmp_path):
    command = shutil.which("awscurl", path=os.path.dirname(sys.executable))
    assert command, "awscurl is a test dependency (requirements-dev.txt)"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN,
           "HOME": str(tmp_path)}
    base = [command, "--service", "execute-api", "-X", "POST", "-H", "Content-Type: application/json",
            "-d", BODY.decode(), with_token]
    result = subprocess.run([*base, "--region", REGION], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(result.stdout) == EXAMPLE["output"], result.stderr
    result = subprocess.run([*base, "--region", "nowhere-1"], env=env, capture_output=True, text=True, timeout=60)
    assert "Credential should be scoped to a valid region" in result.stdout + result.stderr


def test_an_unsigned_request_is_refused(with_token):
    assert send(with_token, {"Content-Type": "application/json"}, BODY) == (
        403, {"message": "Missing Authentication Token"})


@pytest.mark.parametrize("forged", [SAME_LENGTH, OTHER_LENGTH], ids=["same length", "other length"])
@pytest.mark.parametrize("signer", SIGNERS)
def test_a_body_other_than_the_signed_one_is_refused(with_token, signer, forged):
    headers = SIGNERS[signer](with_token, BODY)
    status, body = send(with_token, headers, forged)
    assert status == 403 and "does not match" in body["message"]


def test_an_unsigned_payload_is_refused(with_token):
    headers = botocore_headers(with_token, BODY, extra={"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})
    status, body = send(with_token, headers, BODY)
    assert status == 403 and "UNSIGNED-PAYLOAD" in body["message"]


@pytest.mark.parametrize("signer", SIGNERS)
@pytest.mark.parametrize(("change", "message"), [
    ({"region": "nowhere-1"}, "Credential should be scoped to a valid region"),
    ({"service": "lambda"}, "Credential should be scoped to correct service"),
    ({"token": "someone-elses-token"}, "security token included in the request is invalid"),
    ({"token": None}, "security token included in the request is invalid"),
    ({"key": "AKIDOTHER"}, "security token included in the request is invalid"),
])
def test_a_request_signed_for_another_scope_or_token_is_refused(with_token, signer, change, message):
    status, body = send(with_token, SIGNERS[signer](with_token, BODY, **change), BODY)
    assert status == 403 and message in body["message"]


@pytest.mark.parametrize("signer", SIGNERS)
def test_a_session_token_is_refused_when_the_server_has_none(without_token, signer):
    status, body = send(without_token, SIGNERS[signer](without_token, BODY, token="any-token"), BODY)
    assert status == 403 and "security token included in the request is invalid" in body["message"]
    assert send(without_token, SIGNERS[signer](without_token, BODY, token=None), BODY) == (200, EXAMPLE["output"])


@pytest.mark.parametrize(("minutes", "message"), [(-20, "Signature expired"), (20, "Signature not yet current"),
                                                  (-14, None), (14, None)])
def test_a_signature_more_than_15_minutes_away_is_refused(with_token, monkeypatch, minutes, message):
    when = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + datetime.timedelta(minutes=minutes)
    monkeypatch.setattr(awscurl_module, "__now", lambda: when)
    awscurl_signed = awscurl_headers(with_token, BODY)
    aws4auth_signed = aws4auth_headers(with_token, BODY, extra={"X-Amz-Date": when.strftime("%Y%m%dT%H%M%SZ")})
    for headers in (awscurl_signed, aws4auth_signed):
        assert headers["x-amz-date" if "x-amz-date" in headers else "X-Amz-Date"] == when.strftime("%Y%m%dT%H%M%SZ")
        status, body = send(with_token, headers, BODY)
        if message is None:
            assert (status, body) == (200, EXAMPLE["output"])
        else:
            assert status == 403 and message in body["message"]


def test_verify_recomputes_the_payload_hash_from_the_body_not_the_header():
    url = "http://127.0.0.1:1" + EXECUTE
    credentials = Credentials(KEY, SECRET, TOKEN)
    headers = sigv4.sign("POST", url, BODY, credentials, REGION)
    sigv4.verify("POST", url, headers, BODY, credentials, REGION)
    with pytest.raises(sigv4.SignatureError, match="X-Amz-Content-SHA256 does not match the body"):
        sigv4.verify("POST", url, {**headers, "X-Amz-Content-SHA256": sigv4.hashlib.sha256(FORGED).hexdigest()},
                     FORGED + b" ", credentials, REGION)


# ---- the Lambda Invoke API: SigV4 for service lambda ------------------------------------------------------------


def test_boto3_signs_lambda_invocations_that_serve_iam_accepts_and_forged_ones_it_refuses(with_token):
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    endpoint = with_token.removesuffix(EXECUTE)

    def client(**credentials):
        return boto3.client("lambda", endpoint_url=endpoint, region_name=credentials.pop("region", REGION),
                            config=Config(retries={"max_attempts": 1}),
                            **{"aws_access_key_id": KEY, "aws_secret_access_key": SECRET, "aws_session_token": TOKEN,
                               **credentials})

    response = client().invoke(FunctionName="ChrfComponentsFunction", Payload=BODY)
    assert json.loads(response["Payload"].read()) == EXAMPLE["output"]
    for wrong in ({"region": "nowhere-1"}, {"aws_session_token": "someone-elses"}, {"aws_secret_access_key": "x"}):
        with pytest.raises(ClientError) as caught:
            client(**wrong).invoke(FunctionName="ChrfComponentsFunction", Payload=BODY)
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # A signature for the HTTP API's service does not open the Invoke API, nor the other way round.
    invoke_url = f"{endpoint}/2015-03-31/functions/ChrfComponentsFunction/invocations"
    assert send(invoke_url, botocore_headers(invoke_url, BODY), BODY)[0] == 403
    assert send(with_token, botocore_headers(with_token, BODY, service="lambda"), BODY)[0] == 403


@pytest.mark.parametrize(("change", "code"), [
    ({"signature_version": "unsigned"}, "MissingAuthenticationTokenException"),
    ({"aws_secret_access_key": "not-the-secret"}, "InvalidSignatureException"),
    ({"region": "ap-south-2"}, "InvalidSignatureException"),
    ({"aws_access_key_id": "AKIDSOMEONEELSE"}, "UnrecognizedClientException"),
    ({"aws_session_token": "someone-elses"}, "UnrecognizedClientException"),
])
def test_a_refused_lambda_invocation_carries_the_error_type_aws_answers_with(with_token, change, code):
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import ClientError

    change = dict(change)
    config = Config(retries={"max_attempts": 1},
                    **({"signature_version": UNSIGNED} if change.pop("signature_version", None) else {}))
    client = boto3.client("lambda", endpoint_url=with_token.removesuffix(EXECUTE), config=config,
                          region_name=change.pop("region", REGION),
                          **{"aws_access_key_id": KEY, "aws_secret_access_key": SECRET, "aws_session_token": TOKEN,
                             **change})
    with pytest.raises(ClientError) as caught:
        client.invoke(FunctionName="ChrfComponentsFunction", Payload=BODY)
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert caught.value.response["Error"]["Code"] == code


def test_an_expired_lambda_invocation_is_an_invalid_signature(with_token):
    invoke_url = with_token.removesuffix(EXECUTE) + "/2015-03-31/functions/ChrfComponentsFunction/invocations"
    when = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(minutes=20)
    headers = aws4auth_headers(invoke_url, BODY, service="lambda",
                               extra={"X-Amz-Date": when.strftime("%Y%m%dT%H%M%SZ")})
    status, data = send(invoke_url, headers, BODY)
    assert status == 403 and data["__type"] == "InvalidSignatureException" and "expired" in data["message"]
