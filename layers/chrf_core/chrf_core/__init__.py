"""chrf_core: exact chrF / chrF++ components (per-order counts, precision, recall, F) as the contract defines them.

``CHRF(...)`` holds the settings and scores with them, as sacreBLEU's ``CHRF`` does: ``corpus_score``,
``sentence_score``, ``segment_scores``, ``pairwise`` (minimum Bayes risk decoding). ``score(request)`` is the
service's whole operation. Counting runs in the native kernel (C) when it loads and in pure Python otherwise (or
when ``CHRF_CORE_NATIVE=0``); ``KERNEL`` says which. No third-party dependency on the service's path (NumPy for the
array results only). What only the service needs is in ``chrf_core.service``.

One deliberate difference from sacreBLEU 2.x and chrF++.py: those drop a segment's hypothesis n-grams of an
order when its reference has none of that order (``hyp_count if ref_ngrams else 0``); the contract counts every
hypothesis n-gram, so precision also sees output the reference is too short to match.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .contract import MAX_SEGMENTS, MAX_TEXT_BYTES
from .counts import Counts
from .errors import InvalidInputError
from .kernel import KERNEL
from .metric import CHRF
from .report import OrderScore, Report, fraction_text, score_text
from .service import score
from .texts import MAX_TEXT_LENGTH, utf8_size
from .tokens import words

if TYPE_CHECKING:
    import numpy

if "mbrs" in sys.modules:  # loaded by mbrs-decode --plugin_dir: register the chrf_core metric (chrf_core.mbrs)
    try:
        from . import mbrs as _mbrs_backend  # noqa: F401
    except (ImportError, AttributeError) as _error:  # another mbrs than the backend knows: say so, score on
        import logging

        logging.getLogger("chrf_core").warning("chrf_core: the mbrs metric is not registered: %s", _error)

__all__ = ["CHRF", "KERNEL", "MAX_SEGMENTS", "MAX_TEXT_BYTES", "MAX_TEXT_LENGTH", "Counts", "InvalidInputError",
           "OrderScore", "Report", "corpus_report", "fraction_text", "pairwise", "score", "score_text",
           "segment_reports", "segment_scores", "utf8_size", "words"]


def corpus_report(hypotheses: Iterable[str], references: Iterable[str], **settings: Any) -> Report:
    """``CHRF(**settings).corpus_score(hypotheses, references)`` (a misspelt setting is InvalidInputError)."""
    return CHRF.of_keywords(settings).corpus_score(hypotheses, references)


def segment_scores(hypotheses: Iterable[str], references: Iterable[str], **settings: Any) -> Iterator[Fraction]:
    """Each segment's exact score: ``CHRF.of_keywords(settings).segment_scores(hypotheses, references, exact=True)``."""
    return CHRF.of_keywords(settings).segment_scores(hypotheses, references, exact=True)


def segment_reports(hypotheses: Iterable[str], references: Iterable[str], **settings: Any) -> Iterator[Report]:
    """``CHRF.of_keywords(settings).segment_reports(hypotheses, references)``."""
    return CHRF.of_keywords(settings).segment_reports(hypotheses, references)


def pairwise(hypotheses: Sequence[str], references: Sequence[str], **settings: Any) -> numpy.ndarray:
    """``CHRF.of_keywords(settings).pairwise(hypotheses, references)``."""
    return CHRF.of_keywords(settings).pairwise(hypotheses, references)
