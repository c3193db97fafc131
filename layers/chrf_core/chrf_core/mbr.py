"""Minimum Bayes risk decoding: many candidates scored against many pseudo-references, on every core.

``pairwise`` scores every hypothesis against every reference; ``aggregate`` scores each hypothesis once against the
references' n-gram counts averaged (reference aggregation, Vamvas and Sennrich 2024: cost linear, not quadratic, in
the number of samples), defined exactly: with R references, per order, matches = the sum over n-grams g of
min(R h_g, S_g) where S_g sums g's counts over the references, precision = matches / (R x the hypothesis' n-grams),
recall = matches / (all the references' n-grams), then the contract's averaging. With weights w_j (normalised to sum
to 1; uniform, 1/R, without), the references' average counts are weighted instead: S_g = the sum of w_j times g's
count in reference j, matches = the sum over g of min(h_g, S_g), precision = matches / (the hypothesis' n-grams),
recall = matches / (the sum of w_j times reference j's n-grams) (mbrs' model-based aggregation, with its
``reference_lprobs`` as softmax weights). Weights are taken at their exact value (a float is the rational it
stands for). Every float is correctly rounded from its exact fraction. The batch forms take one candidate set per
source sentence, and the native kernel spreads the sets over its pool of threads (each set's rows too, where there
are more threads than sets) without the GIL.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any

from .contract import TEXT_KEYS, Settings
from .errors import InvalidInputError, describe
from .formula import exact_score
from .kernel import Weights, chosen, weighted_counts
from .preparation import prepared
from .texts import (
    MAX_TEXT_LENGTH,
    check_encodable,
    check_flag,
    check_ordered,
    check_side,
    check_strings,
)

if TYPE_CHECKING:
    import numpy

MAX_THREADS = 256


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def thread_count(threads: Any) -> int:
    """``threads`` checked (an integer from 1 to MAX_THREADS), or every available core when None."""
    if threads is None:
        return min(available_cores(), MAX_THREADS)
    if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
        raise InvalidInputError("threads", f"must be an integer from 1 to {MAX_THREADS} (or None: every core), got "
                                           f"{describe(threads)}")
    return threads


def checked(settings: Settings, hypotheses: Sequence[str], references: Sequence[str],
            keys: tuple[str, str] = TEXT_KEYS) -> tuple[list[str], list[str]]:
    """Both sides as lists of valid texts, prepared as the kernels count them (preparation.prepared: normalized and
    lowercased as the settings say): at least one each, strings, encodable, MAX_TEXT_LENGTH together once
    prepared."""
    normalize = settings.normalize
    sides: list[list[str]] = []
    for key, texts in zip(keys, (hypotheses, references)):
        if sides and texts is hypotheses:  # the samples as their own pseudo-references: checked once, kept one list
            sides.append(sides[0])
            continue
        check_side(key, texts)
        listed = list(texts)
        if not listed:
            raise InvalidInputError(key, "at least 1 segment, got 0")
        check_strings(key, listed)
        check_encodable(key, listed)
        sides.append(prepared(key, listed, settings))
    total = sum(map(len, sides[0])) + sum(map(len, sides[1]))
    if total > MAX_TEXT_LENGTH:
        once = f" once normalized (normalize={normalize})" if normalize else ""
        raise InvalidInputError(None, f"at most {MAX_TEXT_LENGTH} code points in all texts together{once}, got "
                                      f"{total}", subject="texts")
    return sides[0], sides[1]


def pairwise(settings: Settings, hypotheses: list[str], references: list[str], threads: int) -> numpy.ndarray:
    """Every (checked) hypothesis against every reference: float64, shaped (hypotheses, references)."""
    return chosen().pairwise(hypotheses, references, settings, partial(exact_score, settings), threads)


def checked_weights(weights: Any, references: int) -> Weights | None:
    """One weight per reference, checked (numbers from 0, finite, not all 0; a NumPy array or a tensor as its
    values), held exactly (:class:`~chrf_core.kernel.Weights`: a float is the rational it stands for); None for none."""
    if weights is None:
        return None
    check_ordered("weights", weights)
    if isinstance(weights, (str, bytes)) or (not isinstance(weights, Iterable) and not hasattr(weights, "tolist")):
        raise TypeError(f"weights: expected a sequence of numbers (one per reference), got {type(weights).__name__}")
    values = weights.tolist() if hasattr(weights, "tolist") else list(weights)
    if not isinstance(values, list):
        raise TypeError("weights: expected a sequence of numbers (one per reference), got a single number")
    if len(values) != references:
        raise InvalidInputError("weights", f"must have one weight per reference ({references}), got {len(values)}")
    if all(type(value) is float and 0.0 <= value < math.inf for value in values):  # NumPy's and mbrs' weights
        if not any(values):
            raise InvalidInputError("weights", "must not all be 0")
        return Weights(values, True)
    exact = []
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"weights[{index}]: expected a number, got {type(value).__name__}")
        if not isinstance(value, numbers.Rational) and not math.isfinite(value):
            raise InvalidInputError("weights", f"must be finite, got {float(value)}", index=index)
        share = Fraction(value) if isinstance(value, numbers.Rational) else Fraction(float(value))
        if share < 0:
            shown = value if abs(share) < 10**15 else "a number out of range"  # str() of a huge int may fail
            raise InvalidInputError("weights", f"must be 0 or more, got {shown}", index=index)
        exact.append(share)
    if not any(exact):
        raise InvalidInputError("weights", "must not all be 0")
    scale = math.lcm(*(share.denominator for share in exact))
    return Weights([int(share * scale) for share in exact], False)


def weight_shares(weights: Any, references: int) -> list[float]:
    """One weight per reference, checked as :func:`checked_weights` checks them, as its share of their total (each
    correctly rounded from the exact share, so at most 1 whatever the weights' scale): for averaging floats, as a
    weighted mean of pairwise scores does."""
    checked = checked_weights(weights, references)
    assert checked is not None, "weights: None has no shares"
    exact = checked.integers()
    total = sum(exact)
    return [float(Fraction(weight, total)) for weight in exact]


def aggregate(settings: Settings, hypotheses: list[str], references: list[str], threads: int,
              exact: bool, weights: Any = None) -> numpy.ndarray | list[Fraction]:
    """Each (checked) hypothesis against the references' averaged (or weighted) n-gram counts: float64 scores, or
    exact Fractions."""
    check_flag("exact", exact)
    checked = checked_weights(weights, len(references))
    score = partial(exact_score, settings)
    if checked is not None and checked.equal:  # equal weights: the same averages as none, exactly
        checked = None
    if checked is not None:
        if exact:
            return [score(counts) for counts in weighted_counts(hypotheses, references, settings, checked.integers())]
        return chosen().weighted_aggregate(hypotheses, references, settings, score, threads, checked)
    scores, counts = chosen().aggregate(hypotheses, references, settings, score, threads)
    if exact:
        return [score(orders) for orders in counts.tolist()]
    return scores


def batch(settings: Settings, pairwise_sets: bool, hypothesis_sets: Iterable[Sequence[str]],
          reference_sets: Iterable[Sequence[str]], threads: int) -> list[numpy.ndarray]:
    """pairwise (or, not ``pairwise_sets``, aggregate's scores) of every (checked) candidate set and its references,
    in order, in one call to the kernel, which spreads the sets over its pool of ``threads`` threads (the threads
    beyond one per set spread each set's rows). The results' total is allocated once before any counting, so a batch
    too large for memory is a MemoryError at once."""
    given_sets = []
    for key, given in (("hypothesis_sets", hypothesis_sets), ("reference_sets", reference_sets)):
        check_side(key, given)
        listed = list(given)  # any iterable of sets, a generator included
        if listed and isinstance(listed[0], str):
            raise TypeError(f"{key}: expected a sequence of sets of texts (one set per source sentence), got a "
                            "sequence of str")
        given_sets.append(listed)
    if len(given_sets[0]) != len(given_sets[1]):
        raise InvalidInputError("reference_sets", f"must have as many sets as hypothesis_sets "
                                                  f"({len(given_sets[0])}), got {len(given_sets[1])}")
    sets = [checked(settings, hypotheses, references, (f"hypothesis_sets[{k}]", f"reference_sets[{k}]"))
            for k, (hypotheses, references) in enumerate(zip(*given_sets))]
    room_for_results(sum(len(hypotheses) * (len(references) if pairwise_sets else 1)
                         for hypotheses, references in sets), len(sets))
    score = partial(exact_score, settings)
    if pairwise_sets:
        return chosen().pairwise_batch(sets, settings, score, threads)
    return chosen().aggregate_batch(sets, settings, score, threads)


def release_buffers() -> None:
    """Give back now the MBR buffers the native kernel keeps for the calling thread between calls (else given back
    when the thread ends, or after a call that needs much less)."""
    from .kernel import KERNELS, NativeKernel

    native = KERNELS.get("native")
    if isinstance(native, NativeKernel):
        native.release_buffers()


def room_for_results(floats: int, sets: int) -> None:
    """A MemoryError at once, naming the size, when the results of a batch cannot all be held (they are, until the
    call returns): the whole is allocated once, before any counting, then given back."""
    import numpy

    try:
        numpy.empty(floats)
    except MemoryError:
        raise MemoryError(f"the results of {sets} sets need {floats * 8:,} bytes, more than this process can "
                          f"allocate") from None
