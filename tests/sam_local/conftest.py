"""The real SAM CLI's local commands, for `make sam-local` (which sets CHRF_SAM_LOCAL=1; other runs leave this
folder out). A missing tool (the docker client, a running engine or dockerd to start, mmdebstrap, the built
template) is found before anything starts and said in one line: every test skipped with it as the reason (shown in
the run's summary), or with CHRF_REQUIRE_TOOLS=1 (CI) the run stops and fails with it. An engine that cannot
start fails or skips the tests likewise. Everything started here is stopped by its PID, every container SAM
started is removed, even when a test fails."""

import os
import threading

import pytest
from support import ROOT

if os.environ.get("CHRF_SAM_LOCAL") != "1":
    collect_ignore_glob = ["*.py"]
else:
    import harness

REQUIRED = os.environ.get("CHRF_REQUIRE_TOOLS") == "1"


def pytest_collection_modifyitems(config, items):
    here = [item for item in items if "sam_local" in item.nodeid]
    if not here or os.environ.get("CHRF_SAM_LOCAL") != "1":
        return
    missing = harness.missing_tools()
    if missing is None:
        return
    if REQUIRED:
        pytest.exit(f"SAM CLI tests: {missing} (CHRF_REQUIRE_TOOLS=1: a missing tool fails the run)", returncode=1)
    for item in here:
        item.add_marker(pytest.mark.skip(reason=f"SAM CLI tests: {missing}"))


@pytest.fixture(scope="session")
def docker_host():
    try:
        with harness.engine() as host:
            try:
                yield host
            finally:
                harness.remove_sam_containers(host)
    except harness.Unavailable as missing:
        (pytest.fail if REQUIRED else pytest.skip)(f"SAM CLI tests: {missing}")


@pytest.fixture(scope="session")
def lambda_image(docker_host):
    try:
        return harness.image(docker_host)
    except harness.Unavailable as missing:
        (pytest.fail if REQUIRED else pytest.skip)(f"SAM CLI tests: {missing}")


@pytest.fixture(scope="session")
def sam_project(tmp_path_factory):
    """A copy of the project built for x86_64 as docs/deploy-and-pipelines.md shows it."""
    try:
        return harness.x86_64_build(tmp_path_factory.mktemp("sam"))
    except harness.Unavailable as missing:
        (pytest.fail if REQUIRED else pytest.skip)(f"SAM CLI tests: {missing}")


@pytest.fixture(scope="session")
def sam_lambda(docker_host, lambda_image, sam_project, tmp_path_factory):
    """One warm `sam local start-lambda`: its endpoint."""
    log = tmp_path_factory.mktemp("logs") / "start-lambda.log"
    with harness.sam_server("start-lambda", sam_project, lambda_image, docker_host, log) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def sam_api(docker_host, lambda_image, sam_project, tmp_path_factory):
    """One warm `sam local start-api`: its base URL."""
    log = tmp_path_factory.mktemp("logs") / "start-api.log"
    with harness.sam_server("start-api", sam_project, lambda_image, docker_host, log) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def serve():
    """`chrf-components serve` on loopback: its endpoint (both APIs)."""
    from chrf_components_local.server import make_server

    server = make_server("127.0.0.1", 0, ROOT / "template.yaml", workers=2)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
