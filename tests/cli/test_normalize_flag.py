"""`--normalize NFC|NFKC` on the commands scored here (score, segments, compare), recorded in the signature; the
pipeline, which the service scores, has no such flag."""

import json
import unicodedata

import chrf_core
import pytest
from chrf_core.arrays import score_texts
from in_process import run
from support import contract_part

HYPOTHESES = ["Die Größe für Äpfel", "ﬁne ２ Bücher"]
REFERENCES = [unicodedata.normalize("NFD", text) for text in ("Die Größe für Äpfel", "fine 2 Bücher")]


@pytest.fixture
def files(tmp_path):
    paths = []
    for name, lines in (("hyp", HYPOTHESES), ("ref", REFERENCES)):
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
def test_score_and_segments_normalize_as_the_library_does(capsys, files, form):
    hyp, ref = files
    metric = chrf_core.CHRF(word_order=2, normalize=form)
    code, out, _ = run(capsys, "score", hyp, ref, "--word-order", "2", "--normalize", form, "--json")
    assert code == 0 and contract_part(json.loads(out)) == metric.corpus_score(HYPOTHESES, REFERENCES).to_dict()
    assert json.loads(out)["normalize"] == form and "|norm:" in json.loads(out)["signature"]
    code, out, _ = run(capsys, "score", hyp, ref, "--word-order", "2", "--normalize", form)
    assert f"signature: {metric.signature}" in out and metric.signature.endswith(f"|norm:{form}")
    code, out, _ = run(capsys, "segments", hyp, ref, "--word-order", "2", "--normalize", form)
    assert [line.split("\t")[1] for line in out.splitlines()] == score_texts(
        metric, metric.segment_counts(HYPOTHESES, REFERENCES))


def test_without_the_flag_nothing_is_normalized(capsys, files):
    hyp, ref = files
    code, out, _ = run(capsys, "score", hyp, ref, "--json")
    assert code == 0 and float(json.loads(out)["score"]) < 60


def test_the_pipeline_which_the_service_scores_has_no_normalize_flag(capsys, files):
    hyp, ref = files
    code, _, err = run(capsys, "pipeline", "run", hyp, ref, "--stack", "x", "--normalize", "NFC")
    assert code == 2 and "unrecognized arguments: --normalize NFC" in err
