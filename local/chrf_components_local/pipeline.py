"""The corpus pipeline on this machine, with nothing deployed: what `chrf-components pipeline run --local` runs.

* The state machine is the template's (``CorpusPipeline``): its definition file with the template's
  DefinitionSubstitutions applied (a function's ``!GetAtt X.Arn`` becomes the local ARN `serve` answers to, the
  bucket's ``!Ref`` the local bucket), run by the local runner (states.py), which checks it before anything starts.
* :class:`LocalStack` is `serve` on 127.0.0.1: one port for Lambda (the functions run as Lambda runs them,
  runtime.py), S3 (moto's, with the template's buckets) and Step Functions (stepfunctions.py: StartExecution,
  DescribeExecution, DescribeMapRun, ...). `pipeline run --local` runs `pipeline run --stack`'s own flow against it
  (cli remote.run_pipeline): upload, StartExecution, DescribeExecution until it ends, the report from S3.

Nothing leaves this machine. While it runs, the process (and so every function's worker) is cut off from the
caller's AWS configuration and proxies (:func:`local_environment`): a stale profile, a broken config file, odd
retry settings or a proxy meant for AWS change nothing that stays on 127.0.0.1.
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
REGION = sam_template.LOCAL_REGION  # `pipeline run --local`'s stack lives there
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


def _resolved(template: dict[str, Any], value: Any, where: str, buckets: dict[str, str], region: str = REGION) -> str:
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
                return sam_template.local_arn("lambda", region, f"function:{name}")
        if function == "Ref":
            if argument in buckets:
                return buckets[argument]
            if argument in template.get("Parameters", {}):
                return str(template["Parameters"][argument].get("Default", ""))
        if function == "Fn::Sub" and isinstance(argument, str):
            pseudo = {"AWS::StackName": STACK_NAME, "AWS::Region": region, "AWS::AccountId": ACCOUNT,
                      "AWS::Partition": "aws"}
            unknown = [name for name in PLACEHOLDER.findall(argument) if name not in pseudo]
            if not unknown:
                return PLACEHOLDER.sub(lambda match: pseudo[match.group(1)], argument)
    raise PipelineError(f"{where}: the local runner does not resolve {json.dumps(value)}")


def local_buckets(template: dict[str, Any]) -> dict[str, str]:
    """A local S3 bucket name for each bucket the template declares (its logical id, lower-cased)."""
    return {name: name.lower() for name, resource in template["Resources"].items()
            if isinstance(resource, dict) and resource.get("Type") == "AWS::S3::Bucket"}


def state_machine_ids(template_path: pathlib.Path) -> dict[str, str]:
    """The template's state machines: logical id and type (STANDARD unless the template says EXPRESS)."""
    resources = sam_template.load_template(template_path)["Resources"]
    return {name: str(resource.get("Properties", {}).get("Type", "STANDARD")).upper()
            for name, resource in resources.items()
            if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::StateMachine"}


def load_definition(template_path: pathlib.Path, logical_id: str = STATE_MACHINE,
                    region: str = REGION) -> tuple[dict[str, Any], str]:
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
            text = sam_template.read_bounded(path, sam_template.DEFINITION_LIMIT).decode("utf-8")
        except sam_template.TemplateError as error:
            raise PipelineError(f"{where}.DefinitionUri {error}") from None
        except UnicodeDecodeError:
            raise PipelineError(f"{where}.DefinitionUri {path}: not UTF-8 text") from None
    elif isinstance(properties.get("Definition"), dict):
        text = json.dumps(properties["Definition"])
    else:
        raise PipelineError(f"{where}: no DefinitionUri or Definition")
    buckets = local_buckets(template)
    substitutions = {key: _resolved(template, value, f"{where}.DefinitionSubstitutions.{key}", buckets, region)
                     for key, value in (properties.get("DefinitionSubstitutions") or {}).items()}
    missing = sorted({name for name in PLACEHOLDER.findall(text) if name not in substitutions})
    if missing:
        raise PipelineError(f"{where}: the definition's ${{{missing[0]}}} has no DefinitionSubstitutions entry")
    text = PLACEHOLDER.sub(lambda match: json.dumps(substitutions[match.group(1)])[1:-1], text)
    try:
        definition = json.loads(text)
    except ValueError as error:
        raise PipelineError(f"{where}: the definition is not JSON ({error})") from None
    except RecursionError:
        raise PipelineError(f"{where}: the definition is JSON nested too deeply") from None
    name = _resolved(template, properties.get("Name", logical_id), f"{where}.Name", buckets, region)
    try:
        states.check_machine(definition)
    except states.NotImplementedByRunner as error:
        raise PipelineError(str(error)) from None
    return definition, name


class LocalStack:
    """`serve` on 127.0.0.1 (a free port) in a thread of this process, cut off from the caller's AWS configuration
    (:func:`local_environment`), as a context manager: what `pipeline run --local` runs the pipeline against. Its
    ``url`` answers Lambda, S3 and Step Functions; ``outputs`` and ``parameters`` are what the deployed stack's
    would be (the bucket's name, the state machine's ARN, the template's prefixes)."""

    def __init__(self, template_path: pathlib.Path, workers: int | None = None, log: str | None = None) -> None:
        self.template_path, self.workers, self.log = template_path, workers or max(2, os.cpu_count() or 2), log
        template = sam_template.load_template(template_path)
        _, name = load_definition(template_path, STATE_MACHINE, REGION)  # refused here, before anything starts
        self.outputs = {"CorpusBucketName": local_buckets(template).get("CorpusBucket", "corpusbucket"),
                        "CorpusPipelineArn": sam_template.local_arn("states", REGION, f"stateMachine:{name}")}
        self.parameters = {key: str(value.get("Default", "")) for key, value in template.get("Parameters", {}).items()
                           if isinstance(value, dict)}
        self._stops: list[Callable[[], None]] = []

    def __enter__(self) -> LocalStack:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        from .server import make_server

        self._stops.append(local_environment())  # first: the server, its clients and workers start without them
        logging.getLogger("waitress").setLevel(logging.CRITICAL)  # the command says what goes wrong, in one line
        self.server = make_server("127.0.0.1", 0, self.template_path, self.workers, region=REGION, warm=(),
                                  log=self.log or os.devnull)
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        self._stops.append(self.server.shutdown)
        self._stops.append(self.server.server_close)  # stopped first: executions and tasks in flight end at once
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def session(self) -> Any:
        """A boto3 session for this stack (placeholder credentials, its region)."""
        import boto3

        return boto3.session.Session(region_name=REGION, **sam_template.LOCAL_CREDENTIALS)

    def close(self) -> None:
        """Stop everything that was started, in the reverse order."""
        while self._stops:
            stop = self._stops.pop()
            with contextlib.suppress(Exception):  # best effort: every other part is still stopped
                stop()
