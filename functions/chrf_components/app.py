"""chrf-components API function (template.yaml: ChrfComponentsFunction, Handler app.lambda_handler).

One handler for API Gateway (HTTP API payload v2, REST v1) and direct invocations (SDK, Step Functions). Thin on
purpose: event -> request -> chrf_core (the layer) -> response. An event that looks like API Gateway's goes to
the HTTP adapter (http_adapter, imported on the first such event, so direct invocations never load the routing);
anything else is a contract request, answered with the output object or an ``InvalidInputError`` that a Step
Functions ``Catch`` can match.
"""

from __future__ import annotations

from typing import Any

import chrf_core
from scoring import score_request

from observability import CORRELATION_PATH, count, logger, metrics, traced, use_correlation_id


def is_http_event(event: Any) -> bool:
    """API Gateway-shaped: a request context plus an HTTP method (REST v1, payload 1.0) or payload version 2.0.

    Such an event is answered over HTTP even when malformed (400); anything else is a direct invocation.
    """
    if not isinstance(event, dict) or not isinstance(event.get("requestContext"), dict):
        return False
    return "httpMethod" in event or event.get("version") == "2.0" or "http" in event["requestContext"]


def handle_direct(event: Any) -> dict[str, Any]:
    try:
        return score_request(event, source="direct")
    except chrf_core.InvalidInputError as error:
        raise error.reported() from None


@traced
@metrics.log_metrics
@logger.inject_lambda_context(correlation_id_path=CORRELATION_PATH)
def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """Entry point: HTTP events get an HTTP response, direct invocations the contract output."""
    count("Requests")
    http = is_http_event(event)
    use_correlation_id(http, context)
    if http:
        import http_adapter

        return http_adapter.handle(event, context)
    return handle_direct(event)
