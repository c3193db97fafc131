"""What the service does with a request: decode it, check it in the contract's rule order, score it.

For the Lambda handlers (the API function and the pipeline's batches), which import this module by name. The first
rule a request breaks raises :class:`InvalidInputError`; nothing is computed before every rule has passed, and the
request object is only read, never changed. Messages never echo texts; a key the caller made up is shown once,
shortened and made encodable (:func:`errors.shown`). The settings' own rules are :class:`chrf_core.CHRF`'s.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from .contract import MAX_SEGMENTS, MAX_TEXT_BYTES, REQUEST_KEYS, SETTING_KEYS, TEXT_KEYS
from .counts import Counts, count_segments
from .errors import InvalidInputError, describe, unknown_key_error
from .errors import error_envelope as error_envelope  # the service's error body, for the handlers
from .metric import CHRF
from .preparation import prepared
from .report import report_of
from .texts import check_encodable, joined_texts, measured


def decode_request(data: bytes | str, source: str = "body") -> Any:
    """A request as sent (bytes, or text already decoded): not empty, UTF-8, then JSON as :func:`loads_request`
    parses it; any flaw is invalid input."""
    if not data:
        raise InvalidInputError(None, "a JSON request object is required, got an empty body", subject=source)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidInputError(None, f"not valid UTF-8 (byte {error.start})", subject=source) from None
    return loads_request(data, source)


def loads_request(text: str, source: str = "body") -> Any:
    """Parse JSON request text strictly: no NaN or Infinity, no trailing data; any flaw is invalid input."""

    def reject_constant(name: str) -> Any:
        raise InvalidInputError(None, f"not valid JSON ({name} is not a JSON number)", subject=source)

    try:
        return json.loads(text, parse_constant=reject_constant)
    except InvalidInputError:
        raise
    except json.JSONDecodeError as error:
        raise InvalidInputError(
            None, f"not valid JSON ({error.msg} at line {error.lineno} column {error.colno})", subject=source
        ) from None
    except RecursionError:
        raise InvalidInputError(None, "JSON nested too deeply", subject=source) from None
    except ValueError:  # an integer literal past Python's digit limit (4300 digits)
        raise InvalidInputError(None, "not valid JSON (a number has too many digits)", subject=source) from None


class ValidRequest(NamedTuple):
    """A request that passed every rule: its texts, its settings, and the UTF-8 size the size rule measured."""

    hypotheses: list[str]
    references: list[str]
    settings: CHRF
    text_bytes: int

    def counts(self) -> Counts:
        """The request's per-order counts (its texts already checked: prepared, then counted)."""
        return count_segments(prepared(TEXT_KEYS[0], self.hypotheses, self.settings),
                              prepared(TEXT_KEYS[1], self.references, self.settings), self.settings)


def parse_request(request: Any) -> ValidRequest:
    """Validate ``request`` against every contract rule in order."""
    if not isinstance(request, dict):
        raise InvalidInputError(None, f"must be a JSON object, got {describe(request)}")
    for key in request:
        if key not in REQUEST_KEYS:
            raise unknown_key_error(key, REQUEST_KEYS)
    for key in TEXT_KEYS:
        if key not in request:
            raise InvalidInputError(key, "required key is missing")
    hypotheses, references = request[TEXT_KEYS[0]], request[TEXT_KEYS[1]]
    total = check_texts(hypotheses, references)
    settings = CHRF(**{key: request[key] for key in SETTING_KEYS if key in request})
    return ValidRequest(list(hypotheses), list(references), settings, total)


def check_texts(hypotheses: Any, references: Any) -> int:
    """The contract's rules for the texts of one request (or one pipeline batch), in order: arrays of 1 to
    MAX_SEGMENTS strings, as many on each side, at most MAX_TEXT_BYTES together, no lone surrogate. Their UTF-8 size,
    each side measured once, joined (a text a rule refuses is then found and named).
    """
    joined = []
    for key, value in zip(TEXT_KEYS, (hypotheses, references)):
        if not isinstance(value, list):
            raise InvalidInputError(key, f"must be an array of strings, got {describe(value)}")
        if len(value) > MAX_SEGMENTS:
            raise InvalidInputError(key, f"at most {MAX_SEGMENTS} segments, got {len(value)}")
        if not value:
            raise InvalidInputError(key, "at least 1 segment, got 0")
        joined.append(joined_texts(key, value))
    if len(hypotheses) != len(references):
        raise InvalidInputError(
            "references", f"must have as many segments as hypotheses ({len(hypotheses)}), got {len(references)}"
        )
    (size_h, encodable_h), (size_r, encodable_r) = map(measured, joined)
    total = size_h + size_r
    if total > MAX_TEXT_BYTES:
        raise InvalidInputError(None, f"all texts together must be at most {MAX_TEXT_BYTES} UTF-8 bytes, got {total}")
    for key, side, encodable in zip(TEXT_KEYS, (hypotheses, references), (encodable_h, encodable_r)):
        if not encodable:
            check_encodable(key, side)
    return total


def compute_counts(request: Any) -> Counts:
    """Validate a contract request and return its per-order counts (mergeable with other requests' counts)."""
    return parse_request(request).counts()


def score(request: Any) -> dict[str, Any]:
    """The contract's operation: validate ``request`` and return the output object, or raise InvalidInputError."""
    return report_of(compute_counts(request)).to_dict()
