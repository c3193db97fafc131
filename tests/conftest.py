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

# A test that cannot run never looks like a pass: every skip's reason is printed in the summary (-rs in
# pyproject.toml), and under CHRF_REQUIRE_TOOLS=1 (CI) a skip is a failure, unless its reason says the test does not
# belong to this run at all (a native-kernel test in the run that switches the native kernel off).
REQUIRE_TOOLS = os.environ.get("CHRF_REQUIRE_TOOLS") == "1"
NOT_IN_THIS_RUN = "not in this run:"


def _skip_reason(report):
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def _fail_skip(report):
    if REQUIRE_TOOLS and report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if not reason.startswith(NOT_IN_THIS_RUN):
            report.outcome = "failed"
            report.longrepr = f"skipped, which CHRF_REQUIRE_TOOLS=1 (CI) does not accept: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_skip(outcome.get_result())


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
