"""The corpus pipeline on this machine, with nothing deployed: what `chrf-components pipeline run --local` runs.

* The state machine is the template's (``CorpusPipeline``): its definition file with the template's
  DefinitionSubstitutions applied (a function's ``!GetAtt X.Arn`` becomes the local ARN `serve` answers to, the
  bucket's ``!Ref`` the local bucket), run by the local runner (states.py), which checks it before anything starts.
* Its Lambda tasks go through `serve`'s Lambda Invoke API on 127.0.0.1, so the functions run as Lambda runs them
  (runtime.py: worker environments, the template's Timeout and environment, Lambda's error shapes).
* S3 is a moto server on 127.0.0.1 (the corpus bucket, the input, ResultWriter's files, the report), and Step
  Functions' DescribeMapRun (the merge's proof that the results cover every line) is answered from the runner's Map
  Run records on 127.0.0.1; the functions reach both through ``AWS_ENDPOINT_URL_S3`` and ``AWS_ENDPOINT_URL_SFN``,
  with placeholder credentials.

Everything is started by :class:`LocalPipeline` and stopped when it closes; nothing leaves this machine. While it
runs, the process (and so every function's worker) is cut off from the caller's AWS configuration and proxies
(:func:`local_environment`): a stale profile, a broken config file, odd retry settings or a proxy meant for AWS
change nothing that stays on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pathlib
import re
import threading
from collections.abc import Callable
from typing import Any

from . import states
from . import template as sam_template
from .template import ACCOUNT

STATE_MACHINE = "CorpusPipeline"  # the template's logical id
STACK_NAME = "local"  # what ${AWS::StackName} stands for
REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


CALLER_SETTINGS = re.compile(r"AWS_\w*|(?i:(?:https?|all|no)_proxy)")  # the caller's, for their AWS account
LOCAL_SETTINGS = {"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                  "AWS_EC2_METADATA_DISABLED": "true"}  # no files, no instance metadata service


def local_environment() -> Callable[[], None]:
    """The process' environment without the caller's AWS settings and proxies (botocore reads both: a profile, a
    config file, AWS_MAX_ATTEMPTS, AWS_RETRY_MODE, HTTP_PROXY), with no AWS files and no metadata service; returns
    the function that puts the caller's back."""
    saved = dict(os.environ)
    for name in [name for name in os.environ if CALLER_SETTINGS.fullmatch(name)]:
        del os.environ[name]
    os.environ.update(LOCAL_SETTINGS)

    def restore() -> None:
        os.environ.clear()
        os.environ.update(saved)

    return restore


class PipelineError(Exception):
    """The template or its definition cannot be run locally: one line, before anything starts."""


def _resolved(template: dict[str, Any], value: Any, where: str, buckets: dict[str, str]) -> str:
    """A substitution's value as the deployed stack would give it, for this machine."""
    resources = template["Resources"]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict) and len(value) == 1:
        (function, argument), = value.items()
        if function == "Fn::GetAtt":
            name, attribute = "", ""
            if isinstance(argument, str):
                name, _, attribute = argument.partition(".")
            elif isinstance(argument, list) and len(argument) == 2:
                name, attribute = argument
            kind = resources.get(name, {}).get("Type") if isinstance(name, str) else None
            if attribute == "Arn" and kind == "AWS::Serverless::Function":
                return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        if function == "Ref":
            if argument in buckets:
                return buckets[argument]
            if argument in template.get("Parameters", {}):
                return str(template["Parameters"][argument].get("Default", ""))
        if function == "Fn::Sub" and isinstance(argument, str):
            pseudo = {"AWS::StackName": STACK_NAME, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                      "AWS::Partition": "aws"}
            unknown = [name for name in PLACEHOLDER.findall(argument) if name not in pseudo]
            if not unknown:
                return PLACEHOLDER.sub(lambda match: pseudo[match.group(1)], argument)
    raise PipelineError(f"{where}: the local runner does not resolve {json.dumps(value)}")


def local_buckets(template: dict[str, Any]) -> dict[str, str]:
    """A local S3 bucket name for each bucket the template declares (its logical id, lower-cased)."""
    return {name: name.lower() for name, resource in template["Resources"].items()
            if isinstance(resource, dict) and resource.get("Type") == "AWS::S3::Bucket"}


def load_definition(template_path: pathlib.Path, logical_id: str = STATE_MACHINE) -> tuple[dict[str, Any], str]:
    """The state machine's definition as SAM deploys it (DefinitionUri's file, or Definition, with the
    DefinitionSubstitutions applied) and its name; checked by the local runner."""
    template = sam_template.load_template(template_path)
    resource = template["Resources"].get(logical_id)
    if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::StateMachine":
        raise PipelineError(f"{template_path}: no AWS::Serverless::StateMachine {logical_id}")
    properties = resource.get("Properties", {})
    where = f"{logical_id}.Properties"
    if "DefinitionUri" in properties:
        if not isinstance(properties["DefinitionUri"], str):
            raise PipelineError(f"{where}.DefinitionUri: the local runner reads a file of the project only")
        path = template_path.parent / properties["DefinitionUri"]
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise PipelineError(f"{where}.DefinitionUri {path}: cannot read ({error.strerror or error})") from None
    elif isinstance(properties.get("Definition"), dict):
        text = json.dumps(properties["Definition"])
    else:
        raise PipelineError(f"{where}: no DefinitionUri or Definition")
    buckets = local_buckets(template)
    substitutions = {key: _resolved(template, value, f"{where}.DefinitionSubstitutions.{key}", buckets)
                     for key, value in (properties.get("DefinitionSubstitutions") or {}).items()}
    missing = sorted({name for name in PLACEHOLDER.findall(text) if name not in substitutions})
    if missing:
        raise PipelineError(f"{where}: the definition's ${{{missing[0]}}} has no DefinitionSubstitutions entry")
    text = PLACEHOLDER.sub(lambda match: json.dumps(substitutions[match.group(1)])[1:-1], text)
    try:
        definition = json.loads(text)
    except ValueError as error:
        raise PipelineError(f"{where}: the definition is not JSON ({error})") from None
    name = _resolved(template, properties.get("Name", logical_id), f"{where}.Name", buckets)
    try:
        states.check_machine(definition)
    except states.NotImplementedByRunner as error:
        raise PipelineError(str(error)) from None
    return definition, name


class StepFunctionsApi:
    """Step Functions' API (JSON 1.0) for the functions the pipeline runs: DescribeMapRun of the runner's Map Runs;
    any other action is refused by name."""

    def __init__(self, map_runs: states.MapRuns) -> None:
        self.map_runs = map_runs

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        action = environ.get("HTTP_X_AMZ_TARGET", "").removeprefix("AWSStepFunctions.")
        status, answer = "400 Bad Request", {"__type": "UnknownOperationException",
                                             "message": f"the local pipeline does not implement Step Functions' "
                                                        f"{action[:64] or 'action'}"}
        if action == "DescribeMapRun":
            try:
                arn = json.loads(body).get("mapRunArn")
            except (ValueError, AttributeError):
                arn = None
            described = self.map_runs.describe(arn) if isinstance(arn, str) else None
            if described is None:
                answer = {"__type": "ResourceNotFound", "message": "Map Run does not exist"}
            else:
                status, answer = "200 OK", described
        data = json.dumps(answer).encode()
        start_response(status, [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(data)))])
        return [data]


class _Background:
    """A WSGI application served by waitress on 127.0.0.1 in a thread of its own, until stopped."""

    def __init__(self, application: Any) -> None:
        import waitress

        self.server: Any = waitress.create_server(application, host="127.0.0.1", port=0, threads=4,
                                                  ident="chrf-components-local")
        self.url = f"http://127.0.0.1:{self.server.effective_port}"
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        from .server import stop_waitress

        stop_waitress(self.server)
        self.thread.join(5)


class LocalPipeline:
    """The corpus pipeline on 127.0.0.1 (used as a context manager): S3, the functions, the runner."""

    def __init__(self, template_path: pathlib.Path, workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None, log: str | None = None) -> None:
        self.template_path = template_path
        self.template = sam_template.load_template(template_path)
        self.definition, self.name = load_definition(template_path)  # before anything starts
        self.workers = workers or max(2, os.cpu_count() or 2)
        self.progress = progress
        self.log = log or os.devnull  # the functions' output and the Invoke API's request lines
        parameters = self.template.get("Parameters", {})
        self.input_prefix = str(parameters.get("InputPrefix", {}).get("Default", "inputs/"))
        self.report_prefix = str(parameters.get("ReportPrefix", {}).get("Default", "reports/"))
        self.bucket = local_buckets(self.template).get("CorpusBucket", "corpusbucket")
        self._stops: list[Callable[[], None]] = []

    def __enter__(self) -> LocalPipeline:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        import boto3
        from botocore.config import Config
        from moto.server import ThreadedMotoServer

        from .server import make_server

        self._stops.append(local_environment())  # first: the servers, clients and workers start without them
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request otherwise
        moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        moto.start()
        self._stops.append(moto.stop)
        s3_url = "http://{}:{}".format(*moto.get_host_and_port())
        map_runs = states.MapRuns()
        stepfunctions = _Background(StepFunctionsApi(map_runs))
        self._stops.append(stepfunctions.stop)
        overrides = {"AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
                     "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"], "AWS_SESSION_TOKEN": "",
                     "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ENDPOINT_URL_S3": s3_url,
                     "AWS_ENDPOINT_URL_SFN": stepfunctions.url}
        server = make_server("127.0.0.1", 0, self.template_path, self.workers, region=REGION, overrides=overrides,
                             warm=(), log=self.log)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self._stops.append(server.shutdown)
        self._stops.append(server.server_close)  # stopped first: a task in flight ends at once
        session = boto3.session.Session(region_name=REGION, **CREDENTIALS)
        self.s3 = session.client("s3", endpoint_url=s3_url)
        self.s3.create_bucket(Bucket=self.bucket)
        lambda_client = session.client("lambda", endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
                                       config=Config(retries={"max_attempts": 1}, connect_timeout=10,
                                                     read_timeout=900))
        services = states.Services(states.invoke_api(lambda_client), self.s3, map_runs, self.workers,
                                   progress=self.progress)
        self.machine = states.StateMachine(self.definition, self.name, services, REGION, ACCOUNT)

    def execute(self, execution_input: dict[str, Any], name: str) -> states.Execution:
        """One execution of the state machine, run to its end."""
        return self.machine.execute(execution_input, name)

    def close(self) -> None:
        """Stop everything that was started, in the reverse order."""
        while self._stops:
            stop = self._stops.pop()
            with contextlib.suppress(Exception):  # best effort: every other part is still stopped
                stop()
