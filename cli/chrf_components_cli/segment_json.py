"""`segments --json`: every segment's report as one JSON line, ``{"line": N, ...}`` then exactly the keys and
values of ``chrf_core.Report.to_dict()`` (the suite compares the two on generated and real segments).

A chunk's lines are written at once: the per-order fractions are reduced with NumPy, and each line is one
``%``-format of a template chosen by which orders have n-grams on each side (a handful of templates per run). The
averages and the score stay exact fractions (``chrf_core.averages_and_score``), the score's text comes from
``score_texts``. About ten times faster than building each report's dict and dumping it.
"""

from __future__ import annotations

import json
from functools import cache
from math import gcd

import chrf_core
import numpy as np

from .compare import score_texts

VALUES_PER_ORDER = 9  # hypothesis, reference, matching n-grams; precision, recall, F as numerator, denominator


def _reduced(numerator: np.ndarray, denominator: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    divisor = np.gcd(numerator, denominator)
    divisor[divisor == 0] = 1
    return numerator // divisor, denominator // divisor


@cache
def _template(settings: chrf_core.Settings, sides: int) -> str:
    """The line for segments whose orders have n-grams on these sides (bit 2k: order k's hypothesis, bit 2k + 1:
    its reference): each value a ``%`` field, ``%.0s`` where the contract writes null, so that every line takes
    the same arguments."""
    head = json.dumps({"line": 0, **settings.as_dict()})[:-1].replace('"line": 0', '"line": %d')
    orders = []
    for k, (kind, n) in enumerate(chrf_core.order_labels(settings.char_order, settings.word_order)):
        hypothesis, reference = bool(sides >> 2 * k & 1), bool(sides >> 2 * k + 1 & 1)
        precision = '"%d/%d"' if hypothesis else "null%.0s%.0s"
        recall = '"%d/%d"' if reference else "null%.0s%.0s"
        f_score = '"%d/%d"' if hypothesis and reference else "null%.0s%.0s"
        orders.append(f'{{"type": "{kind}", "n": {n}, "hypothesis_ngrams": %d, "reference_ngrams": %d, '
                      f'"matching_ngrams": %d, "effective": {json.dumps(hypothesis and reference)}, '
                      f'"precision": {precision}, "recall": {recall}, "f_score": {f_score}}}')
    return (f'{head}, "segment_count": 1, "orders": [{", ".join(orders)}], "effective_order_count": %d, '
            '"average_precision": "%d/%d", "average_recall": "%d/%d", "score": "%s", "score_fraction": "%d/%d"}\n')


def json_lines(settings: chrf_core.Settings, rows: np.ndarray, first_line: int) -> str:
    """The JSON lines of segments whose per-order counts are ``rows`` (one row of (h, r, m) per order each),
    numbered from ``first_line``."""
    hyp, ref, match = rows[:, 0::3], rows[:, 1::3], rows[:, 2::3]
    beta_squared = settings.beta**2
    fractions = (_reduced(match, hyp), _reduced(match, ref),
                 _reduced((1 + beta_squared) * match, beta_squared * ref + hyp))
    values = np.stack([hyp, ref, match, *(part for fraction in fractions for part in fraction)], axis=2).reshape(
        len(rows), -1).tolist()
    weights = 1 << np.arange(0, 2 * hyp.shape[1], 2, dtype=np.int64)
    sides = ((hyp > 0) @ weights + (ref > 0) @ (2 * weights)).tolist()
    effective = ((hyp > 0) & (ref > 0)).sum(axis=1).tolist()
    scores = score_texts(settings, rows)
    templates = {code: _template(settings, code) for code in set(sides)}
    out = []
    for index, count_row in enumerate(rows.tolist()):
        precision, recall, exact = chrf_core.averages_and_score(
            settings, zip(count_row[0::3], count_row[1::3], count_row[2::3]))
        precision_divisor, recall_divisor = gcd(*precision), gcd(*recall)
        out.append(templates[sides[index]] % (
            first_line + index, *values[index], effective[index], precision[0] // precision_divisor,
            precision[1] // precision_divisor, recall[0] // recall_divisor, recall[1] // recall_divisor,
            scores[index], exact.numerator, exact.denominator))
    return "".join(out)
