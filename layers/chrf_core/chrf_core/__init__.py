"""chrf_core: exact chrF / chrF++ components (per-order counts, precision, recall, F) as the contract defines them.

No third-party dependencies; shared by the Lambda functions, the corpus pipeline and the command line.
``score(request)`` is the contract's whole operation. Counting runs in the native kernel (C) when it loads and
in pure Python otherwise (or when ``CHRF_CORE_NATIVE=0``); ``KERNEL`` says which, ``KERNEL_ERROR`` why the
native one is not used.

One deliberate difference from sacreBLEU 2.x and chrF++.py: those drop a segment's hypothesis n-grams of an
order when its reference has none of that order (``hyp_count if ref_ngrams else 0``); the contract counts every
hypothesis n-gram, so precision also sees output the reference is too short to match.
"""

from __future__ import annotations

from typing import Any

from .api import corpus_counts, corpus_report, pairwise, segment_reports, segment_scores, settings_of
from .contract import (
    AVERAGINGS,
    DEFAULTS,
    EXECUTE_PATH,
    ITEM_KEYS,
    MAX_SEGMENTS,
    MAX_TEXT_BYTES,
    REQUEST_KEYS,
    SETTING_KEYS,
    TEXT_KEYS,
    TOOL,
    VERSION,
    Settings,
)
from .counting import KERNEL, KERNEL_ERROR, KERNELS, Counts, count_segments, merge_counts, order_labels, segment_rows
from .errors import InvalidInputError, error_envelope, shown
from .report import (
    OrderScore,
    Report,
    averages_and_score,
    build_report,
    exact_score,
    fraction_text,
    report_of,
    score_text,
)
from .request import (
    MAX_TEXT_LENGTH,
    ValidRequest,
    decode_request,
    loads_request,
    make_request,
    parse_request,
    parse_settings,
    parse_strict_settings,
    unknown_key_error,
    utf8_size,
)
from .tokens import words

__all__ = [
    "AVERAGINGS", "DEFAULTS", "EXECUTE_PATH", "ITEM_KEYS", "KERNEL", "KERNELS", "KERNEL_ERROR", "MAX_SEGMENTS",
    "MAX_TEXT_BYTES", "MAX_TEXT_LENGTH", "REQUEST_KEYS", "SETTING_KEYS", "TEXT_KEYS", "TOOL", "VERSION", "Counts",
    "InvalidInputError",
    "OrderScore", "Report", "Settings", "ValidRequest", "averages_and_score", "build_report", "compute_counts",
    "corpus_counts", "corpus_report", "count_segments", "decode_request", "error_envelope", "exact_score",
    "fraction_text", "loads_request", "make_request", "merge_counts", "order_labels", "pairwise", "parse_request",
    "parse_settings", "parse_strict_settings", "report_of", "score", "score_text", "segment_reports", "segment_rows",
    "segment_scores", "settings_of", "shown", "unknown_key_error", "utf8_size", "words"
]


def compute_counts(request: Any) -> Counts:
    """Validate a contract request and return its per-order counts (mergeable with other requests' counts)."""
    valid = parse_request(request)
    return count_segments(valid.hypotheses, valid.references, valid.settings)


def score(request: Any) -> dict[str, Any]:
    """The contract's operation: validate ``request`` and return the output object, or raise InvalidInputError."""
    return build_report(compute_counts(request))

