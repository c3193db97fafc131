"""Scores from counts: exact reduced fractions per order, the averages and the score, as the contract's output."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

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


def exact_score(settings: Settings, orders: Sequence[Triple]) -> Fraction:
    """The score of these counts as one exact fraction, with one reduction at the end (fast enough to score
    every segment of a large corpus)."""
    beta_squared = settings.beta * settings.beta
    if settings.averaging == "per_order_f":
        # mean over all orders of f = (1 + b^2) m / (b^2 r + h), an order without n-grams counting as 0
        numerator, denominator = 0, 1
        for hyp, ref, match in orders:
            if hyp and ref and match:
                order_denominator = beta_squared * ref + hyp
                numerator = numerator * order_denominator + (1 + beta_squared) * match * denominator
                denominator *= order_denominator
        return Fraction(100 * numerator, denominator * len(orders))
    # F_beta of the averages over effective orders: P = Pn / (k Pd), R = Rn / (k Rd)
    effective = 0
    precision_numerator, precision_denominator, recall_numerator, recall_denominator = 0, 1, 0, 1
    for hyp, ref, match in orders:
        if hyp and ref:
            effective += 1
            precision_numerator = precision_numerator * hyp + match * precision_denominator
            precision_denominator *= hyp
            recall_numerator = recall_numerator * ref + match * recall_denominator
            recall_denominator *= ref
    if not precision_numerator and not recall_numerator:
        return ZERO
    return Fraction(
        100 * (1 + beta_squared) * precision_numerator * recall_numerator,
        effective
        * (beta_squared * precision_numerator * recall_denominator + recall_numerator * precision_denominator),
    )


def build_report(counts: Counts) -> dict[str, Any]:
    """The contract's output object for ``counts``; nothing more, nothing less."""
    settings = counts.settings
    beta_squared = settings.beta * settings.beta
    orders = []
    precisions, recalls = [], []
    for (kind, n), (hyp, ref, match) in zip(
        order_labels(settings.char_order, settings.word_order), counts.orders, strict=True
    ):
        precision = Fraction(match, hyp) if hyp else None
        recall = Fraction(match, ref) if ref else None
        effective = hyp > 0 and ref > 0
        # (1+b^2)PR / (b^2 P + R) with P = m/h and R = m/r simplifies to (1+b^2) m / (b^2 r + h).
        f_score = Fraction((1 + beta_squared) * match, beta_squared * ref + hyp) if effective else None
        if precision is not None and recall is not None:
            precisions.append(precision)
            recalls.append(recall)
        orders.append(
            {
                "type": kind,
                "n": n,
                "hypothesis_ngrams": hyp,
                "reference_ngrams": ref,
                "matching_ngrams": match,
                "effective": effective,
                "precision": None if precision is None else fraction_text(precision),
                "recall": None if recall is None else fraction_text(recall),
                "f_score": None if f_score is None else fraction_text(f_score),
            }
        )
    effective_count = len(precisions)
    average_precision = sum(precisions, ZERO) / effective_count if effective_count else ZERO
    average_recall = sum(recalls, ZERO) / effective_count if effective_count else ZERO
    score = exact_score(settings, counts.orders)
    return {
        **settings.as_dict(),
        "segment_count": counts.segment_count,
        "orders": orders,
        "effective_order_count": effective_count,
        "average_precision": fraction_text(average_precision),
        "average_recall": fraction_text(average_recall),
        "score": score_text(score),
        "score_fraction": fraction_text(score),
    }
