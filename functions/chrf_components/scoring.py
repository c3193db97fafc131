"""What the API function does with one request, shared by its direct and HTTP paths: validate and score through
the layer, record metrics, log a text-free line."""

from __future__ import annotations

from typing import Any

import chrf_core
from aws_lambda_powertools.metrics import MetricUnit

from observability import count, loggable, logger


def score_request(request: Any, source: str) -> dict[str, Any]:
    """Score one contract request; InvalidInputError (the layer's) for invalid input."""
    try:
        valid = chrf_core.service.parse_request(request)
    except chrf_core.InvalidInputError as error:
        count("InvalidInputs")
        logger.info("invalid input", extra={"source": source, **loggable(error)})
        raise
    settings = valid.settings
    output = settings.report(valid.counts()).to_dict()
    text_bytes = valid.text_bytes  # measured once, by the size rule
    count("Segments", output["segment_count"])
    count("TextBytes", text_bytes, MetricUnit.Bytes)
    logger.info(
        "scored",
        extra={
            "source": source,
            "segments": output["segment_count"],
            "text_bytes": text_bytes,
            "settings": settings.as_dict(),
            "effective_orders": output["effective_order_count"],
            "kernel": chrf_core.KERNEL,
        },
    )
    return output

