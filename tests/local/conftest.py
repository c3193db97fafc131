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
