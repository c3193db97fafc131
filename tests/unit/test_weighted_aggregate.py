"""Weighted reference aggregation (`CHRF.aggregate(..., weights=)`, mbrs' model-based aggregation): the exact
definition (a naive implementation with Fractions), correctly rounded floats in both kernels whatever the weights'
magnitudes, the native kernel's exact fallback, and the weights' rules."""

import math
import random
from fractions import Fraction

import numpy
import pytest
from chrf_core import CHRF, InvalidInputError
from chrf_core import kernel as kernel_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_chrf import naive_aggregate
from payloads import edited, real_pairs
from support import SEGMENT_TEXT, settings_strategy

WEIGHT = st.one_of(
    st.integers(0, 10**30),
    st.fractions(min_value=0, max_value=1000),
    st.floats(min_value=0, max_value=1e300, allow_nan=False, allow_infinity=False),
    st.floats(min_value=0, max_value=1e-300),  # subnormals among them
)


def candidates(count, seed):
    rng = random.Random(seed)
    pairs = real_pairs()
    vocabulary = sorted({word for pair in pairs for text in pair for word in text.split()})
    return [edited(pairs[seed % len(pairs)][1], rng, vocabulary) for _ in range(count)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SEGMENT_TEXT, min_size=1, max_size=4), st.data(), settings_strategy())
def test_weighted_aggregate_is_the_exact_score_against_the_weighted_average_counts(kernel, hypotheses, data, chosen):
    references = data.draw(st.lists(SEGMENT_TEXT, min_size=1, max_size=4))
    weights = data.draw(st.lists(WEIGHT, min_size=len(references), max_size=len(references)).filter(any))
    metric = CHRF(**chosen)
    expected = naive_aggregate(hypotheses, references, weights, **chosen)
    assert metric.aggregate(hypotheses, references, weights=weights, exact=True) == expected
    assert metric.aggregate(hypotheses, references, weights=weights).tolist() == [float(value) for value in expected]


@pytest.mark.parametrize("settings_used", [CHRF(), CHRF(word_order=2), CHRF(char_order=10, word_order=4, beta=3,
                                                                             averaging="per_order_f")])
def test_softmax_weights_on_real_mbr_candidates_are_correctly_rounded_in_both_kernels(kernel, settings_used):
    texts = candidates(24, seed=3)
    lprobs = numpy.random.default_rng(5).normal(-20, 6, len(texts))
    weights = numpy.exp(lprobs - lprobs.max())
    weights /= weights.sum()  # as mbrs makes them: softmax of the log-probabilities, floats spanning many exponents
    chosen = {key: value for key, value in settings_used.as_dict().items()}
    expected = naive_aggregate(texts, texts, weights.tolist(), **chosen)
    assert settings_used.aggregate(texts, texts, weights=weights).tolist() == [float(value) for value in expected]


def test_every_native_score_the_double_double_cannot_round_for_certain_is_computed_exactly(monkeypatch):
    if "native" not in kernel_module.KERNELS:
        pytest.skip("not in this run: the native kernel is not loaded here (its fallback is what is tested)")
    monkeypatch.setattr(kernel_module, "KERNEL", "native")
    texts = candidates(12, seed=4)
    weights = [random.Random(k).random() for k in range(len(texts))]
    expected = CHRF(word_order=2).aggregate(texts, texts, weights=weights, exact=True)
    monkeypatch.setattr(kernel_module, "WEIGHTED_TOLERANCE_BITS", 1)  # every score undecided: all from Python
    assert CHRF(word_order=2).aggregate(texts, texts, weights=weights).tolist() == [float(v) for v in expected]


def test_equal_weights_are_the_uniform_average_and_integer_weights_repeat_references(kernel):
    texts = candidates(10, seed=5)
    metric = CHRF(word_order=2)
    uniform = metric.aggregate(texts, texts).tolist()
    assert metric.aggregate(texts, texts, weights=[0.1] * len(texts)).tolist() == uniform
    assert metric.aggregate(texts, texts, weights=[7] * len(texts), exact=True) == metric.aggregate(
        texts, texts, exact=True)
    repeated = [texts[0], texts[0], texts[0], *texts[1:]]
    assert metric.aggregate(texts, texts, weights=[3] + [1] * (len(texts) - 1)).tolist() == metric.aggregate(
        texts, repeated).tolist()
    assert metric.aggregate(texts, texts, weights=[0, *[1] * (len(texts) - 1)]).tolist() == metric.aggregate(
        texts, texts[1:]).tolist()


def test_weights_come_as_lists_tuples_arrays_fractions_and_anything_with_tolist(kernel):
    class Tensor:  # what a torch tensor offers
        def __init__(self, values):
            self.values = values

        def tolist(self):
            return list(self.values)

    texts = candidates(5, seed=6)
    expected = CHRF().aggregate(texts, texts, weights=[0.5, 0.25, 0.125, 0.0625, 0.0625]).tolist()
    for weights in ((0.5, 0.25, 0.125, 0.0625, 0.0625), numpy.array([8, 4, 2, 1, 1]),
                  [Fraction(1, 2), Fraction(1, 4), Fraction(1, 8), Fraction(1, 16), Fraction(1, 16)],
                  Tensor([16.0, 8.0, 4.0, 2.0, 2.0]), numpy.array([0.5, 0.25, 0.125, 0.0625, 0.0625], dtype="float32")):
        assert CHRF().aggregate(texts, texts, weights=weights).tolist() == expected


FLOAT_WEIGHT = st.one_of(st.just(0.0), st.floats(min_value=0, max_value=1.7e308),
                         st.floats(min_value=0, max_value=1e-300), st.integers(0, 2**60).map(float))


@settings(max_examples=400, deadline=None)
@given(st.lists(FLOAT_WEIGHT, min_size=1, max_size=12).filter(any))
def test_float_weights_are_taken_apart_in_numpy_into_the_integers_their_fractions_give(values):
    """Floats (NumPy's and mbrs' weights) become the kernel's words and pairs without a Python integer each (1 ms of
    a 9 ms weighted call of 1,024 samples before): the same integers as the weights' exact fractions scaled by the
    least common denominator, the same words as those integers written out, each pair the weight times the power
    of two that puts the largest in [0.5, 1) (2^-1074 where that underflows a nonzero weight to 0)."""
    weights = kernel_module.Weights(values, True)
    fractions = [Fraction(value) for value in values]
    scale = math.lcm(*(fraction.denominator for fraction in fractions))
    integers = [int(fraction * scale) for fraction in fractions]
    assert weights.integers() == integers
    assert weights.native[0].tolist() == kernel_module.Weights(integers, False).native[0].tolist()
    power = math.frexp(max(values))[1]
    assert weights.native[1][:, 1].tolist() == [0.0] * len(values)
    assert weights.native[1][:, 0].tolist() == [math.ldexp(value, -power) or (kernel_module.SMALLEST_DOUBLE if value
                                                                           else 0.0) for value in values]
    assert 0.5 <= weights.native[1][:, 0].max() < 1
    assert weights.equal == (len(set(values)) == 1)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SEGMENT_TEXT, min_size=1, max_size=3), st.data())
def test_float_weights_of_any_magnitudes_score_as_the_exact_definition_says(kernel, hypotheses, data):
    references = data.draw(st.lists(SEGMENT_TEXT, min_size=2, max_size=4))
    weights = data.draw(st.lists(FLOAT_WEIGHT, min_size=len(references), max_size=len(references)).filter(any))
    expected = naive_aggregate(hypotheses, references, weights)
    assert CHRF().aggregate(hypotheses, references, weights=numpy.array(weights)).tolist() == [
        float(value) for value in expected]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 9), st.lists(st.integers(0, 6), min_size=2, max_size=5), st.data())
def test_repeated_ngrams_whose_weighted_counts_sit_on_or_beside_a_whole_number_are_matched_exactly(
        kernel, repeats, counts, data):
    """The native kernel counts a hypothesis' matches in one pass over its n-grams: the k-th occurrence of g adds
    min(1, S_g - (k - 1)) while positive, a whole 1 apart and the remainder exactly. Texts of one repeated letter
    and weights within a few units in the last place of 1 put S_g on whole numbers and just beside them."""
    hypotheses = ["a" * repeats, "a " * repeats, "ab" * repeats]
    references = ["a" * count if count else "b" for count in counts]
    weights = [1.0 + data.draw(st.integers(-4, 4)) * 2.0**-52 * data.draw(st.sampled_from([0, 1, 2**20]))
               for _ in counts]
    expected = naive_aggregate(hypotheses, references, weights, char_order=3)
    assert CHRF(char_order=3).aggregate(hypotheses, references, weights=weights).tolist() == [
        float(value) for value in expected]


@pytest.mark.parametrize(("weights", "error", "message"), [
    ([1], InvalidInputError, r"weights: must have one weight per reference \(2\), got 1"),
    ([1, -1], InvalidInputError, r"weights\[1\]: must be 0 or more, got -1"),
    ([-10**5000, 1], InvalidInputError, r"weights\[0\]: must be 0 or more, got a number out of range"),
    ({0: 5, 1: 1}, TypeError, r"weights: expected a sequence in order .* got a dict"),
    ([1, math.nan], InvalidInputError, r"weights\[1\]: must be finite, got nan"),
    ([math.inf, 1], InvalidInputError, r"weights\[0\]: must be finite, got inf"),
    ([0, 0.0], InvalidInputError, "weights: must not all be 0"),
    ([1, True], TypeError, r"weights\[1\]: expected a number, got bool"),
    ([1, "2"], TypeError, r"weights\[1\]: expected a number, got str"),
    ("12", TypeError, "weights: expected a sequence of numbers"),
    (3, TypeError, "weights: expected a sequence of numbers"),
    (numpy.float64(3.0), TypeError, "weights: expected a sequence of numbers .* a single number"),
])
def test_mistaken_weights_are_named(weights, error, message):
    with pytest.raises(error, match=message):
        CHRF().aggregate(["a b", "c"], ["a", "b"], weights=weights)


def native_only(monkeypatch):
    """The native kernel chosen, a spy on what it flags, and a trap for any recount in Python."""
    if "native" not in kernel_module.KERNELS:
        pytest.skip("not in this run: the native kernel is not loaded here (its exact recount is what is tested)")
    monkeypatch.setattr(kernel_module, "KERNEL", "native")
    native = kernel_module.KERNELS["native"]
    flagged = []
    batch = native._batch
    monkeypatch.setattr(native, "_batch", lambda *a, **k: flagged.append(found := batch(*a, **k)) or found)

    def recount(*arguments):
        raise AssertionError("a weighted score was recounted in Python")

    monkeypatch.setattr(kernel_module, "weighted_counts", recount)
    return flagged


@pytest.mark.parametrize("tiny", [2**500, 2**1100])  # a share of 2^-500 (a normal double) and 2^-1100 (none)
def test_a_weight_share_far_below_the_others_is_counted_exactly_by_the_kernel_not_in_python(monkeypatch, tiny):
    """Issue 67 item 1: the hypotheses only a tiny share reaches are flagged, and the kernel counts them exactly
    (the weights as multi-word integers); before, each went to an exact recount in Python."""
    flagged = native_only(monkeypatch)
    references = ["the cat sat on the mat", "zq xv jk"]  # the second shares no character with the first
    hypotheses = ["the cat sat", "a mat", "zq xv", "the jk", "q"]  # the third and fifth match only the second
    weights = [tiny, 1]  # the second reference's share: 1 / (tiny + 1)
    expected = naive_aggregate(hypotheses, references, weights, **CHRF(word_order=2).as_dict())
    scores = CHRF(word_order=2).aggregate(hypotheses, references, weights=weights).tolist()
    assert scores == [float(value) for value in expected]
    assert 0 < expected[2] < 1e-100 and 0 < expected[4] < 1e-100  # the tiny share alone makes them positive
    [[(indices, _, _)]] = flagged
    assert sorted(indices) == [2, 4]  # the others scored in double-double


def test_every_hypothesis_flagged_is_counted_exactly_by_the_kernel_over_many_references(monkeypatch):
    """With the tolerance at its loosest every score is flagged: the kernel's exact counts of all of them, a group
    at a time, against the Python definition's."""
    flagged = native_only(monkeypatch)
    monkeypatch.setattr(kernel_module, "WEIGHTED_TOLERANCE_BITS", 1)
    references = candidates(60, 11)
    hypotheses = candidates(25, 12)
    rng = random.Random(5)
    weights = [rng.randrange(1, 2**rng.randrange(1, 1200)) for _ in references]
    chrf = CHRF(word_order=2)
    scores = chrf.aggregate(hypotheses, references, weights=weights).tolist()
    assert scores == [float(value) for value in chrf.aggregate(hypotheses, references, weights=weights, exact=True)]
    [[(indices, _, _)]] = flagged
    assert sorted(indices) == list(range(len(hypotheses)))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(SEGMENT_TEXT, min_size=1, max_size=4), st.lists(SEGMENT_TEXT, min_size=1, max_size=5),
       settings_strategy(), st.data())
def test_the_kernels_exact_counts_equal_the_python_definitions_at_midpoints_and_shares_down_to_2_to_the_1074(
        monkeypatch, hypotheses, references, chosen, data):
    """Issue 67: weights whose shares reach 2^-1074 and below, every score flagged (as one at a rounding midpoint
    is): the native kernel's exact counts round to the Python definition's scores, bit for bit."""
    flagged = native_only(monkeypatch)
    monkeypatch.setattr(kernel_module, "WEIGHTED_TOLERANCE_BITS",
                        data.draw(st.sampled_from([1, 64, kernel_module.WEIGHTED_TOLERANCE_BITS])))
    weights = data.draw(st.lists(st.one_of(st.integers(0, 2**64), st.builds(lambda k: 2**k, st.integers(0, 1100)),
                                           st.floats(min_value=5e-324, max_value=1.0)),
                                 min_size=len(references), max_size=len(references)))
    if not any(weights):
        weights[0] = 1
    chrf = CHRF(**chosen)
    scores = chrf.aggregate(hypotheses, references, weights=weights).tolist()
    assert scores == [float(value) for value in chrf.aggregate(hypotheses, references, weights=weights, exact=True)]
    flagged.clear()


@pytest.mark.parametrize("sd", [2, 10])
def test_softmax_weighted_samples_are_decided_in_double_double_within_the_kernels_error_bound(monkeypatch, sd):
    """Issue 67: the kernel flags a weighted score only within 16 times its counts' error bound of a rounding
    midpoint (aggregate.c: about 2^-80 here, where a fixed 2^-64 flagged 1-3 of 1024 samples a call), so samples of
    one sentence need no exact recount; and every score it decided alone is still the correctly rounded one."""
    flagged = native_only(monkeypatch)
    samples = candidates(300, seed=7)
    lprobs = numpy.random.default_rng(sd).normal(-40, sd, len(samples))
    weights = numpy.exp(lprobs - lprobs.max())
    chrf = CHRF(word_order=2)
    scores = chrf.aggregate(samples, samples, weights=weights).tolist()
    [[(indices, _, _)]] = flagged
    assert indices == []
    assert scores == [float(value) for value in chrf.aggregate(samples, samples, weights=weights, exact=True)]


@pytest.mark.parametrize("weight", [1, 3, 0.25, 1e-130])
def test_equal_weights_give_exactly_the_unweighted_averages(kernel, weight):
    """Equal weights average the references as no weights do (each count is scaled by the same w, and every
    ratio is unchanged), so they take the unweighted path: all weights 1 at 5000 x 5000 cost 3.67 s instead of
    0.35 s on 72c9660 (issue 57 item 8), for the same numbers."""
    from chrf_core import CHRF

    texts = [f"the cat sat on the mat {k % 7} and {k % 5}" for k in range(40)]
    chrf = CHRF(word_order=2)
    assert chrf.aggregate(texts, texts, weights=[weight] * len(texts)).tolist() == \
        chrf.aggregate(texts, texts).tolist()
    assert chrf.aggregate(texts, texts, weights=[weight] * len(texts), exact=True) == \
        chrf.aggregate(texts, texts, exact=True)


@settings(max_examples=150, deadline=None)
@given(st.lists(SEGMENT_TEXT, min_size=1, max_size=3), st.lists(SEGMENT_TEXT, min_size=1, max_size=6),
       settings_strategy(), st.data())
def test_a_few_hypotheses_count_only_their_own_ngrams_in_the_references_and_get_the_same_numbers(
        hypotheses, references, chosen, data):
    """Issue 57 item 8: the native kernel's few undecided hypotheses are recounted in Python; the references are
    searched for their n-grams alone (an n-gram only where its first n - 1 units are one of theirs) instead of
    counted whole. The numbers equal the whole count's (FEW = 0 forces it)."""
    from chrf_core import python_kernel

    weights = data.draw(st.lists(st.integers(0, 10**40), min_size=len(references), max_size=len(references)))
    arguments = (hypotheses, references, chosen["char_order"], chosen["word_order"], chosen["include_whitespace"])
    few, gathered = python_kernel.FEW, python_kernel.GATHERED
    try:
        python_kernel.GATHERED = 2  # counted a few occurrences at a time
        restricted = list(python_kernel.aggregate(*arguments, weights))
        python_kernel.FEW = 0
        assert restricted == list(python_kernel.aggregate(*arguments, weights))
    finally:
        python_kernel.FEW, python_kernel.GATHERED = few, gathered


def test_a_tiny_share_counts_its_undecided_hypotheses_in_the_kernel_and_python_counts_no_ngram(monkeypatch):
    """Issue 57 item 8 sent a tiny share's undecided hypotheses to Python, which counted their n-grams (and, before
    it, every reference's); issue 67 item 1 counts them in the kernel: Python counts no n-gram at all."""
    flagged = native_only(monkeypatch)
    from chrf_core import python_kernel

    references = [*candidates(299, 3), "zq xv jk"]  # the last shares no character with the others
    hypotheses = [*candidates(40, 5), "zq xv", "the jk"]
    weights = [1] * 299 + [1e-130]
    counted = []
    whole = python_kernel.ngrams
    monkeypatch.setattr(python_kernel, "ngrams", lambda units, n: counted.append(units) or whole(units, n))
    scores = CHRF(word_order=2).aggregate(hypotheses, references, weights=weights).tolist()
    [[(undecided, _, _)]] = flagged
    assert 0 < len(undecided) < len(hypotheses) and counted == []
    monkeypatch.setattr(python_kernel, "ngrams", whole)
    exact = CHRF(word_order=2).aggregate(hypotheses, references, weights=weights, exact=True)
    assert scores == [float(value) for value in exact]
