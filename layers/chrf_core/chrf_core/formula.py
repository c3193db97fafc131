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


def sacrebleu_scores(settings: Settings, counts: numpy.ndarray) -> numpy.ndarray:
    """sacreBLEU 2.6's own float segment scores (``CHRF._compute_f_score``) of counts shaped (..., orders, 3): on
    its statistics (no hypothesis n-gram counted in an order the reference lacks) and with its 1e-16 terms, operation
    for operation in its order, so each float is the one sacreBLEU compares. Only for choosing among several
    references as it chooses; never a score this tool reports."""
    import numpy as np

    ref, match = counts[..., 1], counts[..., 2]
    hyp = np.where(ref > 0, counts[..., 0], 0)
    factor = settings.beta**2
    shape = counts.shape[:-2]
    score, total_precision, total_recall = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    effective_orders = np.zeros(shape, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for order in range(counts.shape[-2]):
            n_hyp, n_ref, n_match = hyp[..., order], ref[..., order], match[..., order]
            precision = np.where(n_hyp > 0, n_match / np.where(n_hyp > 0, n_hyp, 1), SACREBLEU_EPS)
            recall = np.where(n_ref > 0, n_match / np.where(n_ref > 0, n_ref, 1), SACREBLEU_EPS)
            denominator = factor * precision + recall
            score = score + np.where(denominator > 0, (1 + factor) * precision * recall / denominator, SACREBLEU_EPS)
            counted = (n_hyp > 0) & (n_ref > 0)
            total_precision = total_precision + np.where(counted, precision, 0.0)
            total_recall = total_recall + np.where(counted, recall, 0.0)
            effective_orders = effective_orders + counted
        if settings.averaging == "per_order_f":
            per_order: numpy.ndarray = 100 * score / counts.shape[-2]
            return per_order
        average_precision = np.where(effective_orders > 0, total_precision / np.maximum(effective_orders, 1), 0.0)
        average_recall = np.where(effective_orders > 0, total_recall / np.maximum(effective_orders, 1), 0.0)
        both = average_precision + average_recall
        f_score = (1 + factor) * average_precision * average_recall / (factor * average_precision + average_recall)
        result: numpy.ndarray = np.where(both != 0, 100 * f_score, 0.0)
    return result


SACREBLEU_EPS = 1e-16  # sacreBLEU's smoothing term for an order without n-grams on a side

