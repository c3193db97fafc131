"""chrf-components Lambda function: one handler for API Gateway (HTTP API v2, REST v1) and direct invocations.

Thin on purpose: event -> request -> chrf_core (the layer) -> response. HTTP callers get the contract's output
with 200, or a 400 ``{"error": {"code": "invalid_input", "field", "message"}}``; direct callers (SDK, Step
Functions) get the output object, or an ``InvalidInputError`` that a Step Functions ``Catch`` can match.

Cold start stays small: Logger and Metrics load with the module; Powertools' event handler (HTTP routing)
loads on the first API Gateway event only, so direct invocations never pay for it; the Tracer loads only when
``CHRF_TRACING`` is true. Logs carry sizes, counts, settings and request ids, never the submitted texts.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from functools import cache
from typing import Any

import chrf_core
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

EXECUTE_PATH = "/v1/tools/chrf-components/versions/1.0.0/execute"
JSON_HEADERS = {"Content-Type": "application/json"}

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "chrf-components"))
metrics = Metrics(
    namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "ChrfComponents"),
    service=os.environ.get("POWERTOOLS_SERVICE_NAME", "chrf-components"),
)


class InvalidInputError(chrf_core.InvalidInputError):
    """Raised to direct callers. Lambda reports the class name as ``errorType`` and ``str()`` as ``errorMessage``:
    a JSON object with ``code``, ``field`` and ``message`` (Step Functions: ``States.StringToJson``)."""

    def __str__(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def loggable(error: chrf_core.InvalidInputError) -> dict[str, Any]:
    """Field and rule of an error, for logs. An unknown key is the caller's text, so it is not logged."""
    if error.field is None or error.field in chrf_core.REQUEST_KEYS:
        return {"field": error.field, "rule": error.message}
    return {"field": "<unknown key>", "rule": "unknown key"}


def score_request(request: Any, source: str) -> dict[str, Any]:
    """Score one contract request, recording metrics and a text-free log line either way."""
    try:
        output = chrf_core.score(request)
    except chrf_core.InvalidInputError as error:
        metrics.add_metric(name="InvalidInputs", unit=MetricUnit.Count, value=1)
        logger.info("invalid input", extra={"source": source, **loggable(error)})
        raise
    text_bytes = chrf_core.text_bytes(request)
    metrics.add_metric(name="Segments", unit=MetricUnit.Count, value=output["segment_count"])
    metrics.add_metric(name="TextBytes", unit=MetricUnit.Bytes, value=text_bytes)
    logger.info(
        "scored",
        extra={
            "source": source,
            "segments": output["segment_count"],
            "text_bytes": text_bytes,
            "settings": {key: output[key] for key in chrf_core.SETTING_KEYS},
            "effective_orders": output["effective_order_count"],
        },
    )
    return output


def is_api_gateway_event(event: Any) -> bool:
    """True for API Gateway proxy events: HTTP API payload v2 (and Function URLs) or REST API v1."""
    if not isinstance(event, dict) or not isinstance(event.get("requestContext"), dict):
        return False
    if event.get("version") == "2.0" and isinstance(event["requestContext"].get("http"), dict):
        return True
    return isinstance(event.get("httpMethod"), str) and "path" in event


def parse_body(event: dict[str, Any]) -> Any:
    """The JSON request in an HTTP event body (base64 decoded when flagged); any flaw is invalid input."""
    body = event.get("body")
    if body is None or body == "":
        raise InvalidInputError(None, "body: a JSON request object is required, got an empty body")
    if not isinstance(body, str):
        raise InvalidInputError(None, "body: must be text")
    if event.get("isBase64Encoded"):
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInputError(None, "body: flagged as base64 but is not valid base64") from None
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidInputError(None, f"body: not valid UTF-8 (byte {error.start})") from None
        if not body:
            raise InvalidInputError(None, "body: a JSON request object is required, got an empty body")
    return chrf_core.loads_request(body, source="body")


def error_body(code: str, message: str, field: str | None = None, with_field: bool = True) -> str:
    error: dict[str, Any] = {"code": code}
    if with_field:
        error["field"] = field
    error["message"] = message
    return json.dumps({"error": error}, ensure_ascii=False)


@cache
def http_resolvers() -> dict[str, Any]:
    """Powertools resolvers for both payload formats, built on first use (the import is the costly part)."""
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver, Response

    def build(resolver_class: type) -> Any:
        app = resolver_class()

        @app.post(EXECUTE_PATH)
        def execute() -> Response:
            try:
                output = score_request(parse_body(app.current_event.raw_event), source="http")
            except chrf_core.InvalidInputError as error:
                return Response(400, "application/json", error_body("invalid_input", error.message, error.field))
            return Response(200, "application/json", json.dumps(output))

        @app.not_found
        def not_found(_: Exception) -> Response:
            if app.current_event.path == EXECUTE_PATH:
                return Response(
                    405,
                    "application/json",
                    error_body("method_not_allowed", f"{EXECUTE_PATH} accepts POST only", with_field=False),
                    headers={"Allow": "POST"},
                )
            return Response(
                404, "application/json", error_body("not_found", f"no route; POST {EXECUTE_PATH}", with_field=False)
            )

        @app.exception_handler(Exception)
        def internal_error(error: Exception) -> Response:
            logger.exception("unhandled error", extra={"error_type": type(error).__name__})
            metrics.add_metric(name="Faults", unit=MetricUnit.Count, value=1)
            return Response(
                500, "application/json", error_body("internal_error", "internal error", with_field=False)
            )

        return app

    return {"2.0": build(APIGatewayHttpResolver), "1.0": build(APIGatewayRestResolver)}


def handle_http(event: dict[str, Any], context: Any) -> dict[str, Any]:
    resolver = http_resolvers()["2.0" if event.get("version") == "2.0" else "1.0"]
    try:
        return resolver.resolve(event, context)
    except Exception as error:  # a fault outside the route (event plumbing): still a clean 500
        logger.exception("unhandled error", extra={"error_type": type(error).__name__})
        return {
            "statusCode": 500,
            "headers": dict(JSON_HEADERS),
            "body": error_body("internal_error", "internal error", with_field=False),
            "isBase64Encoded": False,
        }


def handle_direct(event: Any) -> dict[str, Any]:
    try:
        return score_request(event, source="direct")
    except chrf_core.InvalidInputError as error:
        raise InvalidInputError(error.field, error.message) from None


@metrics.log_metrics
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """Entry point (template.yaml Handler: app.lambda_handler)."""
    metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    if is_api_gateway_event(event):
        return handle_http(event, context)
    return handle_direct(event)


if os.environ.get("CHRF_TRACING", "").lower() == "true":
    from aws_lambda_powertools import Tracer

    tracer = Tracer(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "chrf-components"))
    lambda_handler = tracer.capture_lambda_handler(lambda_handler)
