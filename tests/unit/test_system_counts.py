"""Several systems against the same references (`CHRF.system_counts`, what `compare` counts with): each reference
counted once per segment, and each system's counts exactly its own segment counts (the naive implementation, and
`segment_counts`), in both kernels, on generated Unicode, small alphabets, the adversarial shapes and real lines."""

import random

import numpy
import pytest
from chrf_core import CHRF, InvalidInputError
from chrf_core import kernel as kernel_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_chrf import naive_counts
from payloads import adversarial, real_pairs
from support import SEGMENT_TEXT, settings_strategy
from test_kernels import kernels

SMALL_ALPHABET = st.text(st.sampled_from("ab ."), max_size=300)  # low orders then go by code (alphabet^n small)
WITH_FOREIGN_LETTERS = st.text(st.sampled_from("ab .!é"), max_size=300)  # letters a reference may lack


@st.composite
def segments(draw, text=SEGMENT_TEXT, hypothesis_text=None):
    """Segments of one reference and 1-4 systems' hypotheses: generated (from hypothesis_text if given), the reference
    itself, or a piece of it."""
    systems = draw(st.integers(1, 4))
    references, sets = [], [[] for _ in range(systems)]
    for _ in range(draw(st.integers(1, 4))):
        reference = draw(text)
        references.append(reference)
        for hypotheses in sets:
            start = draw(st.integers(0, len(reference)))
            generated = draw(text if hypothesis_text is None else hypothesis_text)
            hypotheses.append(draw(st.sampled_from([generated, reference, reference[start:], reference[:start]])))
    return sets, references


def naive_rows(hypotheses, references, chosen):
    keys = ("char_order", "word_order", "lowercase", "include_whitespace")
    return [naive_counts([h], [r], **{key: chosen[key] for key in keys}) for h, r in zip(hypotheses, references)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments(), settings_strategy())
def test_each_systems_counts_are_its_own_naive_segment_counts(kernel, texts, chosen):
    sets, references = texts
    counts = CHRF(**chosen).system_counts(sets, references)
    assert counts.shape == (len(sets), len(references), chosen["char_order"] + chosen["word_order"], 3)
    assert [system.tolist() for system in counts] == [naive_rows(h, references, chosen) for h in sets]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(segments(SMALL_ALPHABET), segments(SMALL_ALPHABET, WITH_FOREIGN_LETTERS)), st.integers(1, 10),
       st.integers(0, 3))
def test_small_alphabets_and_repeats_count_as_the_naive_implementation(kernel, texts, char_order, word_order):
    sets, references = texts
    chosen = {"char_order": char_order, "word_order": word_order, "lowercase": False, "include_whitespace": False}
    counts = CHRF(char_order=char_order, word_order=word_order).system_counts(sets, references)
    assert [system.tolist() for system in counts] == [naive_rows(h, references, chosen) for h in sets]


@pytest.mark.parametrize("name", sorted(adversarial()))
def test_the_adversarial_requests_count_as_segment_counts_does(kernel, name):
    request = adversarial()[name]
    metric = CHRF(**{key: value for key, value in request.items() if key not in ("hypotheses", "references")})
    hypotheses, references = request["hypotheses"], request["references"]
    sets = [hypotheses, references, hypotheses[::-1] if len(hypotheses) == len(references) else hypotheses]
    expected = numpy.stack([metric.segment_counts(system, references) for system in sets])
    assert (metric.system_counts(sets, references) == expected).all()


def test_real_lines_of_three_systems_in_both_kernels_are_each_systems_segment_counts(kernel):
    rng = random.Random(4)
    pairs = real_pairs()
    references = [r for _, r in pairs]
    sets = [[h for h, _ in pairs], [" ".join(h.split()[1:]) for h, _ in pairs], rng.sample(references, len(pairs))]
    for metric in (CHRF(), CHRF(word_order=2), CHRF(char_order=10, word_order=4, lowercase=True, normalize="NFKC")):
        expected = numpy.stack([metric.segment_counts(system, references) for system in sets])
        assert (metric.system_counts(sets, references) == expected).all()


def test_both_kernels_give_the_same_counts():
    pairs = real_pairs()[:200]
    sets = [[h for h, _ in pairs], [h.upper() for h, _ in pairs]]
    references = [r for _, r in pairs]
    results = {}
    for name in kernels():
        results[name] = kernel_module.KERNELS[name].system_counts(sets, references, CHRF(word_order=2))
    assert all((counts == results["python"]).all() for counts in results.values())


def test_several_reference_streams_give_each_system_its_counts_against_its_best_reference(kernel):
    pairs = real_pairs()[:30]
    first = [r for _, r in pairs]
    second = [None if k % 3 == 0 else h for k, (h, _) in enumerate(pairs)]
    sets = [[h for h, _ in pairs], [r.lower() for r in first]]
    metric = CHRF(word_order=2)
    expected = numpy.stack([metric.segment_counts(system, [first, second]) for system in sets])
    assert (metric.system_counts(sets, [first, second]) == expected).all()


def test_long_files_go_in_chunks_and_give_the_counts_of_the_whole(kernel, monkeypatch):
    from chrf_core import streams as streams_module

    monkeypatch.setattr(streams_module, "CHUNK", 7)
    pairs = real_pairs()[:40]
    sets = [[h for h, _ in pairs], [r for _, r in pairs]]
    references = [r for _, r in pairs]
    metric = CHRF()
    expected = numpy.stack([metric.segment_counts(system, references) for system in sets])
    assert (metric.system_counts(sets, references) == expected).all()


@pytest.mark.parametrize(("sets", "error", "message"), [
    ([], InvalidInputError, "hypothesis_sets: at least 1 system, got 0"),
    ("ab", TypeError, "hypothesis_sets: expected a sequence of segments"),
    ([["a", "b"], "ab"], TypeError, r"hypothesis_sets\[1\]: expected a sequence of segments"),
    ([["a", "b"], {"a", "b"}], TypeError, r"hypothesis_sets\[1\]: expected a sequence in order .* got a set"),
    ([["a", "b"], ["a"]], InvalidInputError, r"hypothesis_sets\[1\]: must have as many segments as the first"),
    ([["a", "b"], ["a", 3]], InvalidInputError, r"hypothesis_sets\[1\]\[1\]: must be a string, got the number 3"),
    ([["a", "b\ud800"], ["a", "b"]], InvalidInputError, r"hypotheses\[1\]: must not contain a lone surrogate"),
    ([["a", "b", "c"], ["a", "b", "c"]], InvalidInputError, "references: must have as many segments"),
])
def test_mistakes_are_named(sets, error, message):
    with pytest.raises(error, match=message):
        CHRF().system_counts(sets, ["a", "b"])


def test_the_inputs_are_left_as_they_were(kernel):
    sets, references = [["The Cat", "é"], ["the cat", "e\u0301"]], ["the cat", "é"]
    before = [list(s) for s in sets], list(references)
    CHRF(lowercase=True, normalize="NFC").system_counts(sets, references)
    assert ([list(s) for s in sets], list(references)) == before
