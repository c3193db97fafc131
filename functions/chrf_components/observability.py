"""Logs, metrics and (optionally) traces for every function: one Logger, one Metrics, set up once here.

Logs are structured (Powertools Logger) and carry sizes, counts, settings and request ids: never submitted
texts, keys or ids the caller chose. The API function's correlation id is API Gateway's request id, which
Powertools takes from the event (``correlation_paths.API_GATEWAY_HTTP``, in app.py); it is kept only when the
event came through API Gateway and the id is a short token, else the Lambda request id is used. The Tracer
(X-Ray) loads only when CHRF_TRACING is true, so cold starts do not pay for it otherwise.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

import chrf_core
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", chrf_core.contract.TOOL)
TRACING = os.environ.get("CHRF_TRACING", "").lower() == "true"
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9+/=._:-]{0,63}")

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "ChrfComponents"), service=SERVICE)

Handler = TypeVar("Handler", bound=Callable[..., Any])


def count(name: str, value: float = 1, unit: MetricUnit = MetricUnit.Count) -> None:
    """Add to a metric of this invocation (flushed by ``metrics.log_metrics``)."""
    metrics.add_metric(name=name, unit=unit, value=value)


CORRELATION_PATH = correlation_paths.API_GATEWAY_HTTP  # the same path as API_GATEWAY_REST: requestContext.requestId


def use_correlation_id(from_api_gateway: bool, context: Any) -> None:
    """Keep the correlation id Powertools took from the event (CORRELATION_PATH) when the event came through API
    Gateway and the id is a short token; otherwise use Lambda's request id (a direct invoker chooses its event)."""
    candidate = logger.get_correlation_id() if from_api_gateway else None
    if not (isinstance(candidate, str) and TOKEN.fullmatch(candidate)):
        candidate = getattr(context, "aws_request_id", None)
    logger.set_correlation_id(candidate if isinstance(candidate, str) and TOKEN.fullmatch(candidate) else None)


def loggable(error: chrf_core.InvalidInputError) -> dict[str, Any]:
    """Field, rule and position of an error, for logs. A key the caller made up may be a pasted translation,
    so it is never logged."""
    return {
        "field": "<unknown key>" if error.caller_key else error.field,
        "rule": error.detail,
        "segment": error.index,
        "line": error.line,
    }


def traced(handler: Handler) -> Handler:
    """The handler wrapped by Powertools Tracer when tracing is enabled, else unchanged."""
    if not TRACING:
        return handler
    from aws_lambda_powertools import Tracer

    return cast(Handler, Tracer(service=SERVICE).capture_lambda_handler(handler))
