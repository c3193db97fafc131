"""Invalid input: which rule a request broke, where, and a message that is always safe to send back.

An error carries its position as data (``index``: the segment in a request; ``line``: the 1-based line of a
corpus) and builds its message from it, so callers relocate an error (a chunk's segment 3 is the corpus's line
771) without parsing text. Anything echoed from the caller goes through :func:`shown`, which makes it short and
encodable as UTF-8.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from .contract import TEXT_SIDES

MAX_SHOWN = 64
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    """Caller text as an error may show it: at most ``limit`` characters (then an ellipsis), lone surrogates
    written as ``\\udxxx`` so the message encodes as UTF-8."""
    clipped = text if len(text) <= limit else text[: limit - 1] + "…"
    return LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", clipped)


class InvalidInputError(ValueError):
    """A request broke a contract rule.

    ``field`` is the top-level key concerned (None for the whole request); ``detail`` states the rule;
    ``index`` is the segment concerned within the request, ``line`` its 1-based line in a corpus.
    ``caller_key`` says that ``field`` is a key the caller made up (so logs must not repeat it).
    """

    relayed_message: str | None = None  # a message composed elsewhere, passed on as it was (:meth:`relayed`)
    json_text = False  # str() is the JSON body (:meth:`reported`)

    def __init__(
        self,
        field: str | None,
        detail: str,
        *,
        index: int | None = None,
        line: int | None = None,
        subject: str | None = None,
        caller_key: bool = False,
    ) -> None:
        self.field = field
        self.caller_key = caller_key
        self.detail = detail
        self.index = index
        self.line = line
        self.subject = subject
        super().__init__(self.message)

    @classmethod
    def relayed(cls, field: str | None, message: str, line: int | None) -> InvalidInputError:
        """An error another process raised (a corpus pipeline batch), passed on with its message as it was."""
        error = cls(field, message, line=line)
        error.relayed_message = message
        error.args = (message,)
        return error

    def reported(self) -> InvalidInputError:
        """The same error, whose str() is its JSON body (:meth:`to_dict`): for a runtime that reports an exception
        as its class name and its text, as Lambda does (``errorType``, ``errorMessage``; Step Functions reads the
        text back with ``States.StringToJson``)."""
        error = InvalidInputError(self.field, self.detail, index=self.index, line=self.line, subject=self.subject,
                                  caller_key=self.caller_key)
        error.relayed_message, error.args, error.json_text = self.relayed_message, self.args, True
        return error

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what it is (an engine passes a worker's error to the driver so), not re-made from its text."""
        state = {"relayed_message": self.relayed_message, "json_text": self.json_text, "args": self.args}
        return (_remade, (type(self), self.field, self.detail, self.index, self.line, self.subject, self.caller_key,
                          state))

    def __str__(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False) if self.json_text else super().__str__()

    @property
    def message(self) -> str:
        """The rule with where it applies: ``references[3]: ...``, ``line 12 (reference): ...``, ``beta: ...``."""
        if self.relayed_message is not None:
            return self.relayed_message
        if self.line is not None:
            side = TEXT_SIDES.get(self.field or "")
            where = f"line {self.line} ({side})" if side and self.index is not None else f"line {self.line}"
        elif self.index is not None:
            where = f"{self.field}[{self.index}]"
        else:
            where = self.subject or self.field or "request"
        return f"{where}: {self.detail}"

    def at_line(self, line: int) -> InvalidInputError:
        """The same error placed at a corpus line (the segment ``index`` of a chunk that starts elsewhere)."""
        return InvalidInputError(self.field, self.detail, index=self.index, line=line, subject=self.subject,
                                 caller_key=self.caller_key)

    def to_dict(self) -> dict[str, Any]:
        """The error's body (``{"code", "field", "message"}``, plus ``line`` for a corpus line): what a direct
        caller reads from ``errorMessage``, and the ``error`` of the HTTP envelope (:meth:`envelope`)."""
        body: dict[str, Any] = {"code": "invalid_input", "field": self.field, "message": self.message}
        if self.line is not None:
            body["line"] = self.line
        return body

    def envelope(self) -> str:
        """The HTTP 400 body, ``{"error": {...}}``, as JSON text (UTF-8 ready: nothing unencodable)."""
        return error_envelope(**self.to_dict())


def unknown_key_error(key: Any, allowed: Sequence[str], subject: str = "request") -> InvalidInputError:
    """An unknown key: named once (in ``field``), shortened and encodable, with the keys that are allowed."""
    return InvalidInputError(
        shown(str(key)), f"unknown key (named in field); allowed keys are {', '.join(allowed)}", subject=subject,
        caller_key=True,
    )


def describe(value: Any) -> str:
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


def error_envelope(code: str, message: str, **fields: Any) -> str:
    """Every error body the service sends over HTTP: ``{"error": {"code", ..., "message"}}`` as JSON text."""
    return json.dumps({"error": {"code": code, **fields, "message": message}}, ensure_ascii=False)


def _remade(cls: type[InvalidInputError], field: str | None, detail: str, index: int | None, line: int | None,
            subject: str | None, caller_key: bool, state: dict[str, Any]) -> InvalidInputError:
    """An InvalidInputError unpickled (:meth:`InvalidInputError.__reduce__`)."""
    error = cls(field, detail, index=index, line=line, subject=subject, caller_key=caller_key)
    error.relayed_message, error.json_text, error.args = state["relayed_message"], state["json_text"], state["args"]
    return error
