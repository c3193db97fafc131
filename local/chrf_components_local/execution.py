"""What every part of the local runner shares about one execution: its stop signal (Control), its context object and
variables (Context), its history (history.py), how values travel as JSON (``dumps``, ``encoded``), the paths that
select and place data, and how Retry and Catch match errors."""

from __future__ import annotations

import datetime
import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from .asl import DATA_LIMIT, Path, Retrier, StatesError
from .history import Allowance, History

BRANCH_THREADS = 64  # threads all of an execution's Parallels run their branches on, at most
HISTORY_LIMIT = 25000  # events in a Standard execution's history: past it, the execution fails
EXPRESS_DURATION = 300  # seconds an Express execution may run: past it, it times out


class Stopped(Exception):
    """The execution was stopped (StopExecution, or the server stopping): it ends ABORTED where it is."""


class Control:
    """What one execution (and its child executions) share: the stop signal. A Parallel's branches each have one
    of their own under it (``parent``): a branch is stopped when its execution is, or when another branch fails."""

    def __init__(self, parent: Control | None = None) -> None:
        self.stop = threading.Event()
        self.parent = parent

    def stopped(self) -> bool:
        return self.stop.is_set() or (self.parent is not None and self.parent.stopped())

    def check(self) -> None:
        """Raise Stopped once the execution (or this branch) has been asked to stop."""
        if self.stopped():
            raise Stopped

    def pause(self, seconds: float) -> None:
        """A retrier's or a Wait's wait, cut short (Stopped) when the execution is stopped."""
        if self.parent is None:
            if self.stop.wait(seconds):
                raise Stopped
            return
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.check()
            self.stop.wait(min(left, 0.05))  # a parent's stop is seen within 50 ms
        self.check()


class Execution(NamedTuple):
    """An execution as DescribeExecution tells it: status SUCCEEDED (with the output as JSON text) or FAILED
    (with the error and cause)."""

    arn: str
    status: str
    output: str | None = None
    error: str | None = None
    cause: str | None = None

    def described(self) -> dict[str, Any]:
        return {key: value for key, value in (("executionArn", self.arn), ("status", self.status),
                                              ("output", self.output), ("error", self.error),
                                              ("cause", self.cause)) if value is not None}


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def timestamp(moment: datetime.datetime) -> str:
    """ISO 8601 in UTC with milliseconds, as Step Functions writes dates in JSON documents."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _compact_encoder() -> Callable[[Any], str]:
    """json's own C encoder, made once (json.dumps makes an encoder, and json.JSONEncoder.encode a C encoder, per
    call: half the time of a small item's encoding). Without a circular check: what it encodes was decoded from JSON
    or built from it, and a cycle would still end, as a RecursionError."""
    from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]

    if c_make_encoder is None:  # not CPython's json: its Python encoder
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def refused(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    encode = c_make_encoder(None, refused, encode_basestring, None, ":", ",", False, False, True)

    def compact(value: Any) -> str:
        if isinstance(value, str):
            return str(encode_basestring(value))
        return "".join(encode(value, 0))

    return compact


dumps = _compact_encoder()
dumps.__doc__ = "Compact JSON text, non-ASCII as it is: what Step Functions passes between states and to tasks."


def encoded(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8; a string holding a lone surrogate (which UTF-8 cannot carry) makes the
    whole document escape non-ASCII as \\uXXXX, so it still reads back as the same value."""
    try:
        return dumps(value).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def json_size(value: Any) -> int:
    return len(encoded(value))


# ---- an execution's context object --------------------------------------------------------------------------------


class Context:
    """The context object ($$) of one execution, and the state it is in."""

    def __init__(self, execution: dict[str, Any], machine: dict[str, Any], control: Control | None = None,
                 express: bool = False, history: History | None = None,
                 variables: dict[str, Any] | None = None) -> None:
        self.execution, self.machine = execution, machine
        self.control = control or Control()
        self.state: dict[str, Any] = {}
        self.item: dict[str, Any] | None = None
        self.raw_input: tuple[Any, bytes] | None = None  # a child's input as decoded, with the bytes it came from
        self.tally = [0]  # history events so far, shared with Parallel branches (a Standard execution's are bounded)
        self.deadline = time.monotonic() + EXPRESS_DURATION if express else None  # an Express one's duration
        self.history = history  # the events GetExecutionHistory answers (None: not kept, as for a Map's children)
        self.previous = 0  # the id of the last event of this thread of the execution (previousEventId)
        self.variables: dict[str, Any] = variables if variables is not None else {}
        self.inspection: dict[str, Any] | None = None  # TestState at DEBUG and TRACE: the data at each step
        self.branch_threads = Allowance(BRANCH_THREADS)  # shared with its Parallels' branches

    @property
    def events(self) -> int:
        return self.tally[0]

    def branch(self, control: Control) -> Context:
        """A Parallel branch's context: the same execution, history and count, its own stop signal, thread of
        events and scope of variables (it reads the outer ones; what it assigns stays in it)."""
        inner = Context(self.execution, self.machine, control, history=self.history,
                        variables=dict(self.variables))
        inner.tally, inner.deadline, inner.previous = self.tally, self.deadline, self.previous
        inner.branch_threads = self.branch_threads
        return inner

    def event(self, kind: str, key: str | None = None, details: dict[str, Any] | None = None) -> None:
        """Add an event to the execution's history (if it keeps one), after this thread's last."""
        if self.history is not None:
            self.previous = self.history.add(kind, self.previous, key, details)

    def bindings(self, data: Any, **extra: Any) -> dict[str, Any]:
        """What a JSONata expression sees: the variables, and $states (input, context, and ``extra``: result,
        errorOutput)."""
        return {**self.variables, "states": {"input": data, "context": self.data(), **extra}}

    def count(self, events: int) -> None:
        """Count history events, and end an execution past AWS's bounds (service-quotas.html): a Standard
        execution's history of HISTORY_LIMIT events (it fails), an Express execution's EXPRESS_DURATION (it times
        out)."""
        self.control.check()
        self.tally[0] += events
        if self.deadline is None and self.tally[0] > HISTORY_LIMIT:
            raise StatesError("States.Runtime", f"The execution history reached {HISTORY_LIMIT} events, the quota "
                                                f"of a Standard execution: the execution fails")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise StatesError("States.Timeout", f"An Express execution ran past {EXPRESS_DURATION} seconds, its "
                                                f"longest duration")

    def pause(self, seconds: float) -> None:
        """A retrier's wait: cut short when the execution is stopped, and never past an Express deadline."""
        if self.deadline is not None:
            seconds = min(seconds, max(0.0, self.deadline - time.monotonic()))
        self.control.pause(seconds)
        self.count(0)

    def data(self) -> dict[str, Any]:
        data = {"Execution": self.execution, "StateMachine": self.machine, "State": self.state}
        if self.item is not None:
            data["Map"] = {"Item": self.item}
        return data

    def part(self, name: Any) -> Any:
        """``$$.<name>`` without building the whole object (None where there is none); $$.Map.Item paths read
        ``item`` directly (asl.Path)."""
        if name == "Map":
            return None if self.item is None else {"Item": self.item}
        return {"Execution": self.execution, "StateMachine": self.machine, "State": self.state}.get(name) \
            if isinstance(name, str) else None


def select(data: Any, path: Path | None, context: Context, field: str) -> Any:
    """InputPath or OutputPath: the whole data when absent, {} when null."""
    if path is None:
        return {}
    return path.resolve(data, context, field)


def put(data: Any, path: Path | None, value: Any) -> Any:
    """``data`` with ``value`` placed at a ResultPath (None: the result is discarded)."""
    return data if path is None else path.put(data, value)


def checked_size(value: Any, where: str) -> Any:
    size = json_size(value)
    if size > DATA_LIMIT:
        raise StatesError("States.DataLimitExceeded", f"The {where} has a size of {size} bytes, over the limit of "
                                                      f"{DATA_LIMIT} bytes")
    return value


# ---- errors: Retry and Catch ---------------------------------------------------------------------------------------


def matches(names: list[str], error: str, task: bool) -> bool:
    """Whether an ErrorEquals list matches an error: by name; States.ALL matches every error but the terminal
    States.Runtime and States.DataLimitExceeded; States.TaskFailed (in a Task or Map) every one but States.Timeout
    and those."""
    if error == "States.Runtime":
        return False
    if error in names:
        return True
    if error == "States.DataLimitExceeded":
        return False
    return "States.ALL" in names or (task and "States.TaskFailed" in names and error != "States.Timeout")


def retry_delay(retrier: Retrier, retries: int, draw: Callable[[], float]) -> float:
    """Seconds before retry number ``retries`` (0 for the first): IntervalSeconds times BackoffRate to the power of
    the retries already made, at most MaxDelaySeconds; with JitterStrategy FULL, a random share of it."""
    try:
        delay = retrier.interval * retrier.backoff_rate ** retries
    except OverflowError:  # a BackoffRate of 1e308: past any bound below
        delay = math.inf
    delay = min(delay, retrier.max_delay)
    return delay * draw() if retrier.full_jitter else float(delay)


