"""The Python API (chrf_core.CHRF and its module functions): the documented examples run, every number equals the
independent naive implementation's exact value under each counting kernel, corpora of any size stream in chunks,
and bad input is refused as the contract refuses it, naming the field and the segment."""

import doctest
import itertools
import math
import random
from fractions import Fraction

import chrf_core
import numpy
import pytest
from chrf_core import InvalidInputError, streams
from chrf_core import kernel as kernel_module
from chrf_core import metric as api
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_chrf import naive_aggregate, naive_score
from payloads import real_pairs
from support import SEGMENT_TEXT, native_kernel_or_skip, settings_strategy
from test_kernels import kernels


def exact(hypothesis, reference, chosen):
    return Fraction(naive_score({"hypotheses": [hypothesis], "references": [reference], **chosen})["score_fraction"])


def test_the_documented_examples_run_as_doctests(kernel):
    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 9 and result.failed == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SEGMENT_TEXT, min_size=1, max_size=5), st.lists(SEGMENT_TEXT, min_size=1, max_size=5),
       settings_strategy())
def test_pairwise_is_each_pairs_exact_score_correctly_rounded(kernel, hypotheses, references, chosen):
    matrix = chrf_core.CHRF(**chosen).pairwise(hypotheses, references)
    assert isinstance(matrix, numpy.ndarray) and matrix.dtype == numpy.float64
    assert matrix.shape == (len(hypotheses), len(references))
    for (i, hypothesis), (j, reference) in itertools.product(enumerate(hypotheses), enumerate(references)):
        assert matrix[i, j] == float(exact(hypothesis, reference, chosen)), (i, j)


def test_pairwise_on_real_translations_equals_one_segment_contract_scores(kernel):
    texts = [text for pair in real_pairs() for text in pair]
    for chosen in ({}, {"word_order": 2}, {"char_order": 10, "word_order": 4, "averaging": "per_order_f"}):
        matrix = chrf_core.CHRF(**chosen).pairwise(texts[:24], texts[40:64]).tolist()
        for i, j in itertools.product(range(24), range(24)):
            contract = chrf_core.score({"hypotheses": [texts[i]], "references": [texts[40 + j]], **chosen})
            assert matrix[i][j] == float(Fraction(contract["score_fraction"]))


def test_a_native_score_too_close_to_a_rounding_midpoint_is_computed_exactly(monkeypatch):
    native_kernel_or_skip()
    texts = [text for pair in real_pairs() for text in pair][:12]
    flagged, = kernel_module.NATIVE.batch(False, [texts], [texts], 6, 2, False, 2, False, 1, 1, [numpy.empty((12, 12))])
    assert len(flagged) > 100  # at a tolerance of half the value, nearly every score is handed back
    monkeypatch.setattr(kernel_module, "KERNEL", "native")
    monkeypatch.setattr(kernel_module, "TOLERANCE_BITS", 1)
    matrix = chrf_core.CHRF(word_order=2).pairwise(texts, texts)
    for i, j in itertools.product(range(12), range(12)):
        assert matrix[i, j] == float(exact(texts[i], texts[j], {"word_order": 2}))


def near_a_midpoint(value, bits):
    """Whether an exact score lies within 2^-bits of it (relative) from the midpoint between its rounding and the
    next double on its side: the scores the native kernel must hand back at that tolerance."""
    rounded = float(value)
    if value == rounded or rounded <= 0:
        return False
    midpoint = (Fraction(rounded) + Fraction(math.nextafter(rounded, math.inf if value > rounded else 0))) / 2
    return abs(value - midpoint) <= rounded * Fraction(1, 2**bits)


@pytest.mark.parametrize("chosen", [{}, {"word_order": 2}, {"char_order": 10, "word_order": 4, "beta": 3},
                                    {"word_order": 2, "averaging": "per_order_f"}])
def test_the_native_kernel_hands_back_exactly_the_scores_near_a_midpoint_so_its_values_are_far_more_precise(chosen):
    """At a tolerance of 2^-56 about one score in six is near a midpoint; a value off by more than about 2^-64
    (a lost low part of a double-double) would hand back a different set."""
    native_kernel_or_skip()
    texts = [text for pair in real_pairs() for text in pair]
    random.Random(11).shuffle(texts)
    hypotheses, references = texts[:32], texts[32:64]
    scoring = (chosen.get("char_order", 6), chosen.get("word_order", 0), False, chosen.get("beta", 2),
               chosen.get("averaging") == "per_order_f", 56, 2)
    flagged = set(kernel_module.NATIVE.batch(False, [hypotheses], [references], *scoring, [numpy.empty((32, 32))])[0])
    near = {i * 32 + j for i, j in itertools.product(range(32), range(32))
            if near_a_midpoint(exact(hypotheses[i], references[j], chosen), 56)}
    assert flagged == near and 32 < len(near) < 1024 - 32
    orders = chosen.get("char_order", 6) + chosen.get("word_order", 0)
    scores, counts = numpy.empty(64), numpy.empty((64, orders, 3), dtype=numpy.int64)
    flagged = set(kernel_module.NATIVE.batch(True, [texts[:64]], [references], *scoring, [(scores, counts, None)])[0])
    exact_aggregate = naive_aggregate(texts[:64], references, **chosen)
    near = {i for i, value in enumerate(exact_aggregate) if near_a_midpoint(value, 56)}
    assert flagged == near and 0 < len(near) < 64


def test_the_kernels_give_the_same_pairwise_matrix():
    texts = [text for pair in real_pairs() for text in pair]
    random.Random(5).shuffle(texts)
    matrices = {}
    for name in kernels():
        kernel_module.KERNEL, previous = name, kernel_module.KERNEL
        try:
            matrices[name] = chrf_core.CHRF(word_order=2, lowercase=True).pairwise(texts[:30], texts[30:70]).tolist()
        finally:
            kernel_module.KERNEL = previous
    assert len({repr(matrix) for matrix in matrices.values()}) == 1


def test_pairwise_agrees_with_sacrebleu_sentence_scores_where_the_definitions_coincide(kernel):
    from sacrebleu.metrics import CHRF

    texts = [text for pair in real_pairs() for text in pair if len(text) > 30][:20]
    matrix = chrf_core.CHRF(word_order=2).pairwise(texts, texts)
    metric = CHRF(word_order=2)
    for i, j in itertools.product(range(len(texts)), repeat=2):
        assert matrix[i, j] == pytest.approx(metric.sentence_score(texts[i], [texts[j]]).score, abs=1e-9)


def test_the_corpus_report_of_many_segments_is_the_merge_of_its_chunks(kernel, monkeypatch):
    pairs = real_pairs()
    hypotheses = (pairs[k % len(pairs)][0] for k in range(1000))  # a generator: read once, in chunks
    references = (pairs[(k * 3) % len(pairs)][1] for k in range(1000))
    monkeypatch.setattr(streams, "CHUNK", 64)
    report = chrf_core.CHRF(word_order=2).corpus_score(hypotheses, references)
    chosen = chrf_core.CHRF(word_order=2)
    whole = chrf_core.counts.count_segments([pairs[k % len(pairs)][0] for k in range(1000)],
                                     [pairs[(k * 3) % len(pairs)][1] for k in range(1000)], chosen)
    assert report == chrf_core.report.report_of(whole) and report.segment_count == 1000
    assert report.to_dict() == chrf_core.report.report_of(whole).to_dict()


def test_a_small_corpus_report_is_the_contract_output(kernel):
    pairs = real_pairs()[:10]
    request = {"hypotheses": [h for h, _ in pairs], "references": [r for _, r in pairs], "word_order": 2,
               "lowercase": True}
    report = chrf_core.CHRF(word_order=2, lowercase=True).corpus_score(request["hypotheses"], request["references"])
    assert report.to_dict() == chrf_core.score(request) == naive_score(request)


def test_segment_scores_and_reports_are_each_segments_own_and_read_lazily(kernel, monkeypatch):
    monkeypatch.setattr(streams, "CHUNK", 3)
    pairs = real_pairs()
    endless_hypotheses = itertools.cycle([h for h, _ in pairs])
    references = [r for _, r in pairs]
    scores = chrf_core.CHRF(char_order=4, word_order=1).segment_scores(endless_hypotheses, iter(references), exact=True)
    first = list(itertools.islice(scores, 7))
    assert first == [exact(pairs[k][0], references[k], {"char_order": 4, "word_order": 1}) for k in range(7)]
    reports = chrf_core.CHRF(averaging="per_order_f").segment_reports([h for h, _ in pairs[:5]], references[:5])
    assert [report.to_dict() for report in reports] == [
        chrf_core.score({"hypotheses": [h], "references": [r], "averaging": "per_order_f"}) for h, r in pairs[:5]]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: chrf_core.CHRF(beta=0), "beta: must be an integer from 1 to 16, got 0"),
        (lambda: chrf_core.CHRF(char_order=0).corpus_score(["a"], ["a"]), "word_order: char_order and word_order"),
        (lambda: chrf_core.CHRF(lowercase=1).pairwise(["a"], ["a"]), "lowercase: must be a boolean"),
        (lambda: chrf_core.CHRF().corpus_score([], []), "hypotheses: at least 1 segment, got 0"),
        (lambda: chrf_core.CHRF().pairwise(["a"], []), "references: at least 1 segment, got 0"),
        (lambda: chrf_core.CHRF().corpus_score(["a"] * 10, ["a"] * 9), "references: must have as many segments as "
                                                                  "hypotheses, got only 9"),
        (lambda: chrf_core.CHRF().corpus_score(["a"] * 9, ["a"] * 10), "references: must have as many segments as "
                                                                 "hypotheses, got more than 9"),
        (lambda: chrf_core.CHRF().corpus_score(["a"] * 9 + [b"a"], ["a"] * 10), "hypotheses[9]: must be a string"),
        (lambda: list(chrf_core.CHRF().segment_scores(["a"] * 9, ["a"] * 8 + ["\ud800"], exact=True)),
         "references[8]: must not contain a lone surrogate"),
        (lambda: chrf_core.CHRF().pairwise(["a", None], ["a"]), "hypotheses[1]: must be a string, got null"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_the_segment(call, message, monkeypatch):
    monkeypatch.setattr(streams, "CHUNK", 4)  # so that segment numbers count across chunks
    with pytest.raises(InvalidInputError) as raised:
        call()
    assert str(raised.value).startswith(message)


def test_a_misspelt_setting_is_a_type_error_naming_it_as_sacrebleus_chrf_gives():
    with pytest.raises(TypeError, match="unexpected keyword argument 'wordorder'"):
        chrf_core.CHRF(wordorder=2)


def test_settings_are_checked_when_the_call_is_made_not_when_the_first_score_is_read():
    with pytest.raises(InvalidInputError):
        chrf_core.CHRF(averaging="mean").segment_reports(["a"], ["a"])


def test_inputs_are_not_changed():
    hypotheses, references = ["The Cat", "a dog"], ["the cat", "A Dog"]
    chrf_core.CHRF(lowercase=True).pairwise(hypotheses, references)
    chrf_core.CHRF(lowercase=True).corpus_score(hypotheses, references)
    assert hypotheses == ["The Cat", "a dog"] and references == ["the cat", "A Dog"]


def test_the_python_api_page_examples_run_as_doctests(kernel):
    from support import ROOT

    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False)
    assert result.attempted >= 5 and result.failed == 0


def test_the_readme_python_example_runs_as_written_and_prints_what_it_shows(kernel, capsys, monkeypatch):
    """The README's block runs as written from the clone's folder, in a namespace of its own (hypotheses,
    references, candidates and candidate_sets were undefined there), and prints the text block that follows it."""
    import re

    from support import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example, shown = re.search(r"```python\n(.*?)```\n\n```text\n(.*?)```", readme, re.S).groups()
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    assert capsys.readouterr().out == shown
    assert namespace["best"] == "the cat sat on the mat" and namespace["result"].segment_count == 10
    assert namespace["report"] == namespace["result"].to_dict() and len(namespace["scores"]) == 10


def test_ctrl_c_stops_a_large_native_pairwise_matrix_within_a_row(tmp_path):
    from processes import ctrl_c_after
    from support import ROOT

    native_kernel_or_skip()
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import chrf_core; from payloads import real_pairs\n"
              "texts = [f'{text} {k}' for k in range(100) for pair in real_pairs() for text in pair]\n"
              "print('started', flush=True); chrf_core.CHRF().pairwise(texts, texts); print('finished', flush=True)\n")
    script = script.replace("sys.argv[1]", repr(str(ROOT / "layers" / "chrf_core")))
    out, err, code, stopped_after = ctrl_c_after(script, 0.5, str(ROOT / "tests"))
    assert code != 0 and "finished" not in out and err.rstrip().endswith("KeyboardInterrupt")
    assert stopped_after < 3  # the whole 8,000 x 8,000 matrix takes about 20 s here


def test_other_threads_run_while_the_native_kernel_fills_a_matrix():
    import threading
    import time

    native_kernel_or_skip()
    texts = [f"{text} {k}" for k in range(32) for pair in real_pairs() for text in pair]  # 2,560 x 2,560
    ticks, stop = [0], threading.Event()

    def tick():
        while not stop.is_set():
            ticks[0] += 1

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        time.sleep(0.2)
        before, started = ticks[0], time.perf_counter()
        time.sleep(0.2)
        rate = (ticks[0] - before) / (time.perf_counter() - started)  # this thread's ticks per second alone
        before, started = ticks[0], time.perf_counter()
        chrf_core.CHRF().pairwise(texts, texts)
        during, elapsed = ticks[0] - before, time.perf_counter() - started
    finally:
        stop.set()
        thread.join()
    assert elapsed > 0.3 and during > 0.25 * rate * elapsed  # holding the GIL throughout, it would be a few ticks

