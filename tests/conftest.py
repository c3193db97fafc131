"""Fixtures for every test folder."""

import io
import os
import sys

import pytest
from hypothesis import settings
from support import ROOT

# CI runs the same examples every time (a red build is reproducible); local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session", autouse=True)
def handler():
    """The API function loaded exactly as template.yaml declares it (CodeUri + Handler, layer ContentUri on the
    path).

    Loaded once, first, so that the Powertools Logger binds to the session's output rather than to the
    short-lived stream of whichever test would happen to import it.
    """
    from chrf_components_cli import local_lambda

    return local_lambda.load_handler(template_path=ROOT / "template.yaml")


@pytest.fixture
def captured_logs(handler):
    """Everything the functions' Powertools Logger writes during the test (its stream is bound at import)."""
    stream = io.StringIO()
    log_handler = sys.modules["observability"].logger.registered_handler
    previous, log_handler.stream = log_handler.stream, stream
    try:
        yield stream
    finally:
        log_handler.stream = previous
