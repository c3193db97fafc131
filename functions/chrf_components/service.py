"""What the API function does with one request, shared by its direct and HTTP paths: validate and score through
the layer, record metrics, log a text-free line; and the error type direct callers see."""

from __future__ import annotations

import json
from typing import Any

import chrf_core
from aws_lambda_powertools.metrics import MetricUnit
from chrf_core.counting import count_segments
from chrf_core.report import build_report

from observability import count, loggable, logger


class InvalidInputError(chrf_core.InvalidInputError):
    """Raised to direct callers. Lambda reports the class name as ``errorType`` and ``str()`` as ``errorMessage``:
    a JSON object with ``code``, ``field`` and ``message`` (Step Functions: ``States.StringToJson``)."""

    relayed_message: str | None = None

    @classmethod
    def of(cls, error: chrf_core.InvalidInputError) -> InvalidInputError:
        return cls(error.field, error.detail, index=error.index, line=error.line, subject=error.subject,
                   caller_key=error.caller_key)

    @classmethod
    def relayed(cls, field: str | None, message: str, line: int | None) -> InvalidInputError:
        """An error another function raised, passed on with its message as it was (pipeline batches)."""
        error = cls(field, message, line=line)
        error.relayed_message = message
        return error

    @property
    def message(self) -> str:
        return self.relayed_message if self.relayed_message is not None else super().message

    def __str__(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def score_request(request: Any, source: str) -> dict[str, Any]:
    """Score one contract request; InvalidInputError (the layer's) for invalid input."""
    try:
        valid = chrf_core.service.parse_request(request)
    except chrf_core.InvalidInputError as error:
        count("InvalidInputs")
        logger.info("invalid input", extra={"source": source, **loggable(error)})
        raise
    output = build_report(count_segments(valid.hypotheses, valid.references, valid.settings))
    text_bytes = valid.text_bytes  # measured once, by the size rule
    count("Segments", output["segment_count"])
    count("TextBytes", text_bytes, MetricUnit.Bytes)
    logger.info(
        "scored",
        extra={
            "source": source,
            "segments": output["segment_count"],
            "text_bytes": text_bytes,
            "settings": {key: output[key] for key in chrf_core.contract.SETTING_KEYS},
            "effective_orders": output["effective_order_count"],
            "kernel": chrf_core.counting.KERNEL,
        },
    )
    return output

