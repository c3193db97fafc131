"""`chrf-components serve`: the API on loopback without Docker, like `sam local start-api`.

The standard library's HTTP/1.1 server (http.server), with what a front door needs: Content-Length is validated
(digits only, at most API Gateway's 10 MB payload limit; chunked bodies are refused with 411), a body shorter
than declared is a 400, the connection is closed after any error that leaves a body unread, every connection
has a timeout, log lines are escaped and never carry a body, and a bounded pool of threads serves connections.
The standard library is enough for a loopback tool and keeps the command line free of a server dependency.

Each request becomes an API Gateway HTTP API (payload v2) event for the template's function. Invocations run in
a pool of worker processes, each holding the function loaded once, the way Lambda runs one invocation at a time
per execution environment and several environments side by side: a slow invocation holds one worker, never the
others. With ``--iam`` the server checks SigV4 signatures as the deployed API's IAM authorization does.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import json
import multiprocessing
import pathlib
import re
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import urlsplit

import chrf_core

from . import local_lambda

CONNECTION_TIMEOUT = 30.0  # seconds a connection may sit idle or send its request
CONNECTIONS = 32  # connections served at once; more wait in the listen backlog
JSON_HEADERS = {"Content-Type": "application/json"}
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")


class ServeError(Exception):
    """The server cannot start (bad or busy port): one line on stderr."""


def escaped(text: str, limit: int = 200) -> str:
    """Client text as a log line may show it: control characters escaped, at most ``limit`` characters."""
    text = CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


# ---- the function's execution environments (worker processes) --------------------------------------------------

_handler: Any = None


def _load_in_worker(template: str) -> None:
    """Worker start: the function's output (logs, metrics) goes to stderr, as `sam local start-api` shows it."""
    global _handler
    sys.stdout = sys.stderr
    _handler = local_lambda.load_handler(local_lambda.DEFAULT_FUNCTION, pathlib.Path(template))


def _invoke_in_worker(event: dict[str, Any]) -> Any:
    return local_lambda.invoke(_handler, event, local_lambda.LambdaContext())


def _ready(_: int) -> bool:
    return _handler is not None


class Functions:
    """A pool of worker processes, each with the function loaded: invocations run side by side."""

    def __init__(self, template: pathlib.Path, workers: int) -> None:
        # A template without the function fails here, in one line, before any worker starts.
        local_lambda.function_paths(local_lambda.load_template(template), local_lambda.DEFAULT_FUNCTION,
                                    template.parent)
        context = multiprocessing.get_context("spawn")
        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=_load_in_worker, initargs=(str(template),)
        )
        list(self.pool.map(_ready, range(workers)))  # load the function now, not on the first request

    def invoke(self, event: dict[str, Any]) -> Any:
        return self.pool.submit(_invoke_in_worker, event).result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


# ---- HTTP front ------------------------------------------------------------------------------------------------


class BoundedThreadingServer(HTTPServer):
    """An HTTP server that serves each connection on a thread from a bounded pool."""

    daemon_threads = True

    functions: Functions

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 credentials: Any = None) -> None:
        self.credentials = credentials
        self.slots = threading.BoundedSemaphore(CONNECTIONS)
        self.threads = concurrent.futures.ThreadPoolExecutor(max_workers=CONNECTIONS)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.slots.acquire()  # all threads busy: stop accepting until one is free

        def serve() -> None:
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                self.slots.release()

        self.threads.submit(serve)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} {client_address[0]} connection error: "
                         f"{type(error).__name__}\n")

    def server_close(self) -> None:
        super().server_close()
        self.threads.shutdown(wait=False, cancel_futures=True)
        if hasattr(self, "functions"):
            self.functions.close()


class LambdaProxy(BaseHTTPRequestHandler):
    """Every method reaches the function, which routes (405 for anything but POST on the execute path)."""

    server: BoundedThreadingServer
    server_version = "chrf-components-local"
    protocol_version = "HTTP/1.1"
    timeout = CONNECTION_TIMEOUT

    def _proxy(self) -> None:
        if self.headers.get("Transfer-Encoding"):
            self._fail(411, "length_required", "send the body with a Content-Length, not chunked")
            return
        lengths = self.headers.get_all("Content-Length") or []
        if len(set(lengths)) > 1 or any(not value.isascii() or not value.isdigit() for value in lengths):
            self._fail(400, "bad_request", "Content-Length must be one number of bytes")
            return
        length = int(lengths[0]) if lengths else 0
        if length > local_lambda.API_GATEWAY_PAYLOAD_LIMIT:
            self._fail(413, "payload_too_large",
                       f"request body over {local_lambda.API_GATEWAY_PAYLOAD_LIMIT} bytes (API Gateway's limit)")
            return
        try:
            body = self.rfile.read(length) if length else b""
        except TimeoutError:
            self._fail(408, "request_timeout", "the body did not arrive in time")
            return
        if len(body) < length:
            self._fail(400, "bad_request", f"the body ended after {len(body)} of {length} bytes")
            return
        credentials = self.server.credentials
        if credentials is not None:
            from .sigv4 import SignatureError, verify

            url = f"http://{self.headers.get('Host', '')}{self.path}"
            try:
                verify(self.command, url, dict(self.headers.items()), body, credentials)
            except SignatureError as error:
                self._send(403, JSON_HEADERS, json.dumps({"message": str(error)}).encode())
                return
        event = http_api_event(self.command, self.path, dict(self.headers.items()), body, self.client_address[0])
        result = self.server.functions.invoke(event)
        if not isinstance(result, dict) or "statusCode" not in result:
            # The function raised: API Gateway's proxy integration answers 500 with this body.
            self._send(500, JSON_HEADERS, b'{"message": "Internal Server Error"}')
            return
        payload = result.get("body") or ""
        data = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode("utf-8")
        self._send(int(result["statusCode"]), dict(result.get("headers") or {}), data)

    def _fail(self, status: int, code: str, message: str) -> None:
        """An error before the function runs; the connection closes, as a body may be left unread."""
        self.close_connection = True
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        self._send(status, {**JSON_HEADERS, "Connection": "close"}, body)

    def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):
            return self._proxy
        raise AttributeError(name)

    def log_message(self, format: str, *args: Any) -> None:
        line = format % args
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} {self.address_string()} {escaped(line)}\n")


def make_server(host: str = "127.0.0.1", port: int = 3000, template: pathlib.Path | None = None,
                workers: int = 2, iam: bool = False) -> BoundedThreadingServer:
    """A server bound to host:port (port 0 picks a free one), with its function workers started, not yet serving."""
    if workers < 1:
        raise ServeError("--workers must be at least 1")
    credentials = None
    if iam:
        import botocore.session

        credentials = botocore.session.get_session().get_credentials()
        if credentials is None:
            raise ServeError("--iam needs AWS credentials (the standard chain) to check signatures against")
    try:
        server = BoundedThreadingServer((host, port), LambdaProxy, credentials)
    except (OSError, OverflowError) as error:
        raise ServeError(f"cannot listen on {host}:{port} ({getattr(error, 'strerror', None) or error})") from None
    try:
        server.functions = Functions(template or local_lambda.find_template(), workers)
    except BaseException:
        server.server_close()
        raise
    return server


def serve(host: str, port: int, template: pathlib.Path, workers: int = 4, iam: bool = False) -> int:
    server = make_server(host, port, template, workers, iam)
    url = f"http://{host}:{server.server_address[1]}"
    print(f"serving POST {url}{chrf_core.EXECUTE_PATH} ({workers} workers{', SigV4 required' if iam else ''}; "
          "Ctrl-C to stop)", file=sys.stderr)
    example = json.dumps({"hypotheses": ["the cat sat"], "references": ["the cat sat down"]})
    print(f"try: curl -s {url}{chrf_core.EXECUTE_PATH} -d '{example}'", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    server.server_close()
    return 0

