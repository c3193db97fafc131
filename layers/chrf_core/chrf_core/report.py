"""Scores from counts, and the contract's JSON: the one home of both formulas and of the output's shape.

* The exact formula (:func:`averages_and_score`): per order P = m/h, R = m/r, F = (1+b²)m / (b²r + h); the
  averages over effective orders; the score, all as exact fractions. A :class:`Report` holds them typed.
* The vectorised formula (:func:`float_scores`): the same score in floating point for many count arrays at once
  (segment scores, significance tests); :func:`score_texts` writes six decimals from it wherever that cannot round
  differently from the exact fraction.
* The contract's JSON output: :meth:`Report.to_dict` for one report, :func:`json_lines` for many segments at once
  (``segments --json``), the same bytes as ``json.dumps(report.to_dict())``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import cache
from math import gcd
from typing import TYPE_CHECKING, Any, NamedTuple

from .contract import SETTING_KEYS
from .counting import Counts, Triple, order_labels

if TYPE_CHECKING:
    import numpy

    from .metric import CHRF

ZERO = Fraction(0)


def fraction_text(value: Fraction) -> str:
    """A fraction as the contract writes it: reduced ``numerator/denominator``, zero as ``0/1``."""
    return f"{value.numerator}/{value.denominator}"


def score_text(value: Fraction) -> str:
    """A 0..100 score rounded half-to-even to six decimals, computed from the exact fraction."""
    micro = round(value * 1_000_000)  # Fraction.__round__ rounds ties to even, exactly
    return f"{micro // 1_000_000}.{micro % 1_000_000:06d}"


def f_ratio(beta_squared: int, hyp: Any, ref: Any, match: Any) -> tuple[Any, Any]:
    """One order's F as (numerator, denominator): (1+b²)PR / (b²P + R) with P = m/h and R = m/r is
    (1+b²) m / (b² r + h). For integers, or for NumPy arrays of them (many segments at once)."""
    return (1 + beta_squared) * match, beta_squared * ref + hyp


class OrderScore(NamedTuple):
    """One order's counts and, from them, its exact scores (None where a side has no n-grams, as the contract
    says)."""

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
        hyp, ref, match = self.hypothesis_ngrams, self.reference_ngrams, self.matching_ngrams
        return ((match, hyp) if hyp else None, (match, ref) if ref else None,
                f_ratio(self.beta * self.beta, hyp, ref, match) if hyp and ref else None)

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
    """A scored set of segments: every number of the contract's output, as numbers. ``score`` is the float (0..100)
    that sacreBLEU's results carry, ``exact`` the exact fraction it is rounded from."""

    settings: CHRF
    segment_count: int
    orders: tuple[OrderScore, ...]
    average_precision: Fraction
    average_recall: Fraction
    exact: Fraction

    @property
    def score(self) -> float:
        return float(self.exact)

    @property
    def effective_order_count(self) -> int:
        return sum(order.effective for order in self.orders)

    def format(self, width: int = 2) -> str:
        """As sacreBLEU writes a score: ``chrF2++ = 54.95``."""
        return f"{self.settings.name} = {self.score:.{width}f}"

    def __str__(self) -> str:
        return self.format()

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
            "score": score_text(self.exact),
            "score_fraction": fraction_text(self.exact),
        }

    @classmethod
    def from_dict(cls, output: dict[str, Any]) -> Report:
        """The report behind a contract output (read back from storage): its counts, scored again."""
        from .metric import CHRF

        settings = CHRF.of({key: output[key] for key in SETTING_KEYS})
        orders = tuple((o["hypothesis_ngrams"], o["reference_ngrams"], o["matching_ngrams"]) for o in output["orders"])
        return report_of(Counts(settings, output["segment_count"], orders))


def averages_and_score(settings: CHRF, orders: Iterable[Triple] | Iterable[list[int]]) -> tuple[
        tuple[int, int], tuple[int, int], Fraction]:
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
            # an order without n-grams or matches counts as 0 in the mean of F
            f_numerator, f_part = f_ratio(beta_squared, hyp, ref, match)
            f_sum = f_sum * f_part + f_numerator * f_denominator
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


def exact_score(settings: CHRF, orders: Sequence[Triple] | Sequence[list[int]]) -> Fraction:
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


# ---- many count arrays at once ---------------------------------------------------------------------------------


def float_scores(settings: CHRF, counts: numpy.ndarray) -> numpy.ndarray:
    """Scores (0..100) of many count arrays at once, in floating point: ``counts`` has shape (..., orders, 3)."""
    import numpy as np

    hyp, ref, match = counts[..., 0], counts[..., 1], counts[..., 2]
    beta_squared = settings.beta**2
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = (hyp > 0) & (ref > 0)
        if settings.averaging == "per_order_f":
            f_scores = np.where(effective, (1 + beta_squared) * match / (beta_squared * ref + hyp), 0.0)
            mean: np.ndarray = 100 * f_scores.mean(axis=-1)
            return mean
        count = effective.sum(axis=-1)
        precision = np.where(effective, match / np.where(hyp > 0, hyp, 1), 0.0).sum(axis=-1) / np.maximum(count, 1)
        recall = np.where(effective, match / np.where(ref > 0, ref, 1), 0.0).sum(axis=-1) / np.maximum(count, 1)
        denominator = beta_squared * precision + recall
        score = np.where(denominator > 0, 100 * (1 + beta_squared) * precision * recall / np.where(
            denominator > 0, denominator, 1), 0.0)
    result: np.ndarray = np.asarray(score)
    return result


def score_texts(settings: CHRF, counts: numpy.ndarray) -> list[str]:
    """Each count array's score as the contract writes it (six decimals, ties to even, from the exact fraction),
    for many at once: ``counts`` shaped (segments, orders, 3). Computed in floating point, whose error is far below
    a millionth of a point, and written from it wherever that cannot round differently from the exact fraction; a
    score within 1e-4 of a millionth's tie is scored exactly instead."""
    import numpy as np

    values = float_scores(settings, counts.astype(np.float64))
    scaled = values * 1_000_000
    texts = [f"{value:.6f}" for value in values.tolist()]
    for index in np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < 1e-4).tolist():
        texts[index] = score_text(exact_score(settings, counts[index].tolist()))
    return texts


def _reduced(numerator: numpy.ndarray, denominator: numpy.ndarray) -> tuple[numpy.ndarray, numpy.ndarray]:
    import numpy as np

    divisor = np.gcd(numerator, denominator)
    divisor[divisor == 0] = 1
    return numerator // divisor, denominator // divisor


@cache
def _template(settings: CHRF, sides: int) -> str:
    """The JSON line of one segment whose orders have n-grams on these sides (bit 2k: order k's hypothesis, bit
    2k + 1: its reference): each value a ``%`` field, ``%.0s`` where the contract writes null, so that every line
    takes the same arguments. Its keys and their order are to_dict()'s (the suite compares the two)."""
    head = json.dumps({"line": 0, **settings.as_dict()})[:-1].replace('"line": 0', '"line": %d')
    orders = []
    for k, (kind, n) in enumerate(order_labels(settings.char_order, settings.word_order)):
        hypothesis, reference = bool(sides >> 2 * k & 1), bool(sides >> 2 * k + 1 & 1)
        precision = '"%d/%d"' if hypothesis else "null%.0s%.0s"
        recall = '"%d/%d"' if reference else "null%.0s%.0s"
        f_score = '"%d/%d"' if hypothesis and reference else "null%.0s%.0s"
        orders.append(f'{{"type": "{kind}", "n": {n}, "hypothesis_ngrams": %d, "reference_ngrams": %d, '
                      f'"matching_ngrams": %d, "effective": {json.dumps(hypothesis and reference)}, '
                      f'"precision": {precision}, "recall": {recall}, "f_score": {f_score}}}')
    return (f'{head}, "segment_count": 1, "orders": [{", ".join(orders)}], "effective_order_count": %d, '
            '"average_precision": "%d/%d", "average_recall": "%d/%d", "score": "%s", "score_fraction": "%d/%d"}\n')


def json_lines(settings: CHRF, counts: numpy.ndarray, first_line: int) -> str:
    """Each segment's report as one JSON line, ``{"line": N, ...}`` then exactly to_dict()'s keys and values, for
    segments whose counts are ``counts`` (shaped (segments, orders, 3)), numbered from ``first_line``. A chunk's
    lines are written at once: the per-order fractions are reduced with NumPy, and each line is one ``%``-format of
    a template chosen by which orders have n-grams on each side; the averages and the score stay exact."""
    import numpy as np

    hyp, ref, match = counts[..., 0], counts[..., 1], counts[..., 2]
    f_numerator, f_denominator = f_ratio(settings.beta**2, hyp, ref, match)
    fractions = (_reduced(match, hyp), _reduced(match, ref), _reduced(f_numerator, f_denominator))
    values = np.stack([hyp, ref, match, *(part for fraction in fractions for part in fraction)], axis=2).reshape(
        len(counts), -1).tolist()
    weights = 1 << np.arange(0, 2 * hyp.shape[1], 2, dtype=np.int64)
    sides = ((hyp > 0) @ weights + (ref > 0) @ (2 * weights)).tolist()
    effective = ((hyp > 0) & (ref > 0)).sum(axis=1).tolist()
    scores = score_texts(settings, counts)
    templates = {code: _template(settings, code) for code in set(sides)}
    out = []
    for index, orders in enumerate(counts.tolist()):
        precision, recall, exact = averages_and_score(settings, orders)
        precision_divisor, recall_divisor = gcd(*precision), gcd(*recall)
        out.append(templates[sides[index]] % (
            first_line + index, *values[index], effective[index], precision[0] // precision_divisor,
            precision[1] // precision_divisor, recall[0] // recall_divisor, recall[1] // recall_divisor,
            scores[index], exact.numerator, exact.denominator))
    return "".join(out)
