"""The layer against sacreBLEU 2.6 where the definitions coincide, and the one place they differ."""

from fractions import Fraction

import chrf_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_chrf import split_whitespace, tokens
from sacrebleu.metrics import CHRF
from support import SEGMENT_TEXT, settings_strategy


def reference_covers_hypothesis(hypothesis, reference, request):
    """Every order the hypothesis has n-grams of, the reference has too (sacreBLEU then counts the same)."""
    if request["lowercase"]:
        hypothesis, reference = hypothesis.lower(), reference.lower()
    if request["include_whitespace"]:
        hyp_chars, ref_chars = len(hypothesis), len(reference)
    else:
        hyp_chars, ref_chars = len("".join(split_whitespace(hypothesis))), len("".join(split_whitespace(reference)))
    hyp_words, ref_words = len(tokens(hypothesis)), len(tokens(reference))
    return ref_chars >= min(hyp_chars, request["char_order"]) and ref_words >= min(hyp_words, request["word_order"])


@st.composite
def covered_requests(draw):
    request = draw(settings_strategy())
    pairs = draw(st.lists(st.tuples(SEGMENT_TEXT, SEGMENT_TEXT), min_size=1, max_size=5))
    pairs = [(h, r) for h, r in pairs if reference_covers_hypothesis(h, r, request)]
    if not pairs:
        pairs = [("", "")]
    request["hypotheses"] = [h for h, _ in pairs]
    request["references"] = [r for _, r in pairs]
    return request


def sacrebleu_metric(request, eps_smoothing):
    return CHRF(
        char_order=request["char_order"],
        word_order=request["word_order"],
        beta=request["beta"],
        lowercase=request["lowercase"],
        whitespace=request["include_whitespace"],
        eps_smoothing=eps_smoothing,
    )


def sacrebleu_counts(request):
    metric = sacrebleu_metric(request, False)
    per_segment = metric._extract_corpus_statistics(request["hypotheses"], [request["references"]])
    summed = [sum(column) for column in zip(*per_segment)]
    return [tuple(summed[i : i + 3]) for i in range(0, len(summed), 3)]


@settings(max_examples=700, deadline=None)
@given(covered_requests())
def test_counts_and_scores_agree_with_sacrebleu_when_references_cover_every_order(request):
    counts = chrf_core.service.compute_counts(request)
    assert list(counts.orders) == sacrebleu_counts(request)
    hypotheses, references = request["hypotheses"], [request["references"]]
    for averaging, eps_smoothing in (("precision_recall", False), ("per_order_f", True)):
        output = chrf_core.score({**request, "averaging": averaging})
        expected = sacrebleu_metric(request, eps_smoothing).corpus_score(hypotheses, references).score
        assert float(Fraction(output["score_fraction"])) == pytest.approx(expected, abs=1e-9)


def test_popovic_example_files_agree_with_sacrebleu_chrf_plus_plus(tmp_path):
    from support import ROOT

    data = ROOT / "tests" / "data" / "popovic"
    for language in ("en", "cs", "ru", "zh"):
        hyps = (data / f"example.hyp.{language}").read_text(encoding="utf-8").splitlines()
        refs = (data / f"example.ref.{language}").read_text(encoding="utf-8").splitlines()
        request = {"hypotheses": hyps, "references": refs, "char_order": 6, "word_order": 2, "beta": 2,
                   "lowercase": False, "include_whitespace": False}
        if list(chrf_core.service.compute_counts(request).orders) != sacrebleu_counts(request):
            continue  # a short reference somewhere: the documented difference applies
        output = chrf_core.score(request)
        expected = sacrebleu_metric(request, False).corpus_score(hyps, [refs]).score
        assert float(Fraction(output["score_fraction"])) == pytest.approx(expected, abs=1e-9)


def test_hypothesis_ngrams_of_an_order_the_reference_lacks_still_count_unlike_sacrebleu():
    """sacreBLEU 2.x (and chrF++.py) drop a segment's hypothesis n-grams of an order its reference has none of.

    Reference "ab" has no character 3-gram; the hypothesis "abc" has one. The contract counts it.
    """
    request = {"hypotheses": ["abc", "xyz"], "references": ["ab", "xyz"], "char_order": 3, "word_order": 0,
               "beta": 2, "lowercase": False, "include_whitespace": False}
    counts = chrf_core.service.compute_counts(request)
    assert counts.orders[2] == (2, 1, 1)
    assert sacrebleu_counts(request)[2] == (1, 1, 1)
    output = chrf_core.score(request)
    assert output["orders"][2]["precision"] == "1/2"
    sacre = sacrebleu_metric(request, False).corpus_score(request["hypotheses"], [request["references"]]).score
    assert float(Fraction(output["score_fraction"])) < sacre - 1


SACREBLEU_USERS_CODE = """
import json

from sacrebleu.metrics import CHRF

chrf = CHRF(word_order=WORD_ORDER, lowercase=LOWERCASE, whitespace=WHITESPACE, eps_smoothing=EPS)
result = chrf.corpus_score(hypotheses, [references])
sentence = chrf.sentence_score(hypotheses[0], [references[0]])
signature = chrf.get_signature()
outcome = {"score": result.score, "text": str(result), "sentence": sentence.score,
           "signature": str(signature), "short": signature.format(short=True),
           "settings": [chrf.char_order, chrf.word_order, chrf.beta, chrf.lowercase, chrf.whitespace,
                        chrf.eps_smoothing],
           "result": [result.name, result.char_order, result.word_order, result.beta],
           "formats": [result.format(), result.format(width=4), result.format(score_only=True),
                       result.format(width=1, score_only=True)],
           "signed": result.format(signature=str(signature)),
           "json": json.loads(result.format(signature=str(signature), is_json=True))}
"""


@pytest.mark.parametrize(("word_order", "lowercase", "whitespace", "eps"), [
    (0, False, False, False), (2, False, False, False), (2, True, False, True), (0, False, True, False),
    (2, False, True, True), (1, False, False, False)])
def test_a_sacrebleu_users_code_runs_unchanged_once_the_import_names_chrf_core(word_order, lowercase, whitespace,
                                                                              eps):
    from payloads import real_pairs

    request = {"char_order": 6, "word_order": word_order, "lowercase": lowercase, "include_whitespace": whitespace}
    pairs = [(h, r) for h, r in real_pairs() if reference_covers_hypothesis(h, r, request)]
    assert len(pairs) >= 30
    code = (SACREBLEU_USERS_CODE.replace("WORD_ORDER", str(word_order)).replace("LOWERCASE", str(lowercase))
            .replace("WHITESPACE", str(whitespace)).replace("EPS", str(eps)))
    theirs = {"hypotheses": [h for h, _ in pairs], "references": [r for _, r in pairs]}
    ours = dict(theirs)
    exec(compile(code, "sacrebleu", "exec"), theirs)
    exec(compile(code.replace("from sacrebleu.metrics import CHRF", "from chrf_core import CHRF"), "ours", "exec"),
         ours)
    # References with n-grams of every order the hypothesis has: sacreBLEU drops none, the definitions coincide.
    assert ours["outcome"]["score"] == pytest.approx(theirs["outcome"]["score"], abs=1e-9)
    assert ours["outcome"]["sentence"] == pytest.approx(theirs["outcome"]["sentence"], abs=1e-9)
    assert ours["outcome"]["text"] == theirs["outcome"]["text"]  # "chrF2++ = 54.95"
    assert ours["outcome"]["signature"].startswith("chrf-components:1.0.0|chrF2")  # ours, not to be taken for theirs
    assert ours["outcome"]["short"] == ours["outcome"]["signature"]
    for key in ("settings", "result", "formats"):  # the spellings read back, the result's name and format()
        assert ours["outcome"][key] == theirs["outcome"][key], key
    assert ours["outcome"]["signed"] == f"{theirs['outcome']['text'].split(' = ')[0]}|{ours['outcome']['signature']}"\
                                        f" = {theirs['outcome']['formats'][0].split(' = ')[1]}"
    assert {key: ours["outcome"]["json"][key] for key in ("name", "score")} == {
        key: theirs["outcome"]["json"][key] for key in ("name", "score")}
    assert ours["outcome"]["json"]["nc"] == theirs["outcome"]["json"]["nc"] == "6"
    averaging = "per_order_f" if eps else "precision_recall"
    assert ours["result"].exact == Fraction(chrf_core.CHRF(word_order=word_order, lowercase=lowercase,
                                                           include_whitespace=whitespace, averaging=averaging)
                                            .corpus_score(ours["hypotheses"], ours["references"])
                                            .to_dict()["score_fraction"])
