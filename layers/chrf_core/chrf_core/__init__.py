"""chrf_core: exact chrF / chrF++ components (per-order counts, precision, recall, F) as the contract defines them.

Pure Python with no third-party dependencies; shared by the Lambda handler, the corpus pipeline and the
command line. ``score(request)`` is the contract's whole operation.

One deliberate difference from sacreBLEU 2.x and chrF++.py: those drop a segment's hypothesis n-grams of an
order when its reference has none of that order (``hyp_count if ref_ngrams else 0``); the contract counts every
hypothesis n-gram, so precision also sees output the reference is too short to match.
"""

from __future__ import annotations

from typing import Any

from .report import build_report, fraction_text, order_labels, score_text
from .request import (
    MAX_SEGMENTS,
    MAX_TEXT_BYTES,
    REQUEST_KEYS,
    SETTING_KEYS,
    InvalidInputError,
    Settings,
    loads_request,
    parse_request,
    parse_settings,
    utf8_size,
)
from .statistics import Counts, count_segments, merge_counts, words

__all__ = [
    "MAX_SEGMENTS",
    "MAX_TEXT_BYTES",
    "REQUEST_KEYS",
    "SETTING_KEYS",
    "Counts",
    "InvalidInputError",
    "Settings",
    "build_report",
    "compute_counts",
    "count_segments",
    "fraction_text",
    "loads_request",
    "merge_counts",
    "order_labels",
    "parse_request",
    "parse_settings",
    "score",
    "score_text",
    "text_bytes",
    "words",
]


def compute_counts(request: Any) -> Counts:
    """Validate a contract request and return its per-order counts (mergeable with other requests' counts)."""
    hypotheses, references, settings = parse_request(request)
    return count_segments(hypotheses, references, settings)


def score(request: Any) -> dict[str, Any]:
    """The contract's operation: validate ``request`` and return the output object, or raise InvalidInputError."""
    return build_report(compute_counts(request))


def text_bytes(request: dict[str, Any]) -> int:
    """Total UTF-8 bytes of a valid request's texts (the quantity the size limit bounds)."""
    return sum(utf8_size(text) for key in ("hypotheses", "references") for text in request[key])
