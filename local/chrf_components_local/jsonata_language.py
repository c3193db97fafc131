"""The JSONata query language of Step Functions (``"QueryLanguage": "JSONata"``), evaluated by jsonata-python, a
maintained port of the reference implementation (not a home-made one), as AWS's page describes it:
https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html.

A field's value is JSON in which every string ``{% expression %}`` is an expression (parsed once, with the
definition: a syntax error is refused then, naming the field). An expression sees ``$states`` (``input``,
``result`` where there is one, ``errorOutput`` in a Catch, ``context``) and the workflow's variables, plus the
functions Step Functions adds to JSONata's own: ``$partition``, ``$range``, ``$hash``, ``$random``, ``$uuid`` and
``$parse``. What fails when it runs, yields nothing where a value is needed, or runs past EVALUATION_LIMIT_MS (a
runaway recursion: jsonata-python runs tail calls as a loop, which would never end) is
``States.QueryEvaluationError``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from . import intrinsics

QUERY_FAILURE = "States.QueryEvaluationError"
EVALUATION_LIMIT_MS = 10000  # an expression evaluated longer (a runaway loop: jsonata-python's tail calls never end)


def is_expression(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("{%") and value.endswith("%}") and len(value) >= 4


def _parse_json(text: Any) -> Any:
    try:
        return json.loads(intrinsics._text(text, "the argument"))
    except ValueError as error:
        raise intrinsics.Failure(f"not JSON: {error}") from None


def _random(seed: Any = None) -> float:
    import random

    return (random.Random(seed) if seed is not None else random).random()


def _uuid() -> str:
    import uuid

    return str(uuid.uuid4())


# Step Functions' own functions (transforming-data.html, "JSONata functions provided by Step Functions")
EXTRA: dict[str, Callable[..., Any]] = {
    "partition": intrinsics._partition, "range": intrinsics._range, "hash": intrinsics._hash,
    "random": _random, "uuid": _uuid, "parse": _parse_json,
}


class Expression:
    """One ``{% ... %}`` expression, parsed."""

    __slots__ = ("compiled", "field", "lock", "text")

    def __init__(self, text: str, refuse: Callable[[str], Exception], field: str) -> None:
        import jsonata

        self.text, self.field = text, field
        try:
            self.compiled = jsonata.Jsonata(text[2:-2].strip())
        except (jsonata.JException, RecursionError, ValueError) as error:
            raise refuse(f"the JSONata expression in {field} ({str(error)[:120]})") from None
        self.compiled.set_output_convert_nulls(False)
        for name, function in EXTRA.items():
            self.compiled.register_lambda(name, function)
        self.lock = threading.Lock()  # an evaluation keeps state in the compiled expression

    def evaluate(self, bindings: dict[str, Any]) -> Any:
        import jsonata
        from jsonata.utils import Utils

        from .asl import StatesError

        frame = jsonata.Jsonata.Frame(None)  # its bounds: time from now, depth Python's own (a RecursionError)
        frame.set_runtime_bounds(EVALUATION_LIMIT_MS, None)
        for name, bound in bindings.items():
            frame.bind(name, bound)
        try:
            with self.lock:
                value = self.compiled.evaluate(None, frame)
        except intrinsics.Failure as error:
            raise StatesError(QUERY_FAILURE, f"The JSONata expression '{self.text[:200]}' specified for the field "
                                             f"'{self.field}' failed: {error}") from None
        except (jsonata.JException, RecursionError, TypeError, ValueError) as error:
            raise StatesError(QUERY_FAILURE, f"The JSONata expression '{self.text[:200]}' specified for the field "
                                             f"'{self.field}' threw an error during evaluation: {error}") from None
        if value is None:
            raise StatesError(QUERY_FAILURE, f"The JSONata expression '{self.text[:200]}' specified for the field "
                                             f"'{self.field}' returned nothing (undefined).")
        return plain(value, Utils)


def plain(value: Any, utils: Any) -> Any:
    """A JSONata result as JSON data: its null as None, its sequences as lists, whole floats as integers."""
    if value is utils.NULL_VALUE:
        return None
    if isinstance(value, dict):
        return {key: plain(item, utils) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [plain(item, utils) for item in value if item is not None]
    if type(value) is float and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


class Value:
    """A field's JSON value in which each ``{% %}`` string is an expression, parsed."""

    __slots__ = ("tree",)

    def __init__(self, value: Any, refuse: Callable[[str], Exception], field: str) -> None:
        self.tree = self._parsed(value, refuse, field)

    @classmethod
    def _parsed(cls, value: Any, refuse: Callable[[str], Exception], field: str) -> Any:
        if is_expression(value):
            return Expression, Expression(value, refuse, field)
        if isinstance(value, dict):
            return dict, [(key, cls._parsed(inner, refuse, f"{field}.{key}")) for key, inner in value.items()]
        if isinstance(value, list):
            return list, [cls._parsed(inner, refuse, f"{field}[{number}]") for number, inner in enumerate(value)]
        return None, value

    def evaluate(self, bindings: dict[str, Any]) -> Any:
        return self._evaluated(self.tree, bindings)

    @classmethod
    def _evaluated(cls, tree: Any, bindings: dict[str, Any]) -> Any:
        kind, content = tree
        if kind is Expression:
            return content.evaluate(bindings)
        if kind is dict:
            return {key: cls._evaluated(inner, bindings) for key, inner in content}
        if kind is list:
            return [cls._evaluated(inner, bindings) for inner in content]
        return content
