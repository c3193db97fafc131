"""Corpus pipeline, the merge (template.yaml: MergeReportFunction, Handler merge_report.lambda_handler), and the
check of the execution input before anything is read (the state machine's CheckInput: ``{"check": <input>}``).

Reads the Distributed Map's results (ResultWriter's manifest and result files in S3, or the Map's output list
when it has no ResultWriter), proves they cover the input exactly once, sums their counts into the corpus report
(the contract's output with any ``segment_count``) and writes it to the output location.

Nothing is written unless every check passes:

* an input line broke a contract rule: ``{"error": "InvalidInputError", "message", "field", "line"}`` for the lowest
  such line, answered as data, which the state machine's Choice turns into its Fail state's error and cause;
* anything else amiss fails with ``InconsistentResultsError`` naming the batch: a result file listed twice, a
  failed or pending result, a record that did not succeed or is malformed, line ranges with a gap or an overlap
  or not starting at line 1, fewer or more lines than the Map run read, a ``segment_count`` other than the
  batch's number of lines, settings other than the execution's, or per-order counts that no batch's lines
  could hold (more than one request's segments or text, or orders that do not fall as n-grams do).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import chrf_core

from observability import count, logger, metrics, traced, use_correlation_id


class InconsistentResultsError(Exception):
    """The batch results do not prove a report of the whole input (named in Step Functions' error)."""


class BatchResult(NamedTuple):
    source: str  # where it was read, for messages
    first_line: int
    last_line: int
    counts: chrf_core.Counts


def execution_settings(event: dict[str, Any]) -> chrf_core.CHRF:
    try:
        return chrf_core.CHRF.of_settings(event.get("settings", {}))
    except chrf_core.InvalidInputError as error:
        raise error.reported() from None


BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")  # S3's bucket naming rules
MAP_RUN_ARN = re.compile(r"arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:mapRun:[A-Za-z0-9_.:/-]{1,1900}")


def s3_object(bucket: Any, key: Any) -> str | None:
    """Why (bucket, key) cannot name an S3 object, if they cannot: a bucket outside S3's naming rules, a key that is
    empty, over 1024 UTF-8 bytes or not encodable (a lone surrogate)."""
    if not isinstance(bucket, str) or not BUCKET.fullmatch(bucket):
        return "bucket must be an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens)"
    if not isinstance(key, str) or not key:
        return "key must be a non-empty string"
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        return "key must be valid Unicode text (no lone surrogate)"
    return f"key must be at most 1024 UTF-8 bytes, got {size}" if size > 1024 else None


def location(value: Any, name: str) -> tuple[str, str]:
    if not isinstance(value, dict):
        raise chrf_core.InvalidInputError(name, "must be an object with string bucket and key").reported()
    problem = s3_object(value.get("bucket"), value.get("key"))
    if problem:
        raise chrf_core.InvalidInputError(name, problem).reported()
    return value["bucket"], value["key"]


def check_input(execution: Any) -> dict[str, Any]:
    """The execution input checked before the Map reads anything: an object with ``input`` and ``output`` locations
    and ``settings`` (the contract's rules, in its order), as the merge would find them only after every batch was
    scored. Invalid input is answered as data (:func:`failure`), which the state machine's Choice turns into its
    Fail state's error and cause: one readable line, not a Lambda error's JSON with its stack trace."""
    count("InputChecks")
    try:
        if not isinstance(execution, dict):
            raise chrf_core.InvalidInputError(None, "the execution input must be an object with input, settings and "
                                                    "output")
        location(execution.get("input"), "input")
        settings = execution_settings(execution)
        location(execution.get("output"), "output")
    except chrf_core.InvalidInputError as error:
        return failure(error)
    return {"checked": True, "settings": settings.as_dict()}


def failure(error: chrf_core.InvalidInputError) -> dict[str, Any]:
    """Invalid input as the state machine's Choice reads it: the error's type and the contract's message (the field
    and the line where there is one)."""
    logger.info("invalid input", extra={"field": None if error.caller_key else error.field, "line": error.line})
    answer: dict[str, Any] = {"error": "InvalidInputError", "message": error.message, "field": error.field}
    if error.line is not None:
        answer["line"] = error.line
    return answer


def invalid_input_of(source: str, failure: Any) -> chrf_core.InvalidInputError:
    """The InvalidInputError a batch raised, rebuilt from Step Functions' caught error ({Error, Cause})."""
    try:
        cause = json.loads(failure["Cause"])
        detail = json.loads(cause["errorMessage"])
        line = detail.get("line")
        if failure["Error"] != "InvalidInputError" or not isinstance(detail["message"], str):
            raise ValueError
        if line is not None and (type(line) is not int or line < 1):
            raise ValueError
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InconsistentResultsError(f"{source}: a failed batch whose cause is not an InvalidInputError") from None
    field = detail.get("field")
    return chrf_core.InvalidInputError.relayed(field if isinstance(field, str) else None, detail["message"],
                                               line).reported()


def batch_result(source: str, output: Any, settings: chrf_core.CHRF) -> BatchResult:
    """One batch's result, checked on its own."""
    if not isinstance(output, dict) or set(output) != {"first_line", "last_line", "counts"}:
        raise InconsistentResultsError(f"{source}: not a batch result ({{first_line, last_line, counts}})")
    first, last = output["first_line"], output["last_line"]
    if type(first) is not int or type(last) is not int or not 1 <= first <= last:
        raise InconsistentResultsError(f"{source}: first_line and last_line must be lines 1 <= first <= last")
    try:
        counts = chrf_core.Counts.from_dict(output["counts"])
    except ValueError as error:
        raise InconsistentResultsError(f"{source} (lines {first}-{last}): {error}") from None
    if counts.segment_count != last - first + 1:
        raise InconsistentResultsError(
            f"{source} (lines {first}-{last}): segment_count {counts.segment_count} but {last - first + 1} lines"
        )
    if counts.settings != settings:
        raise InconsistentResultsError(f"{source} (lines {first}-{last}): scored with other settings than the run's")
    too_much = beyond_one_request(counts)
    if too_much:
        raise InconsistentResultsError(f"{source} (lines {first}-{last}): {too_much}")
    return BatchResult(source, first, last, counts)


def beyond_one_request(counts: chrf_core.Counts) -> str | None:
    """Why a batch's counts cannot come from one contract request (what a batch is), if they cannot: more
    segments than a request holds, or more unigrams on both sides than its texts have code points (a code
    point is at least one UTF-8 byte, even lower-cased)."""
    if counts.segment_count > chrf_core.MAX_SEGMENTS:
        return f"{counts.segment_count} segments, more than a batch of at most {chrf_core.MAX_SEGMENTS}"
    char_order = counts.settings.char_order
    unigram_orders = ([("char", 0)] if char_order else []) + ([("word", char_order)] if counts.settings.word_order
                                                              else [])
    for kind, index in unigram_orders:
        unigrams = counts.orders[index][0] + counts.orders[index][1]
        if unigrams > chrf_core.MAX_TEXT_BYTES:
            return (f"{unigrams} {kind} unigrams, more than the code points of a batch's texts "
                    f"(at most {chrf_core.MAX_TEXT_BYTES} bytes)")
    return None


def merge_batches(
    outputs: Iterable[tuple[str, Any]], settings: chrf_core.CHRF, lines_read: int | None = None
) -> tuple[dict[str, Any], int]:
    """The corpus report from (source, batch output) pairs, once they are proven to cover lines 1..N once, and the
    number of batches. Read once, in order: what is held is each batch's line range and the running sum, not the
    batches, so the merge's memory does not grow with the corpus's counts (5 x 10^6 lines: 29,500 batches). What is
    answered is what reading them all first would answer: an invalid line (the lowest), else no segments, else the
    first batch result (in the order read) that is wrong, else a gap or an overlap."""
    invalid: chrf_core.InvalidInputError | None = None
    wrong: InconsistentResultsError | None = None
    ranges: list[tuple[int, int, str]] = []
    total: chrf_core.Counts | None = None
    batches = 0
    for source, output in outputs:
        batches += 1
        if isinstance(output, dict) and "invalid_input" in output:
            error = invalid_input_of(source, output["invalid_input"])
            if invalid is None or (error.line or 0) < (invalid.line or 0):
                invalid = error
            continue
        if invalid is not None or wrong is not None:  # the answer is one of those now: the rest is only searched
            continue
        try:
            batch = batch_result(source, output, settings)
        except InconsistentResultsError as error:
            wrong = error
            continue
        ranges.append((batch.first_line, batch.last_line, source))
        total = batch.counts if total is None else chrf_core.Counts.merge((total, batch.counts))
    if invalid is not None:
        raise invalid
    if not batches:
        raise chrf_core.InvalidInputError("input", "the JSON Lines object holds no segments").reported()
    if wrong is not None:
        raise wrong
    ranges.sort(key=lambda batch: batch[0])
    expected = 1
    for previous, (first, last, source) in zip([None, *ranges], ranges):
        if first > expected:
            raise InconsistentResultsError(f"lines {expected}-{first - 1} are in no batch result (next: {source})")
        if first < expected:
            assert previous is not None
            raise InconsistentResultsError(f"{source} (lines {first}-{last}) overlaps {previous[2]} (lines "
                                           f"{previous[0]}-{previous[1]})")
        expected = last + 1
    if lines_read is not None and lines_read != expected - 1:
        raise InconsistentResultsError(f"the Map run read {lines_read} lines but the batch results cover "
                                       f"{expected - 1}")
    assert total is not None
    problem = total.inconsistency()
    if problem:
        raise InconsistentResultsError(f"the merged counts are impossible: {problem}")
    return settings.report(total).to_dict(), batches


def read_json(s3: Any, bucket: str, key: str, what: str) -> Any:
    from botocore.exceptions import ClientError

    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            raise InconsistentResultsError(f"{what} s3://{bucket}/{key} does not exist") from None
        raise
    try:
        return json.loads(body)
    except ValueError:
        raise InconsistentResultsError(f"{what} s3://{bucket}/{key} is not valid JSON") from None


def result_writer_outputs(s3: Any, details: Any) -> Iterator[tuple[str, Any]]:
    """(source, batch output) of every child execution ResultWriter recorded, each file read once, as they are
    read; the manifest is read and checked now."""
    if not isinstance(details, dict) or s3_object(details.get("Bucket"), details.get("Key")):
        raise InconsistentResultsError("map_result.ResultWriterDetails must name the manifest's Bucket and Key")
    manifest = read_json(s3, details["Bucket"], details["Key"], "the manifest")
    files = manifest.get("ResultFiles") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not isinstance(files.get("SUCCEEDED", []), list):
        raise InconsistentResultsError("the manifest has no ResultFiles")
    for unfinished in ("FAILED", "PENDING"):
        if files.get(unfinished):
            raise InconsistentResultsError(f"the Map run has {unfinished} results ({len(files[unfinished])} file(s))")
    bucket = manifest.get("DestinationBucket") or details["Bucket"]
    keys = [entry.get("Key") if isinstance(entry, dict) else None for entry in files.get("SUCCEEDED", [])]
    if s3_object(bucket, "manifest") or any(s3_object(bucket, key) for key in keys if isinstance(key, str)):
        raise InconsistentResultsError("the manifest names a result file that cannot be an S3 object")
    return _records(s3, bucket, keys)


def _records(s3: Any, bucket: str, keys: list[Any]) -> Iterator[tuple[str, Any]]:
    seen: set[str] = set()
    for key in keys:
        if not isinstance(key, str):
            raise InconsistentResultsError("the manifest lists a result file without a Key")
        if key in seen:
            raise InconsistentResultsError(f"result file {key} is listed twice")
        seen.add(key)
        for number, record in enumerate(result_records(s3, bucket, key), start=1):
            source = f"{key} record {number}"
            if isinstance(record, dict) and "Status" in record:  # a whole record (Transformation NONE)
                if record.get("Status") != "SUCCEEDED":
                    raise InconsistentResultsError(f"{source}: status {record.get('Status')!s}, not SUCCEEDED")
                try:
                    record = json.loads(record["Output"])
                except (KeyError, TypeError, ValueError):
                    raise InconsistentResultsError(f"{source}: Output is not a JSON string") from None
            yield source, record


def result_records(s3: Any, bucket: str, key: str) -> Iterator[Any]:
    """A result file's entries, as ResultWriter writes them (input-output-resultwriter.html): a JSON array
    (OutputType JSON) or one per line (JSONL, read a line at a time, so the merge holds the outputs and not the
    file); each a child execution's record (Transformation NONE) or its output (COMPACT)."""
    from botocore.exceptions import ClientError

    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            raise InconsistentResultsError(f"result file s3://{bucket}/{key} does not exist") from None
        raise
    lines = body.iter_lines(chunk_size=1 << 16)
    first = next(lines, b"")
    if first.lstrip().startswith(b"["):
        try:
            records = json.loads(b"\n".join([first, *lines]))
        except ValueError:
            raise InconsistentResultsError(f"result file s3://{bucket}/{key} is not valid JSON") from None
        yield from records  # a list: the text is valid JSON and starts with "["
        return
    for number, line in enumerate(itertools.chain([first], lines), start=1):
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError:
                raise InconsistentResultsError(f"result file s3://{bucket}/{key} line {number} is not valid "
                                               f"JSON") from None


def lines_read(map_run_arn: Any) -> int | None:
    """How many items (lines) the Map run read, as Step Functions counted them (DescribeMapRun)."""
    if map_run_arn is None:
        return None
    if not isinstance(map_run_arn, str) or not MAP_RUN_ARN.fullmatch(map_run_arn):
        raise InconsistentResultsError("map_result.MapRunArn must be a Step Functions Map Run ARN")
    import boto3

    counts = boto3.client("stepfunctions").describe_map_run(mapRunArn=map_run_arn).get("itemCounts")
    if not isinstance(counts, dict) or type(counts.get("total")) is not int:
        raise InconsistentResultsError("DescribeMapRun did not say how many items the Map run read")
    if counts.get("failed") or counts.get("timedOut") or counts.get("aborted"):
        raise InconsistentResultsError("the Map run has items that failed, timed out or were aborted")
    return int(counts["total"])


@traced
@metrics.log_metrics
@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Event: the execution input (``input``, ``settings``, ``output``) plus ``map_result``, the Map state's
    output: ``{"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}`` (as deployed) or the list of batch
    results itself (a Map without ResultWriter)."""
    import boto3

    use_correlation_id(False, context)
    if isinstance(event, dict) and set(event) == {"check"}:
        return check_input(event["check"])
    count("MergeRuns")
    try:
        if not isinstance(event, dict):
            raise chrf_core.InvalidInputError(None, "the merge expects the execution input with map_result")
        bucket, key = location(event.get("output"), "output")
        settings = execution_settings(event)
        map_result = event.get("map_result")
        s3 = boto3.client("s3")
        outputs: Iterable[tuple[str, Any]]
        if isinstance(map_result, list):
            outputs, read = [(f"map result {number}", output) for number, output in enumerate(map_result, 1)], None
        elif isinstance(map_result, dict):
            outputs = result_writer_outputs(s3, map_result.get("ResultWriterDetails"))
            read = lines_read(map_result.get("MapRunArn"))
        else:
            raise InconsistentResultsError("map_result must be the Map state's output")
        report, batches = merge_batches(outputs, settings, read)
    except chrf_core.InvalidInputError as error:  # a line (or the execution input) broke a rule: the Choice fails it
        return failure(error)
    signed = chrf_core.Report.signed(report, settings, 1)  # as score --json gives it (one reference per line)
    body = json.dumps(signed, indent=2).encode("utf-8")
    s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")
    count("ReportSegments", report["segment_count"])
    logger.info("report written", extra={"segments": report["segment_count"], "batches": batches,
                                         "report_bytes": len(body)})
    return {"report": {"bucket": bucket, "key": key}, "segment_count": report["segment_count"],
            "score": report["score"]}
