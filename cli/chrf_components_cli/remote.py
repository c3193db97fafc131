"""Calling a deployed stack: the API (SigV4-signed), the function (direct invoke), the corpus pipeline.

Credentials and region come from the standard AWS chain (environment, ~/.aws, SSO, instance roles), through
boto3/botocore. Nothing here runs unless the user asks for a deployed stack. An endpoint on this machine (`serve`:
``--url http://127.0.0.1:...``, or ``AWS_ENDPOINT_URL_LAMBDA``) needs no AWS account: where the chain has no
credentials or region, placeholders stand in, as for SAM CLI's local commands (`serve --iam` checks signatures
against your real credentials, so with it you need them).
"""

from __future__ import annotations

import ipaddress
import json
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from typing import Any
from urllib.parse import urlsplit

import chrf_core
from chrf_core.contract import ITEM_KEYS

from . import text
from .lines import InputError, LineFile, aligned_chunks, plural

TIMEOUT = 60
CONNECT_TIMEOUT, READ_TIMEOUT, ATTEMPTS = 10, 60, 3  # AWS calls: seconds to connect, seconds per answer, tries
POLL_SECONDS = 2.0
LOCAL_REGION = "us-east-1"  # what `serve` answers in when nothing says otherwise
LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}  # placeholders for loopback
OUTPUT_KEYS = ("CorpusBucketName", "CorpusPipelineArn")


class RemoteError(Exception):
    """AWS or the deployed service could not be reached or failed: one line on stderr, exit code 3."""


def _session() -> Any:
    import boto3

    return boto3.session.Session()


def _client(session: Any, service: str, region: str | None = None) -> Any:
    """A client that gives up on an endpoint that does not answer: CONNECT_TIMEOUT to connect, READ_TIMEOUT for each
    answer, ATTEMPTS tries in all."""
    from botocore.config import Config

    return session.client(service, region_name=region, config=Config(
        connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT,
        retries={"mode": "standard", "max_attempts": ATTEMPTS}))


def _local_session(session: Any) -> Any:
    """The session, with placeholders for what it lacks (credentials, region): for an endpoint on this machine."""
    import boto3

    has_credentials = session.get_credentials() is not None
    if has_credentials and session.region_name:
        return session
    placeholders = {} if has_credentials else LOCAL_CREDENTIALS
    return boto3.session.Session(**placeholders, region_name=session.region_name or LOCAL_REGION,
                                 profile_name=session.profile_name if has_credentials else None)


def _lambda_client() -> Any:
    """A Lambda client for the configured endpoint (AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL or the profile's
    endpoint_url, else AWS's); for one on this machine, placeholders where credentials or region are missing."""
    session = _session()
    probe = _client(session, "lambda", session.region_name or LOCAL_REGION)  # made without credentials
    if is_loopback(urlsplit(probe.meta.endpoint_url).hostname or ""):
        return _client(_local_session(session), "lambda")
    return _client(session, "lambda")


def _aws_problem(error: Exception) -> RemoteError:
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, ClientError):
        detail = error.response.get("Error", {})
        return RemoteError(f"{detail.get('Code', 'error')}: {detail.get('Message', error)}")
    if isinstance(error, BotoCoreError):
        return RemoteError(str(error))
    return RemoteError(f"{type(error).__name__}: {error}")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def post_signed(url: str, body: bytes) -> tuple[int, str]:
    """POST ``body`` to the API, signed with SigV4 (service execute-api); the status and the response body."""
    from chrf_components_local.sigv4 import region_of, sign

    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise RemoteError(f"--url {url}: not an http(s) URL")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise RemoteError(f"--url {url}: plain http is allowed only for loopback addresses (local serve); use https")
    session = _session()
    if is_loopback(parts.hostname):
        session = _local_session(session)
    credentials = session.get_credentials()
    if credentials is None:
        raise RemoteError("no AWS credentials found (environment, ~/.aws, SSO or an instance role)")
    region = region_of(url, session.region_name)
    if not region:
        raise RemoteError("no AWS region: set AWS_REGION or use the API's execute-api URL")
    headers = sign("POST", url, body, credentials.get_frozen_credentials(), region,
                   {"Content-Type": "application/json"})
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        text = error.read().decode("utf-8", "replace")
        if error.code != 400:
            raise RemoteError(f"HTTP {error.code} from {url}: {text.strip()[:300]}") from None
        return error.code, text
    except (urllib.error.URLError, OSError) as error:
        raise RemoteError(f"cannot reach {url} ({getattr(error, 'reason', error)})") from None


def invoke_function(name: str, body: bytes) -> tuple[dict[str, Any], bool]:
    """Invoke the function directly with ``body`` as the payload: its output, and whether it raised."""
    try:
        client = _lambda_client()
        response = client.invoke(FunctionName=name, Payload=body)
        payload = json.loads(response["Payload"].read() or b"null")
    except Exception as error:
        raise _aws_problem(error) from None
    failed = "FunctionError" in response
    if failed and isinstance(payload, dict):
        payload = {key: payload[key] for key in ("errorType", "errorMessage") if key in payload}
    return payload, failed


def stack_outputs(cloudformation: Any, stack: str) -> tuple[dict[str, str], dict[str, str]]:
    try:
        described = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    except Exception as error:
        raise _aws_problem(error) from None
    outputs = {item["OutputKey"]: item["OutputValue"] for item in described.get("Outputs", [])}
    parameters = {item["ParameterKey"]: item.get("ParameterValue", "") for item in described.get("Parameters", [])}
    missing = [key for key in OUTPUT_KEYS if key not in outputs]
    if missing:
        raise RemoteError(f"stack {stack} has no output {', '.join(missing)}: is it a chrf-components stack?")
    return outputs, parameters


def write_jsonl(files: list[LineFile], target: Any) -> int:
    """The files as the pipeline's JSON Lines; the number of segments. A segment too large for one request is
    refused here, naming its line, rather than failing the execution later."""
    segments = 0
    for hypotheses, references in aligned_chunks(files):
        for hypothesis, reference in zip(hypotheses, references):
            segments += 1
            size = chrf_core.utf8_size(hypothesis) + chrf_core.utf8_size(reference)
            if size > chrf_core.MAX_TEXT_BYTES:
                raise InputError(f"line {segments}: its texts take {size} UTF-8 bytes, more than the "
                                  f"{chrf_core.MAX_TEXT_BYTES} a pipeline batch allows")
            line = json.dumps(dict(zip(ITEM_KEYS, (hypothesis, reference))), ensure_ascii=False)
            target.write(line.encode("utf-8") + b"\n")
    return segments


def _progress(stepfunctions: Any, execution: str, started: float) -> str:
    detail = ""
    try:
        runs = stepfunctions.list_map_runs(executionArn=execution).get("mapRuns", [])
        if runs:
            counts = stepfunctions.describe_map_run(mapRunArn=runs[0]["mapRunArn"]).get("itemCounts", {})
            if counts.get("total"):
                detail = f", {counts.get('succeeded', 0)}/{counts['total']} segments scored"
    except Exception:  # progress is best effort; the execution's status is what counts
        detail = ""
    return f"\rrunning for {time.monotonic() - started:.0f} s{detail}"


def failure_line(described: dict[str, Any]) -> str:
    """A failed execution's error and cause in one line (a Lambda error's message unwrapped)."""
    error, cause = described.get("error", "unknown error"), described.get("cause", "")
    try:
        message = json.loads(cause).get("errorMessage", cause)
        message = json.loads(message).get("message", message)
    except (ValueError, AttributeError, TypeError):
        message = cause
    return f"execution {described.get('status', 'FAILED')}: {error}: {' '.join(str(message).split())}"


def run_pipeline(stack: str, files: list[LineFile], settings: chrf_core.CHRF, as_json: bool = False,
                 poll_seconds: float | None = None) -> int:
    """Upload two line-aligned files as JSON Lines, run the stack's corpus pipeline, print its report. The files are
    read and checked in full before AWS is called at all."""
    with tempfile.TemporaryFile() as jsonl:
        segments = write_jsonl(files, jsonl)
        jsonl.seek(0)
        session = _session()
        try:
            cloudformation, s3 = _client(session, "cloudformation"), _client(session, "s3")
            stepfunctions = _client(session, "stepfunctions")
        except Exception as error:
            raise _aws_problem(error) from None
        outputs, parameters = stack_outputs(cloudformation, stack)
        bucket, machine = outputs["CorpusBucketName"], outputs["CorpusPipelineArn"]
        run = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
        input_key = f"{parameters.get('InputPrefix') or 'inputs/'}{run}.jsonl"
        report_key = f"{parameters.get('ReportPrefix') or 'reports/'}{run}.json"
        try:
            s3.upload_fileobj(jsonl, bucket, input_key)
        except Exception as error:
            raise _aws_problem(error) from None
    execution_input = {"input": {"bucket": bucket, "key": input_key}, "settings": settings.as_dict(),
                       "output": {"bucket": bucket, "key": report_key}}
    try:
        execution = stepfunctions.start_execution(stateMachineArn=machine, name=run,
                                                  input=json.dumps(execution_input))["executionArn"]
    except Exception as error:
        raise _aws_problem(error) from None
    print(f"uploaded {plural(segments, 'segment')} to s3://{bucket}/{input_key}; execution {run}", file=sys.stderr)
    started, tty = time.monotonic(), sys.stderr.isatty()
    while True:
        try:
            described = stepfunctions.describe_execution(executionArn=execution)
        except Exception as error:
            raise _aws_problem(error) from None
        if described["status"] != "RUNNING":
            break
        if tty:
            sys.stderr.write(_progress(stepfunctions, execution, started))
            sys.stderr.flush()
        time.sleep(poll_seconds or POLL_SECONDS)
    if tty:
        sys.stderr.write("\r\x1b[K")
    if described["status"] != "SUCCEEDED":
        print(f"chrf-components pipeline run: {failure_line(described)}", file=sys.stderr)
        return 1
    try:
        report = json.loads(s3.get_object(Bucket=bucket, Key=report_key)["Body"].read())
    except Exception as error:
        raise _aws_problem(error) from None
    print(f"report: s3://{bucket}/{report_key}", file=sys.stderr)
    print(json.dumps(report, indent=2) if as_json else text.table(chrf_core.CHRF.report_from_dict(report)))
    return 0
