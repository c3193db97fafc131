"""The corpus pipeline's two functions (template.yaml: ScoreBatchFunction, MergeReportFunction).

A Step Functions Distributed Map reads a JSON Lines object of ``{"hypothesis", "reference"}`` segments and hands
batches of at most 256 items and 65536 bytes to :func:`score_batch`, which turns a batch into a contract request
for the layer and returns its per-order counts. ResultWriter stores those in S3; :func:`merge_report` sums
them into the corpus report (the contract's output, with any ``segment_count``) and writes it to the output
location. Counts are sums over segments, so the report equals scoring the whole test set at once.

Invalid input raises ``InvalidInputError`` naming the 1-based line of the JSON Lines object. The state machine
keeps such a batch's error as its result, and :func:`merge_report` re-raises the first one before writing
anything, so an execution either writes a whole, exact report or fails with that cause.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import chrf_core
from app import InvalidInputError, loggable, logger, metrics
from aws_lambda_powertools.metrics import MetricUnit
from chrf_core.corpus import chunk_request, relabel_lines

ITEM_KEYS = {"hypothesis": "hypotheses", "reference": "references"}  # item key -> the contract's key
LINE_NUMBER = re.compile(r"^line (\d+)")


@metrics.log_metrics
@logger.inject_lambda_context
def score_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Counts of one ItemBatcher batch: ``{"BatchInput": {"settings": {...}}, "Items": [{"line", "item"}]}``."""
    metrics.add_metric(name="Batches", unit=MetricUnit.Count, value=1)
    try:
        settings, lines, hypotheses, references = read_batch(event)
        counts = chrf_core.compute_counts(chunk_request(hypotheses, references, settings))
    except chrf_core.InvalidInputError as error:
        lines = _batch_lines(event)
        logger.info("invalid batch", extra=loggable(error))
        metrics.add_metric(name="InvalidInputs", unit=MetricUnit.Count, value=1)
        raise InvalidInputError(error.field, relabel_lines(error.message, lines)) from None
    metrics.add_metric(name="Segments", unit=MetricUnit.Count, value=len(lines))
    logger.info("batch scored", extra={"segments": len(lines), "first_line": lines[0], "last_line": lines[-1]})
    return {"first_line": lines[0], "last_line": lines[-1], "counts": counts.to_dict()}


def read_batch(event: Any) -> tuple[chrf_core.Settings, list[int], list[str], list[str]]:
    """Settings, 1-based line numbers, hypotheses and references of a batch; malformed items name their line."""
    if not isinstance(event, dict) or not isinstance(event.get("Items"), list) or not event["Items"]:
        raise chrf_core.InvalidInputError(None, "batch: expected {BatchInput, Items} from the Map state's ItemBatcher")
    batch_input = event.get("BatchInput") or {}
    settings_request = batch_input.get("settings", {}) if isinstance(batch_input, dict) else None
    if not isinstance(settings_request, dict):
        raise chrf_core.InvalidInputError("settings", "settings: must be an object of scoring settings")
    unknown = sorted(set(settings_request) - set(chrf_core.SETTING_KEYS))
    if unknown:
        raise chrf_core.InvalidInputError(
            unknown[0], f"settings.{unknown[0]}: unknown key; allowed keys are {', '.join(chrf_core.SETTING_KEYS)}"
        )
    settings = chrf_core.parse_settings(settings_request)
    lines = _batch_lines(event)
    hypotheses, references = [], []
    for entry, line in zip(event["Items"], lines):
        item = entry.get("item") if isinstance(entry, dict) else None
        if not isinstance(item, dict) or set(item) != set(ITEM_KEYS):
            raise chrf_core.InvalidInputError(
                None, f"line {line}: must be a JSON object with exactly the keys hypothesis and reference"
            )
        for key, contract_key in ITEM_KEYS.items():
            if not isinstance(item[key], str):
                raise chrf_core.InvalidInputError(contract_key, f"line {line}: {key} must be a string")
        hypotheses.append(item["hypothesis"])
        references.append(item["reference"])
    return settings, lines, hypotheses, references


def _batch_lines(event: Any) -> list[int]:
    """1-based JSON Lines line of each batch item (from the ItemSelector's $$.Map.Item.Index; else its position)."""
    items = event.get("Items") if isinstance(event, dict) else None
    if not isinstance(items, list):
        return []
    return [e["line"] + 1 if isinstance(e, dict) and type(e.get("line")) is int else i + 1 for i, e in enumerate(items)]


@metrics.log_metrics
@logger.inject_lambda_context
def merge_report(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Merge the Map's results (ResultWriter manifest in S3) into the corpus report and write it out.

    Event: the execution input (``input``, ``settings``, ``output``) plus ``map_result``: the Map state's output,
    either ``{"ResultWriterDetails": {"Bucket", "Key"}}`` (Distributed Map with ResultWriter, as deployed) or the
    list of batch results itself (a Map without ResultWriter).
    """
    import boto3

    metrics.add_metric(name="MergeRuns", unit=MetricUnit.Count, value=1)
    s3 = boto3.client("s3")
    output_location = _location(event.get("output"), "output")
    map_result = event.get("map_result")
    if isinstance(map_result, list):
        batches = map_result
    else:
        batches = _read_result_writer_output(s3, (map_result or {}).get("ResultWriterDetails") or {})
    report = merge_batches(batches)
    body = json.dumps(report, indent=2).encode("utf-8")
    s3.put_object(
        Bucket=output_location["bucket"], Key=output_location["key"], Body=body, ContentType="application/json"
    )
    metrics.add_metric(name="ReportSegments", unit=MetricUnit.Count, value=report["segment_count"])
    logger.info(
        "report written",
        extra={"segments": report["segment_count"], "batches": len(batches), "report_bytes": len(body)},
    )
    return {
        "report": {"bucket": output_location["bucket"], "key": output_location["key"]},
        "segment_count": report["segment_count"],
        "score": report["score"],
    }


def merge_batches(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """The corpus report from batch results; the first invalid batch (by line) fails the whole corpus."""
    errors = [batch["invalid_input"] for batch in batches if "invalid_input" in batch]
    if errors:
        raise _first_invalid_input(errors)
    if not batches:
        raise InvalidInputError("input", "input: the JSON Lines object holds no segments")
    batches = sorted(batches, key=lambda batch: batch["first_line"])
    counts = chrf_core.merge_counts(chrf_core.Counts.from_dict(batch["counts"]) for batch in batches)
    return chrf_core.build_report(counts)


def _first_invalid_input(errors: list[dict[str, Any]]) -> InvalidInputError:
    """Rebuild the InvalidInputError with the lowest line from Step Functions' caught errors ({Error, Cause})."""
    found = []
    for error in errors:
        try:
            detail = json.loads(json.loads(error["Cause"])["errorMessage"])
            field, message = detail["field"], detail["message"]
        except (KeyError, TypeError, ValueError):
            field, message = None, f"batch failed: {error.get('Error', 'unknown error')}"
        match = LINE_NUMBER.match(message)
        found.append((int(match.group(1)) if match else 0, field, message))
    _, field, message = min(found, key=lambda entry: entry[0])
    return InvalidInputError(field, message)


def _read_result_writer_output(s3: Any, details: dict[str, Any]) -> list[dict[str, Any]]:
    """Batch results from ResultWriter's manifest and SUCCEEDED files (each a list of child executions)."""
    if not details.get("Bucket") or not details.get("Key"):
        raise ValueError("map_result.ResultWriterDetails must name the manifest's Bucket and Key")
    manifest = _read_json(s3, details["Bucket"], details["Key"])
    result_files = manifest.get("ResultFiles", {})
    if result_files.get("FAILED") or result_files.get("PENDING"):
        raise RuntimeError("the Map run has failed or pending batches; no report is written")
    bucket = manifest.get("DestinationBucket") or details["Bucket"]
    return [
        json.loads(execution["Output"])
        for entry in result_files.get("SUCCEEDED", [])
        for execution in _read_json(s3, bucket, entry["Key"])
    ]


def _location(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not isinstance(value.get("bucket"), str) or not isinstance(value.get("key"), str):
        raise InvalidInputError(name, f"{name}: must be an object with string bucket and key")
    return value


def _read_json(s3: Any, bucket: str, key: str) -> Any:
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    try:
        return json.loads(body)
    except ValueError:
        raise ValueError(f"s3://{bucket}/{key} is not valid JSON") from None


if os.environ.get("CHRF_TRACING", "").lower() == "true":
    from app import tracer

    score_batch = tracer.capture_lambda_handler(score_batch)
    merge_report = tracer.capture_lambda_handler(merge_report)
