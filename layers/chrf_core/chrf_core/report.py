"""Scores from counts: exact reduced fractions per order, the averages and the score, as the contract's output."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from .statistics import Counts

ZERO = Fraction(0)


def fraction_text(value: Fraction) -> str:
    """A fraction as the contract writes it: reduced ``numerator/denominator``, zero as ``0/1``."""
    return f"{value.numerator}/{value.denominator}"


def score_text(value: Fraction) -> str:
    """A 0..100 score rounded half-to-even to six decimals, computed from the exact fraction."""
    micro = round(value * 1_000_000)  # Fraction.__round__ rounds ties to even, exactly
    return f"{micro // 1_000_000}.{micro % 1_000_000:06d}"


def order_labels(char_order: int, word_order: int) -> list[tuple[str, int]]:
    """The (type, n) of every order, characters first."""
    return [("char", n) for n in range(1, char_order + 1)] + [("word", n) for n in range(1, word_order + 1)]


def build_report(counts: Counts) -> dict[str, Any]:
    """The contract's output object for ``counts``; nothing more, nothing less."""
    settings = counts.settings
    beta_squared = settings.beta * settings.beta
    orders = []
    precisions, recalls, f_scores = [], [], []
    for (kind, n), (hyp, ref, match) in zip(
        order_labels(settings.char_order, settings.word_order), counts.orders, strict=True
    ):
        precision = Fraction(match, hyp) if hyp else None
        recall = Fraction(match, ref) if ref else None
        effective = hyp > 0 and ref > 0
        # (1+b^2)PR / (b^2 P + R) with P = m/h and R = m/r simplifies to (1+b^2) m / (b^2 r + h).
        f_score = Fraction((1 + beta_squared) * match, beta_squared * ref + hyp) if effective else None
        if effective:
            precisions.append(precision)
            recalls.append(recall)
        f_scores.append(f_score or ZERO)
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
    if settings.averaging == "per_order_f":
        score = 100 * sum(f_scores, ZERO) / len(f_scores)
    elif average_precision or average_recall:
        score = (
            100
            * (1 + beta_squared)
            * average_precision
            * average_recall
            / (beta_squared * average_precision + average_recall)
        )
    else:
        score = ZERO
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
