"""Fixtures for every test folder."""

import importlib.util
import io
import os
import sys

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red build is reproducible); local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session", autouse=True)
def handler():
    """The API function loaded as Lambda loads it (tests/lambda_handlers.py), where its runtime library is
    installed (tests/unit runs without it).

    Loaded once, first, so that the Powertools Logger binds to the session's output rather than to the
    short-lived stream of whichever test would happen to import it.
    """
    if importlib.util.find_spec("aws_lambda_powertools") is None:
        return None
    import lambda_handlers

    return lambda_handlers.load()


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
