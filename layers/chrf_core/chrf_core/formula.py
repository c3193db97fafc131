"""The formula: the score of per-order counts, exact (fractions) and vectorised (NumPy floats, many count arrays at
once), with each of its two rules written once for both: an order is effective when both sides have n-grams of it
(:func:`effective`), and F-beta of a precision and a recall (:func:`f_ratio`), used per order and for the averages.

Per order P = m/h, R = m/r, F = (1+b²)m / (b²r + h); the averages over effective orders; the score as the contract
defines it (``precision_recall``: F-beta of the average P and R; ``per_order_f``: the mean of the orders' F, an order
without n-grams or matches counting 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .contract import Settings
from .kernel import Triple

if TYPE_CHECKING:
    import numpy

ZERO = Fraction(0)


def effective(hyp: Any, ref: Any) -> Any:
    """Whether an order counts in the averages: both sides have n-grams of it. For integers, or for NumPy arrays of
    them (a boolean array)."""
    return (hyp > 0) & (ref > 0)


def f_ratio(beta_squared: int, hyp: Any, ref: Any, match: Any) -> tuple[Any, Any]:
    """F-beta of precision P = match/hyp and recall R = match/ref, as (numerator, denominator): (1+b²)PR / (b²P + R)
    is (1+b²) match / (b² ref + hyp). For integers, floats, or NumPy arrays of them. Any P = a/c and R = b/d take
    this form over the common numerator ab: match = ab, hyp = cb, ref = da (how the averages use it)."""
    return (1 + beta_squared) * match, beta_squared * ref + hyp


def averages_and_score(settings: Settings, orders: Iterable[Triple] | Iterable[list[int]]) -> tuple[
        tuple[int, int], tuple[int, int], Fraction]:
    """Average precision and recall over effective orders as unreduced (numerator, denominator), and the score:
    sums of fractions kept as one numerator over one denominator, reduced once at the end (fast enough to score
    every segment of a large corpus)."""
    beta_squared = settings.beta * settings.beta
    precision_sum, precision_denominator, recall_sum, recall_denominator, effective_count = 0, 1, 0, 1, 0
    f_sum, f_denominator, order_count = 0, 1, 0
    for hyp, ref, match in orders:
        order_count += 1
        if not effective(hyp, ref):
            continue
        effective_count += 1
        if match:  # s/d + m/h = (s h + m d) / (d h); an order without matches adds nothing
            precision_sum = precision_sum * hyp + match * precision_denominator
            precision_denominator *= hyp
            recall_sum = recall_sum * ref + match * recall_denominator
            recall_denominator *= ref
            # an order without n-grams or matches counts as 0 in the mean of F
            f_numerator, f_part = f_ratio(beta_squared, hyp, ref, match)
            f_sum = f_sum * f_part + f_numerator * f_denominator
            f_denominator *= f_part
    precision = precision_sum, precision_denominator * max(effective_count, 1)
    recall = recall_sum, recall_denominator * max(effective_count, 1)
    if settings.averaging == "per_order_f":
        return precision, recall, Fraction(100 * f_sum, f_denominator * order_count)
    if not precision_sum:  # no matches: P = R = 0
        return precision, recall, ZERO
    # F-beta of the averages P = Pn / Pd and R = Rn / Rd, over their common numerator Pn Rn
    f_numerator, f_denominator = f_ratio(beta_squared, precision[1] * recall[0], recall[1] * precision[0],
                                         precision[0] * recall[0])
    return precision, recall, Fraction(100 * f_numerator, f_denominator)


def exact_score(settings: Settings, orders: Sequence[Triple] | Sequence[list[int]]) -> Fraction:
    """The score of these counts as one exact fraction."""
    return averages_and_score(settings, orders)[2]


def float_scores(settings: Settings, counts: numpy.ndarray) -> numpy.ndarray:
    """Scores (0..100) of many count arrays at once, in floating point: ``counts`` has shape (..., orders, 3)."""
    import numpy as np

    hyp, ref, match = counts[..., 0], counts[..., 1], counts[..., 2]
    beta_squared = settings.beta**2
    with np.errstate(divide="ignore", invalid="ignore"):
        counted = effective(hyp, ref)
        if settings.averaging == "per_order_f":
            f_numerator, f_denominator = f_ratio(beta_squared, hyp, ref, match)
            f_scores = np.where(counted, f_numerator / f_denominator, 0.0)
            mean: np.ndarray = 100 * f_scores.mean(axis=-1)
            return mean
        count = counted.sum(axis=-1)
        precision = np.where(counted, match / np.where(hyp > 0, hyp, 1), 0.0).sum(axis=-1) / np.maximum(count, 1)
        recall = np.where(counted, match / np.where(ref > 0, ref, 1), 0.0).sum(axis=-1) / np.maximum(count, 1)
        f_numerator, f_denominator = f_ratio(beta_squared, recall, precision, precision * recall)
        score = np.where(f_denominator > 0, 100 * f_numerator / np.where(f_denominator > 0, f_denominator, 1), 0.0)
    result: np.ndarray = np.asarray(score)
    return result
