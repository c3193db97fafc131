"""The command line under careless and hostile use: output to a full disk, out-of-range resampling settings, input
files holding terminal control characters, the same file under two names, and a deployed stack that never
answers. Each is one line on stderr with the documented exit code, or output a terminal shows safely."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from in_process import run
from support import ROOT

from chrf_components_cli import remote

DATA = ROOT / "tests" / "data" / "popovic"
HYP_EN, REF_EN = DATA / "example.hyp.en", DATA / "example.ref.en"
CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "chrf-components")


def one_line_error(code, err, expected_code=2):
    return code == expected_code and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["score", HYP_EN, REF_EN],
    ["score", HYP_EN, REF_EN, "--json"],
    ["score", HYP_EN, REF_EN, "--html", "-"],
    ["segments", HYP_EN, REF_EN],
    ["segments", HYP_EN, REF_EN, "--json"],
    ["segments", HYP_EN, REF_EN, "--worst", "2"],
    ["compare", REF_EN, HYP_EN, REF_EN, "--bootstrap", "10"],
], ids=lambda argv: " ".join(str(arg) for arg in argv if arg not in (HYP_EN, REF_EN)))
def test_output_to_a_full_disk_is_one_line_on_stderr_and_exit_2(argv):
    with open("/dev/full", "w") as full:
        completed = subprocess.run([CONSOLE_SCRIPT, *map(str, argv)], stdout=full, stderr=subprocess.PIPE,
                                   text=True, timeout=120, check=False)
    assert one_line_error(completed.returncode, completed.stderr), completed.stderr
    assert "cannot write the output (No space left on device)" in completed.stderr


OUTPUTS = [["score", HYP_EN, REF_EN], ["score", HYP_EN, REF_EN, "--json"], ["segments", HYP_EN, REF_EN],
           ["compare", REF_EN, HYP_EN, REF_EN, "--bootstrap", "10"],
           # the functions' workers inherit the reopened stderr (72c9660: close-on-exec, every invoke Runtime.ExitError)
           ["pipeline", "run", HYP_EN, REF_EN, "--local", "--template", ROOT / "template.yaml", "--json"]]


def closed(argv, which, tmp_path):
    """The command started with descriptor 1 or 2 closed (as ``>&-`` / ``2>&-`` do): exit code, stdout, stderr."""
    out, err = tmp_path / "out", tmp_path / "err"
    redirections = {"stdout": f">&- 2>{err}", "stderr": f"2>&- >{out}"}[which]
    command = " ".join([CONSOLE_SCRIPT, *map(str, argv), redirections])
    code = subprocess.run(["bash", "-c", command], timeout=120, check=False).returncode
    return code, out.read_text() if out.exists() else "", err.read_text() if err.exists() else ""


@pytest.mark.parametrize("argv", OUTPUTS, ids=lambda argv: " ".join(str(a) for a in argv if a not in (HYP_EN, REF_EN)))
def test_a_closed_stdout_is_one_line_and_exit_2_before_any_work(argv, tmp_path):
    code, _, err = closed(argv, "stdout", tmp_path)
    assert one_line_error(code, err) and "standard output is closed" in err, err


@pytest.mark.parametrize("argv", OUTPUTS, ids=lambda argv: " ".join(str(a) for a in argv if a not in (HYP_EN, REF_EN)))
def test_a_closed_stderr_still_writes_the_results_and_their_exit_code(argv, tmp_path):
    code, out, _ = closed(argv, "stderr", tmp_path)
    expected = subprocess.run([CONSOLE_SCRIPT, *map(str, argv)], capture_output=True, text=True, timeout=120)
    assert (code, out) == (expected.returncode, expected.stdout) and code == 0 and out


def test_segments_finds_a_line_count_mismatch_between_regular_files_before_printing_anything(capsys, tmp_path):
    (tmp_path / "h").write_text("a b\nc d\n", encoding="utf-8")
    (tmp_path / "r").write_text("a b\nc d\ne f\n", encoding="utf-8")
    code, out, err = run(capsys, "segments", tmp_path / "h", tmp_path / "r")
    assert (code, out) == (2, "") and one_line_error(code, err)
    assert "HYP_FILE has 2 lines, REF_FILE has 3 lines; files must be line-aligned" in err


@pytest.mark.parametrize(("flags", "message"), [
    (["--seed", "-1"], "--seed must be 0 or more, got -1"),
    (["--bootstrap", "100000000"], "both to 100000"),
    (["--randomization", "100000000"], "both to 100000"),
    (["--bootstrap", "0"], "both to 100000"),
    (["--randomization", "-3"], "both to 100000"),
])
def test_resampling_settings_out_of_range_are_refused_before_any_work(capsys, flags, message):
    started = time.monotonic()
    code, out, err = run(capsys, "compare", REF_EN, HYP_EN, REF_EN, *flags)
    assert one_line_error(code, err) and message in err and out == "", err
    assert time.monotonic() - started < 5


def test_the_worst_segments_show_control_characters_from_the_files_escaped(capsys, tmp_path):
    hypotheses = tmp_path / "hyp.txt"
    references = tmp_path / "ref.txt"
    hypotheses.write_text("the \x1b[2Jcat sat\x00 here\nfine line\n", encoding="utf-8")
    references.write_text("the cat \u202esat there\x07\nfine line\n", encoding="utf-8")
    code, out, err = run(capsys, "segments", hypotheses, references, "--worst", "1")
    assert code == 0, err
    assert all(control not in out for control in "\x1b\x00\x07\u202e")
    assert "\\x1b[2Jcat" in out and "sat\\x00" in out and "\\u202esat" in out and "there\\x07" in out


@pytest.mark.parametrize("link", ["hard", "symbolic", "relative"])
def test_compare_refuses_the_same_file_under_another_name(capsys, tmp_path, monkeypatch, link):
    baseline = tmp_path / "baseline.txt"
    baseline.write_bytes(HYP_EN.read_bytes())
    other = tmp_path / "system.txt"
    if link == "hard":
        os.link(baseline, other)
    elif link == "symbolic":
        other.symlink_to(baseline)
    else:
        monkeypatch.chdir(tmp_path)
        other = "./sub/../baseline.txt"
        (tmp_path / "sub").mkdir()
    code, _, err = run(capsys, "compare", REF_EN, baseline, other)
    assert one_line_error(code, err) and "BASELINE and SYSTEM files must be different files" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["score", REF_EN, "-i", HYP_EN, "-i", REF_EN, "-b"],
     f"argument -i: given twice ({HYP_EN}, then {REF_EN}); give it once, with every file it names"),
    (["compare", REF_EN, "-i", HYP_EN, "--input", REF_EN],
     f"argument --input: given twice ({HYP_EN}, then {REF_EN}); give it once, with every file it names"),
    (["score", HYP_EN, REF_EN, "-i", HYP_EN, "-b"],
     f"{HYP_EN} is given with -i and as a positional file, which with -i is a reference file: write HYP REF, or "
     f"REF -i HYP"),
    (["segments", HYP_EN, REF_EN, "-i", HYP_EN],
     f"{HYP_EN} is given with -i and as a positional file, which with -i is a reference file: write HYP REF, or "
     f"REF -i HYP"),
])
def test_a_second_i_or_the_i_file_among_the_positionals_is_a_usage_error_naming_both(capsys, argv, message):
    """On 72c9660 `score r -i h -i other -b` scored the last -i alone (0.0), and `score hyp ref -i hyp -b` made HYP a
    reference too (100.0)."""
    code, out, err = run(capsys, *argv)
    assert one_line_error(code, err) and out == ""
    assert message in err


@pytest.mark.parametrize(("log", "message"), [
    ("hyp", "is an input file; writing there would overwrite it"),
    (".", "is a directory"),
    ("missing/functions.log", "cannot write (No such file or directory)"),
    ("/dev/full", "is not a regular file"),
])
def test_a_log_file_that_cannot_take_the_logs_is_one_line_before_anything_runs(capsys, tmp_path, monkeypatch, log,
                                                                             message):
    """On 72c9660: the input file got the logs appended (exit 0), a directory or a missing folder was a traceback,
    /dev/full read as "2 of 2 items failed"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hyp").write_text("a b\n", encoding="utf-8")
    (tmp_path / "ref").write_text("a c\n", encoding="utf-8")
    code, out, err = run(capsys, "pipeline", "run", "hyp", "ref", "--local", "--template", ROOT / "template.yaml",
                         "--log-file", log)
    assert one_line_error(code, err) and out == "" and err.endswith(f"--log-file {log}: {message}\n"), err
    assert (tmp_path / "hyp").read_text(encoding="utf-8") == "a b\n"


@pytest.mark.parametrize("target", ["r", "./r", "link", "hard", "h"])
@pytest.mark.parametrize("command", ["score", "compare"])
def test_an_html_report_over_an_input_is_refused_before_anything_is_written(capsys, tmp_path, monkeypatch, command,
                                                                            target):
    """Issue 65: `compare r h s --html r` overwrote the reference file with the HTML report (rc 0), through ./r,
    symbolic and hard links too: the same file by device and inode is refused, in one line, and nothing written."""
    monkeypatch.chdir(tmp_path)
    for name, source in (("h", HYP_EN), ("s", HYP_EN), ("r", REF_EN)):
        (tmp_path / name).write_bytes(source.read_bytes())
    (tmp_path / "link").symlink_to("r")
    os.link(tmp_path / "r", tmp_path / "hard")
    argv = ["score", "h", "r"] if command == "score" else ["compare", "r", "h", "s", "--bootstrap", "10"]
    code, out, err = run(capsys, *argv, "--html", target)
    assert one_line_error(code, err) and out == "", err
    assert f"--html {target}: is an input file" in err and "writing there would overwrite it" in err
    assert [(tmp_path / name).read_bytes() for name in ("h", "r")] == [HYP_EN.read_bytes(), REF_EN.read_bytes()]


@pytest.mark.parametrize("target", ["template.yaml", "statemachine/corpus_pipeline.asl.json",
                                    "functions/chrf_components/app.py"])
def test_a_log_file_over_the_template_or_a_file_it_names_is_refused(capsys, tmp_path, monkeypatch, target):
    """Issue 65: --log-file onto the definition or the template corrupted them."""
    import shutil

    for name in ("template.yaml", "statemachine", "functions"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hyp").write_text("a b\n", encoding="utf-8")
    (tmp_path / "ref").write_text("a c\n", encoding="utf-8")
    before = (tmp_path / target).read_bytes()
    code, out, err = run(capsys, "pipeline", "run", "hyp", "ref", "--local", "--log-file", target)
    assert one_line_error(code, err) and out == "", err
    assert err.endswith(f"--log-file {target}: is the template or a file it names; writing there would overwrite "
                        f"it\n"), err
    assert (tmp_path / target).read_bytes() == before


@pytest.mark.parametrize("flag", ["--url", "--function"])
@pytest.mark.parametrize("value", ["", " "])
def test_request_with_an_empty_url_or_function_is_a_usage_error_never_a_local_score(capsys, flag, value):
    """Issue 65: `request F --url ""` (a stack lookup that found nothing) scored locally and exited 0, so the README's
    deploy block looked like a success."""
    code, out, err = run(capsys, "request", str(ROOT / "examples" / "request.json"), flag, value)
    assert one_line_error(code, err) and out == "", err
    assert f"{flag} is empty" in err


@pytest.fixture
def silent_endpoint(monkeypatch):
    """A loopback port that accepts connections and never answers, as the AWS endpoint, with fake credentials; the
    AWS calls' timeouts shortened. Yields the connections it accepted."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []

    def accept():
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    environment = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{listener.getsockname()[1]}", "AWS_ACCESS_KEY_ID": "x",
                   "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT", 1)
    monkeypatch.setattr(remote, "READ_TIMEOUT", 1)
    monkeypatch.setattr(remote, "ATTEMPTS", 2)
    yield accepted
    listener.close()
    for connection in accepted:
        connection.close()


def test_pipeline_run_checks_its_files_before_any_aws_call(capsys, tmp_path, silent_endpoint):
    short = tmp_path / "short.txt"
    short.write_text("one line\n", encoding="utf-8")
    started = time.monotonic()
    code, _, err = run(capsys, "pipeline", "run", HYP_EN, short, "--stack", "s")
    assert one_line_error(code, err) and "files must be line-aligned" in err
    assert time.monotonic() - started < 10 and silent_endpoint == []  # the endpoint would hold it much longer


def test_pipeline_run_gives_up_on_an_endpoint_that_never_answers(capsys, silent_endpoint):
    started = time.monotonic()
    code, _, err = run(capsys, "pipeline", "run", HYP_EN, REF_EN, "--stack", "s")
    assert one_line_error(code, err, 3), err
    assert time.monotonic() - started < 15 and silent_endpoint
