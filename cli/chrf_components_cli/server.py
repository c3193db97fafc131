"""`chrf-components serve`: the API on loopback without Docker, like `sam local start-api`.

Each HTTP request becomes an API Gateway HTTP API (payload v2) event for the template's function, and the
handler's response goes back as is. Bodies that are not UTF-8 are passed base64-encoded, as API Gateway does.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from . import local_lambda

MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit


def http_api_event(method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str) -> dict[str, Any]:
    """An HTTP API payload v2 event as API Gateway builds it for this request."""
    url = urlsplit(target)
    try:
        text, is_base64 = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, is_base64 = base64.b64encode(body).decode("ascii"), True
    now = datetime.now(UTC)
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": url.path,
        "rawQueryString": url.query,
        "headers": {name.lower(): value for name, value in headers.items()},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": headers.get("Host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": url.path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": headers.get("User-Agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "body": text if body else None,
        "isBase64Encoded": is_base64,
    }


def make_handler_class(handler: Any, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class LambdaProxy(BaseHTTPRequestHandler):
        server_version = "chrf-components-local"
        protocol_version = "HTTP/1.1"

        def _proxy(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._send(413, {"Content-Type": "application/json"},
                           b'{"error": {"code": "payload_too_large", "message": "request body over 10 MB"}}')
                return
            body = self.rfile.read(length) if length else b""
            event = http_api_event(self.command, self.path, dict(self.headers), body, self.client_address[0])
            with lock, contextlib.redirect_stdout(sys.stderr):  # one invocation at a time, as in one Lambda sandbox
                result = local_lambda.invoke(handler, event, local_lambda.LambdaContext())
            if "statusCode" not in result:  # the handler raised: Lambda's proxy integration answers 502
                self._send(502, {"Content-Type": "application/json"}, b'{"message": "Internal Server Error"}')
                return
            payload = result.get("body") or ""
            data = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode("utf-8")
            self._send(result["statusCode"], result.get("headers") or {}, data)

        def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def __getattr__(self, name: str) -> Any:
            # Every method (do_GET, do_TRACE, do_QUERY, ...) reaches the handler, which routes: 405 for anything
            # but POST on the execute path, as API Gateway's route table would.
            if name.startswith("do_"):
                return self._proxy
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(f"{time.strftime('%H:%M:%S')} {self.address_string()} {format % args}\n")

    return LambdaProxy


def make_server(host: str = "127.0.0.1", port: int = 3000) -> ThreadingHTTPServer:
    """A server bound to host:port (port 0 picks a free one), not yet serving."""
    with contextlib.redirect_stdout(sys.stderr):
        handler = local_lambda.load_handler()
    return ThreadingHTTPServer((host, port), make_handler_class(handler, threading.Lock()))


def serve(host: str, port: int) -> None:
    server = make_server(host, port)
    url = f"http://{host}:{server.server_address[1]}"
    print(f"serving POST {url}/v1/tools/chrf-components/versions/1.0.0/execute (Ctrl-C to stop)", file=sys.stderr)
    example = json.dumps({"hypotheses": ["the cat sat"], "references": ["the cat sat down"]})
    print(f"try: curl -s {url}/v1/tools/chrf-components/versions/1.0.0/execute -d '{example}'", file=sys.stderr)
    try:
        server.serve_forever()
    finally:
        server.server_close()
