"""mbrs (the MBR decoding toolkit) with chrf_core as its metric: the wheel `make dist` builds, installed beside mbrs
(`make setup-mbrs`, .venv-mbrs), loaded by mbrs' own command line with `--plugin_dir`, against mbrs' own chrF
(sacreBLEU's Python) on 64 real candidate sets of 32: the same MBR winners for chrF and chrF++, with pairwise
utilities and with reference aggregation weighted by log-probabilities; and each method of the backend equal to
the library's own numbers.

With CHRF_REQUIRE_BUILD=1 (make test) a missing wheel fails the test; with CHRF_REQUIRE_TOOLS=1 (CI) so does a
missing mbrs.
"""

import json
import os
import platform
import random
import subprocess

import numpy
import pytest
from chrf_core import CHRF
from payloads import edited, real_pairs
from support import ROOT

MBRS_VENV = ROOT / ".venv-mbrs"
DIST = ROOT / "dist"
REQUIRE_BUILD = os.environ.get("CHRF_REQUIRE_BUILD") == "1"
SETS, CANDIDATES = 64, 32


@pytest.fixture(scope="module")
def plugin_dir():
    """The chrf_core package as pip installed it into mbrs' environment (from the x86_64 wheel)."""
    python = MBRS_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"mbrs is not installed in {MBRS_VENV} (make setup-mbrs; it needs PyTorch's CPU build)")
    wheels = sorted(DIST.glob(f"*manylinux_2_17_{platform.machine()}.whl"))
    if not wheels:
        (pytest.fail if REQUIRE_BUILD else pytest.skip)(f"no wheel for this machine in {DIST} (make dist)")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--force-reinstall",
                    str(wheels[-1])], check=True, capture_output=True, timeout=300)
    located = subprocess.run([str(python), "-c", "import chrf_core, os; print(os.path.dirname(chrf_core.__file__), "
                              "chrf_core.KERNEL)"], check=True, capture_output=True, text=True, timeout=120)
    path, kernel = located.stdout.split()
    assert "site-packages" in path and kernel == "native", located.stdout
    return path


@pytest.fixture(scope="module")
def candidates(tmp_path_factory):
    """64 sets of 32 sampled translations (real references with a quarter of their words replaced, some dropped),
    one per line, and a log-probability per candidate (as an MT model would give them)."""
    pairs = real_pairs()
    vocabulary = sorted({word for pair in pairs for text in pair for word in text.split()})
    lines = []
    for source in range(SETS):
        rng = random.Random(100 + source)
        reference = pairs[(source * 37) % len(pairs)][1]
        lines += [edited(reference, rng, vocabulary) for _ in range(CANDIDATES)]
    folder = tmp_path_factory.mktemp("mbrs")
    (folder / "hyps.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    lprobs = numpy.random.default_rng(7).normal(-30, 8, len(lines))
    (folder / "lprobs.txt").write_text("".join(f"{value:.6f}\n" for value in lprobs), encoding="utf-8")
    return folder, lines


def decode(folder, name, *options):
    """mbrs-decode on the candidates: each set's winner (index) and expected score."""
    output = folder / f"{name}.jsonl"
    result = subprocess.run([str(MBRS_VENV / "bin" / "mbrs-decode"), str(folder / "hyps.txt"), "-n", str(CANDIDATES),
                             "--format", "json", "-o", str(output), "--quiet", *options],
                            capture_output=True, text=True, timeout=900, cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == SETS
    return [row["selected_idx"] for row in rows], [row["expected_score"] for row in rows]


@pytest.mark.parametrize("word_order", [0, 2])
def test_mbrs_decode_with_chrf_core_picks_the_winners_of_mbrs_own_chrf(plugin_dir, candidates, word_order):
    folder, _ = candidates
    ours = decode(folder, f"ours{word_order}", "--metric", "chrf_core", "--metric.word_order", str(word_order),
                  "--plugin_dir", plugin_dir)
    theirs = decode(folder, f"theirs{word_order}", "--metric", "chrf", "--metric.word_order", str(word_order))
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1], abs=1e-4)  # mbrs averages in float32


@pytest.mark.parametrize("word_order", [0, 2])
def test_weighted_reference_aggregation_picks_the_winners_of_mbrs_own(plugin_dir, candidates, word_order):
    folder, _ = candidates
    weighted = ("--decoder", "aggregate_mbr", "--reference_lprobs", str(folder / "lprobs.txt"),
                "--metric.word_order", str(word_order))
    ours = decode(folder, f"aggregated{word_order}", "--metric", "chrf_core", "--plugin_dir", plugin_dir, *weighted)
    theirs = decode(folder, f"their_aggregated{word_order}", "--metric", "chrf", *weighted)
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1], abs=1e-4)
    uniform = decode(folder, f"uniform{word_order}", "--metric", "chrf_core", "--plugin_dir", plugin_dir,
                     "--decoder", "aggregate_mbr", "--metric.word_order", str(word_order))
    assert uniform != ours  # the weights count


SCRIPT = """
import json, sys
import mbrs.metrics
import chrf_core  # registers the backend, as --plugin_dir does
import torch
metric = mbrs.metrics.get_metric("chrf_core")
settings = json.loads(sys.argv[1])
texts = json.loads(sys.argv[2])
chosen = metric(metric.Config(**settings))
lprobs = torch.tensor([float(k % 5) - 2.5 for k in range(len(texts))])
print(json.dumps({
    "score": chosen.score(texts[0], texts[1]),
    "scores": chosen.scores(texts[:5], texts[5:10]).tolist(),
    "pairwise": chosen.pairwise_scores(texts[:4], texts[4:9]).tolist(),
    "aggregate": chosen.expected_scores_reference_aggregation(texts[:6], texts).tolist(),
    "weighted": chosen.expected_scores_reference_aggregation(texts[:6], texts, reference_lprobs=lprobs).tolist(),
    "corpus": chosen.corpus_score(texts[:5], [texts[5:10], texts[10:15]]),
    "dtype": str(chosen.pairwise_scores(texts[:2], texts[:2]).dtype),
}))
"""


@pytest.mark.parametrize("settings", [{}, {"word_order": 2, "beta": 3}, {"char_order": 4, "word_order": 1,
                                                                         "lowercase": True, "whitespace": True,
                                                                         "eps_smoothing": True, "normalize": "NFKC"}])
def test_each_method_of_the_backend_gives_the_librarys_own_numbers(plugin_dir, candidates, settings):
    _, lines = candidates
    texts = lines[:20]
    result = subprocess.run([str(MBRS_VENV / "bin" / "python"), "-c", SCRIPT, json.dumps(settings),
                             json.dumps(texts)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.splitlines()[-1])
    chrf = CHRF(**settings)
    weights = numpy.exp(numpy.array([float(k % 5) - 2.5 for k in range(len(texts))], dtype=numpy.float32)
                        .astype(numpy.float64))
    assert got["score"] == float(chrf.sentence_score(texts[0], texts[1]).exact)
    assert got["scores"] == [float(score) for score in chrf.segment_scores(texts[:5], texts[5:10], exact=True)]
    assert got["pairwise"] == chrf.pairwise(texts[:4], texts[4:9]).tolist()
    assert got["aggregate"] == chrf.aggregate(texts[:6], texts).tolist()
    assert got["weighted"] == pytest.approx(chrf.aggregate(texts[:6], texts, weights=weights).tolist(), abs=1e-12)
    assert got["corpus"] == float(chrf.corpus_score(texts[:5], [texts[5:10], texts[10:15]]).exact)
    assert got["dtype"] == "torch.float64"
