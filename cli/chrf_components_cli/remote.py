"""Calling a deployed stack: the API (SigV4-signed), the function (direct invoke), the corpus pipeline.

Credentials and region come from the standard AWS chain (environment, ~/.aws, SSO, instance roles), through
boto3/botocore. Nothing here runs unless the user asks for a deployed stack. An endpoint on this machine (`serve`:
``--url http://127.0.0.1:...``, or ``AWS_ENDPOINT_URL_LAMBDA``) needs no AWS account: where the chain has no
credentials or region, placeholders stand in, as for SAM CLI's local commands (`serve --iam` checks signatures
against your real credentials, so with it you need them).
"""

from __future__ import annotations

import json
import json.encoder
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import chrf_core
from chrf_core.contract import ITEM_KEYS

from chrf_components_local.template import (  # serve's defaults for loopback
    LOCAL_CREDENTIALS,
    LOCAL_REGION,
    is_loopback,
)

from . import text
from .common import Inputs
from .corpus import Facts, observe
from .lines import LineFile, aligned_chunks, plural

TIMEOUT = 60
CONNECT_TIMEOUT, READ_TIMEOUT, ATTEMPTS = 10, 60, 3  # AWS calls: seconds to connect, seconds per answer, tries
POLL_SECONDS = 2.0
LOCAL_POLL_SECONDS = 0.1  # DescribeExecution of a local execution: no request costs anything
OUTPUT_KEYS = ("CorpusBucketName", "CorpusPipelineArn")


class RemoteError(Exception):
    """AWS or the deployed service could not be reached or failed: one line on stderr, exit code 3."""


METADATA_PROVIDERS = ("container-role", "iam-role")  # botocore's credential providers that ask a metadata service


def _session(on_this_machine: bool = False) -> Any:
    """The standard AWS chain's session, its configuration read now: a profile that is not there or a config file
    that does not parse is one line (RemoteError), not a traceback from wherever botocore first reads it. For an
    endpoint ``on_this_machine``, the chain never asks a metadata service (169.254.169.254, a container's) for
    credentials: what the caller has configured, else placeholders (:func:`_local_session`)."""
    import boto3
    import botocore.session
    from botocore.exceptions import BotoCoreError

    try:
        core = botocore.session.get_session()
        if on_this_machine:
            resolver = core.get_component("credential_provider")
            for name in METADATA_PROVIDERS:
                resolver.remove(name)
        session = boto3.session.Session(botocore_session=core)
        session.region_name  # noqa: B018 (reads the profile and the config file)
    except BotoCoreError as error:
        raise RemoteError(f"the AWS configuration: {error}") from None
    return session


def _client(session: Any, service: str, region: str | None = None, endpoint: str | None = None) -> Any:
    """A client that gives up on an endpoint that does not answer: CONNECT_TIMEOUT to connect, READ_TIMEOUT for each
    answer, ATTEMPTS tries in all (``endpoint``: a local one's URL, else the configured one)."""
    from botocore.config import Config

    return session.client(service, region_name=region, endpoint_url=endpoint, config=Config(
        connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT,
        retries={"mode": "standard", "max_attempts": ATTEMPTS}))


def _local_session(session: Any) -> Any:
    """The session, with placeholders for what it lacks (credentials, region): for an endpoint on this machine."""
    import boto3

    has_credentials = session.get_credentials() is not None
    if has_credentials and session.region_name:
        return session
    placeholders = {} if has_credentials else LOCAL_CREDENTIALS
    return boto3.session.Session(**placeholders, region_name=region_of(session) or LOCAL_REGION,
                                 profile_name=session.profile_name if has_credentials else None)


def _lambda_client() -> Any:
    """A Lambda client for the configured endpoint (AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL or the profile's
    endpoint_url, else AWS's); for one on this machine, placeholders where credentials or region are missing."""
    session = _session()
    probe = session.client("lambda", region_name=region_of(session) or LOCAL_REGION,  # where the configuration
                           **LOCAL_CREDENTIALS)  # points, found without asking the credential chain
    if is_loopback(urlsplit(probe.meta.endpoint_url).hostname or ""):
        return _client(_local_session(_session(on_this_machine=True)), "lambda")
    session, region = deployed_session()
    return _client(session, "lambda", region)


def _aws_problem(error: Exception) -> RemoteError:
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, ClientError):
        detail = error.response.get("Error", {})
        return RemoteError(f"{detail.get('Code', 'error')}: {detail.get('Message', error)}")
    if isinstance(error, BotoCoreError):
        return RemoteError(str(error))
    return RemoteError(f"{type(error).__name__}: {error}")


def post_signed(url: str, body: bytes) -> tuple[int, str]:
    """POST ``body`` to the API, signed with SigV4 (service execute-api); the status and the response body."""
    from chrf_components_local.sigv4 import region_of as region_of_url
    from chrf_components_local.sigv4 import sign

    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise RemoteError(f"--url {url}: not an http(s) URL")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise RemoteError(f"--url {url}: plain http is allowed only for loopback addresses (local serve); use https")
    session = _session(on_this_machine=is_loopback(parts.hostname))
    if is_loopback(parts.hostname):
        session = _local_session(session)
    credentials = session.get_credentials()
    if credentials is None:
        raise RemoteError("no AWS credentials found (environment, ~/.aws, SSO or an instance role)")
    region = region_of_url(url, region_of(session))
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
    except RemoteError:
        raise
    except Exception as error:
        raise _aws_problem(error) from None
    failed = "FunctionError" in response
    if failed and isinstance(payload, dict):
        payload = {key: payload[key] for key in ("errorType", "errorMessage") if key in payload}
    return payload, failed


def stack_outputs(cloudformation: Any, stack: str, region: str) -> tuple[dict[str, str], dict[str, str]]:
    """The stack's outputs and parameters; a stack that does not exist is one line naming it and the region."""
    from botocore.exceptions import ClientError

    try:
        described = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    except ClientError as error:
        if "does not exist" in str(error.response.get("Error", {}).get("Message", "")):
            raise RemoteError(f"no stack {stack} in {region}: check --stack and the region (AWS_REGION)") from None
        raise _aws_problem(error) from None
    except Exception as error:
        raise _aws_problem(error) from None
    outputs = {item["OutputKey"]: item["OutputValue"] for item in described.get("Outputs", [])}
    parameters = {item["ParameterKey"]: item.get("ParameterValue", "") for item in described.get("Parameters", [])}
    missing = [key for key in OUTPUT_KEYS if key not in outputs]
    if missing:
        raise RemoteError(f"stack {stack} has no output {', '.join(missing)}: is it a chrf-components stack?")
    return outputs, parameters


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


def batch_bytes(item: bytes, line: int, settings_json: bytes) -> int:
    """What the pipeline's ItemBatcher counts for a batch holding this one item (a JSON Lines line, as uploaded):
    the definition's ItemSelector ``{"line": <0-based index>, "item": ...}`` and BatchInput ``{"settings": ...}``
    as compact UTF-8 JSON, escapes included (statemachine/corpus_pipeline.asl.json; the local runner measures the
    same, tested)."""
    return len(b'{"BatchInput":{"settings":' + settings_json + b'},"Items":[{"line":' + str(line - 1).encode()
               + b',"item":' + item + b"}]}")


def check_long_item(hypothesis: str, reference: str, item: bytes, line: int, settings_json: bytes) -> None:
    """Refuse a segment no pipeline batch can hold, naming its line: by the contract's rule for its texts, with
    the error the pipeline gives, or, where escaping makes the item itself larger than a batch (MaxInputBytesPerBatch,
    the contract's MAX_TEXT_BYTES), by that measure."""
    if chrf_core.utf8_size(hypothesis) + chrf_core.utf8_size(reference) > chrf_core.MAX_TEXT_BYTES:
        try:
            chrf_core.service.check_texts([hypothesis], [reference])
        except chrf_core.InvalidInputError as error:
            raise error.at_line(line) from None
    if len(item) > chrf_core.MAX_TEXT_BYTES // 2:  # only a long line can fill a batch alone
        size = batch_bytes(item, line, settings_json)
        if size > chrf_core.MAX_TEXT_BYTES:
            raise chrf_core.InvalidInputError(
                None, f"a pipeline batch holding this segment alone takes {size} bytes (its texts as JSON, "
                      f"escapes included, with its line and the settings), more than the "
                      f"{chrf_core.MAX_TEXT_BYTES} a batch may hold (score takes it)", line=line)


def _say(text: str) -> None:
    """A progress line on a terminal (overwritten by the next), nothing elsewhere."""
    if _show_progress():
        sys.stderr.write(f"\r\x1b[K{text}")
        sys.stderr.flush()


def write_jsonl(files: list[LineFile], target: Any, settings: chrf_core.CHRF) -> Facts:
    """The files as the pipeline's JSON Lines; what `score`'s report says of their segments (their number, empty and
    identical lines: corpus.Facts). A segment too large for any pipeline batch is refused here, before anything is
    uploaded, naming its line (1-based, as in the files): by the contract's rule for its texts, with the error the
    pipeline gives, or, where escaping makes the item itself larger than a batch (MaxInputBytesPerBatch, the
    contract's MAX_TEXT_BYTES), by that measure."""
    facts = Facts()
    settings_json = json.dumps(settings.as_dict(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    quoted = json.encoder.encode_basestring  # json.dumps' own escaping of a str (ensure_ascii=False), in C
    opening, middle = f'{{"{ITEM_KEYS[0]}":', f',"{ITEM_KEYS[1]}":'  # compact JSON, as json.dumps writes the item
    # A line of n code points is at most 4n bytes of UTF-8 text and 6n bytes escaped (\u0000): only one that
    # could break a limit by those bounds is measured exactly.
    short = min(chrf_core.MAX_TEXT_BYTES // 4, (chrf_core.MAX_TEXT_BYTES // 2 - len(opening) - len(middle) - 1) // 6)
    shown = time.monotonic()
    for hypotheses, references in aligned_chunks(files):
        first = facts.segments
        observe(facts, hypotheses, references, settings.word_order > 0)
        if time.monotonic() - shown > 0.5:
            _say(f"checked {plural(first, 'segment')}")
            shown = time.monotonic()
        items = []
        for line, (hypothesis, reference) in enumerate(zip(hypotheses, references), first + 1):
            item = f"{opening}{quoted(hypothesis)}{middle}{quoted(reference)}}}"
            if len(hypothesis) + len(reference) > short:
                check_long_item(hypothesis, reference, item.encode("utf-8"), line, settings_json)
            items.append(item)
        items.append("")
        target.write("\n".join(items).encode("utf-8"))
    return facts


def failure_line(described: dict[str, Any]) -> str:
    """A failed execution's error and cause in one line (a Lambda error's message unwrapped)."""
    error, cause = described.get("error", "unknown error"), described.get("cause", "")
    try:
        message = json.loads(cause).get("errorMessage", cause)
        message = json.loads(message).get("message", message)
    except (ValueError, AttributeError, TypeError):
        message = cause
    return f"execution {described.get('status', 'FAILED')}: {error}: {' '.join(str(message).split())}"


def _run_name() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def _execution_input(bucket: str, input_key: str, report_key: str, settings: chrf_core.CHRF) -> dict[str, Any]:
    """The state machine's input, as `pipeline run` starts it (deployed or local)."""
    return {"input": {"bucket": bucket, "key": input_key}, "settings": settings.as_dict(),
            "output": {"bucket": bucket, "key": report_key}}


def _show_progress() -> bool:
    return sys.stderr is not None and sys.stderr.isatty()


def _finish(described: dict[str, Any], s3: Any, bucket: str, report_key: str, files: list[LineFile],
            settings: chrf_core.CHRF, as_json: bool, facts: Facts, say_where: bool = True) -> int:
    """What `pipeline run` prints when the execution has ended: the report as `score` prints it for the same files
    (its table with what it says of the segments, ``facts``, or with ``as_json`` its JSON, byte for byte), or the
    failure in one line (exit code 1), as it is when the report does not cover every segment uploaded (a definition
    that reads fewer items)."""
    segments = facts.segments
    if described["status"] != "SUCCEEDED":
        print(f"chrf-components pipeline run: {failure_line(described)}", file=sys.stderr)
        return 1
    try:
        report = json.loads(s3.get_object(Bucket=bucket, Key=report_key)["Body"].read())
    except Exception as error:
        if getattr(error, "response", {}).get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            print(f"chrf-components pipeline run: the execution SUCCEEDED but wrote no report at "
                  f"s3://{bucket}/{report_key}: no report printed (does the state machine end by writing it?)",
                  file=sys.stderr)
            return 1
        raise _aws_problem(error) from None
    covered = report.get("segment_count") if isinstance(report, dict) else None
    if covered != segments:
        counted = plural(covered, "segment") if type(covered) is int else "no segment_count"
        print(f"chrf-components pipeline run: the report at s3://{bucket}/{report_key} counts {counted}, not the "
              f"{segments} uploaded: no report printed (does the state machine read every line?)", file=sys.stderr)
        return 1
    if say_where:
        print(f"report: s3://{bucket}/{report_key}", file=sys.stderr)
    inputs = Inputs([files[0].name], [file.name for file in files[1:]])
    print(text.report_json(report, inputs, settings) if as_json else
          text.table(chrf_core.Report.from_dict(report), facts, inputs))
    return 0


def region_of(session: Any) -> str | None:
    """The session's region, or AWS_REGION's (which the AWS CLI and the SDKs read too, boto3 alone does not)."""
    import os

    return session.region_name or os.environ.get("AWS_REGION") or None


def deployed_session() -> tuple[Any, str]:
    """The standard AWS chain's session and region; a missing region or missing credentials is one line saying
    what to set."""
    session = _session()
    region = region_of(session)
    if not region:
        raise RemoteError("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or a region in ~/.aws/config "
                          "(aws configure)")
    try:
        credentials = session.get_credentials()
    except Exception as error:  # a profile that cannot be read, an SSO session that expired
        raise RemoteError(f"cannot load AWS credentials: {_aws_problem(error)}") from None
    if credentials is None:
        raise RemoteError("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or "
                          "run aws configure (or aws sso login)")
    return session, region


def run_pipeline(stack: str, files: list[LineFile], settings: chrf_core.CHRF, as_json: bool = False,
                 poll_seconds: float | None = None) -> int:
    """Upload two line-aligned files as JSON Lines, run the stack's corpus pipeline, print its report. The files are
    read and checked in full before AWS is called at all."""
    with tempfile.TemporaryFile() as jsonl:
        facts = write_jsonl(files, jsonl, settings)
        jsonl.seek(0)
        session, region = deployed_session()
        try:
            cloudformation = _client(session, "cloudformation", region)
        except Exception as error:
            raise _aws_problem(error) from None
        outputs, parameters = stack_outputs(cloudformation, stack, region)
        return _execute(session, region, None, outputs, parameters, jsonl, files, settings, facts, as_json,
                        poll_seconds or POLL_SECONDS, local=False)


def run_local_pipeline(files: list[LineFile], settings: chrf_core.CHRF, template: Path, as_json: bool = False,
                       log: str | None = None) -> int:
    """The same flow on this machine with nothing deployed: against `serve` on 127.0.0.1 (LocalStack: Lambda, S3
    and Step Functions on one port, the template's state machine on the local runner), stopped at the end. Quiet
    but for progress on a terminal; the functions' logs go to ``log`` if given."""
    from chrf_components_local.definitions import REGION, PipelineError
    from chrf_components_local.pipeline import LocalStack
    from chrf_components_local.template import TemplateError

    from .common import CommandError

    with tempfile.TemporaryFile() as jsonl:
        facts = write_jsonl(files, jsonl, settings)
        jsonl.seek(0)
        try:
            stack = LocalStack(template, log=log)
        except PipelineError as error:
            raise RemoteError(f"{template}: {error}") from None
        except TemplateError as error:  # as serve and invoke say it: a file that is no template, exit 2
            raise CommandError(str(error)) from None
        with stack:
            return _execute(stack.session(), REGION, stack.url, stack.outputs, stack.parameters, jsonl, files,
                            settings, facts, as_json, LOCAL_POLL_SECONDS, local=True)


def _transfer_config(local: bool) -> Any:
    """boto3's multipart upload settings: its defaults for AWS; on this machine two parts at a time (serve's S3
    takes them on the same cores, and each part in flight is held in memory on both sides)."""
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(max_concurrency=2) if local else TransferConfig()


def _execute(session: Any, region: str, endpoint: str | None, outputs: dict[str, str], parameters: dict[str, str],
             jsonl: Any, files: list[LineFile], settings: chrf_core.CHRF, facts: Facts, as_json: bool,
             poll_seconds: float, local: bool) -> int:
    """`pipeline run`'s one flow, deployed (``endpoint`` None: AWS's) or local: upload the JSON Lines, start an
    execution of the stack's state machine, follow it with DescribeExecution, print the report."""
    try:
        s3 = _client(session, "s3", region, endpoint)
        stepfunctions = _client(session, "stepfunctions", region, endpoint)
    except Exception as error:
        raise _aws_problem(error) from None
    bucket, machine = outputs["CorpusBucketName"], outputs["CorpusPipelineArn"]
    run = _run_name()
    input_key = f"{parameters.get('InputPrefix') or 'inputs/'}{run}.jsonl"
    report_key = f"{parameters.get('ReportPrefix') or 'reports/'}{run}.json"
    _say(f"uploading {plural(facts.segments, 'segment')}")
    try:
        s3.upload_fileobj(jsonl, bucket, input_key, Config=_transfer_config(local))
        execution = stepfunctions.start_execution(
            stateMachineArn=machine, name=run,
            input=json.dumps(_execution_input(bucket, input_key, report_key, settings)))["executionArn"]
    except Exception as error:
        raise _aws_problem(error) from None
    _say("")
    if not local:
        print(f"uploaded {plural(facts.segments, 'segment')} to s3://{bucket}/{input_key}; execution {run}",
              file=sys.stderr)
    started, tty = time.monotonic(), _show_progress()
    try:
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
            time.sleep(poll_seconds)
    finally:
        if tty:
            sys.stderr.write("\r\x1b[K")
    return _finish(described, s3, bucket, report_key, files, settings, as_json, facts, say_where=not local)
