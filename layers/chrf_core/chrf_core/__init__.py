"""chrf_core: exact chrF / chrF++ components (per-order counts, precision, recall, F) as the contract defines them.

``CHRF(...)`` holds the settings and scores with them, as sacreBLEU's ``CHRF`` does: ``corpus_score``,
``sentence_score``, ``segment_scores``, ``pairwise`` (minimum Bayes risk decoding). ``score(request)`` is the
service's whole operation. Counting runs in the native kernel (C) when it loads and in pure Python otherwise (or
when ``CHRF_CORE_NATIVE=0``); ``KERNEL`` says which. No third-party dependency on the service's path (NumPy for the
array results only). What only the service needs is in ``chrf_core.service``; the scores and lines of count
arrays (``segment_counts``) in ``chrf_core.arrays``. Beyond one process (Arrow, Ray, Spark, Dask, torchmetrics,
mbrs): ``chrf_core.engines``, which the Lambda layer does not ship.

One deliberate difference from sacreBLEU 2.x and chrF++.py: those drop a segment's hypothesis n-grams of an
order when its reference has none of that order (``hyp_count if ref_ngrams else 0``); the contract counts every
hypothesis n-gram, so precision also sees output the reference is too short to match.
"""

from __future__ import annotations

import sys

from .contract import MAX_SEGMENTS, MAX_TEXT_BYTES
from .counts import Counts
from .errors import InvalidInputError
from .kernel import KERNEL
from .metric import CHRF
from .report import OrderScore, Report, fraction_text, score_text
from .service import score
from .texts import MAX_TEXT_LENGTH, utf8_size
from .tokens import words

if "mbrs" in sys.modules:  # loaded by mbrs-decode --plugin_dir: register the chrf_core metric (engines.mbrs)
    try:
        from .engines import mbrs as _mbrs_backend  # noqa: F401
    except (ImportError, AttributeError) as _error:  # another mbrs than the backend knows: say so, score on
        import logging

        logging.getLogger("chrf_core").warning("chrf_core: the mbrs metric is not registered: %s", _error)

__all__ = ["CHRF", "KERNEL", "MAX_SEGMENTS", "MAX_TEXT_BYTES", "MAX_TEXT_LENGTH", "Counts", "InvalidInputError",
           "OrderScore", "Report", "fraction_text", "score", "score_text", "utf8_size", "words"]
