"""Scores from counts: exact reduced fractions per order, the averages and the score, as the contract's output."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from math import gcd
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


def _reduced(numerator: int, denominator: int) -> str:
    """``numerator/denominator`` reduced, as :func:`fraction_text` writes it (without building a Fraction)."""
    divisor = gcd(numerator, denominator)
    return f"{numerator // divisor}/{denominator // divisor}"


def _average(parts: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The mean of fractions given as (numerator, denominator), unreduced: (sum numerator, count * denominator)."""
    numerator, denominator = 0, 1
    for part_numerator, part_denominator in parts:
        numerator = numerator * part_denominator + part_numerator * denominator
        denominator *= part_denominator
    return numerator, denominator * len(parts)


def exact_score(settings: Settings, orders: Sequence[Triple]) -> Fraction:
    """The score of these counts as one exact fraction, with one reduction at the end (fast enough to score
    every segment of a large corpus)."""
    beta_squared = settings.beta * settings.beta
    if settings.averaging == "per_order_f":
        # mean over all orders of f = (1 + b^2) m / (b^2 r + h), an order without n-grams or matches counting as 0
        numerator, denominator = _average(
            [((1 + beta_squared) * match, beta_squared * ref + hyp) if hyp and ref and match else (0, 1)
             for hyp, ref, match in orders])
        return Fraction(100 * numerator, denominator)
    # F_beta of the averages over effective orders: P = Pn / (k Pd), R = Rn / (k Rd)
    effective = [(hyp, ref, match) for hyp, ref, match in orders if hyp and ref]
    precision_numerator, precision_denominator = _average([(match, hyp) for hyp, _, match in effective] or [(0, 1)])
    recall_numerator, recall_denominator = _average([(match, ref) for _, ref, match in effective] or [(0, 1)])
    if not precision_numerator and not recall_numerator:
        return ZERO
    return Fraction(
        100 * (1 + beta_squared) * precision_numerator * recall_numerator,
        beta_squared * precision_numerator * recall_denominator + recall_numerator * precision_denominator,
    )


def build_report(counts: Counts) -> dict[str, Any]:
    """The contract's output object for ``counts``; nothing more, nothing less."""
    settings = counts.settings
    beta_squared = settings.beta * settings.beta
    orders = []
    effective: list[Triple] = []
    for (kind, n), (hyp, ref, match) in zip(
        order_labels(settings.char_order, settings.word_order), counts.orders, strict=True
    ):
        is_effective = hyp > 0 and ref > 0
        if is_effective:
            effective.append((hyp, ref, match))
        orders.append(
            {
                "type": kind,
                "n": n,
                "hypothesis_ngrams": hyp,
                "reference_ngrams": ref,
                "matching_ngrams": match,
                "effective": is_effective,
                "precision": _reduced(match, hyp) if hyp else None,
                "recall": _reduced(match, ref) if ref else None,
                # (1+b^2)PR / (b^2 P + R) with P = m/h and R = m/r simplifies to (1+b^2) m / (b^2 r + h).
                "f_score": _reduced((1 + beta_squared) * match, beta_squared * ref + hyp) if is_effective else None,
            }
        )
    average_precision = _average([(match, hyp) for hyp, _, match in effective] or [(0, 1)])
    average_recall = _average([(match, ref) for _, ref, match in effective] or [(0, 1)])
    score = exact_score(settings, counts.orders)
    return {
        **settings.as_dict(),
        "segment_count": counts.segment_count,
        "orders": orders,
        "effective_order_count": len(effective),
        "average_precision": _reduced(*average_precision),
        "average_recall": _reduced(*average_recall),
        "score": score_text(score),
        "score_fraction": fraction_text(score),
    }
