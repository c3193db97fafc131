"""The corpus pipeline on this machine, with nothing deployed: what `chrf-components pipeline run --local` runs.

* The state machine is the template's (``CorpusPipeline``), read by definitions.py and run by the local runner
  (states.py), which checks it before anything starts.
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
import logging
import os
import pathlib
import re
import threading
from collections.abc import Callable
from typing import Any

from . import template as sam_template
from .definitions import REGION, STATE_MACHINE, load_definition, local_buckets

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
