"""Every command block of README.md and docs/ runs as written, from the clone's folder after `make run` with
.venv/bin first on PATH, and prints what the page shows: the pages cannot drift from the program.

* ```text blocks holding ``$ command`` lines are transcripts: each command's output must equal the lines below it
  (trailing spaces aside; a line ``...`` stands for any number of lines).
* ```sh blocks run as one bash script (``set -euo pipefail``), literally: every command must succeed. A command
  sent to the background (``serve ... &``) is stopped with the block; the page itself waits for it (``serve --wait``:
  on 72c9660 the suite added a wait after every ``&``, and the README's first ``request`` as written ran 10 ms after
  ``serve &`` and got Connection refused). The port the page shows (3000) is swapped for a free one.
* A block that cannot run here (it needs an AWS account, or it is the suite's own set-up) says so right above it,
  in an HTML comment the page does not show: ``<!-- not run by the suite: REASON -->``.

Each runs in a folder of its own that links to the clone's files (what a command writes stays there), with a HOME
of its own and no AWS_* variables: no AWS account, no credentials, no region, as for a new user.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT

PAGES = ["README.md", *[f"docs/{page.name}" for page in sorted((ROOT / "docs").glob("*.md"))]]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!-- not run by the suite: (.+?) -->\s*$")
BIN = Path(sys.executable).parent  # the .venv's bin: chrf-components, python, aws
PORT_SHOWN = "3000"


def blocks():
    """(page, line, language, body, why it is not run or None) of every fenced block."""
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        previous_end = 0
        for match in FENCE.finditer(text):
            before = text[previous_end:match.start()]
            marked = NOT_RUN.search(before)
            line = text.count("\n", 0, match.start()) + 1
            found.append((page, line, match.group(1), match.group(2), marked.group(1) if marked else None))
            previous_end = match.end()
    return found


def transcripts():
    return [block for block in blocks() if block[2] == "text" and block[3].startswith("$ ") and block[4] is None]


def scripts():
    return [block for block in blocks() if block[2] == "sh" and block[4] is None]


def block_id(block):
    return f"{block[0]}:{block[1]}"


def git_status():
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout


@pytest.fixture
def clone_folder(tmp_path):
    """A folder that links to every top-level file and folder of the clone, and a new user's environment; the
    commands run in it leave the clone's `git status` as it was (what they write goes outside it or to ignored
    paths)."""
    before = git_status()
    yield from _clone_folder(tmp_path)
    assert git_status() == before, "a documented command left files in the clone"
    written = sorted(entry.name for entry in (tmp_path / "work").iterdir() if not entry.is_symlink())
    assert written == [], f"documented commands would leave {written} untracked in the clone"


def _clone_folder(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name != ".git":
            (work / entry.name).symlink_to(entry)
    home = tmp_path / "home"
    home.mkdir()
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                       AWS_CONFIG_FILE=str(home / "no-config"), AWS_SHARED_CREDENTIALS_FILE=str(home / "none"))
    yield work, environment


def matches(expected, actual):
    """Whether the output lines equal the expected ones, ``...`` matching any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[start:]) for start in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def commands(body):
    """(command, expected output lines) of a transcript; a command may go on over lines ending in a backslash."""
    found, lines = [], body.splitlines()
    index = 0
    while index < len(lines):
        command = lines[index][2:]
        while command.endswith("\\"):
            index += 1
            command = command[:-1] + lines[index].lstrip()
        index += 1
        expected = []
        while index < len(lines) and not lines[index].startswith("$ "):
            expected.append(lines[index].rstrip())
            index += 1
        while expected and not expected[-1]:
            expected.pop()
        found.append((command, expected))
    return found


def test_every_command_block_is_run_or_says_why_not():
    kinds = {}
    for page, line, language, _body, reason in blocks():
        if language in ("sh", "text") and reason is not None:
            assert len(reason) > 10, f"{page}:{line}: say why the block is not run"
            kinds.setdefault("not run", []).append(f"{page}:{line}")
        elif language == "sh":
            kinds.setdefault("sh", []).append(f"{page}:{line}")
    assert len(transcripts()) >= 6 and len(scripts()) >= 2, kinds  # the scan still finds the pages' blocks


@pytest.mark.parametrize("block", transcripts(), ids=block_id)
def test_a_documented_transcript_prints_what_the_page_shows(block, clone_folder):
    work, environment = clone_folder
    for command, expected in commands(block[3]):
        done = subprocess.run(["bash", "-c", command], cwd=work, env=environment, capture_output=True, text=True,
                              timeout=300)
        actual = [line.rstrip() for line in done.stdout.rstrip("\n").splitlines()]
        assert done.returncode == 0, f"{block_id(block)}: $ {command}\n{done.stderr[-2000:]}"
        assert matches(expected, actual), (f"{block_id(block)}: $ {command}\nexpected:\n" + "\n".join(expected)
                                           + "\ngot:\n" + "\n".join(actual))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def end_group(process):
    """SIGTERM to the process's group, SIGKILL to what is left of it after 5 s; until none of it is left."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        deadline = time.monotonic() + 5
        try:
            os.killpg(process.pid, sent)
            while time.monotonic() < deadline:
                if process.poll() is None:
                    time.sleep(0.05)
                    continue
                os.killpg(process.pid, 0)  # ProcessLookupError once the group is empty
                time.sleep(0.05)
        except ProcessLookupError:
            return


@pytest.mark.parametrize("block", scripts(), ids=block_id)
def test_a_documented_command_block_runs_as_written(block, clone_folder):
    work, environment = clone_folder
    port = str(free_port())
    script = block[3].replace(f":{PORT_SHOWN}", f":{port}").replace(f"--port {PORT_SHOWN}", f"--port {port}")
    lines = ["set -euo pipefail", script]
    output = work.parent / "output"  # a file, not a pipe: a background command keeps its end of a pipe open
    with output.open("w") as sink:
        process = subprocess.Popen(["bash", "-c", "\n".join(lines)], cwd=work, env=environment, stdout=sink,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(300)
        finally:
            end_group(process)  # the block's background commands (serve) end with it
    printed = output.read_text()
    assert process.returncode == 0, f"{block_id(block)}:\n{printed[-4000:]}"
    for unreadable in ("FunctionError", "StreamingBody"):  # a function error shown as such, or a payload unread
        assert unreadable not in printed, f"{block_id(block)} prints {unreadable}:\n{printed[-4000:]}"
