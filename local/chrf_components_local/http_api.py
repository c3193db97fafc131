"""The HTTP API as API Gateway (HTTP API, payload format 2.0) serves it: routes from the template's HttpApi events,
CORS from its CorsConfiguration, the event a route's function receives, and the proxy integration's response.

As API Gateway does: a request matches a route only by its exact method and path (no trailing slash, no other
case), anything else is ``404 {"message":"Not Found"}`` without reaching a function; a CORS preflight is answered
by the gateway (204); a function that fails is ``500 {"message":"Internal Server Error"}``. The signature (with
``--iam``) is checked after routing, by the server.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple

from .answers import FAILED, NOT_FOUND, Answer, gateway_refusal
from .runtime import Functions
from .template import ACCOUNT, parameter_value


class Route(NamedTuple):
    method: str
    path: str
    function: str  # logical id


class Cors(NamedTuple):
    origins: list[str]
    methods: list[str]
    headers: list[str]
    max_age: int | None


def routes(template: dict[str, Any]) -> list[Route]:
    """Every HttpApi event of the template's functions: (method, path, function)."""
    found = []
    for name, resource in template["Resources"].items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in (resource.get("Properties", {}).get("Events") or {}).values():
            if isinstance(event, dict) and event.get("Type") == "HttpApi":
                properties = event.get("Properties", {})
                found.append(Route(str(properties.get("Method", "ANY")).upper(),  # SAM's examples write "get"
                                   str(properties.get("Path", "$default")), name))
    return found


def cors(template: dict[str, Any]) -> Cors | None:
    """The HttpApi's CorsConfiguration (parameters at their defaults), if it has one."""
    for resource in template["Resources"].values():
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::HttpApi":
            configuration = resource.get("Properties", {}).get("CorsConfiguration")
            if isinstance(configuration, dict):
                origins, methods, headers = (
                    [str(parameter_value(template, value)) for value in configuration.get(key, [])]
                    for key in ("AllowOrigins", "AllowMethods", "AllowHeaders"))
                max_age = configuration.get("MaxAge")
                return Cors(origins, methods, headers,
                            None if max_age is None else int(parameter_value(template, max_age)))
    return None


def http_api_event(method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str) -> dict[str, Any]:
    """An HTTP API payload v2 event as API Gateway builds it for this request (``headers`` lower-case)."""
    path, _, query = target.partition("?")
    try:
        text, is_base64 = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, is_base64 = base64.b64encode(body).decode("ascii"), True
    now = datetime.now(UTC)
    route_key = f"{method} {path}"
    return {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "local",
            "domainName": headers.get("host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "body": text if body else None,
        "isBase64Encoded": is_base64,
    }


class HttpApi:
    """The template's HTTP API over its functions' execution environments."""

    def __init__(self, functions: Functions, template: dict[str, Any]) -> None:
        self.functions, self.routes, self.cors = functions, routes(template), cors(template)

    def route(self, method: str, path: str) -> Route | None:
        return next((route for route in self.routes if route.path == path and route.method in (method, "ANY")), None)

    def allowed_origin(self, headers: dict[str, str]) -> str | None:
        origin = headers.get("origin")
        if self.cors is None or origin is None:
            return None
        return "*" if "*" in self.cors.origins else origin if origin in self.cors.origins else None

    def preflight(self, headers: dict[str, str]) -> Answer:
        """A CORS preflight, answered by the gateway itself."""
        assert self.cors is not None
        answer = [("Access-Control-Allow-Methods", ",".join(self.cors.methods)),
                  ("Access-Control-Allow-Headers", ",".join(self.cors.headers))]
        origin = self.allowed_origin(headers)
        if origin:
            answer.insert(0, ("Access-Control-Allow-Origin", origin))
        if self.cors.max_age is not None:
            answer.append(("Access-Control-Max-Age", str(self.cors.max_age)))
        return 204, answer, b""

    def answer(self, method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str,
               refused: Callable[[], Any]) -> Answer:
        """The answer to one request (``headers`` lower-case); ``refused`` checks its signature (with --iam)."""
        path = target.partition("?")[0]
        if method == "OPTIONS" and self.cors is not None and "access-control-request-method" in headers:
            return self.preflight(headers)
        route = self.route(method, path)
        if route is None:
            return NOT_FOUND
        refusal = refused()
        if refusal:
            return gateway_refusal(refusal.code, str(refusal))
        runtime = self.functions.get(route.function)
        assert runtime is not None
        result = runtime.invoke(json.dumps(http_api_event(method, target, headers, body, source_ip)).encode())
        response = json.loads(result.payload)
        if result.failed or not isinstance(response, dict) or "statusCode" not in response:
            return FAILED
        payload = response.get("body") or ""
        data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode("utf-8")
        response_headers = [(str(name), str(value)) for name, value in (response.get("headers") or {}).items()
                            if str(name).lower() not in ("content-length", "connection", "transfer-encoding")]
        origin = self.allowed_origin(headers)
        if origin:
            response_headers.append(("Access-Control-Allow-Origin", origin))
        return int(response["statusCode"]), response_headers, data
