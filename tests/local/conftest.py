"""Fixtures for the local emulator's tests (`serve`: the HTTP API and the Lambda Invoke API, the runtime)."""

import threading

import pytest
from support import ROOT

from chrf_components_local.server import make_server


@pytest.fixture(scope="module")
def running():
    """`chrf-components serve` (two function workers) on a free loopback port, for the test module."""
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=2)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def endpoint():
    """`serve` (two workers, nothing warmed) in us-east-1 on a free loopback port, for the test module: its URL, as
    AWS_ENDPOINT_URL or a client's endpoint_url takes it (Step Functions, S3 and Lambda alike)."""
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=2, region="us-east-1", warm=())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def serving_with(monkeypatch, iam, region, key, secret):
    """`serve` (one worker, nothing warmed) on a free loopback port with these credentials in its environment (they
    sign its requests, and with ``iam`` every request must be signed with them): the server and its URL."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=1, iam=iam, region=region, warm=())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def send_raw(method, url, headers, body=b""):
    """A request sent exactly as given (http.client: no signing, no header of its own but Host): status, body."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    connection.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body,
                       headers={name: value for name, value in headers.items() if name.lower() != "content-length"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data

