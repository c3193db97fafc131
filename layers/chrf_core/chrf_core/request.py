"""Request validation: a contract request becomes settings and texts, checked in the contract's rule order.

The first rule a request breaks raises :class:`InvalidInputError`; nothing is computed before every rule has
passed, and the request object is only read, never changed. Messages never echo texts; a key the caller made
up is shown once, shortened and made encodable (:func:`errors.shown`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .contract import (
    AVERAGINGS,
    BOOLEAN_KEYS,
    DEFAULTS,
    INTEGER_RANGES,
    MAX_SEGMENTS,
    MAX_TEXT_BYTES,
    REQUEST_KEYS,
    SETTING_KEYS,
    TEXT_KEYS,
    Settings,
)
from .errors import LONE_SURROGATE, InvalidInputError, shown

# Code points of one text, and of all texts of one pairwise call together: the native kernel's 32-bit indices.
MAX_TEXT_LENGTH = 2**28 - 1


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


def unknown_key_error(key: Any, allowed: Sequence[str], subject: str = "request") -> InvalidInputError:
    """An unknown key: named once (in ``field``), shortened and encodable, with the keys that are allowed."""
    return InvalidInputError(
        shown(str(key)), f"unknown key (named in field); allowed keys are {', '.join(allowed)}", subject=subject,
        caller_key=True,
    )


def parse_strict_settings(settings: Any, subject: str = "settings") -> Settings:
    """An object of settings alone (a pipeline execution's or batch's): nothing but setting keys, then
    :func:`parse_settings`."""
    if not isinstance(settings, dict):
        raise InvalidInputError("settings", "must be an object of scoring settings")
    for key in settings:
        if key not in SETTING_KEYS:
            raise unknown_key_error(key, SETTING_KEYS, subject=subject)
    return parse_settings(settings)


def parse_settings(request: Mapping[str, Any]) -> Settings:
    """Validate only the setting keys of ``request`` (rules char_order..averaging) and return them."""
    integers = {}
    for key, (low, high) in INTEGER_RANGES.items():
        integers[key] = _integer(request, key, low, high)
        if key == "word_order" and integers["char_order"] == 0 and integers["word_order"] == 0:
            raise InvalidInputError("word_order", "char_order and word_order cannot both be 0")
    booleans = {}
    for key in BOOLEAN_KEYS:
        value = request.get(key, getattr(DEFAULTS, key))
        if type(value) is not bool:
            raise InvalidInputError(key, f"must be a boolean (true or false), got {_describe(value)}")
        booleans[key] = value
    averaging = request.get("averaging", DEFAULTS.averaging)
    if type(averaging) is not str or averaging not in AVERAGINGS:
        raise InvalidInputError("averaging", f"must be one of {', '.join(AVERAGINGS)}, got {_describe(averaging)}")
    return Settings(
        char_order=integers["char_order"],
        word_order=integers["word_order"],
        beta=integers["beta"],
        lowercase=booleans["lowercase"],
        include_whitespace=booleans["include_whitespace"],
        averaging=averaging,
    )


class ValidRequest(NamedTuple):
    """A request that passed every rule: its texts, its settings, and the UTF-8 size the size rule measured."""

    hypotheses: list[str]
    references: list[str]
    settings: Settings
    text_bytes: int


def parse_request(request: Any) -> ValidRequest:
    """Validate ``request`` against every contract rule in order."""
    if not isinstance(request, dict):
        raise InvalidInputError(None, f"must be a JSON object, got {_describe(request)}")
    for key in request:
        if key not in REQUEST_KEYS:
            raise unknown_key_error(key, REQUEST_KEYS)
    for key in TEXT_KEYS:
        if key not in request:
            raise InvalidInputError(key, "required key is missing")
    hypotheses, references = (_text_list(request, key) for key in TEXT_KEYS)
    if len(hypotheses) != len(references):
        raise InvalidInputError(
            "references", f"must have as many segments as hypotheses ({len(hypotheses)}), got {len(references)}"
        )
    total = sum(map(utf8_size, hypotheses)) + sum(map(utf8_size, references))
    if total > MAX_TEXT_BYTES:
        raise InvalidInputError(None, f"all texts together must be at most {MAX_TEXT_BYTES} UTF-8 bytes, got {total}")
    for key, side in zip(TEXT_KEYS, (hypotheses, references)):
        check_encodable(key, side)
    return ValidRequest(list(hypotheses), list(references), parse_settings(request), total)


def make_request(hypotheses: Sequence[str], references: Sequence[str], settings: Settings) -> dict[str, Any]:
    """The contract request that scores these segments with these settings."""
    return {"hypotheses": list(hypotheses), "references": list(references), **settings.as_dict()}


def utf8_size(text: str) -> int:
    """UTF-8 size of a text as the size limit counts it (a lone surrogate as the 3 bytes of its encoded form)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _text_list(request: dict[str, Any], key: str) -> list[str]:
    value = request[key]
    if not isinstance(value, list):
        raise InvalidInputError(key, f"must be an array of strings, got {_describe(value)}")
    if len(value) > MAX_SEGMENTS:
        raise InvalidInputError(key, f"at most {MAX_SEGMENTS} segments, got {len(value)}")
    if not value:
        raise InvalidInputError(key, "at least 1 segment, got 0")
    check_strings(key, value)
    return value


def check_strings(key: str, texts: Sequence[Any], offset: int = 0) -> None:
    """Every text is a string (``offset``: the index of the first, when these are part of a longer stream)."""
    for index, text in enumerate(texts, offset):
        if not isinstance(text, str):
            raise InvalidInputError(key, f"must be a string, got {_describe(text)}", index=index)


def check_length(key: str, texts: Sequence[str], offset: int = 0) -> None:
    """No text holds more than MAX_TEXT_LENGTH code points (what both kernels count; the service's texts are far
    shorter)."""
    for index, text in enumerate(texts, offset):
        if len(text) > MAX_TEXT_LENGTH:
            raise InvalidInputError(key, f"at most {MAX_TEXT_LENGTH} code points, got {len(text)}", index=index)


def check_encodable(key: str, texts: Sequence[str], offset: int = 0) -> None:
    """No text holds a lone surrogate (which cannot be UTF-8)."""
    for index, text in enumerate(texts, offset):
        if not text.isascii() and LONE_SURROGATE.search(text):
            raise InvalidInputError(key, "must not contain a lone surrogate code point (U+D800..U+DFFF)", index=index)


def _integer(request: Mapping[str, Any], key: str, low: int, high: int) -> int:
    """An integer setting under JSON Schema rules: 6.0 is the integer 6, booleans and non-finite numbers are not."""
    value = request.get(key, getattr(DEFAULTS, key))
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise InvalidInputError(key, f"must be an integer from {low} to {high}, got {_describe(value)}")
    if not low <= value <= high:
        shown_value = value if abs(value) < 10**15 else "a number out of range"
        raise InvalidInputError(key, f"must be an integer from {low} to {high}, got {shown_value}")
    return value


def _describe(value: Any) -> str:
    """A short, content-free description of a JSON value, for error messages (texts are never echoed)."""
    if value is None or type(value) is bool:
        return "null" if value is None else "a boolean"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "a non-finite number"
        return f"the number {value!r}" if abs(value) < 10**15 else "a number out of range"
    kinds = {str: "a string", list: "an array", dict: "an object"}
    return next((kind for cls, kind in kinds.items() if isinstance(value, cls)),
                f"a value of type {type(value).__name__}")
