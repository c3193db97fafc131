"""Fixtures for every test folder."""

import pytest


@pytest.fixture(scope="session")
def handler():
    """The function loaded exactly as template.yaml declares it (CodeUri + Handler, layer ContentUri on the path)."""
    from chrf_components_cli import local_lambda

    return local_lambda.load_handler()


@pytest.fixture
def captured_logs(handler):
    """Everything the function's Powertools Logger writes during the test (its stream is bound at import)."""
    import io
    import sys

    stream = io.StringIO()
    log_handler = sys.modules[handler.__module__].logger.registered_handler
    previous = log_handler.setStream(stream)
    try:
        yield stream
    finally:
        log_handler.setStream(previous)
