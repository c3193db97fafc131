"""The template's functions run as Lambda runs them, for `serve`: execution environments in worker processes.

Each worker process is one execution environment: it sets the function's environment variables from the template,
loads the function as Lambda does (template.load_handler: CodeUri, Handler, layers) and then runs one
invocation at a time. Like Lambda's runtime, it receives the payload as JSON bytes and parses it itself
(``Runtime.UnmarshalError`` if it cannot) and serialises the result itself (``Runtime.MarshalError``), so nothing a
caller sends is ever pickled by the server. An invocation that runs past the function's Timeout is answered at the
Timeout and its worker is killed (the next invocation starts a fresh one, a cold start); a worker found dead, idle
or busy, is replaced. As in `sam local`, a cold start's loading counts towards the invocation's Timeout: a module
that loads for longer is answered ``Sandbox.Timedout`` at the Timeout and its environment replaced, and one that
fails to load is ``Runtime.ImportModuleError`` with the reason. A worker says when it has loaded and when an
invocation begins, so one handed to a worker that died first (killed while it loaded, or a moment before its turn,
its pipe still open while its last thread exits) runs in a fresh one: it never ran there.
A worker ignores Ctrl-C (the server stops it) and exits on its own if the server dies. The log
lines an invocation writes go to stderr, as `sam local` shows them, and are kept for `LogType: Tail` (they are the
function's own structured logs: never texts).

Event (asynchronous) invocations wait in a bounded queue per function, served by a fixed number of threads (one per
execution environment); when the queue is full the caller is told to slow down, as Lambda throttles.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import multiprocessing
import os
import pathlib
import signal
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass
from typing import Any

from . import template as sam_template
from .answers import function_error

TAIL_BYTES = 4096  # Lambda returns the last 4 KB of an invocation's log
TO_STDERR = "-"  # a worker's log: its output (stdout too) on standard error, as `invoke` wants it
RESPONSE_LIMIT = 6 * 1024 * 1024 + 100  # bytes of response Lambda returns (6291556, as its error says)
EVENT_QUEUE_BYTES = 64 * 1024 * 1024  # payload bytes waiting per function before Event invocations are throttled
EVENT_QUEUE_EVENTS = 1024  # Event invocations waiting per function, likewise
KILL_WAIT = 2.0  # seconds to wait for a killed worker to be reaped
READY = "ready"  # what a worker sends when it has loaded its function
LOAD_FAILED = "load failed"  # what it sends instead, with the error type and message, when loading raised
BEGAN = "began"  # what a worker sends when it has received an invocation, before running it


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


def _runtime_error(error_type: str, message: str, request_id: str) -> str:
    """A runtime fault as the Lambda runtime reports it (no stack trace: the fault is not the function's)."""
    return json.dumps(function_error(error_type, message, request_id), ensure_ascii=False)


def run_invocation(handler: Any, body: bytes, context: Any, request_id: str) -> tuple[str, bool]:
    """One invocation as the Lambda runtime runs it: parse the payload, call the handler, serialise its result."""
    try:
        event = json.loads(body)
    except (ValueError, RecursionError) as error:
        return _runtime_error("Runtime.UnmarshalError", f"Unable to unmarshal input: {error}", request_id), True
    try:
        result = handler(event, context)
    except Exception as error:
        return json.dumps(function_error(type(error).__name__, str(error), request_id,
                                         traceback.format_tb(error.__traceback__)), ensure_ascii=False), True
    try:
        return json.dumps(result, ensure_ascii=False), False
    except (TypeError, ValueError, RecursionError) as error:
        return _runtime_error("Runtime.MarshalError", f"Unable to marshal response: {error}", request_id), True


def function_environment(template: pathlib.Path, logical_id: str,
                         overrides: dict[str, str] | None = None) -> sam_template.FunctionConfig:
    """The function's configuration, its environment variables set in this process (the template's, then
    ``overrides``), as an execution environment has them before the handler's module is imported."""
    config = sam_template.function_config(sam_template.load_template(template), logical_id)
    os.environ.update(config.environment)
    os.environ.update(overrides or {})
    return config


def invoke_once(template: pathlib.Path, logical_id: str, body: bytes) -> Invocation:
    """One invocation in an execution environment of its own, as `serve` runs every invocation (and as `sam local
    invoke` runs one in a container of its own): the template's environment and Timeout, Lambda's response limit,
    the START, END and REPORT lines, the function's output on this process's standard error. What `chrf-components
    invoke` prints: the same bytes `serve` answers but for the requestId."""
    runtime = Runtime(template, logical_id, 1, log=TO_STDERR)
    try:
        return runtime.invoke(body)
    finally:
        runtime.close()


def _environment(template: str, logical_id: str, parent: int, connection: Any, overrides: dict[str, str],
                 log: str | None) -> None:
    """A worker process: load the function, then answer invocations until the connection closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if log == TO_STDERR:  # the function's output on stderr, standard output left to the caller's answer
        os.dup2(2, 1)
    elif log is not None:  # the function's output to a log file instead of stderr (sam local --log-file)
        descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(descriptor, 1)
        os.dup2(descriptor, 2)
        os.close(descriptor)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    path = pathlib.Path(template)
    config = function_environment(path, logical_id, overrides)
    tee = _Tee()
    sys.stdout = tee  # the function's logs and metrics (Powertools binds its stream at import)
    try:
        handler = sam_template.load_handler(logical_id, path)
    except Exception as error:
        traceback.print_exc()
        connection.send((LOAD_FAILED, "Runtime.ImportModuleError",
                         f"Unable to import module for {logical_id}: {type(error).__name__}: {error}"))
        return
    connection.send(READY)
    while True:
        try:
            body, request_id = connection.recv()
        except (EOFError, OSError):
            return
        connection.send(BEGAN)
        tee.kept = []
        started = time.monotonic()
        print(f"START RequestId: {request_id} Version: $LATEST")
        context = sam_template.LambdaContext(logical_id, config.memory_mb, config.timeout, request_id)
        payload, failed = run_invocation(handler, body, context, request_id)
        elapsed = (time.monotonic() - started) * 1000
        print(f"END RequestId: {request_id}")
        print(f"REPORT RequestId: {request_id}\tDuration: {elapsed:.2f} ms\tMemory Size: {config.memory_mb} MB")
        log, tee.kept = "".join(tee.kept), None
        connection.send((payload, failed, log))


class _Worker:
    """One execution environment: a worker process and the pipe to it. It starts loading its function at once;
    ``loaded`` waits for that."""

    def __init__(self, template: pathlib.Path, logical_id: str, overrides: dict[str, str], log: str | None) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_environment, daemon=True,
                                       args=(str(template), logical_id, os.getpid(), child, overrides, log))
        self.ready = False
        self.load_error: tuple[str, str] | None = None  # (errorType, errorMessage) when loading raised
        try:
            self.process.start()
        finally:
            child.close()

    def loaded(self, deadline: float) -> bool:
        """Whether the environment finished loading its function by ``deadline`` (monotonic): ready, or failed
        with ``load_error``. EOFError (or OSError) when it died while loading."""
        if self.ready or self.load_error:
            return True
        if not self.connection.poll(max(0.0, deadline - time.monotonic())):
            return False
        message = self.connection.recv()
        if message == READY:
            self.ready = True
        elif isinstance(message, tuple) and len(message) == 3 and message[0] == LOAD_FAILED:
            self.load_error = (str(message[1]), str(message[2]))
        else:
            raise EOFError("not what a loading environment says")  # not trusted: as if it had died
        return True

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        """End the environment at once (as Lambda ends one that timed out)."""
        self.connection.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join(KILL_WAIT)


class RuntimeClosed(Exception):
    """The server is stopping: no new invocation starts."""


class Runtime:
    """One function's execution environments: up to ``workers`` side by side, started when first needed."""

    def __init__(self, template: pathlib.Path, logical_id: str, workers: int,
                 overrides: dict[str, str] | None = None, log: str | None = None) -> None:
        self.template, self.logical_id, self.workers = template, logical_id, workers
        self.overrides = dict(overrides or {})  # environment variables over the template's (sam local --env-vars)
        self.log = log  # a file for the functions' output instead of stderr (sam local --log-file)
        self.config = sam_template.function_config(sam_template.load_template(template), logical_id)
        self.available = threading.Condition()
        self.idle: list[_Worker] = []  # guarded by available
        self.busy: set[_Worker] = set()
        self.count = 0  # environments started or starting
        self.waiting = 0  # synchronous invocations waiting for an environment: they go before queued events
        self.closed = False
        self.events: collections.deque[bytes] = collections.deque()  # Event invocations waiting
        self.event_bytes = 0
        self.event_threads: list[threading.Thread] = []

    def warm(self) -> None:
        """Start every environment now, not on the first invocations, and give them up to the Timeout to load (one
        that is still loading then goes on loading; one that failed or died is dealt with when it is used)."""
        workers = [self._checkout() for _ in range(self.workers)]
        deadline = time.monotonic() + self.config.timeout
        for worker in workers:
            with contextlib.suppress(EOFError, OSError):  # dead: found so at checkout, and replaced
                worker.loaded(deadline)
            self._release(worker, healthy=True)

    def _checkout(self, synchronous: bool = True) -> _Worker:
        """An idle environment that is alive, or a new one while fewer than ``workers`` exist (else wait; a
        synchronous invocation is served before any queued Event invocation)."""
        with self.available:
            self.waiting += synchronous
            try:
                while True:
                    if self.closed:
                        raise RuntimeClosed
                    if synchronous or not self.waiting:
                        while self.idle:
                            worker = self.idle.pop()
                            if worker.alive():
                                self.busy.add(worker)
                                return worker
                            self.count -= 1  # died while idle: replaced by a cold start below
                            worker.kill()
                        if self.count < self.workers:
                            self.count += 1
                            break
                    self.available.wait()
            finally:
                self.waiting -= synchronous
        try:
            worker = _Worker(self.template, self.logical_id, self.overrides, self.log)
        except BaseException:
            with self.available:
                self.count -= 1
                self.available.notify_all()
            raise
        with self.available:
            if self.closed:
                self.count -= 1
                worker.kill()
                raise RuntimeClosed
            self.busy.add(worker)
        return worker

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self.available:
            self.busy.discard(worker)
            if healthy and not self.closed:
                self.idle.append(worker)
            else:
                self.count -= 1
            self.available.notify_all()
        if not healthy or self.closed:
            worker.kill()

    def invoke(self, body: bytes, synchronous: bool = True) -> Invocation:
        """Run one invocation with this JSON payload in an idle environment (waiting for one if all are busy)."""
        request_id = str(uuid.uuid4())
        for _ in range(self.workers + 1):  # every environment may have died while idle: each is replaced
            try:
                worker = self._checkout(synchronous)
            except RuntimeClosed:
                break
            except Exception:  # a worker process could not be started at all
                return self._exited(request_id)
            invocation = self._attempt(worker, body, request_id)
            if invocation is not None:
                return invocation
        return self._exited(request_id)

    def _attempt(self, worker: _Worker, body: bytes, request_id: str) -> Invocation | None:
        """The invocation run in this environment, or None if the environment died before it began (while it loaded,
        or before it received the invocation: it never ran, so it can run in another). A cold start's loading counts
        towards the Timeout."""
        began, healthy = False, False
        deadline = time.monotonic() + self.config.timeout
        try:
            if not worker.loaded(deadline):
                return self._timed_out(request_id)
            if worker.load_error:
                return self._failed(request_id, *worker.load_error)
            worker.connection.send((body, request_id))
            if not worker.connection.poll(max(0.0, deadline - time.monotonic())):
                return self._timed_out(request_id)
            began = worker.connection.recv() == BEGAN
            if not began:
                return self._exited(request_id)  # not what a worker says: not trusted again
            if not worker.connection.poll(max(0.0, deadline - time.monotonic())):
                return self._timed_out(request_id)
            payload, failed, log = worker.connection.recv()
            healthy = True
            if len(payload.encode("utf-8")) > RESPONSE_LIMIT:
                payload, failed = json.dumps(function_error(
                    "Function.ResponseSizeTooLarge",
                    f"Response payload size exceeded maximum allowed payload size ({RESPONSE_LIMIT} bytes).")), True
            return Invocation(payload, failed, log, request_id)
        except (EOFError, OSError):
            if not began:
                return None
        except Exception:
            pass  # anything else while handing over: the environment is not trusted again
        finally:
            self._release(worker, healthy)
        return self._exited(request_id)

    def enqueue(self, body: bytes) -> bool:
        """Queue an Event invocation; False (throttled) when the queue is full."""
        with self.available:
            if self.closed or len(self.events) >= EVENT_QUEUE_EVENTS or \
                    self.event_bytes + len(body) > EVENT_QUEUE_BYTES:
                return False
            self.events.append(body)
            self.event_bytes += len(body)
            if len(self.event_threads) < self.workers:
                thread = threading.Thread(target=self._serve_events, daemon=True,
                                          name=f"{self.logical_id}-events-{len(self.event_threads)}")
                self.event_threads.append(thread)
                thread.start()
            self.available.notify_all()
        return True

    def _serve_events(self) -> None:
        while True:
            with self.available:
                while not self.events and not self.closed:
                    self.available.wait()
                if self.closed:
                    return
                body = self.events.popleft()
                self.event_bytes -= len(body)
            self.invoke(body, synchronous=False)

    @staticmethod
    def _failed(request_id: str, error_type: str, message: str) -> Invocation:
        log = f"START RequestId: {request_id} Version: $LATEST\n{message}\nEND RequestId: {request_id}\n"
        return Invocation(json.dumps(function_error(error_type, message)), True, log, request_id)

    def _exited(self, request_id: str) -> Invocation:
        return self._failed(request_id, "Runtime.ExitError",
                            f"RequestId: {request_id} Error: Runtime exited without providing a reason")

    def _timed_out(self, request_id: str) -> Invocation:
        return self._failed(request_id, "Sandbox.Timedout",
                            f"RequestId: {request_id} Error: Task timed out after {self.config.timeout:.2f} seconds")

    def close(self) -> None:
        """Stop at once: no new invocation starts, and every environment, idle or busy, is killed (a busy one's
        caller gets Runtime.ExitError)."""
        with self.available:
            self.closed = True
            workers = [*self.idle, *self.busy]
            self.idle.clear()
            self.events.clear()
            self.event_bytes = 0
            self.available.notify_all()
        for worker in workers:
            if worker.process.is_alive():
                worker.process.kill()
        for worker in workers:
            worker.process.join(KILL_WAIT)


class Functions:
    """Every function of the template, each with its own execution environments; ``overrides`` are environment
    variables set over the template's in every function (as ``sam local --env-vars``); the functions in ``warm``
    start their environments at once (by default the API function, which so answers its first request warm);
    ``log`` is a file the functions' output goes to instead of stderr (as ``sam local --log-file``)."""

    def __init__(self, template: pathlib.Path, workers: int, overrides: dict[str, str] | None = None,
                 warm: tuple[str, ...] = (sam_template.DEFAULT_FUNCTION,), log: str | None = None) -> None:
        data = sam_template.load_template(template)
        # A template without a function to warm fails here, in one line, before any worker starts.
        for name in warm:
            sam_template.function_paths(data, name, template.parent)
        self.runtimes = {name: Runtime(template, name, workers, overrides, log)
                         for name in sam_template.function_names(data)}
        for name in warm:
            self.runtimes[name].warm()

    def get(self, logical_id: str) -> Runtime | None:
        return self.runtimes.get(logical_id)

    def close(self) -> None:
        for runtime in self.runtimes.values():
            runtime.close()
