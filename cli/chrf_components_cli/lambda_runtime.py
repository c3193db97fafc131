"""The template's functions run as Lambda runs them, for `serve`: execution environments in worker processes.

Each worker process is one execution environment: it sets the function's environment variables from the template,
loads the function as Lambda does (local_lambda.load_handler: CodeUri, Handler, layers) and then runs one
invocation at a time. An invocation that runs past the function's Timeout is answered as Lambda answers it and
its worker is killed and replaced (a cold start for the next one). A worker ignores Ctrl-C (the server stops it)
and exits on its own if the server dies. The log lines an invocation writes go to stderr, as `sam local` shows
them, and are kept for `LogType: Tail` (they are the function's own structured logs: never texts).
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import pathlib
import queue
import signal
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass
from typing import Any

from . import local_lambda

TAIL_BYTES = 4096  # Lambda returns the last 4 KB of an invocation's log


@dataclass
class Invocation:
    """What an invocation gave: the result as JSON text, whether it is a function error, and its log."""

    payload: str
    failed: bool
    log: str
    request_id: str


class _Tee(io.TextIOBase):
    """stdout of a worker: written through to stderr, and kept while an invocation runs."""

    def __init__(self) -> None:
        self.out = sys.stderr
        self.kept: list[str] | None = None

    def write(self, text: str) -> int:
        self.out.write(text)
        if self.kept is not None:
            self.kept.append(text)
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def _environment(template: str, logical_id: str, parent: int, connection: Any) -> None:
    """A worker process: load the function, then answer invocations until the connection closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    path = pathlib.Path(template)
    config = local_lambda.function_config(local_lambda.load_template(path), logical_id)
    os.environ.update(config.environment)
    tee = _Tee()
    sys.stdout = tee  # the function's logs and metrics (Powertools binds its stream at import)
    handler = local_lambda.load_handler(logical_id, path)
    connection.send("ready")
    while True:
        try:
            event, request_id = connection.recv()
        except (EOFError, OSError):
            return
        tee.kept = []
        started = time.monotonic()
        print(f"START RequestId: {request_id} Version: $LATEST")
        context = local_lambda.LambdaContext(logical_id, config.memory_mb, config.timeout, request_id)
        try:
            payload, failed = json.dumps(handler(event, context), ensure_ascii=False), False
        except Exception as error:
            payload, failed = json.dumps({"errorMessage": str(error), "errorType": type(error).__name__,
                                          "requestId": request_id,
                                          "stackTrace": traceback.format_tb(error.__traceback__)},
                                         ensure_ascii=False), True
        elapsed = (time.monotonic() - started) * 1000
        print(f"END RequestId: {request_id}")
        print(f"REPORT RequestId: {request_id}\tDuration: {elapsed:.2f} ms\tMemory Size: {config.memory_mb} MB")
        log, tee.kept = "".join(tee.kept), None
        connection.send((payload, failed, log))


class _Worker:
    def __init__(self, template: pathlib.Path, logical_id: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_environment, args=(str(template), logical_id, os.getpid(), child),
                                       daemon=True)
        self.process.start()
        child.close()
        if self.connection.recv() != "ready":  # the function loaded (or the worker died: EOFError)
            raise RuntimeError(f"{logical_id} did not start")

    def stop(self) -> None:
        self.connection.close()
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class Runtime:
    """One function's execution environments: up to ``workers`` side by side, started when first needed."""

    def __init__(self, template: pathlib.Path, logical_id: str, workers: int) -> None:
        self.template, self.logical_id, self.workers = template, logical_id, workers
        self.config = local_lambda.function_config(local_lambda.load_template(template), logical_id)
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self.started: list[_Worker] = []
        self.starting = 0
        self.lock = threading.Lock()

    def _start(self) -> _Worker:
        try:
            worker = _Worker(self.template, self.logical_id)
        finally:
            with self.lock:
                self.starting -= 1
        with self.lock:
            self.started.append(worker)
        return worker

    def warm(self) -> None:
        """Start every environment now, not on the first invocations."""
        with self.lock:
            missing = self.workers - len(self.started) - self.starting
            self.starting += missing
        for _ in range(missing):
            self.idle.put(self._start())

    def _checkout(self) -> _Worker:
        with self.lock:
            start = self.idle.empty() and len(self.started) + self.starting < self.workers
            self.starting += start
        return self._start() if start else self.idle.get()

    def invoke(self, event: Any) -> Invocation:
        """Run one invocation in an idle environment (waiting for one if all are busy)."""
        request_id = str(uuid.uuid4())
        try:
            worker = self._checkout()
        except (RuntimeError, EOFError, OSError):
            return self._failed(request_id, "Runtime.ImportModuleError", f"{self.logical_id} could not be loaded")
        finished = False
        try:
            worker.connection.send((event, request_id))
            finished = worker.connection.poll(self.config.timeout)
            if finished:
                payload, failed, log = worker.connection.recv()
                self.idle.put(worker)
                return Invocation(payload, failed, log, request_id)
        except (EOFError, OSError):
            finished = True  # the environment died during the invocation
        with self.lock:  # a new environment starts when next needed
            self.started.remove(worker)
        worker.stop()
        if finished:
            return self._failed(request_id, "Runtime.ExitError",
                                f"RequestId: {request_id} Error: Runtime exited without providing a reason")
        return self._failed(request_id, "Sandbox.Timedout",
                            f"RequestId: {request_id} Error: Task timed out after {self.config.timeout:.2f} seconds")

    @staticmethod
    def _failed(request_id: str, error_type: str, message: str) -> Invocation:
        log = f"START RequestId: {request_id} Version: $LATEST\n{message}\nEND RequestId: {request_id}\n"
        return Invocation(json.dumps({"errorType": error_type, "errorMessage": message}), True, log, request_id)

    def close(self) -> None:
        with self.lock:
            workers, self.started = self.started, []
        for worker in workers:
            worker.stop()


class Functions:
    """Every function of the template, each with its own execution environments."""

    def __init__(self, template: pathlib.Path, workers: int) -> None:
        data = local_lambda.load_template(template)
        # A template without the API function fails here, in one line, before any worker starts.
        local_lambda.function_paths(data, local_lambda.DEFAULT_FUNCTION, template.parent)
        self.runtimes = {name: Runtime(template, name, workers) for name in local_lambda.function_names(data)}
        self.runtimes[local_lambda.DEFAULT_FUNCTION].warm()  # the API answers its first request warm

    def get(self, logical_id: str) -> Runtime | None:
        return self.runtimes.get(logical_id)

    def close(self) -> None:
        for runtime in self.runtimes.values():
            runtime.close()
