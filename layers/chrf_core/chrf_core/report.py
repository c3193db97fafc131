"""The contract's output: a :class:`Report` of counts (every order's exact precision, recall and F, the averages and
the score, from :mod:`chrf_core.formula`) and the JSON it writes, :meth:`Report.to_dict` for one report and
:func:`json_lines` for many segments at once (``segments --json``), the same bytes as ``json.dumps(report.to_dict())``;
:func:`score_texts` writes many segments' six-decimal scores from the vectorised formula wherever that cannot round
differently from the exact fraction.
"""

from __future__ import annotations

import json
from fractions import Fraction
from functools import cache
from math import gcd
from typing import TYPE_CHECKING, Any, NamedTuple

from .contract import SETTING_KEYS, Settings
from .counts import Counts, order_labels
from .formula import averages_and_score, effective, exact_score, f_ratio, float_scores
from .stored import read_back

if TYPE_CHECKING:
    import numpy


def fraction_text(value: Fraction) -> str:
    """A fraction as the contract writes it: reduced ``numerator/denominator``, zero as ``0/1``."""
    return f"{value.numerator}/{value.denominator}"


def score_text(value: Fraction, decimals: int = 6) -> str:
    """A 0..100 score rounded half-to-even to ``decimals`` decimals (the contract's six by default), computed from
    the exact fraction."""
    scale = 10**decimals
    scaled = round(value * scale)  # Fraction.__round__ rounds ties to even, exactly
    return f"{scaled // scale}.{scaled % scale:0{decimals}d}" if decimals else str(scaled)


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
        counted: bool = effective(self.hypothesis_ngrams, self.reference_ngrams)
        return counted

    def ratios(self) -> tuple[tuple[int, int] | None, tuple[int, int] | None, tuple[int, int] | None]:
        """Precision, recall and F as unreduced (numerator, denominator)."""
        hyp, ref, match = self.hypothesis_ngrams, self.reference_ngrams, self.matching_ngrams
        return ((match, hyp) if hyp else None, (match, ref) if ref else None,
                f_ratio(self.beta * self.beta, hyp, ref, match) if effective(hyp, ref) else None)

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

    settings: Settings
    segment_count: int
    orders: tuple[OrderScore, ...]
    average_precision: Fraction
    average_recall: Fraction
    exact: Fraction
    nrefs: int | str | None = None  # references per segment, as sacreBLEU's signature counts them; None: not known

    def __eq__(self, other: object) -> bool:
        """Equal when every number is: ``nrefs`` says how the references came, not what they counted (a report of
        merged counts equals the corpus report)."""
        if isinstance(other, Report):
            return self[:-1] == other[:-1]
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[:-1])

    @classmethod
    def from_dict(cls, output: dict[str, Any]) -> Report:
        """The report behind a contract output read back (from storage, the service): its counts, scored again."""
        settings = read_back(**{key: output[key] for key in SETTING_KEYS})
        orders = tuple((o["hypothesis_ngrams"], o["reference_ngrams"], o["matching_ngrams"]) for o in output["orders"])
        return report_of(Counts(settings, output["segment_count"], orders))

    @property
    def score(self) -> float:
        return float(self.exact)

    @property
    def effective_order_count(self) -> int:
        return sum(order.effective for order in self.orders)

    @property
    def name(self) -> str:
        """The metric's name, as sacreBLEU's ``CHRFScore.name`` (``chrF2++``)."""
        return self.settings.name

    @property
    def char_order(self) -> int:
        return self.settings.char_order

    @property
    def word_order(self) -> int:
        return self.settings.word_order

    @property
    def beta(self) -> int:
        return self.settings.beta

    def format(self, width: int = 2, score_only: bool = False, signature: str = "", is_json: bool = False) -> str:
        """As sacreBLEU's ``Score.format`` writes a score: ``chrF2++ = 54.95``, ``chrF2++|SIGNATURE = 54.95`` with a
        signature, the number alone with ``score_only``, or a JSON object (name, score, signature and the
        signature's ``key:value`` parts) with ``is_json``."""
        number = f"{self.score:.{width}f}"
        if is_json:
            fields: dict[str, Any] = {"name": self.name, "score": float(number), "signature": str(signature)}
            for part in str(signature).split("|"):
                key, colon, value = part.partition(":")
                if colon:
                    fields[key] = value
            return json.dumps(fields, indent=1, ensure_ascii=False)
        if score_only:
            return number
        return f"{self.name}|{signature} = {number}" if signature else f"{self.name} = {number}"

    def __str__(self) -> str:
        return self.format()

    @staticmethod
    def signed(contract_object: dict[str, Any], settings: Settings, nrefs: int | str | None) -> dict[str, Any]:
        """The contract's object (of a report made here or elsewhere: the service, the pipeline) followed by what
        the signature records beyond it: the signature, the Unicode normalization (None: none) and the number of
        references per segment (sacreBLEU's ``nrefs``: "var" where segments have different numbers; None where not
        known)."""
        return {**contract_object, "signature": settings.signature, "normalize": getattr(settings, "normalize", None),
                "nrefs": nrefs}

    def to_dict(self, signature: bool = False) -> dict[str, Any]:
        """The contract's output object; nothing more, nothing less. With ``signature``, followed by what the
        signature records beyond the contract (:meth:`signed`): then no longer the contract's object."""
        if signature:
            return self.signed(self.to_dict(), self.settings, self.nrefs)
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


def report_of(counts: Counts, nrefs: int | str | None = None) -> Report:
    """The typed report of ``counts``."""
    settings = counts.settings
    orders = tuple(OrderScore(kind, n, hyp, ref, match, settings.beta)
                   for (kind, n), (hyp, ref, match) in zip(order_labels(settings.char_order, settings.word_order),
                                                           counts.orders, strict=True))
    precision, recall, score = averages_and_score(settings, counts.orders)
    return Report(settings, counts.segment_count, orders, Fraction(*precision), Fraction(*recall), score, nrefs)


# ---- many count arrays at once ---------------------------------------------------------------------------------


def score_texts(settings: Settings, counts: numpy.ndarray) -> list[str]:
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
def _template(settings: Settings, sides: int) -> str:
    """The JSON line of one segment whose orders have n-grams on these sides (bit 2k: order k's hypothesis, bit
    2k + 1: its reference): each value a ``%`` field, ``%.0s`` where the contract writes null, so that every line
    takes the same arguments. Its keys and their order are to_dict()'s (the suite compares the two)."""
    head = json.dumps({"line": 0, **settings.as_dict()})[:-1].replace('"line": 0', '"line": %d')
    orders = []
    for k, (kind, n) in enumerate(order_labels(settings.char_order, settings.word_order)):
        hypothesis, reference = sides >> 2 * k & 1, sides >> 2 * k + 1 & 1
        counted = bool(effective(hypothesis, reference))
        precision = '"%d/%d"' if hypothesis else "null%.0s%.0s"
        recall = '"%d/%d"' if reference else "null%.0s%.0s"
        f_score = '"%d/%d"' if counted else "null%.0s%.0s"
        orders.append(f'{{"type": "{kind}", "n": {n}, "hypothesis_ngrams": %d, "reference_ngrams": %d, '
                      f'"matching_ngrams": %d, "effective": {json.dumps(counted)}, '
                      f'"precision": {precision}, "recall": {recall}, "f_score": {f_score}}}')
    return (f'{head}, "segment_count": 1, "orders": [{", ".join(orders)}], "effective_order_count": %d, '
            '"average_precision": "%d/%d", "average_recall": "%d/%d", "score": "%s", "score_fraction": "%d/%d"}\n')


def json_lines(settings: Settings, counts: numpy.ndarray, first_line: int = 1) -> str:
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
    effective_counts = effective(hyp, ref).sum(axis=1).tolist()
    scores = score_texts(settings, counts)
    templates = {code: _template(settings, code) for code in set(sides)}
    out = []
    for index, orders in enumerate(counts.tolist()):
        precision, recall, exact = averages_and_score(settings, orders)
        precision_divisor, recall_divisor = gcd(*precision), gcd(*recall)
        out.append(templates[sides[index]] % (
            first_line + index, *values[index], effective_counts[index], precision[0] // precision_divisor,
            precision[1] // precision_divisor, recall[0] // recall_divisor, recall[1] // recall_divisor,
            scores[index], exact.numerator, exact.denominator))
    return "".join(out)
