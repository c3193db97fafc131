"""Several references per segment, as sacreBLEU takes them (``[refs1, refs2, ...]``, ``None`` where a segment
lacks one): each segment is scored against its best reference, the one with the highest segment score (the first
of equals), and those counts are summed. Equal to sacreBLEU 2.6 wherever the definitions coincide, exact always."""

import random

import numpy
import pytest
from chrf_core import CHRF, InvalidInputError
from payloads import real_pairs
from sacrebleu.metrics import CHRF as SacreCHRF
from test_against_sacrebleu import reference_covers_hypothesis

SETTINGS = [{"word_order": 0}, {"word_order": 2}, {"word_order": 2, "lowercase": True},
            {"word_order": 2, "eps_smoothing": True}, {"char_order": 4, "beta": 1, "whitespace": True}]


def streams(seed=3, count=3):
    """Real hypotheses with three reference streams: the real reference, another translation of a similar length
    (a real reference of another line with some words swapped in), and one with gaps (None)."""
    rng = random.Random(seed)
    pairs = real_pairs()
    hypotheses = [h for h, _ in pairs]
    first = [r for _, r in pairs]
    second = [" ".join(rng.sample(r.split(), len(r.split())) if rng.random() < 0.5 else
                       (h.split()[: len(h.split()) // 2] + r.split()[len(r.split()) // 2:])) for h, r in pairs]
    third = [None if k % 4 == 1 else first[(k + 5) % len(first)] for k in range(len(pairs))]
    return hypotheses, [first, second, third][:count]


def covered(hypotheses, references, keywords):
    """The segments every one of whose references has n-grams of each order the hypothesis has (sacreBLEU then
    counts what the contract counts)."""
    request = {"char_order": keywords.get("char_order", 6), "word_order": keywords.get("word_order", 0),
               "lowercase": keywords.get("lowercase", False), "include_whitespace": keywords.get("whitespace", False)}
    keep = [k for k, h in enumerate(hypotheses)
            if all(stream[k] is None or reference_covers_hypothesis(h, stream[k], request) for stream in references)]
    return [hypotheses[k] for k in keep], [[stream[k] for k in keep] for stream in references]


@pytest.mark.parametrize("keywords", SETTINGS)
@pytest.mark.parametrize("count", [2, 3])
def test_corpus_and_sentence_scores_with_several_references_equal_sacrebleus(keywords, count):
    hypotheses, references = covered(*streams(count=count), keywords)
    assert len(hypotheses) >= 20
    ours, theirs = CHRF(**keywords), SacreCHRF(**keywords)
    assert ours.corpus_score(hypotheses, references).score == pytest.approx(
        theirs.corpus_score(hypotheses, references).score, abs=1e-9)
    for k, hypothesis in enumerate(hypotheses):
        segment_references = [stream[k] for stream in references if stream[k] is not None]
        assert ours.sentence_score(hypothesis, segment_references).score == pytest.approx(
            theirs.sentence_score(hypothesis, segment_references).score, abs=1e-9)


@pytest.mark.parametrize("keywords", SETTINGS[:3])
def test_each_segment_is_scored_exactly_against_its_best_reference(keywords):
    hypotheses, references = streams()
    metric = CHRF(**keywords)
    reports = list(metric.segment_reports(hypotheses, references))
    for k, hypothesis in enumerate(hypotheses):
        alone = [metric.sentence_score(hypothesis, stream[k]) for stream in references if stream[k] is not None]
        best = max(alone, key=lambda report: report.exact)  # max keeps the first of equals
        assert reports[k] == best
    assert metric.segment_scores(hypotheses, references).tolist() == pytest.approx(
        [report.score for report in reports], abs=1e-12)
    assert list(metric.segment_scores(hypotheses, references, exact=True)) == [report.exact for report in reports]
    summed = metric.segment_counts(hypotheses, references).sum(axis=0)
    assert metric.corpus_counts(hypotheses, references).orders == tuple(map(tuple, summed.tolist()))


def test_one_stream_in_a_list_is_that_stream():
    hypotheses, references = streams(count=1)
    metric = CHRF(word_order=2)
    assert metric.corpus_score(hypotheses, references) == metric.corpus_score(hypotheses, references[0])


def test_an_exact_tie_between_references_goes_to_the_first():
    metric = CHRF(char_order=1)
    # "ab" against "ax" and against "xb": one matching character each, the same score, other counts alike
    report = metric.sentence_score("ab", ["ax", "xb"])
    assert report == metric.sentence_score("ab", "ax") == metric.sentence_score("ab", "xb")
    rows = metric.segment_counts(["ab c"], [["ab x"], ["ab c"], ["ab c"]])
    assert rows.tolist() == metric.segment_counts(["ab c"], ["ab c"]).tolist()


@pytest.mark.parametrize(("references", "error"), [
    ([["a", None], [None, None]], r"references\[1\]: every reference of this segment is None"),
    ([["a", "b"], ["a"]], r"references\[1\]: must have as many segments as hypotheses, got only 1"),
    ([["a", "b"], ["a", 3]], r"references\[1\]\[1\]: must be a string, got the number 3"),
    ([["a", None]], r"references\[1\]: must be a string, got null"),  # None only where several streams are given
])
def test_malformed_reference_streams_are_errors_naming_the_place(references, error):
    with pytest.raises(InvalidInputError, match=error):
        CHRF().corpus_score(["a", "b"], references, references_per_segment=False)


def sacrebleu_statistics(counts):
    """Our per-order counts as sacreBLEU states them: no hypothesis n-gram counted in an order the reference lacks."""
    stated = counts.copy()
    stated[..., 0] = numpy.where(stated[..., 1] > 0, stated[..., 0], 0)
    return stated.reshape(len(stated), -1)


@pytest.mark.parametrize("settings", [{}, {"word_order": 2}, {"eps_smoothing": True},
                                      {"eps_smoothing": True, "word_order": 2}], ids=str)
def test_of_several_references_each_segment_takes_the_one_sacrebleu_takes_ties_and_eps_terms_included(settings):
    """sacreBLEU 2.6 keeps a reference only if its float score (on its statistics, with its 1e-16 terms under
    eps_smoothing) is strictly higher than the best so far. On short segments over a small alphabet many references
    tie exactly or score 0 alike (where only the 1e-16 terms tell them apart): each segment here is counted against
    the reference sacreBLEU counts it against (sacreBLEU's own statistics, segment by segment)."""
    from sacrebleu.metrics import CHRF as SacreCHRF

    rng = random.Random(4)

    def text():
        return " ".join("".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 4)))
                        for _ in range(rng.randint(1, 3)))

    hypotheses = [text() for _ in range(3000)]
    streams = [[text() for _ in range(3000)] for _ in range(2)]
    theirs = numpy.array(SacreCHRF(**settings)._extract_corpus_statistics(hypotheses, streams))
    ours = CHRF(**settings).segment_counts(hypotheses, streams, references_per_segment=False)
    assert (sacrebleu_statistics(ours) == theirs).all(axis=1).sum() == len(hypotheses)
    assert CHRF(**settings).corpus_counts(hypotheses, streams, references_per_segment=False).orders == tuple(
        map(tuple, ours.sum(axis=0).tolist()))


def test_an_error_in_a_later_reference_stream_names_the_stream_and_the_segment():
    hypotheses = [f"segment {k}" for k in range(8000)]
    second = list(hypotheses)
    second[7000] = 3
    with pytest.raises(InvalidInputError, match=r"^references\[1\]\[7000\]: must be a string, got the number 3$"):
        CHRF().corpus_score(hypotheses, [hypotheses, second], references_per_segment=False)
