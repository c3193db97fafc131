"""The HTTP adapter of the API function: API Gateway events in, HTTP responses out (Powertools Event Handler).

Imported on the first API Gateway event only (app.lambda_handler), so direct invocations never pay for the
routing. ``http_api`` is the resolver of the template's HttpApi (payload format 2.0). ``rest_api`` serves the same
route to a REST API that an owner puts in front of the function (proxy integration, payload 1.0; the template
declares none: docs/deploy-and-pipelines.md). Both have the one route, whose handler returns the output dict, and
the exception handlers: invalid input is a 400 naming the field and rule, anything unexpected the one 500 path
that logs the trace and counts a Fault. Which requests reach the function is the gateway's routing (exactly POST on
the execute path); an event for another route, which only a misrouted event (or a REST API in front, whose routes
are its owner's) can be, is a 404 in the service's error shape. Before Powertools reads an event, its plumbing is
checked just enough that an event shaped like API Gateway's but malformed is a 400, never a 500.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import chrf_core
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from chrf_core.contract import EXECUTE_PATH
from chrf_core.service import decode_request, error_envelope
from scoring import score_request

from observability import count, logger

JSON = "application/json"

# Route handlers return the output dict; the resolver writes it with json.dumps as the direct path's runtime does.
http_api = APIGatewayHttpResolver(serializer=json.dumps)  # the template's HttpApi (payload format 2.0)
rest_api = APIGatewayRestResolver(serializer=json.dumps)  # a REST API put in front (proxy integration; payload 1.0)


def parse_body(event: dict[str, Any]) -> Any:
    """The JSON request in an HTTP event body (base64 decoded when flagged); any flaw is invalid input."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded") and body:
        try:
            body = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise chrf_core.InvalidInputError(None, "flagged as base64 but is not valid base64",
                                              subject="body") from None
    return decode_request(body, source="body")


def invalid_input(error: chrf_core.InvalidInputError) -> Response[str]:
    return Response(400, JSON, error.envelope())


def internal_error(error: Exception) -> Response[str]:
    """The one 500 path: the trace goes to the log (operators), the caller gets no details."""
    logger.exception("unhandled error", extra={"error_type": type(error).__name__})
    count("Faults")
    return Response(500, JSON, error_envelope("internal_error", "internal error"))


for resolver in (http_api, rest_api):

    @resolver.post(EXECUTE_PATH)
    def execute(app: ApiGatewayResolver = resolver) -> dict[str, Any]:
        return score_request(parse_body(app.current_event.raw_event), "http")

    @resolver.not_found
    def not_found(_: Exception) -> Response[str]:
        return Response(404, JSON, error_envelope("not_found", f"no route; POST {EXECUTE_PATH}"))

    resolver.exception_handler(chrf_core.InvalidInputError)(invalid_input)
    resolver.exception_handler(Exception)(internal_error)


def malformed(event: dict[str, Any]) -> str | None:
    """What in an API Gateway event's plumbing is not as API Gateway sends it, if anything."""
    rest = "httpMethod" in event
    required = (["httpMethod"], ["path"]) if rest else (["requestContext", "http", "method"], ["rawPath"])
    for path in (*required, ["requestContext", "stage"]):
        value: Any = event
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, str):
            return f"{'.'.join(path)} must be a string"
    if not isinstance(event.get("body"), (str, type(None))):
        return "body must be a string"
    if not isinstance(event.get("isBase64Encoded"), (bool, type(None))):
        return "isBase64Encoded must be a boolean"
    for name, values_of in (("headers", lambda value: [value]), ("multiValueHeaders", lambda value: value)):
        headers = event.get(name) or {}
        if not isinstance(headers, dict) or not all(
                isinstance(key, str) and isinstance(values_of(value), list)
                and all(isinstance(item, str) for item in values_of(value)) for key, value in headers.items()):
            return f"{name} must be an object of {'strings' if name == 'headers' else 'lists of strings'}"
    return None


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """An API Gateway event's response (the format its resolver produces)."""
    resolver = rest_api if "httpMethod" in event else http_api
    problem = malformed(event)
    if problem is None:
        try:
            return resolver.resolve(event, context)
        except Exception as error:  # raised outside the route, while Powertools read the event
            problem = f"not a well-formed API Gateway event ({type(error).__name__})"
    count("InvalidInputs")
    logger.info("malformed event", extra={"rule": problem})
    body = error_envelope("invalid_input", f"event: {problem}", field=None)
    if resolver is rest_api:
        return {"statusCode": 400, "multiValueHeaders": {"Content-Type": [JSON]}, "body": body,
                "isBase64Encoded": False}
    return {"statusCode": 400, "headers": {"Content-Type": JSON}, "body": body, "isBase64Encoded": False,
            "cookies": []}
