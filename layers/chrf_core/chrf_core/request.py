"""Request validation: turns a contract request into settings and texts, in the contract's rule order.

The first rule a request breaks raises :class:`InvalidInputError`; nothing is computed before every rule
has passed, and the request object is only read, never changed.
"""

from __future__ import annotations

import json
import math
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

MAX_SEGMENTS = 256
MAX_TEXT_BYTES = 65536
TEXT_KEYS = ("hypotheses", "references")
AVERAGINGS = ("precision_recall", "per_order_f")
# (key, default, minimum, maximum) of the integer settings, in validation order.
INTEGER_SETTINGS = (("char_order", 6, 0, 10), ("word_order", 0, 0, 4), ("beta", 2, 1, 16))
BOOLEAN_SETTINGS = (("lowercase", False), ("include_whitespace", False))
SETTING_KEYS = tuple(key for key, *_ in INTEGER_SETTINGS) + tuple(key for key, _ in BOOLEAN_SETTINGS) + ("averaging",)
REQUEST_KEYS = TEXT_KEYS + SETTING_KEYS


class InvalidInputError(ValueError):
    """A request broke a contract rule. ``field`` is the top-level key concerned, or None for the whole request."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        """The error envelope body of the HTTP API (``{"code", "field", "message"}``)."""
        return {"code": "invalid_input", "field": self.field, "message": self.message}


class Settings(
    namedtuple(
        "Settings",
        SETTING_KEYS,
        defaults=(*(default for _, default, *_ in INTEGER_SETTINGS), *(d for _, d in BOOLEAN_SETTINGS), AVERAGINGS[0]),
    )
):
    """The scoring settings of a request, with the contract's defaults filled in (an immutable record)."""

    __slots__ = ()

    def as_dict(self) -> dict[str, Any]:
        """The settings as the output echoes them, in the output's key order."""
        return self._asdict()


def loads_request(text: str, source: str = "body") -> Any:
    """Parse JSON request text strictly: no NaN or Infinity, no trailing data; any flaw is invalid input."""

    def reject_constant(name: str) -> Any:
        raise InvalidInputError(None, f"{source}: not valid JSON ({name} is not a JSON number)")

    try:
        return json.loads(text, parse_constant=reject_constant)
    except InvalidInputError:
        raise
    except json.JSONDecodeError as error:
        raise InvalidInputError(
            None, f"{source}: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except RecursionError:
        raise InvalidInputError(None, f"{source}: JSON nested too deeply") from None
    except ValueError:  # an integer literal past Python's digit limit (4300 digits)
        raise InvalidInputError(None, f"{source}: not valid JSON (a number has too many digits)") from None


def parse_settings(request: dict[str, Any]) -> Settings:
    """Validate only the setting keys of ``request`` (rules char_order..averaging) and return them."""
    values: dict[str, Any] = {}
    for key, default, low, high in INTEGER_SETTINGS:
        values[key] = _integer(request, key, default, low, high)
        if key == "word_order" and values["char_order"] == 0 and values["word_order"] == 0:
            raise InvalidInputError("word_order", "char_order and word_order cannot both be 0")
    for key, default in BOOLEAN_SETTINGS:
        value = request.get(key, default)
        if type(value) is not bool:
            raise InvalidInputError(key, f"{key}: must be a boolean (true or false), got {_describe(value)}")
        values[key] = value
    averaging = request.get("averaging", "precision_recall")
    if type(averaging) is not str or averaging not in AVERAGINGS:
        raise InvalidInputError(
            "averaging", f"averaging: must be one of {', '.join(AVERAGINGS)}, got {_describe(averaging)}"
        )
    values["averaging"] = averaging
    return Settings(**values)


def parse_request(request: Any) -> tuple[list[str], list[str], Settings]:
    """Validate ``request`` against every contract rule in order; return hypotheses, references and settings."""
    if not isinstance(request, dict):
        raise InvalidInputError(None, f"request: must be a JSON object, got {_describe(request)}")
    for key in request:
        if key not in REQUEST_KEYS:
            raise InvalidInputError(
                str(key), f"{key}: unknown key; allowed keys are {', '.join(REQUEST_KEYS)}"
            )
    for key in TEXT_KEYS:
        if key not in request:
            raise InvalidInputError(key, f"{key}: required key is missing")
    texts = [_text_list(request, key) for key in TEXT_KEYS]
    hypotheses, references = texts
    check_equal_counts(hypotheses, references)
    total = sum(utf8_size(text) for side in texts for text in side)
    if total > MAX_TEXT_BYTES:
        raise InvalidInputError(
            None, f"request: all texts together must be at most {MAX_TEXT_BYTES} UTF-8 bytes, got {total}"
        )
    for key, side in zip(TEXT_KEYS, texts):
        for index, text in enumerate(side):
            if _has_surrogate(text):
                raise InvalidInputError(
                    key, f"{key}[{index}]: must not contain a lone surrogate code point (U+D800..U+DFFF)"
                )
    return list(hypotheses), list(references), parse_settings(request)


def check_equal_counts(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    """The rule that every hypothesis has its reference (line-aligned)."""
    if len(hypotheses) != len(references):
        raise InvalidInputError(
            "references",
            f"references: must have as many segments as hypotheses ({len(hypotheses)}), got {len(references)}",
        )


def _text_list(request: dict[str, Any], key: str) -> list[str]:
    value = request[key]
    if not isinstance(value, list):
        raise InvalidInputError(key, f"{key}: must be an array of strings, got {_describe(value)}")
    if len(value) > MAX_SEGMENTS:
        raise InvalidInputError(key, f"{key}: at most {MAX_SEGMENTS} segments, got {len(value)}")
    if not value:
        raise InvalidInputError(key, f"{key}: at least 1 segment, got 0")
    for index, text in enumerate(value):
        if not isinstance(text, str):
            raise InvalidInputError(key, f"{key}[{index}]: must be a string, got {_describe(text)}")
    return value


def _integer(request: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    """An integer setting under JSON Schema rules: 6.0 is the integer 6, booleans and non-finite numbers are not."""
    value = request.get(key, default)
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise InvalidInputError(key, f"{key}: must be an integer from {low} to {high}, got {_describe(value)}")
    if not low <= value <= high:
        shown = value if abs(value) < 10**15 else "a number out of range"
        raise InvalidInputError(key, f"{key}: must be an integer from {low} to {high}, got {shown}")
    return value


def utf8_size(text: str) -> int:
    """UTF-8 size of a text as the size limit counts it."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate counts as the 3 bytes of its generalized UTF-8 form.
    return len(text.encode("utf-8", "surrogatepass"))


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _describe(value: Any) -> str:
    """A short, content-free description of a JSON value, for error messages (texts are never echoed)."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "a boolean"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "a non-finite number"
        return f"the number {value!r}" if abs(value) < 10**15 else "a number out of range"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a value of type {type(value).__name__}"
