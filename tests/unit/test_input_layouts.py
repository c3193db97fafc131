"""The library never guesses how inputs are laid out (issue: a wrong pairing is the only way left to print a wrong
number). References per segment (Hugging Face's and torchmetrics' layout) are scored as those tools score them when
the keyword says so; a list of lists that both layouts could mean is refused naming both readings; a set, a dict or
a dict view, whose order is not the caller's, is refused wherever segments, streams, candidate sets or weights
belong; every method takes the same ordered types."""

import numpy
import pytest
from chrf_core import CHRF, InvalidInputError
from sacrebleu.metrics import CHRF as SacreCHRF

HYPOTHESES = ["the cat sat on the mat", "a dog barked loudly"]
PER_SEGMENT = [["the cat sat on a mat", "a cat sat on the mat"], ["the dog barked loud", "a dog was barking"]]
STREAMS = [list(stream) for stream in zip(*PER_SEGMENT)]  # the same references in sacreBLEU's layout


def test_a_list_of_lists_both_layouts_could_mean_is_refused_naming_both_readings():
    with pytest.raises(InvalidInputError) as refused:
        CHRF().corpus_score(HYPOTHESES, PER_SEGMENT)
    assert refused.value.field == "references"
    assert refused.value.message == (
        "references: 2 lists of 2 texts for 2 hypotheses read two ways: as 2 reference streams, sacreBLEU's layout "
        "(references[k][i] is reference k of segment i), or as one list of references per segment, Hugging Face's "
        "and torchmetrics' (references[i][k]); say which: references_per_segment=False or "
        "references_per_segment=True")
    for method in ("segment_scores", "segment_counts", "corpus_counts", "segment_reports"):
        with pytest.raises(InvalidInputError, match="read two ways"):
            result = getattr(CHRF(), method)(HYPOTHESES, PER_SEGMENT)
            list(result) if method == "segment_reports" else None


@pytest.mark.parametrize("container", [tuple, numpy.array, iter, lambda texts: (text for text in texts),
                                       lambda texts: map(str, texts)], ids=["tuple", "array", "iterator", "generator",
                                                                            "map"])
def test_the_square_layout_is_refused_whatever_holds_the_hypotheses(container):
    """On 72c9660 a generator of hypotheses was read as sacreBLEU's layout (52.20) where the same lists were refused:
    the hypotheses are now counted whatever holds them, reading at most N + 1 of a stream ahead."""
    for method in ("corpus_score", "segment_scores", "corpus_counts"):
        with pytest.raises(InvalidInputError, match="2 lists of 2 texts for 2 hypotheses read two ways"):
            result = getattr(CHRF(), method)(container(HYPOTHESES), PER_SEGMENT)
            list(result) if method == "segment_scores" else None


def test_a_stream_of_another_length_is_read_ahead_and_scored_whole():
    three = ["a b", "c d", "e f"]
    assert CHRF().corpus_score(iter(three), [three, three]) == CHRF().corpus_score(three, [three, three])
    assert CHRF().corpus_score(iter(HYPOTHESES), PER_SEGMENT, references_per_segment=False) == \
        CHRF().corpus_score(HYPOTHESES, PER_SEGMENT, references_per_segment=False)


def test_either_reading_is_scored_as_its_tools_score_it_when_the_keyword_says_which():
    per_segment = CHRF().corpus_score(HYPOTHESES, PER_SEGMENT, references_per_segment=True)
    assert per_segment.exact == CHRF().corpus_score(HYPOTHESES, STREAMS, references_per_segment=False).exact
    assert per_segment.score == pytest.approx(SacreCHRF().corpus_score(HYPOTHESES, STREAMS).score, abs=1e-9)
    streams = CHRF().corpus_score(HYPOTHESES, PER_SEGMENT, references_per_segment=False)
    assert round(per_segment.score, 2) == 83.05 and round(streams.score, 2) == 49.55  # what guessing would cost
    assert CHRF().segment_scores(HYPOTHESES, PER_SEGMENT, references_per_segment=True).tolist() == \
        CHRF().segment_scores(HYPOTHESES, STREAMS, references_per_segment=False).tolist()


@pytest.mark.parametrize(("settings", "expected"), [
    ({}, 84.64214891738334), ({"word_order": 2}, 82.87263732906315),
    ({"word_order": 2, "lowercase": True}, 92.12853119829202),
])
def test_references_per_segment_give_hugging_face_evaluates_chrf_card_numbers(settings, expected):
    """The examples of Hugging Face evaluate's chrF card (its references: one list per prediction)."""
    predictions = ["The relationship between cats and dogs is not exactly friendly.",
                   "a good bookshop is just a genteel black hole that knows how to read."]
    references = [["The relationship between dogs and cats is not exactly friendly."],
                  ["A good bookshop is just a genteel Black Hole that knows how to read."]]
    score = CHRF(**settings).corpus_score(predictions, references, references_per_segment=True).score
    assert score == pytest.approx(expected, abs=1e-12)


def test_segments_may_have_different_numbers_of_references_per_segment():
    references = [["the cat sat on a mat"], ["the dog barked loud", "a dog was barking"]]
    result = CHRF().corpus_score(HYPOTHESES, references, references_per_segment=True)
    assert result.exact == CHRF().corpus_score(HYPOTHESES, [["the cat sat on a mat", "the dog barked loud"],
                                                            [None, "a dog was barking"]],
                                               references_per_segment=False).exact
    with pytest.raises(InvalidInputError, match=r"references\[1\]: at least 1 reference per segment, got 0"):
        CHRF().corpus_score(HYPOTHESES, [["a"], []], references_per_segment=True)
    with pytest.raises(TypeError, match=r"references\[0\]: with references_per_segment=True, expected the list"):
        CHRF().corpus_score(HYPOTHESES, ["a", "b"], references_per_segment=True)


def test_one_segment_with_one_reference_is_not_ambiguous_and_a_non_square_mistake_names_the_keyword():
    assert CHRF().corpus_score(["a b"], [["a c"]]).exact == CHRF().sentence_score("a b", ["a c"]).exact
    three_each = [["r1", "r2", "r3"], ["r1", "r2", "r3"]]  # Hugging Face's layout, three references each
    with pytest.raises(InvalidInputError) as refused:
        CHRF().corpus_score(HYPOTHESES, three_each)
    assert refused.value.message == (
        "references[0]: must have as many segments as hypotheses, got more than 2; if each inner list holds one "
        "segment's references (Hugging Face's and torchmetrics' layout), pass references_per_segment=True")
    assert CHRF().corpus_score(HYPOTHESES, three_each, references_per_segment=True).score >= 0


def unordered(texts):
    return [set(texts), frozenset(texts), dict.fromkeys(texts), dict.fromkeys(texts).keys(),
            {text: text for text in texts}.values()]


@pytest.mark.parametrize("kind", range(5), ids=["set", "frozenset", "dict", "keys", "values"])
def test_a_set_dict_or_dict_view_is_refused_wherever_order_pairs_things(kind):
    chrf = CHRF()
    mistakes = [
        (lambda: chrf.corpus_score(unordered(HYPOTHESES)[kind], [STREAMS[0]]), "hypotheses"),
        (lambda: chrf.corpus_score(HYPOTHESES, [unordered(STREAMS[0])[kind], STREAMS[1]]), r"references\[0\]"),
        (lambda: chrf.corpus_score(HYPOTHESES, unordered(STREAMS[0])[kind]), "references"),
        (lambda: chrf.segment_scores(HYPOTHESES, unordered(STREAMS[0])[kind]), "references"),
        (lambda: chrf.sentence_score("a", unordered(["a", "b"])[kind]), "references"),
        (lambda: chrf.pairwise(unordered(HYPOTHESES)[kind], STREAMS[0]), "hypotheses"),
        (lambda: chrf.aggregate(HYPOTHESES, STREAMS[0], weights=unordered([5, 1])[kind]), "weights"),
        (lambda: chrf.aggregate_batch([unordered(["a", "bb", "ccc"])[kind]], [["a"]]), r"hypothesis_sets\[0\]"),
        (lambda: chrf.pairwise_batch(unordered([("a",), ("b",)])[kind], [["a"], ["b"]]), "hypothesis_sets"),
        (lambda: chrf.system_counts([HYPOTHESES, unordered(HYPOTHESES)[kind]], STREAMS[0]),
         r"hypothesis_sets\[1\]"),
        (lambda: chrf.corpus_score(HYPOTHESES, [unordered(texts)[kind] for texts in PER_SEGMENT],
                                   references_per_segment=True), r"references\[0\]"),
    ]
    for call, name in mistakes:
        with pytest.raises(TypeError, match=rf"^{name}: expected a sequence in order \(a list, a tuple, an array or "
                                            rf"a generator\), got a \w+, which has no order of its own$"):
            call()


def test_lists_tuples_arrays_and_generators_are_read_alike_by_every_method():
    chrf = CHRF(word_order=2)
    expected = chrf.segment_counts(HYPOTHESES, STREAMS[0]).tolist()
    for kind in (list, tuple, numpy.array, iter):
        assert chrf.corpus_score(kind(HYPOTHESES), kind(STREAMS[0])).exact == chrf.corpus_score(
            HYPOTHESES, STREAMS[0]).exact
        assert chrf.system_counts([HYPOTHESES, kind(HYPOTHESES)], STREAMS[0])[1].tolist() == expected
        if kind is not iter:  # pairwise reads each side more than once: a generator is read whole first
            assert chrf.pairwise(kind(HYPOTHESES), kind(STREAMS[0])).tolist() == chrf.pairwise(
                HYPOTHESES, STREAMS[0]).tolist()
    two_systems = numpy.array([HYPOTHESES, HYPOTHESES[::-1]])  # a NumPy 2-D array of systems
    assert chrf.system_counts(two_systems, STREAMS[0])[0].tolist() == expected


@pytest.mark.parametrize("references, per_segment, sacrebleu_streams", [
    (STREAMS[0], None, [STREAMS[0]]),
    (STREAMS, False, STREAMS),
    (PER_SEGMENT, True, STREAMS),
    ([["the cat sat on a mat"], ["the dog barked loud", "a dog was barking"]], True,
     [["the cat sat on a mat", "the dog barked loud"], [None, "a dog was barking"]]),
    ([["the cat sat on a mat", None], ["the dog barked loud", "a dog"], [None, "a dog was barking"]], False,
     [["the cat sat on a mat", None], ["the dog barked loud", "a dog"], [None, "a dog was barking"]]),
])
def test_a_report_records_its_number_of_references_as_sacrebleus_signature_does(references, per_segment,
                                                                                 sacrebleu_streams):
    sacre = SacreCHRF()
    sacre.corpus_score(HYPOTHESES, sacrebleu_streams)
    expected = "var" if sacre.num_refs == -1 else sacre.num_refs
    report = CHRF(normalize="NFKC").corpus_score(HYPOTHESES, references, references_per_segment=per_segment)
    assert report.nrefs == expected
    assert report.to_dict(signature=True) == {**report.to_dict(), "signature": CHRF(normalize="NFKC").signature,
                                              "normalize": "NFKC", "nrefs": expected}
    assert "nrefs" not in report.to_dict() and "normalize" not in report.to_dict()  # the contract's object as it is


def test_a_report_of_merged_or_read_back_counts_does_not_claim_a_number_of_references():
    chrf = CHRF()
    report = chrf.report(chrf.corpus_counts(HYPOTHESES, STREAMS, references_per_segment=False))
    assert report.nrefs is None and report.to_dict(signature=True)["nrefs"] is None
    assert report.to_dict(signature=True)["normalize"] is None
    assert chrf.sentence_score(HYPOTHESES[0], PER_SEGMENT[0]).nrefs == 2
