"""sacreBLEU users type what they type: reference files first and the hypotheses with -i, -m chrf, sacreBLEU's
--chrf-* flags, -b and -w, --version; and `chrf-components` prints what `sacrebleu` prints, on real MT output in four
languages, with one reference file and with two (sacreBLEU's own command line runs beside it)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import run
from support import ROOT

BIN = Path(sys.executable).parent
DATA = ROOT / "tests" / "data" / "popovic"
FLAGS = [[], ["--chrf-word-order", "2"], ["-cw", "2", "-cc", "4"], ["--chrf-beta", "3", "--chrf-lowercase"],
         ["--chrf-whitespace"], ["--chrf-eps-smoothing", "--chrf-word-order", "2"]]


def printed(program, *arguments):
    done = subprocess.run([str(BIN / program), *map(str, arguments)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("language", ["en", "cs", "ru", "zh"])
@pytest.mark.parametrize("flags", FLAGS, ids=" ".join)
def test_score_only_prints_what_sacrebleu_prints_with_one_and_two_reference_files(capsys, tmp_path, language, flags):
    hypotheses, reference = DATA / f"example.hyp.{language}", DATA / f"example.ref.{language}"
    second = tmp_path / "ref.lower"  # a second reference: the first one lowercased
    second.write_text(reference.read_text(encoding="utf-8").lower(), encoding="utf-8")
    width = ["-w", "4"] if flags == FLAGS[1] else []  # sacreBLEU's default width elsewhere
    for references in ([reference], [reference, second]):
        arguments = [*references, "-i", hypotheses, "-m", "chrf", *flags, "-b", *width]
        code, ours, _ = run(capsys, "score", *arguments)  # this command line in process, sacreBLEU's as a program
        assert code == 0 and ours == printed("sacrebleu", *arguments)


def test_both_spellings_read_the_same_files_as_the_same_roles(capsys):
    hypotheses, reference = DATA / "example.hyp.en", DATA / "example.ref.en"
    bare = run(capsys, "score", hypotheses, reference, "--word-order", "2")
    sacrebleu = run(capsys, "score", reference, "-i", hypotheses, "--chrf-word-order", "2")
    assert bare == sacrebleu and bare[0] == 0
    assert f"  hypotheses: {hypotheses}; references: {reference}" in bare[1].splitlines()


def test_the_report_names_which_file_was_read_as_what_in_every_output(capsys, tmp_path):
    import json

    hypotheses, reference = DATA / "example.hyp.en", DATA / "example.ref.en"
    _, out, _ = run(capsys, "score", reference, "-i", hypotheses, "--json")
    document = json.loads(out)
    assert document["files"] == {"hypotheses": str(hypotheses), "references": [str(reference)]}
    assert (document["nrefs"], document["normalize"]) == (1, None) and document["signature"].endswith("|hyp:all")
    _, out, _ = run(capsys, "segments", reference, "-i", hypotheses, "--worst", "1")
    assert out.splitlines()[2] == f"hypotheses: {hypotheses}; references: {reference}"
    run(capsys, "score", reference, "-i", hypotheses, "--html", tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert str(hypotheses) in page and str(reference) in page


def test_compare_takes_several_reference_files_in_sacrebleus_order(capsys):
    import json

    reference, baseline = DATA / "example.ref.en", DATA / "example.hyp.en"
    systems = [ROOT / "examples" / "lowercased.hyp.en", ROOT / "examples" / "unpunctuated.hyp.en"]
    code, out, _ = run(capsys, "compare", reference, baseline, *systems, "--bootstrap", "50", "--json")
    one = json.loads(out)
    code2, out2, _ = run(capsys, "compare", reference, "-i", baseline, *systems, "--bootstrap", "50", "--json")
    assert code == code2 == 0 and json.loads(out2) == one and one["references"] == [str(reference)]
    code, out, _ = run(capsys, "compare", reference, systems[1], "-i", baseline, *systems[:1], "--bootstrap", "50",
                       "--json")
    two = json.loads(out)
    assert code == 0 and two["nrefs"] == 2 and two["references"] == [str(reference), str(systems[1])]
    expected = run(capsys, "score", baseline, reference, systems[1], "--json")[1]
    assert two["systems"][0]["score"] == float(json.loads(expected)["score"])


@pytest.mark.parametrize(("argv", "message"), [
    (["score", "r", "-i", "h", "-m", "bleu"], "-m bleu: this tool computes chrF only (-m chrf)"),
    (["score", "r", "-i", "h1", "h2"], "give one hypothesis file: -i HYP_FILE (compare takes several systems)"),
    (["compare", "r", "-i", "b"], "compare needs a baseline and at least one system"),
    (["score", "h", "r", "-w", "3"], "-w/--width goes with -b/--score-only"),
])
def test_sacrebleu_spellings_outside_this_tool_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "") and err.count("\n") == 1 and message in err, err


def test_version_normalize_case_and_help_name_the_roles(capsys):
    assert printed("chrf-components", "--version") == "chrf-components 1.0.0\n"
    lower = run(capsys, "score", DATA / "example.hyp.en", DATA / "example.ref.en", "--normalize", "nfc", "-b")
    upper = run(capsys, "score", DATA / "example.hyp.en", DATA / "example.ref.en", "--normalize", "NFC", "-b")
    assert lower == upper and lower[0] == 0
    usage = printed("chrf-components", "score", "--help").splitlines()
    assert usage[0].startswith("usage: chrf-components score HYP_FILE REF_FILE [REF_FILE ...]")
    assert usage[1].strip().startswith("chrf-components score REF_FILE [REF_FILE ...] -i HYP_FILE")
