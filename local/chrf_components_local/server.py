"""`chrf-components serve`: the service on loopback without Docker, like `sam local start-api` and
`sam local start-lambda` at once, on one port.

* The HTTP API: each request becomes an API Gateway HTTP API (payload v2) event for the API function, and its
  answer the proxy integration's response.
* The Lambda Invoke API (`POST /2015-03-31/functions/{FunctionName}/invocations`) for every function of the
  template, by logical id (or an ARN ending in it), as boto3, the AWS CLI, `AWS_ENDPOINT_URL_LAMBDA` or Step
  Functions Local call it: RequestResponse, Event and DryRun invocations, `LogType: Tail`, function errors with
  `X-Amz-Function-Error`, and AWS's error shapes.

The HTTP front door is waitress, a maintained pure-Python WSGI server: it reads every request in full (headers
and body, chunked or not) on its own event loop before a thread sees it, so slow or idle clients hold no thread;
it keeps connections alive, validates Content-Length, caps the body at API Gateway's 10 MB payload limit (413),
closes idle connections, and keeps a deep listen backlog. With ``--iam`` the SigV4 signature is checked first, as
the deployed API's IAM authorization (service execute-api) and Lambda (service lambda) check it. Log lines are
escaped and never carry a body. The functions run in worker processes as Lambda runs them (runtime.py).
SIGINT (Ctrl-C) and SIGTERM stop the server and every worker.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import re
import signal
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO
from urllib.parse import unquote

from chrf_core.contract import EXECUTE_PATH

from . import template as sam_template
from .answers import lambda_error
from .http_api import HttpApi
from .invoke_api import INVOKE_PATH, InvokeApi
from .runtime import Functions

CONNECTION_TIMEOUT = 30  # seconds a connection may stay idle before the server closes it
CONNECTION_LIMIT = 1000  # connections open at once; more wait in the listen backlog
BACKLOG = 1024  # connections the kernel queues before the server accepts them
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class ServeError(Exception):
    """The server cannot start (bad or busy port, no credentials for --iam): one line on stderr."""


def escaped(text: str, limit: int = 200) -> str:
    """Client text as a log line may show it: control characters escaped, at most ``limit`` characters."""
    text = CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- HTTP front ------------------------------------------------------------------------------------------------


class Gateway:
    """The WSGI application, both APIs on one port: the HTTP API as API Gateway serves it (routes from the template,
    SigV4 for execute-api with --iam) and the Lambda Invoke API as Lambda serves it (SigV4 for lambda with --iam),
    with one escaped, text-free log line per request."""

    def __init__(self, functions: Functions, template: dict[str, Any], credentials: Any = None,
                 region: str = "us-east-1", log: TextIO | None = None) -> None:
        self.functions, self.credentials, self.region = functions, credentials, region
        self.log = log  # None: the request lines go to stderr
        self.lambda_api = InvokeApi(functions, region)
        self.http_api = HttpApi(functions, template)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method, target = environ["REQUEST_METHOD"], environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        headers, body = request_headers(environ), read_body(environ)
        function = INVOKE_PATH.fullmatch(target.partition("?")[0])
        if function and method == "POST":
            refusal = self.refused("POST", target, headers, body, "lambda")
            if refusal:
                status, response_headers, data = lambda_error(403, refusal.code, str(refusal))
            else:
                status, response_headers, data = self.lambda_api.answer(unquote(function[1]), target.partition("?")[2],
                                                                        headers, body)
        else:
            status, response_headers, data = self.http_api.answer(
                method, target, headers, body, environ.get("REMOTE_ADDR", ""),
                lambda: self.refused(method, target, headers, body, "execute-api"))
        start_response(f"{status} {STATUS_TEXT.get(status, 'Status')}",
                       [*response_headers, ("Content-Length", str(len(data)))])
        with contextlib.suppress(ValueError):  # a log file closed as the server stops
            (self.log or sys.stderr).write(f"{time.strftime('%H:%M:%S')} {environ.get('REMOTE_ADDR', '')} "
                           f"\"{escaped(method, 16)} {escaped(target)}\" {status} {len(data)}\n")
        return [data]

    def refused(self, method: str, target: str, headers: dict[str, str], body: bytes, service: str) -> Any:
        """Why the signature does not hold (with --iam), if it does not: a sigv4.SignatureError, else None."""
        if self.credentials is None:
            return None
        from .sigv4 import SignatureError, verify

        try:
            verify(method, f"http://{headers.get('host', '')}{target}", headers, body, self.credentials,
                   self.region, service)
        except SignatureError as error:
            return error
        return None


STATUS_TEXT = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
               405: "Method Not Allowed", 413: "Payload Too Large", 500: "Internal Server Error"}


def request_headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers, names lower-case with dashes (as API Gateway's payload v2 gives them)."""
    headers = {key[5:].lower().replace("_", "-"): value for key, value in environ.items() if key.startswith("HTTP_")}
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.lower().replace("_", "-")] = environ[key]
    return headers


def read_body(environ: dict[str, Any]) -> bytes:
    """The body waitress has already read in full (at most the 10 MB cap)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    data: bytes = environ["wsgi.input"].read(length) if length else b""
    return data


def stop_waitress(server: Any) -> None:
    """Stop a waitress server running in another thread: close its listening socket and every connection, then its
    task threads."""
    while server._map:
        for channel in list(server._map.values()):
            channel.close()
    server.task_dispatcher.shutdown()


class LocalServer:
    """waitress serving the Gateway on host:port, with the function's workers started."""

    def __init__(self, host: str, port: int, functions: Functions, gateway: Gateway, threads: int,
                 idle_timeout: int) -> None:
        import waitress

        self.functions, self.region = functions, gateway.region
        self.log_stream: TextIO | None = None
        try:
            self.waitress = waitress.create_server(
                gateway, host=host, port=port, threads=threads, connection_limit=CONNECTION_LIMIT, backlog=BACKLOG,
                channel_timeout=idle_timeout, cleanup_interval=max(1, min(30, idle_timeout)),
                max_request_body_size=sam_template.API_GATEWAY_PAYLOAD_LIMIT, asyncore_use_poll=True,
                ident="chrf-components-local", clear_untrusted_proxy_headers=True,
            )
        except (OSError, OverflowError, ValueError) as error:
            raise ServeError(f"cannot listen on {host}:{port} ({getattr(error, 'strerror', None) or error})") from None
        self.server_address = (host, int(self.waitress.effective_port))

    def serve_forever(self) -> None:
        """Serve until shutdown() from another thread, or SIGINT / SIGTERM in the main thread."""
        self.waitress.run()

    def shutdown(self) -> None:
        """Stop serving (from another thread): close the listening socket and every connection."""
        stop_waitress(self.waitress)

    def server_close(self) -> None:
        """Stop the function's workers (and close the log file, if there is one)."""
        self.functions.close()
        if self.log_stream is not None:
            self.log_stream.close()


def make_server(host: str = "127.0.0.1", port: int = 3000, template: pathlib.Path | None = None,
                workers: int = 2, iam: bool = False, region: str | None = None,
                idle_timeout: int = CONNECTION_TIMEOUT, overrides: dict[str, str] | None = None,
                warm: tuple[str, ...] = (sam_template.DEFAULT_FUNCTION,), log: str | None = None) -> LocalServer:
    """A server bound to host:port (port 0 picks a free one), with its function workers started, not yet serving.

    The functions live in ``region`` (default: the AWS chain's, else us-east-1), which ARNs must name. With
    ``iam``, requests must be signed for it (service execute-api, or lambda for the Invoke API) with the credentials
    of the standard AWS chain, including their session token if they have one. ``overrides``, ``warm`` and ``log``
    (also for the server's own request lines): as for runtime.Functions."""
    if workers < 1:
        raise ServeError("--workers must be at least 1")
    import botocore.session

    session = botocore.session.get_session()
    credentials = None
    if iam:
        found = session.get_credentials()
        if found is None:
            raise ServeError("--iam needs AWS credentials (the standard chain) to check signatures against")
        credentials = found.get_frozen_credentials()
        if not (region or session.get_config_variable("region")):
            raise ServeError("--iam needs a region to check signatures' scope against: --region or AWS_REGION")
    region = region or session.get_config_variable("region") or "us-east-1"
    path = template or sam_template.find_template()
    functions = Functions(path, workers, overrides, warm, log)
    log_stream = open(log, "a", encoding="utf-8") if log else None  # noqa: SIM115 (closed by server_close)
    try:
        server = LocalServer(host, port, functions,
                             Gateway(functions, sam_template.load_template(path), credentials, region, log_stream),
                             max(4, 2 * workers), idle_timeout)
    except BaseException:
        functions.close()
        if log_stream:
            log_stream.close()
        raise
    server.log_stream = log_stream
    return server


def _stopper(server: LocalServer) -> Callable[[int, Any], None]:
    def stop(signum: int, frame: Any) -> None:
        # The functions first: an invocation in flight ends now (its caller gets an error), so waitress, which waits
        # for its threads, stops at once too.
        server.server_close()
        raise KeyboardInterrupt  # waitress's loop ends on it

    return stop


def serve(host: str, port: int, template: pathlib.Path, workers: int = 4, iam: bool = False,
          region: str | None = None) -> int:
    server = make_server(host, port, template, workers, iam, region)
    url = f"http://{host}:{server.server_address[1]}"
    signed = f", SigV4 for execute-api in {server.region} required" if iam else ""
    print(f"serving POST {url}{EXECUTE_PATH} ({workers} workers{signed}; Ctrl-C to stop)", file=sys.stderr)
    print(f"and the Lambda Invoke API at {url} for {', '.join(server.functions.runtimes)} "
          f"(boto3 endpoint_url, aws --endpoint-url, AWS_ENDPOINT_URL_LAMBDA)", file=sys.stderr)
    example = json.dumps({"hypotheses": ["the cat sat"], "references": ["the cat sat down"]})
    print(f"try: curl -s {url}{EXECUTE_PATH} -d '{example}'", file=sys.stderr)
    # Both signals stop the server, also where SIGINT came ignored (a process started in the background by a
    # shell without job control inherits SIGINT ignored, and Python then leaves it so).
    stop = _stopper(server)
    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.serve_forever()  # returns on SIGINT (Ctrl-C) or SIGTERM
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the workers' shutdown
        server.server_close()
        for number, handler in previous.items():
            signal.signal(number, handler)
    print("stopped", file=sys.stderr)
    return 0
