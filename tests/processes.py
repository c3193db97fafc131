"""`chrf-components serve` as a process of its own, for tests that signal it or measure it, and what /proc says
about a process and its descendants."""

import contextlib
import os
import signal
import subprocess
import sys
import time

from support import ROOT


def children_of(pid):
    """Every process descended from ``pid`` (read from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def status_of(pid):
    """Threads and resident memory (bytes) of a process, from /proc/PID/status."""
    values = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as status:
        for line in status:
            name, _, value = line.partition(":")
            values[name] = value.split()
    return int(values["Threads"][0]), int(values["VmRSS"][0]) * 1024


def peak_rss(pid):
    """A process's peak resident memory so far (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) * 1024


def stop_group(process, grace):
    """SIGTERM to the process's group, then SIGKILL if it has not ended within ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.contextmanager
def serving_process(log_path, *arguments, cwd=ROOT, env=None, python=sys.executable):
    """`chrf-components serve --port 0 ARGUMENTS` in a session of its own (``env``: its environment, else this
    one's; ``python``: the interpreter it is installed in), its stderr in ``log_path``: yields (process, port) once
    it serves; stopped with its whole group afterwards, whatever happened (SIGTERM, as a service manager stops it,
    so that it removes what it stored; SIGKILL if it has not ended within 10 s)."""
    log = open(log_path, "w+", encoding="utf-8")  # noqa: SIM115 (read while the process runs)
    process = subprocess.Popen([str(python), "-m", "chrf_components_cli.main", "serve", "--port", "0",
                                *arguments], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=log,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        port = None
        while port is None and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
            log.seek(0)
            for line in log.read().splitlines():
                if line.startswith("serving POST http://127.0.0.1:"):
                    port = int(line.split(":")[2].split("/")[0])
        assert port, "the server did not start:\n" + log_path.read_text(encoding="utf-8")
        yield process, port
    finally:
        if process.poll() is None:
            stop_group(process, 10)
        log.close()


def ctrl_c_after(script, seconds, pythonpath):
    """Run ``script`` in a fresh interpreter (Python's own SIGINT handler restored: a process started in the
    background may inherit SIGINT ignored), SIGINT it ``seconds`` after it prints "started": (its output, its
    error output, its exit code, the seconds from the signal to its end)."""
    prelude = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    process = subprocess.Popen([sys.executable, "-c", prelude + script], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": pythonpath})
    try:
        assert process.stdout.readline() == "started\n", process.stderr.read()
        time.sleep(seconds)
        process.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        out, err = process.communicate(timeout=120)
        return out, err, process.returncode, time.monotonic() - interrupted
    finally:
        process.kill()
