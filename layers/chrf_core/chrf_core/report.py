"""Scores from counts: a typed report of exact fractions per order, the averages and the score; the contract's
JSON output is written from it at the edge (:meth:`Report.to_dict`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from math import gcd
from typing import Any, NamedTuple

from .contract import Settings
from .counting import Counts, Triple, order_labels

ZERO = Fraction(0)


def fraction_text(value: Fraction) -> str:
    """A fraction as the contract writes it: reduced ``numerator/denominator``, zero as ``0/1``."""
    return f"{value.numerator}/{value.denominator}"


def score_text(value: Fraction) -> str:
    """A 0..100 score rounded half-to-even to six decimals, computed from the exact fraction."""
    micro = round(value * 1_000_000)  # Fraction.__round__ rounds ties to even, exactly
    return f"{micro // 1_000_000}.{micro % 1_000_000:06d}"


class OrderScore(NamedTuple):
    """One order's counts and, from them, its exact scores (None where a side has no n-grams, as the contract
    says): (1+b²)PR / (b²P + R) with P = m/h and R = m/r is (1+b²) m / (b² r + h)."""

    type: str
    n: int
    hypothesis_ngrams: int
    reference_ngrams: int
    matching_ngrams: int
    beta: int

    @property
    def effective(self) -> bool:
        return self.hypothesis_ngrams > 0 and self.reference_ngrams > 0

    def ratios(self) -> tuple[tuple[int, int] | None, tuple[int, int] | None, tuple[int, int] | None]:
        """Precision, recall and F as unreduced (numerator, denominator)."""
        hyp, ref, match, beta_squared = (self.hypothesis_ngrams, self.reference_ngrams, self.matching_ngrams,
                                         self.beta * self.beta)
        return ((match, hyp) if hyp else None, (match, ref) if ref else None,
                ((1 + beta_squared) * match, beta_squared * ref + hyp) if hyp and ref else None)

    def fractions(self) -> tuple[Fraction | None, Fraction | None, Fraction | None]:
        """Precision, recall and F as exact fractions."""
        precision, recall, f_score = (None if ratio is None else Fraction(*ratio) for ratio in self.ratios())
        return precision, recall, f_score


def _text(ratio: tuple[int, int] | None) -> str | None:
    """A ratio as the contract writes it, reduced (as fraction_text writes a Fraction, without building one)."""
    if ratio is None:
        return None
    divisor = gcd(*ratio)
    return f"{ratio[0] // divisor}/{ratio[1] // divisor}"


class Report(NamedTuple):
    """A scored set of segments: every number of the contract's output, as numbers."""

    settings: Settings
    segment_count: int
    orders: tuple[OrderScore, ...]
    average_precision: Fraction
    average_recall: Fraction
    score: Fraction

    @property
    def effective_order_count(self) -> int:
        return sum(order.effective for order in self.orders)

    def to_dict(self) -> dict[str, Any]:
        """The contract's output object; nothing more, nothing less."""

        orders = []
        for o in self.orders:
            precision, recall, f_score = o.ratios()
            orders.append({"type": o.type, "n": o.n, "hypothesis_ngrams": o.hypothesis_ngrams,
                           "reference_ngrams": o.reference_ngrams, "matching_ngrams": o.matching_ngrams,
                           "effective": o.effective, "precision": _text(precision), "recall": _text(recall),
                           "f_score": _text(f_score)})
        return {
            **self.settings.as_dict(),
            "segment_count": self.segment_count,
            "orders": orders,
            "effective_order_count": self.effective_order_count,
            "average_precision": fraction_text(self.average_precision),
            "average_recall": fraction_text(self.average_recall),
            "score": score_text(self.score),
            "score_fraction": fraction_text(self.score),
        }


def averages_and_score(settings: Settings, orders: Iterable[Triple]) -> tuple[tuple[int, int], tuple[int, int],
                                                                                 Fraction]:
    """Average precision and recall over effective orders as unreduced (numerator, denominator), and the score:
    sums of fractions kept as one numerator over one denominator, reduced once at the end (fast enough to score
    every segment of a large corpus)."""
    beta_squared = settings.beta * settings.beta
    precision_sum, precision_denominator, recall_sum, recall_denominator, effective = 0, 1, 0, 1, 0
    f_sum, f_denominator, order_count = 0, 1, 0
    for hyp, ref, match in orders:
        order_count += 1
        if not (hyp and ref):
            continue
        effective += 1
        if match:  # s/d + m/h = (s h + m d) / (d h); an order without matches adds nothing
            precision_sum = precision_sum * hyp + match * precision_denominator
            precision_denominator *= hyp
            recall_sum = recall_sum * ref + match * recall_denominator
            recall_denominator *= ref
            # f = (1 + b^2) m / (b^2 r + h); an order without n-grams or matches counts as 0 in the mean
            f_part = beta_squared * ref + hyp
            f_sum = f_sum * f_part + (1 + beta_squared) * match * f_denominator
            f_denominator *= f_part
    precision = precision_sum, precision_denominator * max(effective, 1)
    recall = recall_sum, recall_denominator * max(effective, 1)
    if settings.averaging == "per_order_f":
        return precision, recall, Fraction(100 * f_sum, f_denominator * order_count)
    if not precision_sum:  # no matches: P = R = 0
        return precision, recall, ZERO
    # F_beta of the averages P = Pn / Pd and R = Rn / Rd
    return precision, recall, Fraction(100 * (1 + beta_squared) * precision[0] * recall[0],
                                       beta_squared * precision[0] * recall[1] + recall[0] * precision[1])


def exact_score(settings: Settings, orders: Sequence[Triple]) -> Fraction:
    """The score of these counts as one exact fraction."""
    return averages_and_score(settings, orders)[2]


def report_of(counts: Counts) -> Report:
    """The typed report of ``counts``."""
    settings = counts.settings
    orders = tuple(OrderScore(kind, n, hyp, ref, match, settings.beta)
                   for (kind, n), (hyp, ref, match) in zip(order_labels(settings.char_order, settings.word_order),
                                                           counts.orders, strict=True))
    precision, recall, score = averages_and_score(settings, counts.orders)
    return Report(settings, counts.segment_count, orders, Fraction(*precision), Fraction(*recall), score)


def build_report(counts: Counts) -> dict[str, Any]:
    """The contract's output object for ``counts``."""
    return report_of(counts).to_dict()
