"""The command line's file reading: bounded memory whatever the input, every I/O problem in one line with exit
code 2, a line-count mismatch reported as soon as one input ends, and lines read as sacreBLEU's command line
reads them (checked by running it on the same files)."""

import gzip
import json
import os
import resource
import shutil
import subprocess
import sys

import chrf_core
import pytest
from support import ROOT, contract_part

COMMAND = [sys.executable, "-m", "chrf_components_cli.main"]
MEMORY_LIMIT = 400 * 1024 * 1024  # address space: a 100 MB line read whole would not fit


def run(*args, stdin=None, close_stdin=False, limit_memory=False, timeout=60):
    def prepare():
        if limit_memory:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        if close_stdin:
            os.close(0)

    return subprocess.run([*COMMAND, *map(str, args)], cwd=ROOT, stdin=stdin, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=prepare)


def one_line_error(result, text):
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert text in result.stderr, result.stderr


@pytest.fixture
def ref(tmp_path):
    path = tmp_path / "ref.txt"
    path.write_text("the cat sat on the mat\n", encoding="utf-8")
    return path


def test_a_100_mb_line_is_refused_naming_file_and_line_within_a_400_mb_address_space(tmp_path, ref):
    big = tmp_path / "big.txt"
    with open(big, "wb") as file:
        file.write(b"ok\n")
        for _ in range(100):
            file.write(b"a" * 1_000_000)
        file.write(b"\n")
    result = run("score", big, ref, limit_memory=True)
    one_line_error(result, f"HYP_FILE {big}: line 2 is longer than 65536 bytes (the contract's whole request)")


def test_an_input_that_never_ends_a_line_is_refused_within_a_400_mb_address_space(ref):
    one_line_error(run("score", ref, "/dev/zero", limit_memory=True),
                   "REF_FILE /dev/zero: line 1 is longer than 65536 bytes")


@pytest.mark.parametrize(("make_input", "message"), [
    (lambda tmp_path: tmp_path, "cannot read (Is a directory)"),
    (lambda tmp_path: tmp_path / "missing.txt", "cannot read (No such file or directory)"),
    (lambda tmp_path: "/proc/self/mem", "cannot read (Input/output error)"),
    (lambda tmp_path: (tmp_path / "latin1.txt").write_bytes(b"caf\xe9\n") and tmp_path / "latin1.txt",
     "not UTF-8 (line 1, byte 3)"),
    (lambda tmp_path: (tmp_path / "broken.gz").write_bytes(b"\x1f\x8b not gzip") and tmp_path / "broken.gz",
     "cannot read"),
])
def test_every_io_problem_is_one_line_with_exit_code_2(tmp_path, ref, make_input, message):
    path = make_input(tmp_path)
    one_line_error(run("score", path, ref), f"HYP_FILE {path}: {message}")


def test_a_closed_standard_input_is_one_line_with_exit_code_2(ref):
    one_line_error(run("score", "-", ref, close_stdin=True), "HYP_FILE -: standard input is closed")
    one_line_error(run("compare", ref, "-", ref.parent, close_stdin=True), "BASELINE -: standard input is closed")
    one_line_error(run("request", "-", close_stdin=True), "-: standard input is closed")


def test_a_line_count_mismatch_with_an_endless_input_is_reported_as_soon_as_the_other_ends(ref):
    endless = subprocess.Popen([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('y\\n' * 4096)"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        result = run("score", "-", ref, stdin=endless.stdout, timeout=30)
    finally:
        endless.kill()
        endless.wait()
    one_line_error(result, "REF_FILE has 1 line; files must be line-aligned")
    assert "HYP_FILE has at least" in result.stderr


def test_a_mismatch_between_regular_files_gives_both_counts_and_the_trailing_blank_hint(tmp_path, ref):
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("the cat sat\n\n", encoding="utf-8")
    one_line_error(run("score", hyp, ref), "HYP_FILE has 2 lines, REF_FILE has 1 line; files must be line-aligned "
                                           "(the last 1 line of HYP_FILE is blank: remove the trailing blank line?)")


# ---- read as sacreBLEU's command line reads them -----------------------------------------------------------------
# (References long enough to have n-grams of every order: sacreBLEU's short-reference rule is another matter.)

CASES = {
    "a byte order mark": ("\ufeffabc def\nthe cat\n", "abc def\nthe cat\n", []),
    "trailing whitespace with whitespace kept": ("the cat sat  \t\nsat on\u3000\n", "the cat sat\nsat on the mat\n",
                                                 ["--include-whitespace"]),
    "CRLF line ends": ("the cat sat\r\non the mat\r\n", "the cat sat down\non a mat\n", ["--include-whitespace"]),
    "separators inside a line": ("a\u2028b c\x85d e\nthe\u000bcat\n", "a b c d e\nthe cat\n", []),
    "leading whitespace kept": ("  the cat sat\n\tsat on the mat\n", "the cat sat down\nsat on a mat\n",
                                ["--include-whitespace"]),
}


@pytest.mark.parametrize("case", CASES)
def test_scores_equal_sacrebleus_command_line_on_the_same_files(tmp_path, case):
    hypotheses, references, flags = CASES[case]
    sacrebleu = shutil.which("sacrebleu", path=os.path.dirname(sys.executable))
    assert sacrebleu, "sacreBLEU is a test dependency (requirements-dev.txt)"
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_bytes(hypotheses.encode())
    ref.write_bytes(references.encode())
    theirs = subprocess.run([sacrebleu, ref, "-i", hyp, "-m", "chrf", "-w", "6", "-b",
                             *(["--chrf-whitespace"] if "--include-whitespace" in flags else [])],
                            capture_output=True, text=True, timeout=60, check=True)
    ours = run("score", hyp, ref, "--json", *flags)
    assert ours.returncode == 0, ours.stderr
    assert abs(float(json.loads(ours.stdout)["score"]) - float(theirs.stdout)) <= 1e-6


def test_gzip_files_are_read_like_sacrebleu_reads_them(tmp_path):
    hyp, ref = tmp_path / "hyp.txt.gz", tmp_path / "ref.txt"
    with gzip.open(hyp, "wt", encoding="utf-8") as file:
        file.write("the cat sat\non the mat\n")
    ref.write_text("the cat sat down\non a mat\n", encoding="utf-8")
    result = run("score", hyp, ref, "--json")
    assert result.returncode == 0, result.stderr
    assert contract_part(json.loads(result.stdout)) == chrf_core.score({"hypotheses": ["the cat sat", "on the mat"],
                                                         "references": ["the cat sat down", "on a mat"]})
