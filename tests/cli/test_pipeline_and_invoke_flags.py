"""What SAM and AWS CLI users type: `invoke` takes SAM's -e (and the function as SAM's positional), and
`pipeline run` against a deployed stack reads the region and credentials as the AWS CLI does (AWS_REGION as well as
AWS_DEFAULT_REGION), saying in one line what to set or check when something is missing."""

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from in_process import run
from support import ROOT

CLI = Path(sys.executable).parent / "chrf-components"
EVENTS = ROOT / "events"


def expected(name):
    return json.loads((EVENTS / f"{name}.expected.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("argv", [
    ["-e", EVENTS / "direct-invoke.json"],
    ["ChrfComponentsFunction", "-e", EVENTS / "direct-invoke.json"],
    ["--event", EVENTS / "direct-invoke.json", "--function", "ChrfComponentsFunction"],
    ["-e", EVENTS / "direct-invoke.json", "-t", ROOT / "template.yaml"],
])
def test_invoke_takes_sams_spelling_of_the_event_and_the_function(capsys, monkeypatch, argv):
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, "invoke", *argv)
    assert code == 0 and json.loads(out) == expected("direct-invoke")


def test_invoke_reads_the_event_from_standard_input_with_dash(tmp_path):
    done = subprocess.run([str(CLI), "invoke", "ChrfComponentsFunction", "-e", "-"], cwd=ROOT,
                          input=(EVENTS / "stepfunctions-task.json").read_bytes(), capture_output=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout) == expected("stepfunctions-task")


@pytest.mark.parametrize(("argv", "message"), [
    (["invoke"], "give the event file: invoke EVENT_FILE, or invoke [LOGICAL_ID] -e EVENT_FILE"),
    (["invoke", "ScoreBatchFunction", "-e", EVENTS / "direct-invoke.json", "--function", "MergeReportFunction"],
     "name the function once"),
    (["pipeline", "run", "h", "r", "--stack", "s", "--template", "t.yaml"], "--template goes with --local"),
    (["pipeline", "run", "h", "r", "--stack", "s", "--local"], "not allowed with argument"),
    (["pipeline", "run", "h", "r"], "one of the arguments --stack --local is required"),
])
def test_misused_flags_are_one_line_with_exit_code_2(capsys, monkeypatch, argv, message):
    monkeypatch.chdir(ROOT)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err, err


def deployed_run(tmp_path, **variables):
    """`pipeline run --stack` in a new user's environment plus ``variables``: (exit code, stdout, stderr)."""
    (tmp_path / "h").write_text("a b\n", encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment.update(HOME=str(tmp_path), AWS_CONFIG_FILE=str(tmp_path / "none"),
                       AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), **variables)
    done = subprocess.run([str(CLI), "pipeline", "run", "h", "h", "--stack", "chrf-components"], cwd=tmp_path,
                          env=environment, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_no_region_is_one_line_naming_aws_region_before_aws_is_called(tmp_path):
    code, out, err = deployed_run(tmp_path, AWS_ACCESS_KEY_ID="a", AWS_SECRET_ACCESS_KEY="b")
    assert (code, out) == (3, "") and err == (
        "chrf-components pipeline run: error: no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or a region in "
        "~/.aws/config (aws configure)\n")


def test_no_credentials_is_one_line_saying_what_to_set_whichever_region_variable_is_set(tmp_path):
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        code, out, err = deployed_run(tmp_path, **{variable: "eu-west-1"})
        assert (code, out) == (3, "") and err == (
            "chrf-components pipeline run: error: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "or AWS_PROFILE, or run aws configure (or aws sso login)\n")


@pytest.mark.parametrize("command", [["pipeline", "run", "h", "h", "--stack", "chrf-components"],
                                     ["serve", "--iam", "--port", "0", "--template", str(ROOT / "template.yaml")],
                                     ["request", "h", "--url", "http://127.0.0.1:9/x"],
                                     ["request", "h", "--function", "ChrfComponentsFunction"]])
@pytest.mark.parametrize("problem", ["a stale profile", "a config file that does not parse"])
def test_a_broken_aws_configuration_is_one_line_not_a_traceback(tmp_path, command, problem):
    """On 72c9660 each of these was a botocore traceback of some 48 lines (ProfileNotFound, ConfigParseError)."""
    (tmp_path / "h").write_text("{}\n", encoding="utf-8")
    (tmp_path / "config").write_text("[profile x\n", encoding="utf-8")
    variables = {"AWS_PROFILE": "nope"} if problem == "a stale profile" else {
        "AWS_CONFIG_FILE": str(tmp_path / "config")}
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment.update(HOME=str(tmp_path), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), **variables)
    environment.setdefault("AWS_CONFIG_FILE", str(tmp_path / "none"))
    done = subprocess.run([str(CLI), *command], cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=120)
    detail = ("The config profile (nope) could not be found" if problem == "a stale profile" else
              f"Unable to parse config file: {tmp_path / 'config'}")
    assert done.returncode in (2, 3) and done.stdout == ""
    name = " ".join(command[:2]) if command[0] == "pipeline" else command[0]
    assert done.stderr == f"chrf-components {name}: error: the AWS configuration: {detail}\n"


def test_serve_without_iam_reads_nothing_of_the_callers_aws_configuration(tmp_path):
    """Issue 55 item 4: without --iam, serve checks no signature, so a stale profile, a config file that does not
    parse or an odd retry setting change nothing (on 72c9660 each stopped serve with a traceback); its functions and
    state machine live in us-east-1 whatever region the caller configured."""
    import signal
    import socket

    (tmp_path / "config").write_text("[profile x\n", encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment.update(HOME=str(tmp_path), AWS_PROFILE="nope", AWS_CONFIG_FILE=str(tmp_path / "config"),
                       AWS_MAX_ATTEMPTS="abc", AWS_REGION="eu-west-1", AWS_DEFAULT_REGION="eu-west-1")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    server = subprocess.Popen([str(CLI), "serve", "--port", port, "--template", str(ROOT / "template.yaml")],
                              cwd=tmp_path, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        waited = subprocess.run([str(CLI), "serve", "--port", port, "--wait"], capture_output=True, text=True,
                                timeout=120)
        assert waited.returncode == 0, waited.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    assert "Traceback" not in err and "stateMachine" not in err
    assert "and S3 (buckets corpusbucket) and Step Functions (local-corpus-pipeline)" in err


@pytest.mark.parametrize("target", [["--url", "http://127.0.0.1:9/v1/x"], ["--function", "ChrfComponentsFunction"]])
def test_an_endpoint_on_this_machine_never_makes_the_chain_ask_a_metadata_service(tmp_path, target):
    """Without credentials, botocore's chain ends at the instance metadata service (169.254.169.254); for an endpoint
    on 127.0.0.1 it must not be asked (on 72c9660 `request --url` asked it twice first). Its address is pointed at a
    socket here (AWS_EC2_METADATA_SERVICE_ENDPOINT, botocore's setting) that counts who connects."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    connections = []

    def accept():
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                connections.append(1)
                connection.close()

    threading.Thread(target=accept, daemon=True).start()
    (tmp_path / "request.json").write_text(json.dumps({"hypotheses": ["a"], "references": ["a"]}), encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment.update(HOME=str(tmp_path), AWS_CONFIG_FILE=str(tmp_path / "none"),
                       AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_ENDPOINT_URL_LAMBDA="http://127.0.0.1:9",
                       AWS_EC2_METADATA_SERVICE_ENDPOINT=f"http://127.0.0.1:{listener.getsockname()[1]}")
    try:
        done = subprocess.run([str(CLI), "request", "request.json", *target], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=120)
    finally:
        listener.close()
    assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr  # nothing listens on port 9
    assert connections == []


def test_aws_region_alone_is_the_region_a_stack_is_looked_up_in(capsys, tmp_path, monkeypatch):
    """Against moto's CloudFormation (no network): with only AWS_REGION set, the stack is looked for in that region
    and an unknown one is one line naming it and the region."""
    from moto import mock_aws

    monkeypatch.chdir(tmp_path)
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for name, value in {"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "h").write_text("a b\n", encoding="utf-8")
    with mock_aws():
        code, out, err = run(capsys, "pipeline", "run", "h", "h", "--stack", "nope")
    assert (code, out) == (3, "") and err == ("chrf-components pipeline run: error: no stack nope in eu-west-1: "
                                              "check --stack and the region (AWS_REGION)\n")


def test_serve_wait_gives_up_in_one_line_with_exit_3_when_no_serve_answers(tmp_path):
    import socket

    with socket.socket() as listener:  # something listens there, but it is not serve
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = str(listener.getsockname()[1])
        done = subprocess.run([str(CLI), "serve", "--port", port, "--wait", "--timeout", "1"], capture_output=True,
                              text=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == f"chrf-components serve: error: no serve answers on 127.0.0.1:{port} after 1 s\n"


@pytest.mark.parametrize("command", ["serve", "pipeline", "invoke"])
@pytest.mark.parametrize("kind", ["alias bomb", "fifo", "not yaml", "no resources"])
def test_every_template_is_read_with_a_bound_and_refused_in_one_line(tmp_path, command, kind):
    """Issue 57 item 2: a YAML alias bomb (on 72c9660 1.1 GB in 25 s), a FIFO (it hung), a file that is not YAML or
    has no Resources (`pipeline run` tracebacks): one line, exit 2, at once. CloudFormation takes no YAML aliases
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/template-formats.html)."""
    template = tmp_path / "template.yaml"
    if kind == "fifo":
        os.mkfifo(template)
    else:
        template.write_text({"alias bomb": "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a]\n"
                                           "c: [*b, *b, *b, *b, *b, *b, *b, *b]\nResources: {}\n",
                             "not yaml": "{{{\n", "no resources": "x: 1\n"}[kind], encoding="utf-8")
    (tmp_path / "h").write_text("a\n", encoding="utf-8")
    (tmp_path / "event.json").write_text("{}", encoding="utf-8")
    arguments = {"serve": ["serve", "--port", "0", "--template", str(template)],
                 "pipeline": ["pipeline", "run", "h", "h", "--local", "--template", str(template)],
                 "invoke": ["invoke", "-e", "event.json", "--template", str(template)]}[command]
    done = subprocess.run([str(CLI), *arguments], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "") and done.stderr.count("\n") == 1, done.stderr[-2000:]
    reason = {"alias bomb": "a YAML alias (*a) at line 2: CloudFormation templates take none",
              "fifo": "not a regular file", "not yaml": "not a readable template",
              "no resources": "not a SAM template (no Resources)"}[kind]
    assert reason in done.stderr


@pytest.mark.parametrize("kind", ["/dev/zero", "over the limit"])
def test_an_event_file_is_read_with_the_same_bound_as_standard_input(tmp_path, kind):
    """Issue 57 item 2: `invoke -e /dev/zero` was a MemoryError traceback on 72c9660, and an 11 MB event file was
    read whole while `-e -` stops at 10 MB (API Gateway's payload limit): both are one line now."""
    event = "/dev/zero" if kind == "/dev/zero" else str(tmp_path / "big.json")
    if kind != "/dev/zero":
        (tmp_path / "big.json").write_text(" " * (11 * 1024 * 1024) + "{}", encoding="utf-8")
    done = subprocess.run([str(CLI), "invoke", "-e", event, "--template", str(ROOT / "template.yaml")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"chrf-components invoke: error: {event}: not a regular file\n" if kind == "/dev/zero"
                           else f"chrf-components invoke: error: {event}: larger than 10485760 bytes\n")


@pytest.mark.parametrize("workers", ["0", "33", "1000"])
def test_serve_workers_past_the_documented_cap_is_one_line_before_anything_starts(tmp_path, workers):
    """Issue 57 item 3: on 72c9660 `serve --workers 200` started 202 processes and 4.2 GB before serving, and
    --workers 1000 printed nothing for 30 s. The cap (32, docs/deploy-and-pipelines.md) is checked first."""
    started = time.monotonic()
    done = subprocess.run([str(CLI), "serve", "--port", "0", "--workers", workers, "--template",
                           str(ROOT / "template.yaml")], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "") and time.monotonic() - started < 20
    assert done.stderr == (f"chrf-components serve: error: --workers must be from 1 to 32 (each is a process), "
                           f"got {workers}\n")


def test_invoke_runs_the_function_as_serve_does_with_its_report_lines_on_stderr(tmp_path):
    """Issue 56: `invoke` ran the handler in the command's own process (no Timeout, no response limit, no START /
    END / REPORT lines); it now runs it in an execution environment of its own, serve's runtime, as `sam local
    invoke` runs one container: the answer alone on stdout, equal to the event's expected file."""
    done = subprocess.run([str(CLI), "invoke", "-e", str(ROOT / "events" / "http-v2-valid.json"), "--template",
                           str(ROOT / "template.yaml")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads((ROOT / "events" / "http-v2-valid.expected.json").read_text())
    lines = done.stderr.splitlines()
    assert lines[0].startswith("START RequestId: ") and any(line.startswith("END RequestId: ") for line in lines)
    assert any(line.startswith("REPORT RequestId: ") and "Duration: " in line for line in lines)
