"""Scores and lines of count arrays, as :meth:`CHRF.segment_counts` and :meth:`CHRF.system_counts` give them
(``(..., orders, 3)``: hypothesis n-grams, reference n-grams, matches), each with the ``CHRF`` that made them.

For the command line and anyone holding many segments' counts: the formulas' own functions (one home each, in
:mod:`chrf_core.formula` and :mod:`chrf_core.report`), reachable without widening ``CHRF``.

>>> from chrf_core import CHRF
>>> from chrf_core.arrays import exact_score, float_scores, score_texts
>>> chrf = CHRF()
>>> rows = chrf.segment_counts(["a cat", "the dog"], ["the cat", "a dog"])
>>> score_texts(chrf, rows), float_scores(chrf, rows).round(2).tolist(), str(exact_score(chrf, rows[0].tolist()))
(['31.250000', '42.279412'], [31.25, 42.28], '125/4')
"""

from __future__ import annotations

from .formula import exact_score, float_scores
from .report import json_lines, score_texts

__all__ = ["exact_score", "float_scores", "json_lines", "score_texts"]
