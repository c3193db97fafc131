"""A Distributed Map on the local runner: its items read from S3 (ItemReader, JSONL), selected (ItemSelector) and
batched (ItemBatcher) into a spool, beside the runner in a process of its own for a large object on serve's own S3
(ReaderProcess); its child executions run in threads (at most MaxConcurrency and the runner's own bound), its
tolerated failures, ResultWriter's manifest and SUCCEEDED_n / FAILED_n files as AWS writes them
(input-output-resultwriter.html), and its Map Run record (map_runs.py)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import tempfile
import threading
import uuid
from collections.abc import Generator, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from .asl import DATA_LIMIT, Map, StatesError, Template
from .execution import Context, Stopped, dumps, encoded, json_size, now, timestamp
from .map_runs import MapRun
from .template import LOCAL_ROLE, is_loopback

if TYPE_CHECKING:
    from .states import StateMachine

RESULT_FILE_LIMIT = 5 * 1024**3  # ResultWriter starts another result file past 5 GB
READ_CHUNK = 1 << 20


class Batch(NamedTuple):
    """A child execution's input, spooled: where it lies and which items it holds."""

    offset: int
    size: int
    first_item: int
    items: int


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
        self.record.add_child({"executionArn": arn, "stateMachineArn": self.record.arn.replace(":mapRun:",
                                                                                               ":stateMachine:", 1),
                               "name": name, "status": entry["Status"], "startDate": started.timestamp(),
                               "stopDate": now().timestamp(), "mapRunArn": self.record.arn, "itemCount": batch.items,
                               "redriveCount": 0})
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



def run_map(self: StateMachine, state: Map, effective: Any, context: Context) -> Any:
    """A Distributed Map on the runner ``self``: its Map Run, its children, its result (or ResultWriter's manifest)."""
    label = state.label or state.name
    run_id = str(uuid.uuid4())
    limit = state.max_concurrency
    parallel = min(limit, self.services.concurrency) if limit else self.services.concurrency
    record = MapRun(self.arn_of(f"mapRun:{self.name}/{label}:{run_id}"), context.execution["Id"], state, limit)
    self.services.map_runs.add(record)
    try:
        with tempfile.TemporaryFile() as spool:
            child = ChildRuns(self, state, label, run_id, record, spool, (effective, context))
            batches = read_batches(self, state, effective, context, child)
            try:
                outputs = child.run_all(batches, max(1, parallel))  # children start as the batches are read
            finally:  # stopped or failed: the object's GET is closed now, not when the reader is collected
                batches.close()
        record.status = "FAILED" if child.exceeded else "SUCCEEDED"
        if not child.exceeded:
            context.event("MapRunSucceeded")
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

def read_batches(self: StateMachine, state: Map, effective: Any, context: Context,
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
            yield from spooled(child, process)
        return
    items = read_items(self.services.s3, location, source.max_items)
    with contextlib.closing(items):
        yield from spooled(child, batched(source, effective, context, items))

def spooled(child: ChildRuns, batches: Iterable[tuple[bytes, int, int]]) -> Iterator[Batch]:
    for data, first_item, items in batches:
        with child.spool_lock:  # children read the spool meanwhile
            child.spool.seek(0, os.SEEK_END)
            batch = Batch(child.spool.tell(), len(data), first_item, items)
            child.spool.write(data)
        yield batch

