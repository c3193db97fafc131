"""`chrf-components serve`: real HTTP over loopback, schemathesis against the OpenAPI document, and the HTTP/1.1
front door under what careless or hostile clients send."""

import http.client
import io
import json
import socket
import sys
import threading
import time

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from requests_aws4auth import AWS4Auth
from schemathesis.specs.openapi.checks import missing_required_header, positive_data_acceptance, unsupported_method
from support import CONTRACT, ROOT

from chrf_components_cli.main import main
from chrf_components_local.server import make_server

OPENAPI_PATH = ROOT / "spec" / "openapi.json"
OPENAPI = json.loads(OPENAPI_PATH.read_text(encoding="utf-8"))
EXECUTE = CONTRACT["execute_url"]
schema = schemathesis.openapi.from_path(str(OPENAPI_PATH))


@pytest.fixture(scope="module")
def base_url(running):
    return f"http://127.0.0.1:{running.server_address[1]}"


def request(base_url, method, path, body=None, headers=None):
    host, port = base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, dict(response.getheaders()), json.loads(data)


def raw_exchange(running, data, shut_write=False, read_timeout=10.0):
    """Send raw bytes; return everything the server sends back until it closes (or the read times out)."""
    with socket.create_connection(running.server_address, timeout=read_timeout) as connection:
        connection.sendall(data)
        if shut_write:
            connection.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while chunk := connection.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            chunks.append(b"<still open>")
        return b"".join(chunks)


def test_serve_answers_a_valid_request_with_the_contract_output(base_url):
    example = CONTRACT["examples"][0]
    status, headers, body = request(base_url, "POST", EXECUTE, json.dumps(example["input"]))
    assert status == 200 and headers["Content-Type"] == "application/json" and body == example["output"]


def test_serve_answers_invalid_input_with_400_and_the_error_envelope(base_url):
    status, _, body = request(base_url, "POST", EXECUTE, '{"hypotheses": ["a"], "references": []}')
    assert status == 400
    assert body == {"error": {"code": "invalid_input", "field": "references",
                              "message": "references: at least 1 segment, got 0"}}
    status, _, body = request(base_url, "POST", EXECUTE, b"\xff\xfe not utf-8")
    assert status == 400 and body["error"]["message"].startswith("body: not valid UTF-8")


NOT_ROUTED = [("POST", "/v1/tools/chrf-components/versions/2.0.0/execute"), ("GET", EXECUTE), ("PUT", EXECUTE),
              ("POST", EXECUTE.replace("1.0.0", "1x0y0")), ("POST", EXECUTE + "/"), ("POST", EXECUTE + "///"),
              ("POST", EXECUTE.upper()), ("POST", "/" + EXECUTE), ("POST", EXECUTE + "x"), ("POST", "/")]


@pytest.mark.parametrize(("method", "path"), NOT_ROUTED)
def test_serve_routes_only_the_templates_route_and_answers_anything_else_as_api_gateway_does(base_url, method,
                                                                                             path):
    status, _, body = request(base_url, method, path, "{}" if method != "GET" else None)
    assert (status, body) == (404, {"message": "Not Found"})


def test_serve_answers_a_cors_preflight_itself_and_allows_the_origin_on_answers(base_url):
    host, port = base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("OPTIONS", EXECUTE, headers={"Origin": "https://example.org",
                                                    "Access-Control-Request-Method": "POST"})
    response = connection.getresponse()
    assert response.status == 204 and response.read() == b""
    assert response.getheader("Access-Control-Allow-Origin") == "*"
    assert response.getheader("Access-Control-Allow-Methods") == "POST,OPTIONS"
    assert "authorization" in response.getheader("Access-Control-Allow-Headers")
    assert response.getheader("Access-Control-Max-Age") == "600"
    connection.close()
    status, headers, _ = request(base_url, "POST", EXECUTE, json.dumps({"hypotheses": ["a"], "references": ["a"]}),
                                 {"Content-Type": "application/json", "Origin": "https://example.org"})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(("method", "path", "status"), [
    ("POST", EXECUTE.replace("1.0.0", "1x0y0"), 404),
    ("POST", EXECUTE + "///", 404),
    ("post", EXECUTE, 400),  # waitress refuses a method that is not upper case before anything is routed
    ("PATCH", EXECUTE, 404),
])
def test_serve_routes_only_the_exact_path_and_method(running, method, path, status):
    body = json.dumps({"hypotheses": ["a"], "references": ["a"]}).encode()
    response = raw_exchange(running, f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    assert status_of(response) == status


def test_openapi_document_is_valid_and_requires_sigv4_on_every_operation():
    from openapi_spec_validator import validate

    assert OPENAPI["openapi"].startswith("3.1")  # what it restates of the contract: tests/unit/test_limits_as_data.py
    validate(OPENAPI)
    scheme = OPENAPI["components"]["securitySchemes"]["sigv4"]
    assert scheme["x-amazon-apigateway-authtype"] == "awsSigv4" and scheme["name"] == "Authorization"
    operations = [operation for path in OPENAPI["paths"].values() for operation in path.values()]
    assert operations and all(operation["security"] == [{"sigv4": []}] for operation in operations)
    assert all("403" in operation["responses"] for operation in operations)


SIGNER = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-west-2")


@pytest.fixture(scope="module")
def signed_base_url():
    """`serve --iam` with the signer's credentials: what the document describes, SigV4 included."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", SIGNER[0])
        patch.setenv("AWS_SECRET_ACCESS_KEY", SIGNER[1])
        patch.delenv("AWS_SESSION_TOKEN", raising=False)
        server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=1, iam=True, region=SIGNER[2])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


SIGN_ME = "SigV4, signed by the session"


@schema.auth()
class SigV4:
    """Explicit auth for schemathesis: a placeholder that SigningSession replaces by a real signature over the
    bytes actually sent. The checks' probes (no Authorization, a made-up one) go out as they are."""

    def get(self, case, context):
        return SIGN_ME

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "Authorization": data}


class SigningSession(requests.Session):
    def send(self, request, **kwargs):
        if request.headers.get("Authorization") == SIGN_ME:
            del request.headers["Authorization"]
            request = AWS4Auth(*SIGNER, "execute-api")(request)
        return super().send(request, **kwargs)


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_serve_iam_conforms_to_the_openapi_document(case, signed_base_url):
    # Every check but "schema-valid data is accepted": the contract has rules JSON Schema cannot state (equal
    # segment counts, total UTF-8 size, lone surrogates, char_order and word_order not both 0), and the document
    # declares the 400 they produce. And "a missing required header is a 401": API Gateway answers a missing
    # signature with 403 (Missing Authentication Token), as documented. And "an undeclared method is a 405": an HTTP
    # API matches method and path together, so an undeclared method is an unmatched route, 404 Not Found. No 5xx,
    # every response matches its declared schema, and the checks' probes without a signature or with a made-up one
    # see the declared 403.
    case.call_and_validate(base_url=signed_base_url, session=SigningSession(),
                           excluded_checks=[positive_data_acceptance, missing_required_header,
                                            unsupported_method])


# ---- the front door -------------------------------------------------------------------------------------------


def post(length_header, body=b"", extra=b""):
    return (f"POST {EXECUTE} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n".encode()
            + length_header + extra + b"\r\n" + body)


def status_of(response):
    return int(response.split(b" ", 2)[1]) if response.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")) else None


@pytest.mark.parametrize("value", [b"abc", b"1e3", b"-1", b"+5", b" 5x", b"0x10"])
def test_a_content_length_that_is_not_a_number_of_bytes_is_a_400_and_the_connection_closes(running, value):
    response = raw_exchange(running, post(b"Content-Length: " + value + b"\r\n", b'{"a": 1}'))
    assert status_of(response) == 400 and b"Connection: close" in response
    assert not response.endswith(b"<still open>")


def test_two_different_content_lengths_are_a_400(running):
    response = raw_exchange(running, post(b"Content-Length: 2\r\nContent-Length: 3\r\n", b"{}x"))
    assert status_of(response) == 400


def test_a_body_shorter_than_declared_is_never_scored_and_the_connection_closes(running):
    body = json.dumps({"hypotheses": ["a"], "references": ["a"]}).encode()
    response = raw_exchange(running, post(f"Content-Length: {len(body) + 50}\r\n".encode(), body), shut_write=True)
    assert status_of(response) is None and not response.endswith(b"<still open>")


def test_a_body_over_the_limit_is_refused_unread_and_never_parsed_as_a_request(running, monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    smuggled = b"GET /SECRET-TRANSLATION HTTP/1.1\r\nHost: x\r\n\r\n"
    response = raw_exchange(running, post(b"Content-Length: 20000000\r\n", smuggled + b"x" * 1000))
    assert status_of(response) == 413 and response.count(b"HTTP/1.1 ") == 1 and b"Connection: close" in response
    time.sleep(0.2)
    assert "SECRET" not in log.getvalue()


def chunked(data, size=7):
    return b"".join(b"%x\r\n" % len(data[i:i + size]) + data[i:i + size] + b"\r\n"
                    for i in range(0, len(data), size)) + b"0\r\n\r\n"


def test_a_chunked_body_is_scored_like_the_same_body_sent_with_a_length(running):
    example = CONTRACT["examples"][0]
    body = json.dumps(example["input"]).encode()
    response = raw_exchange(running, post(b"Transfer-Encoding: chunked\r\nConnection: close\r\n", chunked(body)))
    assert status_of(response) == 200
    assert json.loads(response.split(b"\r\n\r\n", 1)[1]) == example["output"]


def test_a_chunked_body_over_the_limit_is_refused_with_413(running):
    piece = b"x" * 1_000_000
    head = post(b"Transfer-Encoding: chunked\r\n")
    with socket.create_connection(running.server_address, timeout=10) as connection:
        connection.sendall(head)
        try:
            for _ in range(11):
                connection.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        except OSError:
            pass  # the server may close while the rest is on its way
        response = connection.recv(65536)
    assert status_of(response) == 413


def test_control_characters_from_the_path_are_escaped_in_the_log(running, monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    raw_exchange(running, b"GET /a\x1b[31mred\x07 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                          b"Connection: close\r\n\r\n")
    time.sleep(0.2)
    text = log.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\\x1b[31mred\\x07" in text


def test_a_slow_client_does_not_hold_up_the_others(running, base_url):
    with socket.create_connection(running.server_address, timeout=10) as slow:
        slow.sendall(post(b"Content-Length: 100\r\n", b'{"hypo'))  # and then nothing, for a while
        started = time.monotonic()
        status, _, _ = request(base_url, "POST", EXECUTE, json.dumps({"hypotheses": ["a"], "references": ["a"]}))
        assert status == 200 and time.monotonic() - started < 5


def test_requests_run_side_by_side_in_separate_function_workers(running, base_url):
    results = []

    def one():
        results.append(request(base_url, "POST", EXECUTE, json.dumps({"hypotheses": ["a b"] * 200,
                                                                      "references": ["a c"] * 200}))[0])

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == [200] * 6


def test_an_idle_connection_is_closed_after_the_idle_timeout():
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=1, idle_timeout=1)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        response = raw_exchange(server, b"POST " + EXECUTE.encode() + b" HTTP/1.1\r\n", read_timeout=10)
        assert not response.endswith(b"<still open>") and time.monotonic() - started < 5
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("argv", "message"), [
    (["serve", "--port", "99999"], "port must be 0..65535, got 99999"),
    (["serve", "--port", "http"], "not a port number"),
])
def test_an_invalid_port_is_one_line_on_stderr_with_exit_code_2(capsys, monkeypatch, argv, message):
    monkeypatch.chdir(ROOT)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_port_in_use_is_one_line_on_stderr_with_exit_code_2(capsys, running, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = main(["serve", "--port", str(running.server_address[1]), "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot listen on 127.0.0.1:" in err and err.count("\n") == 1, err
