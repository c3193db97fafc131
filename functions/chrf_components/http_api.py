"""The HTTP adapter of the API function: API Gateway events in, HTTP responses out (Powertools Event Handler).

Imported on the first API Gateway event only (app.lambda_handler), so direct invocations never pay for the
routing. The plumbing of an event is checked before Powertools reads it: an event shaped like API Gateway's but
malformed (a missing method, a path that is not text, headers that are not an object, ...) is answered 400 with
the error envelope, never a 500. The route scores the body; invalid input is a 400 naming the field and rule;
anything unexpected is one 500 path that logs the trace and counts a Fault.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import chrf_core
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver

from observability import count, logger
from service import score_request

JSON = "application/json"

http_api = APIGatewayHttpResolver()  # HTTP API, payload format 2.0 (and Lambda function URLs)
rest_api = APIGatewayRestResolver()  # REST API proxy integration and HTTP API payload format 1.0


def error_body(code: str, message: str, field: str | None = None, with_field: bool = True) -> str:
    error: dict[str, Any] = {"code": code}
    if with_field:
        error["field"] = field
    error["message"] = message
    return json.dumps({"error": error}, ensure_ascii=False)


def invalid_input_response(error: chrf_core.InvalidInputError) -> Response[str]:
    return Response(400, JSON, error_body("invalid_input", error.message, error.field))


def internal_error_response(error: Exception) -> Response[str]:
    """The one 500 path: the trace goes to the log (operators), the caller gets no details."""
    logger.exception("unhandled error", extra={"error_type": type(error).__name__})
    count("Faults")
    return Response(500, JSON, error_body("internal_error", "internal error", with_field=False))


def parse_body(event: dict[str, Any]) -> Any:
    """The JSON request in an HTTP event body (base64 decoded when flagged); any flaw is invalid input."""
    body = event.get("body")
    if body is None or body == "":
        raise chrf_core.InvalidInputError(None, "a JSON request object is required, got an empty body", subject="body")
    if event.get("isBase64Encoded"):
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise chrf_core.InvalidInputError(
                None, "flagged as base64 but is not valid base64", subject="body"
            ) from None
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise chrf_core.InvalidInputError(None, f"not valid UTF-8 (byte {error.start})", subject="body") from None
        if not body:
            raise chrf_core.InvalidInputError(
                None, "a JSON request object is required, got an empty body", subject="body"
            )
    return chrf_core.loads_request(body, source="body")


def off_route(app: ApiGatewayResolver) -> Response[str] | None:
    """404 unless the path is exactly the execute path, else 405 unless the method is exactly POST.

    API Gateway compares both as strings (the method case-sensitively); Powertools' routing is looser (its rule
    is a regular expression, the method is upper-cased, REST paths may end in slashes), so every answer is
    checked here first."""
    event = app.current_event
    if event.path != chrf_core.EXECUTE_PATH:
        message = f"no route; POST {chrf_core.EXECUTE_PATH}"
        return Response(404, JSON, error_body("not_found", message, with_field=False))
    if event.http_method != "POST":
        message = f"{chrf_core.EXECUTE_PATH} accepts POST only"
        return Response(405, JSON, error_body("method_not_allowed", message, with_field=False), {"Allow": "POST"})
    return None


def register(app: ApiGatewayResolver) -> None:
    """The one route, and the answers for everything else, on a resolver."""

    @app.post(chrf_core.EXECUTE_PATH)
    def execute() -> Response[str]:
        return off_route(app) or Response(
            200, JSON, json.dumps(score_request(parse_body(app.current_event.raw_event), "http")))

    @app.not_found
    def not_found(_: Exception) -> Response[str]:
        answer = off_route(app)
        assert answer is not None, "Powertools found no route for the execute path and POST"
        return answer

    app.exception_handler(chrf_core.InvalidInputError)(invalid_input_response)
    app.exception_handler(Exception)(internal_error_response)


register(http_api)
register(rest_api)


class MalformedEvent(Exception):
    """An API Gateway event whose plumbing (method, path, headers, body flags) is not as API Gateway sends it."""


def _text(value: Any, name: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise MalformedEvent(f"{name} must be a string")
    return value


def _headers(value: Any, name: str, multi: bool = False) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise MalformedEvent(f"{name} must be an object")
    for item in value.values():
        items = item if multi and isinstance(item, list) else [item]
        if (multi and not isinstance(item, list)) or not all(isinstance(part, str) for part in items):
            raise MalformedEvent(f"{name} values must be {'lists of ' if multi else ''}strings")
    return dict(value)


def well_formed(event: dict[str, Any]) -> tuple[ApiGatewayResolver, dict[str, Any]]:
    """The resolver for the event's payload format, and a copy holding just its checked plumbing."""
    context = event["requestContext"]
    body = _text(event.get("body"), "body", optional=True)
    base64_flag = event.get("isBase64Encoded", False)
    if base64_flag is None:
        base64_flag = False
    if not isinstance(base64_flag, bool):
        raise MalformedEvent("isBase64Encoded must be a boolean")
    request_context: dict[str, Any] = {"stage": _text(context.get("stage"), "requestContext.stage")}
    if "httpMethod" in event:  # REST API / payload 1.0
        event_copy = {
            "httpMethod": _text(event["httpMethod"], "httpMethod"),
            "path": _text(event.get("path"), "path"),
            "headers": _headers(event.get("headers"), "headers"),
            "multiValueHeaders": _headers(event.get("multiValueHeaders"), "multiValueHeaders", multi=True),
            "requestContext": request_context,
            "body": body,
            "isBase64Encoded": base64_flag,
        }
        return rest_api, event_copy
    http = context.get("http")
    if not isinstance(http, dict):
        raise MalformedEvent("requestContext.http must be an object")
    request_context["http"] = {"method": _text(http.get("method"), "requestContext.http.method")}
    event_copy = {
        "version": "2.0",
        "rawPath": _text(event.get("rawPath"), "rawPath"),
        "headers": _headers(event.get("headers"), "headers"),
        "requestContext": request_context,
        "body": body,
        "isBase64Encoded": base64_flag,
    }
    return http_api, event_copy


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """An API Gateway event's response (the format its resolver produces)."""
    try:
        resolver, checked = well_formed(event)
    except MalformedEvent as problem:
        count("InvalidInputs")
        logger.info("malformed event", extra={"rule": str(problem)})
        resolver = rest_api if "httpMethod" in event else http_api
        return _respond_outside_routes(resolver, 400, error_body("invalid_input", f"event: {problem}"))
    try:
        return resolver.resolve(checked, context)
    except Exception as error:  # a fault outside the route itself: still the one 500 path
        response = internal_error_response(error)
        return _respond_outside_routes(resolver, response.status_code, str(response.body))


def _respond_outside_routes(resolver: ApiGatewayResolver, status: int, body: str) -> dict[str, Any]:
    """A response in the resolver's format (REST v1: multiValueHeaders; HTTP API v2: headers)."""
    if resolver is rest_api:
        return {"statusCode": status, "multiValueHeaders": {"Content-Type": [JSON]}, "body": body,
                "isBase64Encoded": False}
    return {"statusCode": status, "headers": {"Content-Type": JSON}, "body": body, "isBase64Encoded": False,
            "cookies": []}
