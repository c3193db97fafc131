"""A local runner for this project's state machine (statemachine/corpus_pipeline.asl.json), read from the file.

Not a Step Functions implementation: it runs the parts of the Amazon States Language that the corpus pipeline's
definition uses, following AWS's documented rules. The definition is parsed once, before anything runs (asl.py:
every state type, field, JSONPath or intrinsic function it does not implement is refused there by name, ``the local
runner does not implement ItemReader.ReaderConfig.CSVHeaders``); this module runs the parsed states: Retry and
Catch as AWS matches errors (``States.ALL``, ``States.TaskFailed``), the Distributed Map's items read from S3,
selected, batched and run as child workflows in threads (at most ``MaxConcurrency`` and the runner's own bound),
its tolerated failures, ResultWriter's manifest and SUCCEEDED_n / FAILED_n files as AWS writes them, a Map Run
record for DescribeMapRun, Step Functions' quota of 256 KiB for a state's input or output
(``States.DataLimitExceeded``) and the bounds of an execution (history events, an Express execution's duration).

The Lambda tasks go through a Lambda Invoke API (``LambdaInvoke``: `serve`'s over loopback, or any endpoint), and
S3 through a boto3 client (a local S3 such as moto's server). Every rule a test pins cites the AWS page it follows
(tests/pipeline/test_local_runner.py).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import json
import math
import os
import random
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import IO, Any, NamedTuple

from .asl import (
    DATA_LIMIT,
    NO_RESULT,
    Choice,
    Fail,
    Machine,
    Map,
    Pass,
    Path,
    Retrier,
    StatesError,
    Succeed,
    Task,
    Template,
    parse_machine,
)
from .template import LOCAL_REGION, LOCAL_ROLE, is_loopback, local_arn

HISTORY_LIMIT = 25000  # events in a Standard execution's history: past it, the execution fails
EXPRESS_DURATION = 300  # seconds an Express execution may run: past it, it times out
RESULT_FILE_LIMIT = 5 * 1024**3  # ResultWriter starts another result file past 5 GB
READ_CHUNK = 1 << 20


class Stopped(Exception):
    """The execution was stopped (StopExecution, or the server stopping): it ends ABORTED where it is."""


class Control:
    """What one execution (and its child executions) share: the stop signal, and how many states it entered."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.transitions = 0

    def check(self) -> None:
        """Raise Stopped once the execution has been asked to stop."""
        if self.stop.is_set():
            raise Stopped

    def pause(self, seconds: float) -> None:
        """A retrier's wait, cut short (Stopped) when the execution is stopped."""
        if self.stop.wait(seconds):
            raise Stopped


class LambdaAnswer(NamedTuple):
    """What the Lambda Invoke API answered: the payload, X-Amz-Function-Error (None when the function succeeded),
    and the request id."""

    payload: bytes
    function_error: str | None
    request_id: str


LambdaInvoke = Callable[[str, bytes], LambdaAnswer]  # (function name or ARN, JSON payload); raises StatesError


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
                 express: bool = False) -> None:
        self.execution, self.machine = execution, machine
        self.control = control or Control()
        self.state: dict[str, Any] = {}
        self.item: dict[str, Any] | None = None
        self.raw_input: tuple[Any, bytes] | None = None  # a child's input as decoded, with the bytes it came from
        self.events = 0  # history events so far (a Standard execution's are bounded)
        self.deadline = time.monotonic() + EXPRESS_DURATION if express else None  # an Express one's duration

    def count(self, events: int) -> None:
        """Count history events, and end an execution past AWS's bounds (service-quotas.html): a Standard
        execution's history of HISTORY_LIMIT events (it fails), an Express execution's EXPRESS_DURATION (it times
        out)."""
        self.control.check()
        self.events += events
        if self.deadline is None and self.events > HISTORY_LIMIT:
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


# ---- running -------------------------------------------------------------------------------------------------------


class MapRun:
    """A Map Run's record, as DescribeMapRun tells it."""

    def __init__(self, arn: str, execution_arn: str, state: Map, concurrency: int) -> None:
        self.arn, self.execution_arn = arn, execution_arn
        self.start: datetime.datetime = now()
        self.stop: datetime.datetime | None = None
        self.status = "RUNNING"
        self.max_concurrency = concurrency
        self.tolerated_count, self.tolerated_percentage = state.tolerated_count, state.tolerated_percentage
        self.items = dict.fromkeys(("pending", "running", "succeeded", "failed", "timedOut", "aborted", "total",
                                    "resultsWritten"), 0)
        self.executions = dict(self.items)

    def settle(self) -> None:
        """A Map Run that ended with children still running (stopped, or failed part way): they are aborted, as
        DescribeMapRun counts them once the run has ended (pending and running settle to aborted)."""
        for counts in (self.items, self.executions):
            counts["aborted"] += counts["running"] + counts["pending"]
            counts["running"] = counts["pending"] = 0

    def described(self) -> dict[str, Any]:
        described = {"mapRunArn": self.arn, "executionArn": self.execution_arn, "status": self.status,
                     "startDate": self.start.timestamp(), "maxConcurrency": self.max_concurrency,
                     "toleratedFailurePercentage": float(self.tolerated_percentage or 0),
                     "toleratedFailureCount": self.tolerated_count or 0, "itemCounts": dict(self.items),
                     "executionCounts": dict(self.executions), "redriveCount": 0}
        if self.stop is not None:
            described["stopDate"] = self.stop.timestamp()
        return described


class MapRuns:
    """The Map Runs this runner ran (thread-safe), for DescribeMapRun."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[str, MapRun] = {}

    def add(self, run: MapRun) -> None:
        with self.lock:
            self.runs[run.arn] = run

    def describe(self, arn: str) -> dict[str, Any] | None:
        with self.lock:
            run = self.runs.get(arn)
            return run.described() if run else None

    def of_execution(self, execution_arn: str) -> list[MapRun]:
        """The Map Runs an execution started, newest first."""
        with self.lock:
            return [run for run in reversed(self.runs.values()) if run.execution_arn == execution_arn]

    def forget(self, execution_arn: str) -> None:
        """Forget the Map Runs of an execution no longer remembered."""
        with self.lock:
            for run in [run for run in self.runs.values() if run.execution_arn == execution_arn]:
                del self.runs[run.arn]


class Services(NamedTuple):
    """What the runner reaches outside itself."""

    lambda_invoke: LambdaInvoke
    s3: Any  # a boto3 S3 client
    map_runs: MapRuns
    concurrency: int = 4  # child executions at once, at most (and at most MaxConcurrency)
    sleep: Callable[[float], None] | None = None  # a retrier's wait; None: wait, unless the execution is stopped
    jitter: Callable[[], float] = random.random  # a share in [0, 1) of a FULL-jitter delay
    progress: Callable[[int, int], None] | None = None  # (child executions done, in all), from the caller's thread


class Batch(NamedTuple):
    """A child execution's input, spooled: where it lies and which items it holds."""

    offset: int
    size: int
    first_item: int
    items: int


class StateMachine:
    """One state machine definition, checked, run on ``services`` in ``region`` of the local account."""

    def __init__(self, definition: dict[str, Any], name: str, services: Services,
                 region: str = LOCAL_REGION) -> None:
        self.machine = parse_machine(definition)
        self.definition, self.name, self.services, self.region = definition, name, services, region
        self.arn = self.arn_of(f"stateMachine:{name}")

    def arn_of(self, resource: str) -> str:
        return local_arn("states", self.region, resource)

    def execution_arn(self, name: str) -> str:
        return self.arn_of(f"execution:{self.name}:{name}")

    def execute(self, execution_input: Any, name: str | None = None, control: Control | None = None,
                started: datetime.datetime | None = None) -> Execution:
        """Run one execution to its end (the caller waits, as for StartSyncExecution); ABORTED when ``control``
        is told to stop."""
        name = name or str(uuid.uuid4())
        arn = self.execution_arn(name)
        context = Context({"Id": arn, "Input": execution_input, "Name": name, "StartTime": timestamp(started or now()),
                           "RoleArn": LOCAL_ROLE}, {"Id": self.arn, "Name": self.name},
                          control)
        try:
            checked_size(execution_input, "execution input")
            output = self.run(self.machine, execution_input, context)
        except StatesError as error:
            return Execution(arn, "FAILED", error=error.error, cause=error.cause)
        except Stopped:
            return Execution(arn, "ABORTED")
        return Execution(arn, "SUCCEEDED", output=dumps(output))

    def run(self, machine: Machine, data: Any, context: Context) -> Any:
        name = machine.start_at
        while True:
            context.count(2)  # its Entered and Exited events
            state = machine.states[name]
            context.state = {"Name": name, "EnteredTime": timestamp(now()), "RetryCount": 0}
            if isinstance(state, Fail):
                error = state.error_path.resolve(data, context, "ErrorPath") if state.error_path else state.error
                cause = state.cause_path.resolve(data, context, "CausePath") if state.cause_path else state.cause
                raise StatesError(str(error), cause if isinstance(cause, str) else dumps(cause))
            effective = select(data, state.input_path, context, "InputPath")
            if isinstance(state, Succeed):
                return select(effective, state.output_path, context, "OutputPath")
            if isinstance(state, Choice):
                name = self.choose(state, effective, context)
                data = select(effective, state.output_path, context, "OutputPath")
                continue
            assert isinstance(state, (Pass, Task))
            try:
                if isinstance(state, Pass):
                    result = state.parameters.evaluate(effective, context) if state.parameters else \
                        effective if state.result is NO_RESULT else state.result
                else:
                    result = self.with_retries(state, effective, context)
                    if state.result_selector is not None:
                        result = state.result_selector.evaluate(result, context)
                output = put(data, state.result_path, result)
                output = checked_size(select(output, state.output_path, context, "OutputPath"),
                                      f"output of state {name}")
            except StatesError as error:
                catcher = next((catcher for catcher in state.catchers if
                                matches(catcher.error_equals, error.error, True)), None) \
                    if isinstance(state, Task) else None
                if catcher is None:
                    raise
                data = put(data, catcher.result_path, {"Error": error.error, "Cause": error.cause})
                name = catcher.next
                continue
            if state.end:
                return output
            data, name = output, str(state.next)

    def with_retries(self, state: Task, effective: Any, context: Context) -> Any:
        attempts = [0] * len(state.retriers)
        while True:
            try:
                context.count(3)  # Scheduled, Started, and Succeeded or Failed
                return self.map(state, effective, context) if isinstance(state, Map) else \
                    self.task(state, effective, context)
            except StatesError as error:
                found = next((number for number, retrier in enumerate(state.retriers)
                              if matches(retrier.error_equals, error.error, True)), None)
                if found is None:
                    raise
                retrier = state.retriers[found]
                if attempts[found] >= retrier.max_attempts:
                    raise
                delay = retry_delay(retrier, attempts[found], self.services.jitter)
                if self.services.sleep is None:
                    context.pause(delay)
                else:
                    self.services.sleep(delay)
                attempts[found] += 1
                context.state["RetryCount"] = context.state.get("RetryCount", 0) + 1

    def choose(self, state: Choice, data: Any, context: Context) -> str:
        for holds, following in state.choices:
            if holds(data, context):
                return following
        if state.default is not None:
            return state.default
        raise StatesError("States.NoChoiceMatched", f"No Choice Rules matched in state {state.name}, and no Default")

    # ---- Task: arn:aws:states:::lambda:invoke ----

    def task(self, state: Task, effective: Any, context: Context) -> Any:
        assert state.parameters is not None  # a lambda:invoke Task's are required
        parameters = state.parameters.evaluate(effective, context)
        function = parameters["FunctionName"]
        if "Qualifier" in parameters:
            function = f"{function}:{parameters['Qualifier']}"
        raw = context.raw_input
        # measured as sent, encoded once: a child's input passed on whole ("Payload.$": "$") is the bytes it came as
        payload = raw[1] if raw is not None and parameters["Payload"] is raw[0] else encoded(parameters["Payload"])
        if len(payload) > DATA_LIMIT:
            raise StatesError("States.DataLimitExceeded", f"The task's input has a size of {len(payload)} bytes, over "
                                                          f"the limit of {DATA_LIMIT} bytes")
        answer = self.services.lambda_invoke(str(function), payload)
        text = answer.payload.decode("utf-8", "replace")
        if answer.function_error:
            try:
                detail = json.loads(text)
            except ValueError:
                detail = None
            error = detail.get("errorType") if isinstance(detail, dict) else None
            raise StatesError(error if isinstance(error, str) and error else "Lambda.Unknown", text)
        try:
            result = json.loads(text) if text else None
        except ValueError:
            result = text
        checked_size(result, "task's result")
        return {"ExecutedVersion": "$LATEST", "Payload": result,
                "SdkHttpMetadata": {"HttpHeaders": {"Content-Type": "application/json",
                                                    "X-Amz-Executed-Version": "$LATEST",
                                                    "x-amzn-RequestId": answer.request_id},
                                    "HttpStatusCode": 200},
                "SdkResponseMetadata": {"RequestId": answer.request_id}, "StatusCode": 200}

    # ---- Map: a Distributed Map ----

    def map(self, state: Map, effective: Any, context: Context) -> Any:
        label = state.label or state.name
        run_id = str(uuid.uuid4())
        limit = state.max_concurrency
        parallel = min(limit, self.services.concurrency) if limit else self.services.concurrency
        record = MapRun(self.arn_of(f"mapRun:{self.name}/{label}:{run_id}"), context.execution["Id"], state, limit)
        self.services.map_runs.add(record)
        try:
            with tempfile.TemporaryFile() as spool:
                child = ChildRuns(self, state, label, run_id, record, spool, (effective, context))
                batches = self.read_batches(state, effective, context, child)
                try:
                    outputs = child.run_all(batches, max(1, parallel))  # children start as the batches are read
                finally:  # stopped or failed: the object's GET is closed now, not when the reader is collected
                    batches.close()
            record.status = "FAILED" if child.exceeded else "SUCCEEDED"
            if child.exceeded:
                raise StatesError("States.ExceedToleratedFailureThreshold",
                                  f"The specified tolerated failure threshold was exceeded: {record.items['failed']} "
                                  f"of {record.items['total']} items failed")
            return outputs if outputs is not None else child.written
        except BaseException as error:
            if record.status == "RUNNING":
                record.status = "ABORTED" if isinstance(error, Stopped) else "FAILED"
            raise
        finally:
            record.stop = now()
            record.settle()

    def read_batches(self, state: Map, effective: Any, context: Context,
                     child: ChildRuns) -> Generator[Batch, None, None]:
        """Read the items (ItemReader), select each (ItemSelector) and batch them (ItemBatcher) into the child
        runs' spool: the child executions' inputs, each checked against the 256 KiB limit, yielded as each is
        complete, so children run while the rest is still read (the Map Run's totals grow as they start). A large
        object on `serve`'s own S3 is read by a process of its own (ReaderProcess), beside the children."""
        location = checked_location(state.reader.evaluate(effective, context))
        source = ItemSource.of(state)
        process = ReaderProcess.start(self.services.s3, location, source, effective, context)
        if process is not None:
            with process:
                yield from self.spooled(child, process)
            return
        items = read_items(self.services.s3, location, source.max_items)
        with contextlib.closing(items):
            yield from self.spooled(child, batched(source, effective, context, items))

    @staticmethod
    def spooled(child: ChildRuns, batches: Iterable[tuple[bytes, int, int]]) -> Iterator[Batch]:
        for data, first_item, items in batches:
            with child.spool_lock:  # children read the spool meanwhile
                child.spool.seek(0, os.SEEK_END)
                batch = Batch(child.spool.tell(), len(data), first_item, items)
                child.spool.write(data)
            yield batch


class ItemSource(NamedTuple):
    """What reading a Map's items takes: its ItemSelector, ItemBatcher and ItemReader's MaxItems (picklable, for a
    reader in a process of its own)."""

    selector: Template | None
    batch_input: Template | None
    batched: bool
    max_items_per_batch: float
    max_input_bytes: int
    max_items: int | None

    @classmethod
    def of(cls, state: Map) -> ItemSource:
        return cls(state.selector, state.batch_input, state.batched, state.max_items_per_batch,
                   state.max_input_bytes, state.max_items)


def checked_location(location: Any) -> dict[str, str]:
    bucket, key = (location.get("Bucket"), location.get("Key")) if isinstance(location, dict) else (None, None)
    if not isinstance(bucket, str) or not isinstance(key, str):
        raise StatesError("States.ItemReaderFailed", "ItemReader.Parameters: Bucket and Key must be strings")
    return {"Bucket": bucket, "Key": key}


def batched(source: ItemSource, effective: Any, context: Context,
            items: Iterator[tuple[int, Any]]) -> Iterator[tuple[bytes, int, int]]:
    """The items selected (ItemSelector) and batched (ItemBatcher): each child's input as (its bytes, its first
    item's index, its number of items), as each is complete."""
    max_items_per_batch, max_bytes = source.max_items_per_batch, source.max_input_bytes
    if source.batched:
        envelope = {"BatchInput": source.batch_input.evaluate(effective, context)} if source.batch_input else {}
        base = json_size({**envelope, "Items": []})
    pending: list[bytes] = []
    pending_size, first = 0, 0

    def flush() -> tuple[bytes, int, int]:
        nonlocal pending, pending_size
        data = (encoded(envelope)[:-1] + b"," if envelope else b"{") + b'"Items":[' + b",".join(pending) + b"]}"
        batch = (data, first, len(pending))
        pending, pending_size = [], 0
        return batch

    for index, (line, item) in enumerate(items):
        context.item = {"Index": index, "Value": item}
        try:
            selected = source.selector.evaluate(effective, context) if source.selector else item
        finally:
            context.item = None
        text = encoded(selected)
        size = len(text)
        if not source.batched:
            if size > DATA_LIMIT:
                raise StatesError("States.DataLimitExceeded", f"line {line}: {size} bytes, over the "
                                                              f"{DATA_LIMIT}-byte input of a child execution")
            yield text, index, 1
            continue
        if base + size > max_bytes:
            raise StatesError("States.ItemReaderFailed",
                              f"line {line}: a batch of this item alone takes {base + size} bytes, more than "
                              f"MaxInputBytesPerBatch ({max_bytes})")
        separator = 1 if pending else 0
        if pending and (len(pending) >= max_items_per_batch or base + pending_size + separator + size > max_bytes):
            yield flush()
            separator = 0
        if not pending:
            first = index
        pending.append(text)
        pending_size += separator + size
    if pending:
        yield flush()


def read_items(s3: Any, location: dict[str, str], max_items: int | None) -> Generator[tuple[int, Any], None, None]:
    """The JSONL object's items with their 1-based line numbers (blank lines hold none), one per line, read a
    chunk at a time: a line that is not one JSON value fails the Map run (States.ItemReaderFailed), as does a line
    too long to be any child's input."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = location["Bucket"], location["Key"]
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    except (ClientError, BotoCoreError) as error:
        raise StatesError("States.ItemReaderFailed", f"s3:getObject s3://{bucket}/{key}: {error}") from None
    count, number, pending = 0, 0, b""
    with contextlib.closing(body):
        while max_items is None or count < max_items:
            chunk = body.read(READ_CHUNK)
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop() if chunk else b""
            if len(pending) > DATA_LIMIT:
                raise StatesError("States.ItemReaderFailed", f"line {number + len(lines) + 1}: longer than "
                                                             f"{DATA_LIMIT} bytes")
            for line in lines:
                number += 1
                if not line.strip():
                    continue
                try:
                    item = json.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    raise StatesError("States.ItemReaderFailed", f"line {number}: not one JSON value in "
                                                                 f"UTF-8") from None
                yield number, item
                count += 1
                if max_items is not None and count >= max_items:
                    return
            if not chunk:
                return


READER_PROCESS_BYTES = 16 * 1024 * 1024  # an object at least this large on serve's own S3 is read in a process


class ReaderProcess:
    """A Map's items read, selected and batched by a process of its own (spawned), sent to the runner through a
    pipe: the runner's process also answers S3 and the functions, and reading, decoding and encoding a large
    object's items took half its time (py-spy, 10^6 lines), time the children then waited for. Only for an object
    of READER_PROCESS_BYTES and more on serve's own S3 (a loopback endpoint the process reaches too); the same
    functions (read_items, batched) run there, so the batches and errors are the same bytes and words."""

    def __init__(self, process: Any, connection: Any) -> None:
        self.process, self.connection = process, connection

    @classmethod
    def start(cls, s3: Any, location: dict[str, str], source: ItemSource, effective: Any,
              context: Context) -> ReaderProcess | None:
        import multiprocessing
        from urllib.parse import urlsplit

        endpoint = str(getattr(getattr(s3, "meta", None), "endpoint_url", "") or "")
        if not endpoint.startswith("http://") or not is_loopback(urlsplit(endpoint).hostname or ""):
            return None
        try:
            size = int(s3.head_object(Bucket=location["Bucket"], Key=location["Key"])["ContentLength"])
            frozen = s3._request_signer._credentials.get_frozen_credentials()
            credentials = (frozen.access_key, frozen.secret_key, frozen.token)
        except Exception:  # the GET in this process answers it (NoSuchKey and the like) as the Map run's error
            return None
        if size < READER_PROCESS_BYTES:
            return None
        spawn = multiprocessing.get_context("spawn")
        receiving, sending = spawn.Pipe(duplex=False)
        process = spawn.Process(target=read_in_process, name="chrf-map-reader", daemon=True,
                                args=(sending, endpoint, s3.meta.region_name, credentials, s3.meta.config, location,
                                      source, effective, (context.execution, context.machine, context.state)))
        process.start()
        sending.close()
        return cls(process, receiving)

    def __iter__(self) -> Iterator[tuple[bytes, int, int]]:
        while True:
            try:
                message = self.connection.recv()
            except EOFError:
                raise StatesError("States.ItemReaderFailed", "the item reader ended without reading the "
                                                             "object") from None
            if message is None:
                return
            if message[0] == "error":
                raise StatesError(message[1], message[2])
            yield message[1], message[2], message[3]

    def __enter__(self) -> ReaderProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        """Done, failed or stopped: the process ends now (a stopped run does not read on)."""
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(10)
        self.connection.close()


def read_in_process(connection: Any, endpoint: str, region: str, credentials: tuple[str, str, str | None],
                    config: Any, location: dict[str, str], source: ItemSource, effective: Any,
                    parts: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]) -> None:
    """ReaderProcess's process: the batches, then None; or the Map run's error."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to act on: it ends this process
    try:
        import boto3

        key, secret, token = credentials
        s3 = boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret, aws_session_token=token,
                                   region_name=region).client("s3", endpoint_url=endpoint, config=config)
        context = Context(parts[0], parts[1])
        context.state = parts[2]
        items = read_items(s3, location, source.max_items)
        with contextlib.closing(items):
            for data, first, count in batched(source, effective, context, items):
                connection.send(("batch", data, first, count))
        connection.send(None)
    except StatesError as error:
        connection.send(("error", error.error, error.cause))
    except (BrokenPipeError, ConnectionError):  # the runner is gone: nothing to answer
        pass
    except Exception as error:  # never a traceback on the command's terminal
        with contextlib.suppress(OSError):
            connection.send(("error", "States.ItemReaderFailed", f"the item reader failed: {error}"))


class ChildRuns:
    """A Map Run's child executions: run in threads, at most ``parallel`` at once, their records spooled in
    completion order (SUCCEEDED and FAILED apart) for ResultWriter."""

    def __init__(self, machine: StateMachine, state: Map, label: str, run_id: str, record: MapRun,
                 spool: IO[bytes], state_input: tuple[Any, Context]) -> None:
        self.machine, self.state, self.label, self.run_id, self.record = machine, state, label, run_id, record
        self.state_input = state_input  # the Map state's effective input and context, for ResultWriter's paths
        self.spool, self.spool_lock = spool, threading.Lock()
        self.express = state.express
        self.exceeded = False
        self.written: dict[str, Any] | None = None

    def read(self, batch: Batch) -> bytes:
        with self.spool_lock:
            self.spool.seek(batch.offset)
            return self.spool.read(batch.size)

    def run_one(self, batch: Batch) -> dict[str, Any]:
        """One child execution: its record as ResultWriter writes it."""
        machine, name = self.machine, str(uuid.uuid4())
        arn = machine.arn_of(f"express:{machine.name}/{self.label}:{self.run_id}:{name}" if self.express else
                             f"execution:{machine.name}/{self.label}:{name}")
        started = now()
        raw = self.read(batch)
        text = raw.decode("utf-8")
        data = json.loads(text)
        context = Context({"Id": arn, "Input": data, "Name": name, "StartTime": timestamp(started),
                           "RoleArn": LOCAL_ROLE},
                          {"Id": f"{machine.arn}/{self.label}", "Name": f"{machine.name}/{self.label}"},
                          self.state_input[1].control, self.express)
        context.raw_input = (data, raw)
        entry: dict[str, Any] = {"ExecutionArn": arn, "Input": text, "InputDetails": {"Included": True},
                                 "Name": name}
        try:
            output = machine.run(self.state.processor, data, context)
            entry.update(Output=dumps(output), OutputDetails={"Included": True}, Status="SUCCEEDED")
        except StatesError as error:
            entry.update(Error=error.error, Cause=error.cause, Status="FAILED")
        entry.update(RedriveCount=0, RedriveStatus="NOT_REDRIVABLE",
                     RedriveStatusReason="Execution is SUCCEEDED and cannot be redriven"
                     if entry["Status"] == "SUCCEEDED" else "Execution is an express execution",
                     StartDate=timestamp(started), StateMachineArn=context.machine["Id"], StopDate=timestamp(now()))
        return entry

    def tolerated(self, read_all: bool) -> bool:
        """Whether the failed items are within ToleratedFailureCount and ToleratedFailurePercentage (each only
        when given; with neither, no failure is tolerated). The percentage is of every item: it is judged once all
        are read (``read_all``), as the count can be at any time."""
        record = self.record
        failed, total = record.items["failed"], record.items["total"]
        count, percentage = record.tolerated_count, record.tolerated_percentage
        if count is None and percentage is None:
            return failed == 0
        return not ((count is not None and failed > count) or (
            read_all and percentage is not None and failed * 100 > percentage * total))

    def run_all(self, batches: Iterator[Batch], parallel: int) -> list[Any] | None:
        """Every child execution, started as its batch is read (no new one starts once the tolerated failures are
        exceeded); their outputs in item order when the Map has no ResultWriter, else None (the results are written
        to S3)."""
        record, services = self.record, self.machine.services
        outputs: list[Any] | None = None if self.state.writer else []
        output_bytes = 2
        pool = concurrent.futures.ThreadPoolExecutor(parallel, thread_name_prefix="child")
        with tempfile.TemporaryFile() as succeeded, tempfile.TemporaryFile() as failed:
            files: dict[str, IO[bytes]] = {"SUCCEEDED": succeeded, "FAILED": failed}
            counts = {"SUCCEEDED": 0, "FAILED": 0}
            running: dict[concurrent.futures.Future[dict[str, Any]], tuple[int, Batch]] = {}
            started, done, read_all = 0, 0, False
            try:
                while True:
                    while len(running) < parallel and not self.exceeded and not read_all:
                        batch = next(batches, None)  # read now: a child runs on while the next batch is read
                        if batch is None:
                            read_all = True
                            break
                        record.items["total"] += batch.items
                        record.executions["total"] += 1
                        record.items["running"] += batch.items
                        record.executions["running"] += 1
                        running[pool.submit(self.run_one, batch)] = (started, batch)
                        started += 1
                        if outputs is not None:
                            outputs.append(None)
                    if not running:
                        if read_all and not self.tolerated(read_all):
                            self.exceeded = True
                        break
                    finished, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                    for future in finished:
                        number, batch = running.pop(future)
                        entry = future.result()
                        status = entry["Status"]
                        key = "succeeded" if status == "SUCCEEDED" else "failed"
                        for counter, amount in ((record.items, batch.items), (record.executions, 1)):
                            counter["running"] -= amount
                            counter[key] += amount
                        target = files[status]
                        for piece in result_pieces(entry, self.state.transformation):
                            if self.state.output_type == "JSONL":
                                target.write(piece + b"\n")
                            else:
                                target.write((b"," if target.tell() else b"[") + piece)
                        counts[status] += 1
                        if outputs is not None:
                            value = json.loads(entry["Output"]) if status == "SUCCEEDED" else \
                                {"Error": entry["Error"], "Cause": entry["Cause"]}
                            output_bytes += json_size(value) + 1
                            if output_bytes > DATA_LIMIT:
                                raise StatesError("States.DataLimitExceeded",
                                                  f"The Map state's output is over {DATA_LIMIT} bytes (a ResultWriter "
                                                  f"writes larger results to S3)")
                            outputs[number] = value
                        if not self.tolerated(read_all):
                            self.exceeded = True
                        done += 1
                        if services.progress:
                            services.progress(done, record.executions["total"])
            finally:  # on an error or Ctrl-C, children still running are left to end on their own
                pool.shutdown(wait=not running, cancel_futures=True)
            if self.state.output_type == "JSON":
                for status, target in files.items():
                    if counts[status]:
                        target.write(b"]" if target.tell() else b"[]")
            if self.state.writer:
                self.written = self.write_results(self.state.writer.evaluate(*self.state_input), files, counts)
        return outputs

    def write_results(self, location: dict[str, Any], files: dict[str, IO[bytes]],
                      counts: dict[str, int]) -> dict[str, Any]:
        """ResultWriter: the result files and the manifest under Prefix/<Map Run id>/, as AWS writes them; the Map
        state's output names the manifest."""
        from botocore.exceptions import BotoCoreError, ClientError

        machine = self.machine
        bucket, prefix = location["Bucket"], location["Prefix"]
        folder = f"{prefix}/" if prefix and not prefix.endswith("/") else prefix
        folder += f"{self.run_id}/"
        manifest: dict[str, Any] = {"DestinationBucket": bucket, "MapRunArn": self.record.arn,
                                    "ResultFiles": {"FAILED": [], "PENDING": [], "SUCCEEDED": []}}
        try:
            for status, spool in files.items():
                if not counts[status]:
                    continue
                for number, (start, size) in enumerate(split_result_file(spool)):
                    key = f"{folder}{status}_{number}.json"
                    spool.seek(start)
                    machine.services.s3.upload_fileobj(LimitedReader(spool, size), bucket, key)
                    manifest["ResultFiles"][status].append({"Key": key, "Size": size})
            key = f"{folder}manifest.json"
            machine.services.s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(manifest, indent=2).encode())
        except (ClientError, BotoCoreError) as error:
            raise StatesError("States.ResultWriterFailed", f"s3:putObject s3://{bucket}/{folder}: {error}") from None
        self.record.items["resultsWritten"] = self.record.items["succeeded"] + self.record.items["failed"]
        self.record.executions["resultsWritten"] = counts["SUCCEEDED"] + counts["FAILED"]
        return {"MapRunArn": self.record.arn, "ResultWriterDetails": {"Bucket": bucket, "Key": key}}


def result_pieces(entry: dict[str, Any], transformation: str) -> list[bytes]:
    """What ResultWriter writes of one child execution (input-output-resultwriter.html): its record (NONE, and a
    failed one whatever the transformation), its output (COMPACT), or, where that output is an array, each of its
    elements (FLATTEN)."""
    if transformation == "NONE" or entry["Status"] != "SUCCEEDED":
        return [encoded(entry)]
    text: str = entry["Output"]
    if transformation == "FLATTEN" and text.startswith("["):
        return [encoded(element) for element in json.loads(text)]
    try:
        return [text.encode("utf-8")]
    except UnicodeEncodeError:  # a lone surrogate: escaped, as encoded() writes it
        return [encoded(json.loads(text))]


def split_result_file(spool: IO[bytes]) -> list[tuple[int, int]]:
    """(offset, size) of each result file: the whole spool, a JSON array, when it is within RESULT_FILE_LIMIT."""
    spool.seek(0, os.SEEK_END)
    size = spool.tell()
    if size > RESULT_FILE_LIMIT:
        raise StatesError("States.ResultWriterFailed", f"results of {size} bytes: the local runner writes one "
                                                       f"result file of at most {RESULT_FILE_LIMIT} bytes per status")
    return [(0, size)]


class LimitedReader:
    """At most ``size`` bytes of a file from its current position (for an upload of part of a spool)."""

    def __init__(self, file: IO[bytes], size: int) -> None:
        self.file, self.left = file, size

    def read(self, amount: int = -1) -> bytes:
        amount = self.left if amount is None or amount < 0 else min(amount, self.left)
        data = self.file.read(amount)
        self.left -= len(data)
        return data


def direct_invoke(answer: Callable[[str, str, dict[str, str], bytes], tuple[int, list[tuple[str, str]], bytes]]
                  ) -> LambdaInvoke:
    """Lambda tasks through the Invoke API of the same process (`serve`'s InvokeApi.answer: its rules and its
    answers, without an HTTP round trip and a request signed for it: Step Functions calls Lambda from inside AWS),
    with the names :func:`invoke_api` gives what goes wrong: Lambda.<the API's error code>."""

    def invoke(function: str, payload: bytes) -> LambdaAnswer:
        status, headers, body = answer(function, "", {}, payload)
        found = {name.lower(): value for name, value in headers}
        if status != 200:
            code = found.get("x-amzn-errortype") or "ServiceException"
            raise StatesError(f"Lambda.{code}", body.decode("utf-8", "replace"))
        return LambdaAnswer(body, found.get("x-amz-function-error"), found.get("x-amzn-requestid", ""))

    return invoke


def invoke_api(client: Any) -> LambdaInvoke:
    """Lambda tasks through a Lambda Invoke API (a boto3 Lambda client, e.g. with endpoint_url of `serve`), with
    Step Functions' names for what goes wrong on the way: Lambda.<the API's error code>, or
    Lambda.SdkClientException when no answer came."""
    from botocore.exceptions import BotoCoreError, ClientError

    def invoke(function: str, payload: bytes) -> LambdaAnswer:
        try:
            response = client.invoke(FunctionName=function, Payload=payload)
            body = response["Payload"].read()
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code") or "ServiceException"
            raise StatesError(f"Lambda.{code}", str(error)) from None
        except BotoCoreError as error:
            raise StatesError("Lambda.SdkClientException", str(error)) from None
        request_id = response.get("ResponseMetadata", {}).get("RequestId", "")
        return LambdaAnswer(body, response.get("FunctionError"), request_id)

    return invoke
