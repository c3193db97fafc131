"""Corpus pipeline, one batch (template.yaml: ScoreBatchFunction, Handler score_batch.lambda_handler).

The Distributed Map reads a JSON Lines object of ``{"hypothesis", "reference"}`` segments, selects each as
``{"line": <0-based index>, "item": ...}`` and batches at most 256 items and 65536 bytes with the execution's
settings: ``{"BatchInput": {"settings": {...}}, "Items": [...]}``. This function checks a batch's texts by the
contract's rules for one request and returns their per-order counts and the lines it covers (1-based, inclusive), which
merge_report later proves cover the input exactly once. Invalid input raises ``InvalidInputError`` naming the
line; the state machine keeps that as the batch's result.
"""

from __future__ import annotations

from typing import Any

import chrf_core

from observability import count, loggable, logger, metrics, traced, use_correlation_id


class MalformedBatchError(Exception):
    """The Map state handed over something that is not an ItemBatcher batch (a definition fault, not input)."""


def read_batch(event: Any) -> tuple[chrf_core.CHRF, list[int], list[str], list[str]]:
    """Settings, 1-based lines, hypotheses and references of a batch; a malformed item names its line."""
    if not isinstance(event, dict) or not isinstance(event.get("Items"), list) or not event["Items"]:
        raise MalformedBatchError("expected {BatchInput, Items} from the Map state's ItemBatcher")
    entries = event["Items"]
    if not all(isinstance(entry, dict) and type(entry.get("line")) is int and entry["line"] >= 0 for entry in entries):
        raise MalformedBatchError("every item must carry its 0-based line ($$.Map.Item.Index) as line")
    lines = [entry["line"] + 1 for entry in entries]
    if lines != list(range(lines[0], lines[0] + len(lines))):
        raise MalformedBatchError("a batch must hold consecutive lines")
    batch_input = event.get("BatchInput")
    settings = chrf_core.CHRF.of_settings(batch_input.get("settings", {}) if isinstance(batch_input, dict)
                                               else None)
    hypotheses, references = [], []
    for index, (entry, line) in enumerate(zip(entries, lines)):
        item = entry.get("item")
        if not isinstance(item, dict) or set(item) != set(chrf_core.contract.ITEM_KEYS):
            raise chrf_core.InvalidInputError(
                None, "must be a JSON object with exactly the keys hypothesis and reference", line=line
            )
        for key, contract_key in zip(chrf_core.contract.ITEM_KEYS, chrf_core.contract.TEXT_KEYS):
            if not isinstance(item[key], str):
                raise chrf_core.InvalidInputError(contract_key, "must be a string", index=index, line=line)
        hypothesis, reference = (item[key] for key in chrf_core.contract.ITEM_KEYS)
        hypotheses.append(hypothesis)
        references.append(reference)
    return settings, lines, hypotheses, references


@traced
@metrics.log_metrics
@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Counts of one batch: ``{"first_line", "last_line", "counts"}``."""
    use_correlation_id(False, context)
    count("Batches")
    try:
        settings, lines, hypotheses, references = read_batch(event)
        try:
            chrf_core.service.check_texts(hypotheses, references)
            counts = settings.corpus_counts(hypotheses, references)
        except chrf_core.InvalidInputError as error:  # a rule about the batch's texts: place it in the input
            if error.index is not None:
                raise error.at_line(lines[error.index]) from None
            where = f"lines {lines[0]}-{lines[-1]}"
            raise chrf_core.InvalidInputError(error.field, error.detail, subject=where) from None
    except chrf_core.InvalidInputError as error:
        logger.info("invalid batch", extra=loggable(error))
        count("InvalidInputs")
        raise error.reported() from None
    count("Segments", len(lines))
    logger.info("batch scored", extra={"segments": len(lines), "first_line": lines[0], "last_line": lines[-1],
                                       "kernel": chrf_core.KERNEL})
    return {"first_line": lines[0], "last_line": lines[-1], "counts": counts.to_dict()}
