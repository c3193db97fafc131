"""`score` and `segments` with several REF_FILEs: each segment against its best reference, as the library (and
sacreBLEU's `sacrebleu REF1 REF2 -i HYP -m chrf`) scores them; line counts of every file must agree."""

import json
import pathlib
import random
import subprocess
import sys

import chrf_core
import pytest
from in_process import run
from payloads import real_pairs
from support import ROOT, contract_part


@pytest.fixture
def files(tmp_path):
    rng = random.Random(8)
    pairs = real_pairs()
    hypotheses = [h for h, _ in pairs]
    first = [r for _, r in pairs]
    second = [" ".join(rng.sample(r.split(), len(r.split()))) for _, r in pairs]
    paths = []
    for name, lines in (("hyp", hypotheses), ("ref1", first), ("ref2", second)):
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths, hypotheses, [first, second]


def test_score_with_two_reference_files_is_the_librarys_multi_reference_report(capsys, files):
    (hyp, ref1, ref2), hypotheses, references = files
    code, out, _ = run(capsys, "score", hyp, ref1, ref2, "--word-order", "2", "--json")
    expected = chrf_core.CHRF(word_order=2).corpus_score(hypotheses, references).to_dict()
    assert code == 0 and contract_part(json.loads(out)) == expected
    assert expected != chrf_core.CHRF(word_order=2).corpus_score(hypotheses, references[0]).to_dict()


def test_segments_with_two_reference_files_scores_each_against_its_best(capsys, files):
    (hyp, ref1, ref2), hypotheses, references = files
    code, out, _ = run(capsys, "segments", hyp, ref1, ref2)
    scores = [line.split("\t")[1] for line in out.splitlines()]
    best = [max(chrf_core.CHRF().sentence_score(h, r1).exact, chrf_core.CHRF().sentence_score(h, r2).exact)
            for h, r1, r2 in zip(hypotheses, *references)]
    assert code == 0 and scores == [chrf_core.score_text(value) for value in best]
    code, out, _ = run(capsys, "segments", hyp, ref1, ref2, "--json")
    assert [json.loads(line)["score"] for line in out.splitlines()] == scores


def test_a_reference_file_with_other_line_counts_is_named(capsys, files, tmp_path):
    (hyp, ref1, _), _, _ = files
    short = tmp_path / "short"
    short.write_text("one line\n", encoding="utf-8")
    code, _, err = run(capsys, "score", hyp, ref1, short)
    assert code == 2 and "REF_FILE" in err and str(short.name) in err


def test_the_score_agrees_with_sacrebleus_command_line_on_two_references(files):
    (hyp, ref1, ref2), _, _ = files
    sacrebleu = pathlib.Path(sys.executable).parent / "sacrebleu"  # sacreBLEU's own command line (make setup-dev)
    theirs = subprocess.run([str(sacrebleu), str(ref1), str(ref2), "-i", str(hyp), "-m", "chrf", "-b", "-w", "6"],
                            capture_output=True, text=True, check=True).stdout.strip()
    ours = subprocess.run([sys.executable, "-m", "chrf_components_cli.main", "score", str(hyp), str(ref1), str(ref2),
                           "--json"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    # sacreBLEU drops hypothesis n-grams of orders a reference lacks; these references are long enough not to
    assert float(json.loads(ours)["score"]) == pytest.approx(float(theirs), abs=2e-6)
