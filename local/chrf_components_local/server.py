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
closes idle connections, and keeps a deep listen backlog. A complete request waits in the queue of the function
it is for, served by two threads per execution environment of that function (FunctionQueues), so that one
function's backlog never delays another's. A connection closed after an early answer (headers past their limit:
431) first reads what the client still sends, so that the client reads the answer, not a reset. With ``--iam``
the SigV4 signature is checked first, as the deployed API's IAM authorization (service execute-api) and Lambda
(service lambda) check it. Log lines are escaped and never carry a body. The functions run in worker processes
as Lambda runs them (runtime.py).
SIGINT (Ctrl-C) and SIGTERM stop the server and every worker.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import re
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TextIO
from urllib.parse import unquote

from chrf_core.contract import EXECUTE_PATH

from . import template as sam_template
from .answers import lambda_error
from .definitions import local_buckets
from .http_api import HttpApi
from .invoke_api import INVOKE_PATH, InvokeApi
from .runtime import Functions
from .sigv4 import presigned

CONNECTION_TIMEOUT = 30  # seconds a connection may stay idle before the server closes it
LINGER_SECONDS = 5.0  # a connection closed after an early answer reads what the client still sends, this long
LINGER_BYTES = 16 * 1024 * 1024  # and at most this much
DRAIN_SECONDS = 5.0  # on SIGTERM: how long the answers to requests already received may take to be written
WORKERS_LIMIT = 32  # --workers at most: each execution environment is a process (about 40 MB)
SPARE_THREADS = 4  # threads for requests that reach no function (refusals, 404s, CORS preflights)
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
                 region: str = sam_template.LOCAL_REGION, log: TextIO | None = None, stepfunctions: Any = None,
                 s3: Any = None) -> None:
        self.functions, self.credentials, self.region = functions, credentials, region
        self.log = log  # None: the request lines go to stderr
        self.lambda_api = InvokeApi(functions, region)
        self.http_api = HttpApi(functions, template)
        self.stepfunctions = stepfunctions  # stepfunctions.StepFunctionsApi, or None
        self.s3 = s3  # moto's S3 as a WSGI application, or None
        self.buckets: list[str] = []  # the template's, on that S3

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method, target = environ["REQUEST_METHOD"], environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        service = aws_service(environ.get("HTTP_X_AMZ_TARGET"), environ.get("HTTP_AUTHORIZATION"),
                              environ.get("QUERY_STRING", ""))
        if service == "s3" and self.s3 is not None:
            return self.s3_answer(environ, start_response, method)
        headers, body = request_headers(environ), read_body(environ)
        function = INVOKE_PATH.fullmatch(target.partition("?")[0])
        if service == "states" and self.stepfunctions is not None:
            refusal = self.refused(method, target, headers, body, "states")
            if refusal:
                status, answer = 400, {"__type": refusal.code, "message": str(refusal)}
            else:
                status, answer = self.stepfunctions.answer(headers.get("x-amz-target", ""), body)
            data = json.dumps(answer).encode()
            response_headers = [("Content-Type", "application/x-amz-json-1.0"),
                                ("x-amzn-RequestId", str(uuid.uuid4()))]
            target = "/ " + escaped(headers.get("x-amz-target", ""), 64)  # the action, never the caller's values
        elif function and method == "POST":
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
        self.log_line(environ, method, target, status, len(data))
        return [data]

    def log_line(self, environ: dict[str, Any], method: str, target: str, status: int, size: int) -> None:
        with contextlib.suppress(ValueError):  # a log file closed as the server stops
            (self.log or sys.stderr).write(f"{time.strftime('%H:%M:%S')} {environ.get('REMOTE_ADDR', '')} "
                                           f"\"{escaped(method, 16)} {escaped(target)}\" {status} {size}\n")

    def s3_answer(self, environ: dict[str, Any], start_response: StartResponse, method: str) -> Iterable[bytes]:
        """An S3 request, checked and decoded as S3 checks it (s3_front: names, aws-chunked bodies, XML bodies, the
        store's size; with --iam the signature) and then answered by moto's S3; logged without its bucket or key."""
        from . import s3_front, s3_store

        seen: dict[str, Any] = {}
        target = environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        path, _, query = target.partition("?")
        headers = request_headers(environ)

        def refuse(error: s3_front.S3Error) -> list[bytes]:
            data = s3_front.error_body(error)
            start_response(f"{error.status} {STATUS_TEXT.get(error.status, 'Error')}",
                           [("Content-Type", "application/xml"), ("Content-Length", str(len(data)))])
            self.log_line(environ, method, "/ (S3)", error.status, len(data))
            return [data]

        try:
            s3_front.check_names(path)
            content_sha256 = headers.get("x-amz-content-sha256", "")
            decoded = None
            body: bytes | None = None
            if self.credentials is not None or content_sha256 in s3_front.STREAMING or \
                    s3_front.xml_bodied(method, query):
                body = read_body(environ)
            if content_sha256 in s3_front.STREAMING:
                assert body is not None
                decoded = s3_front.decode_chunked(content_sha256, headers.get("x-amz-decoded-content-length"), body)
            elif content_sha256.startswith("STREAMING-"):
                raise s3_front.S3Error(400, "InvalidArgument", f"x-amz-content-sha256 {content_sha256[:64]} is not "
                                                               f"one S3 knows")
            if body is not None and s3_front.xml_bodied(method, query):
                s3_front.check_xml(body)
            if method in ("PUT", "POST"):
                incoming = len(decoded.data) if decoded else int(environ.get("CONTENT_LENGTH") or 0)
                if stored_bytes() + incoming > s3_front.STORE_LIMIT:
                    raise s3_front.S3Error(400, "EntityTooLarge", f"serve's S3 holds at most "
                                                                  f"{s3_front.STORE_LIMIT:,} bytes in all (a local "
                                                                  f"limit)")
        except s3_front.S3Error as error:
            return refuse(error)
        if self.credentials is not None:
            assert body is not None
            refusal = self.refused(method, target, headers, body, "s3", decoded)
            if refusal:
                code = refusal.s3_code or S3_SIGNATURE_ERRORS.get(refusal.code, "AccessDenied")
                return refuse(s3_front.S3Error(403, code, str(refusal)))
        if decoded is not None:  # moto is given the object's bytes, as a plain upload
            environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(decoded.data), str(len(decoded.data))
            environ["HTTP_X_AMZ_CONTENT_SHA256"] = "UNSIGNED-PAYLOAD"
            for name in ("HTTP_X_AMZ_DECODED_CONTENT_LENGTH", "HTTP_X_AMZ_TRAILER"):
                environ.pop(name, None)
            encoding = ",".join(part for part in environ.get("HTTP_CONTENT_ENCODING", "").split(",")
                                if part.strip() and part.strip() != "aws-chunked")
            environ["HTTP_CONTENT_ENCODING"] = encoding
            if not encoding:
                del environ["HTTP_CONTENT_ENCODING"]
            for name, value in decoded.trailers.items():  # the trailer's checksum, as a header would give it
                environ["HTTP_" + name.upper().replace("-", "_")] = value
        elif body is not None:
            environ["wsgi.input"] = io.BytesIO(body)

        def remembered(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            seen["status"], seen["headers"] = status, headers
            return lambda data: None  # moto answers with an iterable, never through write()

        try:
            with s3_store.answering():
                chunks = self.s3(environ, remembered)
        except Exception:  # moto's own failure on a request it does not implement: never a 500
            seen["status"] = "500"
        if str(seen.get("status", "500")).startswith("500"):  # e.g. POST /moto-api/reset: an object, no action
            return refuse(s3_front.S3Error(501, "NotImplemented", "A header or query you provided implies "
                                                                  "functionality that is not implemented (serve's "
                                                                  "S3 does not implement this request)"))
        start_response(seen["status"], seen["headers"])
        self.log_line(environ, method, "/ (S3)", int(str(seen["status"]).split(" ")[0] or 0), 0)
        return chunks  # type: ignore[no-any-return]

    def function_of(self, method: str, path: str, headers: dict[str, str] | None = None, query: str = "") -> str | None:
        """The function a request (its method, unquoted path, waitress's headers and query) is for, if any: the
        queue it waits in (S3's and Step Functions' requests wait in AWS_QUEUE)."""
        headers = headers or {}
        if aws_service(headers.get("X_AMZ_TARGET"), headers.get("AUTHORIZATION"), query) in ("s3", "states"):
            return AWS_QUEUE
        invocation = INVOKE_PATH.fullmatch(path)
        if invocation and method == "POST":
            return self.lambda_api.function_of(invocation[1])
        route = self.http_api.route(method, path)
        return route.function if route else None

    def refused(self, method: str, target: str, headers: dict[str, str], body: bytes, service: str,
                decoded: Any = None) -> Any:
        """Why the signature does not hold (with --iam), if it does not: a sigv4.SignatureError, else None
        (``decoded``: an aws-chunked body's chunks, each signature checked too)."""
        if self.credentials is None:
            return None
        from .sigv4 import SignatureError, verify

        try:
            verify(method, f"http://{headers.get('host', '')}{target}", headers, body, self.credentials,
                   self.region, service, chunks=decoded)
        except SignatureError as error:
            return error
        return None


AWS_QUEUE = "(aws)"  # the queue of S3's and Step Functions' requests
AWS_THREADS = 8
S3_SIGNATURE_ERRORS = {"InvalidSignatureException": "SignatureDoesNotMatch",  # S3's names for the same refusals
                       "UnrecognizedClientException": "InvalidAccessKeyId",
                       "IncompleteSignatureException": "AuthorizationHeaderMalformed",
                       "AuthorizationQueryParametersError": "AuthorizationQueryParametersError"}
S3_REQUEST_LIMIT = 256 * 1024 * 1024  # bytes of one S3 request's body (PutObject, UploadPart): the local limit
SCOPE = re.compile(r"Credential=[^/,\s]*/\d{8}/[^/,\s]*/([a-z0-9-]+)/aws4_request")


def aws_service(target: str | None, authorization: str | None, query: str) -> str | None:
    """Which AWS service a request is for, as LocalStack's gateway tells them apart: Step Functions' X-Amz-Target,
    else the service in the SigV4 credential scope (the Authorization header's, or a presigned URL's
    X-Amz-Credential); None for an unsigned request."""
    if target and target.startswith("AWSStepFunctions."):
        return "states"
    match = SCOPE.search(authorization or "")
    if match is None and "X-Amz-Credential=" in query:
        match = SCOPE.search("Credential=" + unquote(query.partition("X-Amz-Credential=")[2].partition("&")[0]))
    if match is None and not authorization and presigned(query) == "sigv2":
        return "s3"  # S3's SigV2 presigned URL (AWSAccessKeyId, Signature, Expires): boto3's default form for S3
    return match[1] if match else None


STATUS_TEXT = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
               405: "Method Not Allowed", 411: "Length Required", 413: "Payload Too Large",
               500: "Internal Server Error", 501: "Not Implemented"}


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
    """Stop a waitress server running in another thread: its task threads first (a task ending wakes the server's
    loop through its trigger, which must still be open: closed first, that was an ``OSError: [Errno 9]`` traceback
    in about one stop of eight), then its listening socket and every connection. A client gone while its answer was
    written is what stopping means: waitress's report of it (a traceback) is not shown."""
    import logging

    logging.getLogger("waitress").setLevel(logging.CRITICAL)
    server.task_dispatcher.shutdown()
    while server._map:
        for channel in list(server._map.values()):
            channel.close()


def s3_sized_parser() -> type:
    """waitress's request parser, with S3's requests allowed bodies up to S3_REQUEST_LIMIT instead of API Gateway's
    10 MB (waitress spools a large body to a file; moto's S3 then holds the object)."""
    import copy

    from waitress.parser import HTTPRequestParser
    from waitress.utilities import RequestEntityTooLarge

    class EntityTooLarge(RequestEntityTooLarge):  # type: ignore[misc]
        """waitress's refusal of a body past the limit, in S3's words (its XML, EntityTooLarge, 400)."""

        def to_response(self, ident: Any = None) -> tuple[str, list[tuple[str, str]], bytes]:
            from .s3_front import S3Error, error_body

            data = error_body(S3Error(400, "EntityTooLarge", f"Your proposed upload exceeds the maximum allowed size "
                                                             f"(serve's S3 takes at most {S3_REQUEST_LIMIT:,} bytes a "
                                                             f"request: a local limit)"))
            return "400 Bad Request", [("Content-Type", "application/xml")], data

    class S3SizedParser(HTTPRequestParser):  # type: ignore[misc]
        s3 = False

        def parse_header(self, header_plus: bytes) -> None:
            super().parse_header(header_plus)
            headers = self.headers
            if aws_service(headers.get("X_AMZ_TARGET"), headers.get("AUTHORIZATION"), self.query or "") == "s3":
                adjustments: Any = copy.copy(getattr(self, "adj"))  # noqa: B009 (waitress's attribute, untyped)
                adjustments.max_request_body_size = S3_REQUEST_LIMIT
                self.adj, self.s3 = adjustments, True

        def received(self, data: bytes) -> int:
            consumed: int = super().received(data)
            refused: Any = self.__dict__.get("error")  # waitress's own, set as it reads
            if self.s3 and type(refused) is RequestEntityTooLarge:
                self.error = EntityTooLarge(refused.body)
            return consumed

    return S3SizedParser


def lingering_channel() -> type:
    """waitress's connection with a lingering close, as Apache's and nginx's: when the server closes a connection
    after answering while the client may still be sending (a request refused before it was read in full: headers
    past their limit, 431), it stops writing, reads and discards what still comes (up to LINGER_BYTES, for at most
    LINGER_SECONDS) and only then closes, so that the client reads the answer instead of a connection reset."""
    from waitress.channel import HTTPChannel

    class LingeringChannel(HTTPChannel):  # type: ignore[misc]
        linger_until = 0.0
        linger_left = 0
        parser_class = s3_sized_parser()

        def handle_close(self) -> None:
            if self.will_close and self.connected:  # the server's close after its answer, not the client's
                try:
                    self.socket.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                else:
                    self.linger_until, self.linger_left = time.monotonic() + LINGER_SECONDS, LINGER_BYTES
                    self.__class__ = Lingering  # the poll loop asks every channel: only a lingering one pays
                    return
            super().handle_close()

        def send_continue(self) -> None:
            """waitress 3.0.2 sends 100 Continue for a request already complete (Expect: 100-continue with
            Content-Length: 0, as boto3 sends an empty PUT) and then marks it incomplete, waiting for a body that
            never comes: the client hangs until its timeout. A request with nothing left to send gets its final
            answer alone (RFC 9110 15.2.1: a server may omit the 100 when it has the content)."""
            if self.request is not None and self.request.completed and not self.request.content_length:
                self.request.expect_continue = False
                return
            super().send_continue()

    class Lingering(LingeringChannel):
        """A channel reading and discarding what its client still sends, then closing."""

        def readable(self) -> bool:
            return True

        def writable(self) -> bool:  # once the time is up, handle_write closes it
            return time.monotonic() > self.linger_until

        def handle_write(self) -> None:
            HTTPChannel.handle_close(self)

        def handle_close(self) -> None:
            HTTPChannel.handle_close(self)

        def handle_read(self) -> None:
            try:
                data = self.socket.recv(65536)
            except OSError:
                data = b""
            self.linger_left -= len(data)
            if not data or self.linger_left <= 0 or time.monotonic() > self.linger_until:
                HTTPChannel.handle_close(self)

    return LingeringChannel


class FunctionQueues:
    """waitress's task dispatcher with a queue and threads per function (two per execution environment: while one
    answers over HTTP, the next invocation is ready for the environment) and one more for every other request: a
    function's backlog waits in its own queue and never delays another function's requests (Lambda's concurrency
    is per function)."""

    def __init__(self, threads: dict[str, int], spare: int,
                 function_of: Callable[[str, str, dict[str, str], str], str | None]) -> None:
        from waitress.task import ThreadedTaskDispatcher

        self.function_of = function_of
        self.queues: dict[str, Any] = {}
        for name, count in {**threads, "": spare}.items():
            self.queues[name] = ThreadedTaskDispatcher()
            self.queues[name].set_thread_count(count)

    def set_thread_count(self, count: int) -> None:
        """Each queue keeps its own threads (waitress calls this only for its own dispatcher)."""

    def add_task(self, channel: Any) -> None:
        """Queue a connection whose next request is complete, in the queue of the function that request is for."""
        request = channel.requests[0] if getattr(channel, "requests", None) else None
        name = None
        if request is not None and request.error is None:
            name = self.function_of(request.command, request.path, request.headers, request.query)
        self.queues[name or ""].add_task(channel)

    def shutdown(self, cancel_pending: bool = True, timeout: float = 5) -> bool:
        for queue in self.queues.values():
            queue.set_thread_count(0)
        deadline = time.monotonic() + timeout
        return all([queue.shutdown(cancel_pending, max(0.0, deadline - time.monotonic()))
                    for queue in self.queues.values()])


class LocalServer:
    """waitress serving the Gateway on a bound socket, with the function's workers started."""

    def __init__(self, listener: socket.socket, functions: Functions, gateway: Gateway, workers: int,
                 idle_timeout: int) -> None:
        import waitress

        self.functions, self.region, self.gateway = functions, gateway.region, gateway
        self.log_stream: TextIO | None = None
        self.stopping = False
        queues = FunctionQueues({**{name: 2 * workers for name in functions.runtimes}, AWS_QUEUE: AWS_THREADS},
                                SPARE_THREADS, gateway.function_of)
        self.server_address = listener.getsockname()[:2]
        self.waitress = waitress.create_server(
            gateway, _dispatcher=queues, sockets=[listener], connection_limit=CONNECTION_LIMIT, backlog=BACKLOG,
            channel_timeout=idle_timeout, cleanup_interval=max(1, min(30, idle_timeout)),
            max_request_body_size=sam_template.API_GATEWAY_PAYLOAD_LIMIT, asyncore_use_poll=True,
            ident="chrf-components-local", clear_untrusted_proxy_headers=True,
        )
        self.waitress.channel_class = lingering_channel()

    def serve_forever(self) -> None:
        """Serve until shutdown() or stop_answering() from another thread."""
        self.waitress.run()

    def stop_answering(self) -> None:
        """Stop as SIGTERM asks (from a thread other than the server's loop): the functions are stopped (an
        invocation in flight, every one still queued and any that still arrives is answered at once with Lambda's
        error), the answers are written out, and once nothing is queued, being read or left to write (at most
        DRAIN_SECONDS), the server stops. So every request that reached it gets an answer, those still in the
        listen backlog too."""
        self.server_close()
        deadline = time.monotonic() + DRAIN_SECONDS
        queues = self.waitress.task_dispatcher.queues.values()
        quiet = 0
        while time.monotonic() < deadline and quiet < 3:
            busy = any(queue.queue or queue.active_count for queue in queues) or any(
                getattr(channel, "total_outbufs_len", 0) or getattr(channel, "requests", None)
                or getattr(channel, "request", None) is not None for channel in list(self.waitress._map.values()))
            quiet = 0 if busy else quiet + 1
            time.sleep(0.02)
        stop_waitress(self.waitress)

    def shutdown(self) -> None:
        """Stop serving (from another thread): close the listening socket and every connection."""
        stop_waitress(self.waitress)

    def server_close(self) -> None:
        """Stop the executions and the function's workers (and close the log file, if there is one)."""
        executions = self.gateway.stepfunctions
        if executions is not None:
            executions.close(wait=0)  # told to stop: they end once their tasks in flight end,
        self.functions.close()  # which is now (their callers get an error)
        if executions is not None:
            executions.close()
        if self.log_stream is not None:
            self.log_stream.close()


def listening(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (0: a free port), so that the address is known before anything starts."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        listener = socket.socket(family, kind, protocol)
    except (OSError, OverflowError, UnicodeError) as error:
        raise ServeError(f"cannot listen on {host}:{port} ({getattr(error, 'strerror', None) or error})") from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
    except (OSError, OverflowError) as error:
        listener.close()
        raise ServeError(f"cannot listen on {host}:{port} ({getattr(error, 'strerror', None) or error})") from None
    return listener


def local_url(listener: socket.socket) -> str:
    """The URL the functions and the runner reach this server at (loopback where it listens on every address)."""
    host, port = listener.getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1" if host == "0.0.0.0" else "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def make_server(host: str = "127.0.0.1", port: int = 3000, template: pathlib.Path | None = None,
                workers: int = 2, iam: bool = False, region: str | None = None,
                idle_timeout: int = CONNECTION_TIMEOUT, overrides: dict[str, str] | None = None,
                warm: tuple[str, ...] = (sam_template.DEFAULT_FUNCTION,), log: str | None = None) -> LocalServer:
    """A server bound to host:port (port 0 picks a free one), with its function workers started, not yet serving.

    The functions live in ``region`` (default: us-east-1, whatever the caller's AWS configuration says, as with
    no --iam nothing of it is read; with --iam: AWS_REGION or the AWS chain's), which ARNs must name. The same
    port answers S3 (moto's, with the template's buckets) and Step Functions (the template's state machines on the
    local runner); the functions reach both there (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_SFN), as a deployed
    function reaches AWS's. With ``iam``, requests must be signed for it (service execute-api, lambda, s3 or states)
    with the credentials of the standard AWS chain, including their session token if they have one; the functions
    and the runner sign with those. ``overrides``, ``warm`` and ``log`` (also for the server's own request lines):
    as for runtime.Functions."""
    if not 1 <= workers <= WORKERS_LIMIT:
        raise ServeError(f"--workers must be from 1 to {WORKERS_LIMIT} (each is a process), got {workers}")
    large_buffers_returned()
    credentials = None
    if iam:  # the caller's AWS configuration is read for --iam alone
        import botocore.session
        from botocore.exceptions import BotoCoreError

        session = botocore.session.get_session()
        try:  # a profile that is not there, a config file that does not parse: one line
            found = session.get_credentials()
            if found is None:
                raise ServeError("--iam needs AWS credentials (the standard chain) to check signatures against")
            credentials = found.get_frozen_credentials()
            region = region or os.environ.get("AWS_REGION") or session.get_config_variable("region")
            if not region:
                raise ServeError("--iam needs a region to check signatures' scope against: --region or AWS_REGION")
        except BotoCoreError as error:
            raise ServeError(f"the AWS configuration: {error}") from None
    region = region or sam_template.LOCAL_REGION
    path = template or sam_template.find_template()
    template_data = sam_template.load_template(path)
    listener = listening(host, port)
    url = local_url(listener)
    signing = {"AWS_ACCESS_KEY_ID": credentials.access_key, "AWS_SECRET_ACCESS_KEY": credentials.secret_key,
               "AWS_SESSION_TOKEN": credentials.token or ""} if credentials else dict(PLACEHOLDER_ENVIRONMENT)
    aws = {**signing, "AWS_REGION": region, "AWS_DEFAULT_REGION": region, "AWS_ENDPOINT_URL_S3": url,
           "AWS_ENDPOINT_URL_SFN": url}
    functions: Functions | None = None
    log_stream = None
    try:
        stepfunctions, s3 = local_services(path, template_data, url, region, credentials,
                                           lambda: server.gateway.lambda_api.answer)
        buckets = list(local_buckets(template_data).values())
        functions = Functions(path, workers, {**aws, **(overrides or {})}, warm, log)
        log_stream = open(log, "a", encoding="utf-8") if log else None  # noqa: SIM115 (closed by server_close)
        gateway = Gateway(functions, template_data, credentials, region, log_stream, stepfunctions, s3)
        gateway.buckets = buckets
        server = LocalServer(listener, functions, gateway, workers, idle_timeout)
    except BaseException:
        listener.close()
        if functions is not None:
            functions.close()
        if log_stream:
            log_stream.close()
        raise
    server.log_stream = log_stream
    return server


PLACEHOLDER_ENVIRONMENT = {"AWS_ACCESS_KEY_ID": sam_template.LOCAL_CREDENTIALS["aws_access_key_id"],
                           "AWS_SECRET_ACCESS_KEY": sam_template.LOCAL_CREDENTIALS["aws_secret_access_key"],
                           "AWS_SESSION_TOKEN": ""}


def local_services(path: pathlib.Path, template: dict[str, Any], url: str, region: str,
                   credentials: Any, invoke: Callable[[], Any]) -> tuple[Any, Any]:
    """Step Functions' API for the template's state machines, and moto's S3 with the template's buckets."""
    from .stepfunctions import StepFunctionsApi

    def services() -> Any:  # made when the first execution starts: boto3 clients of this server
        import boto3
        from botocore.config import Config

        from . import states

        keys = ({"aws_access_key_id": credentials.access_key, "aws_secret_access_key": credentials.secret_key,
                 "aws_session_token": credentials.token} if credentials else sam_template.LOCAL_CREDENTIALS)
        session = boto3.session.Session(region_name=region, **keys)
        config = Config(retries={"max_attempts": 1}, connect_timeout=10, read_timeout=900)
        return states.Services(states.direct_invoke(invoke()), session.client("s3", endpoint_url=url, config=config),
                               stepfunctions.map_runs, max(2, os.cpu_count() or 2))

    stepfunctions = StepFunctionsApi(path, region, services)
    s3 = moto_s3(list(local_buckets(template).values()), region)
    return stepfunctions, s3


def large_buffers_returned() -> None:
    """Buffers of a MiB and more (request bodies, S3 parts, answers) go back to the system when freed. glibc's
    malloc raises its mmap threshold after the first large free, so later large buffers come from each thread's
    arena and stay with the process: serve grew by about the size of every upload it took. A fixed threshold
    (mallopt M_MMAP_THRESHOLD) keeps them out of the arenas; elsewhere than glibc nothing is changed."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "mallopt"):
            libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)
    except OSError:
        pass


M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def moto_s3(buckets: list[str], region: str) -> Any:
    """moto's S3 as a WSGI application (in this process: what it stores lives as long as the process), its objects
    on disk and streamed (s3_store), with the template's buckets created."""
    import logging

    from moto.moto_server.werkzeug_app import create_backend_app
    from moto.s3.models import s3_backends

    from . import s3_store

    s3_store.install()

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth is 2": a queue is what it is for
    backend = s3_backends[sam_template.ACCOUNT]["global"]
    for bucket in buckets:
        if bucket not in backend.buckets:
            backend.create_bucket(bucket, region)
    app = create_backend_app("s3")
    # moto's server runs Flask in debug mode, whose check of request.files gives each request a class of its own
    # holding the request (and its body) in a cycle until the garbage collector's next full pass: serve held a
    # dozen 8 MiB upload parts at a time. Exceptions still reach s3_answer, which answers them (never a 500).
    app.debug = False
    app.config["PROPAGATE_EXCEPTIONS"] = True
    return app


def stored_bytes() -> int:
    """What moto's S3 holds now, in bytes: every version of every object of every bucket, and the parts of the
    multipart uploads not yet completed (a completed one's parts are views of its object, counted once)."""
    from moto.s3.models import s3_backends

    backend = s3_backends[sam_template.ACCOUNT]["global"]
    buckets = list(backend.buckets.values())
    objects: int = sum(key.size for bucket in buckets for versions in list(bucket.keys.lists())
                       for key in versions[1] if hasattr(key, "size"))
    parts: int = sum(part.size for bucket in buckets for upload in list(bucket.multiparts.values())
                     for part in list(upload.parts.values()))
    return objects + parts


def _stopper(server: LocalServer) -> Callable[[int, Any], None]:
    def stop(signum: int, frame: Any) -> None:
        # Not here (this is the server's loop, which must go on writing the answers): in a thread of its own.
        if not server.stopping:
            server.stopping = True
            threading.Thread(target=server.stop_answering, daemon=True, name="stopping").start()

    return stop


def serve(host: str, port: int, template: pathlib.Path, workers: int = 4, iam: bool = False,
          region: str | None = None) -> int:
    server = make_server(host, port, template, workers, iam, region)
    url = f"http://{host}:{server.server_address[1]}"
    # Both signals stop the server, also where SIGINT came ignored (a process started in the background by a
    # shell without job control inherits SIGINT ignored, and Python then leaves it so); set before "serving" is
    # said, so that a SIGTERM as soon as it is (a service manager's, a test's) stops the server as any other does,
    # its workers and its S3 folder with it, not Python's default (gone, the folder left behind). One that comes
    # before the loop starts empties it first, and the loop then ends at once.
    stop = _stopper(server)
    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    if not iam and not sam_template.is_loopback(host):
        print(f"warning: serving on {host} without --iam: anyone who reaches this address can call the functions, "
              f"read and write its S3 and start executions (add --iam to require SigV4)", file=sys.stderr)
    signed = f", SigV4 for execute-api in {server.region} required" if iam else ""
    print(f"serving POST {url}{EXECUTE_PATH} ({workers} workers{signed}; Ctrl-C to stop)", file=sys.stderr)
    print(f"and the Lambda Invoke API at {url} for {', '.join(server.functions.runtimes)} "
          f"(boto3 endpoint_url, aws --endpoint-url, AWS_ENDPOINT_URL_LAMBDA)", file=sys.stderr)
    machines = ", ".join(machine.name for machine in server.gateway.stepfunctions.machines.values())
    print(f"and S3 (buckets {', '.join(sorted(server.gateway.buckets))}) and Step Functions ({machines}) at {url}: "
          f"AWS_ENDPOINT_URL={url}", file=sys.stderr)
    example = json.dumps({"hypotheses": ["the cat sat"], "references": ["the cat sat down"]})
    print(f"try: curl -s {url}{EXECUTE_PATH} -d '{example}'", file=sys.stderr)
    try:
        server.serve_forever()  # returns on SIGINT (Ctrl-C) or SIGTERM
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the workers' shutdown
        server.server_close()
        for number, handler in previous.items():
            signal.signal(number, handler)
    print("stopped", file=sys.stderr)
    return 0
