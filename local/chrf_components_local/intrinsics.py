"""The intrinsic functions of the JSONPath query language (``"key.$": "States.Format('{} of {}', $.a, $.b)"``), as
AWS's page describes them: https://docs.aws.amazon.com/step-functions/latest/dg/intrinsic-functions.html.

A call is parsed once, with the definition (asl.Template): its name must be one AWS defines and its arguments string
literals in single quotes (``\\'``, ``\\{``, ``\\}`` and ``\\\\`` escaped), numbers, ``true``, ``false``, ``null``,
JSONPaths (``$.x``, ``$$.Execution.Id``, ``$variable``) or other calls; a wrong argument count is refused there. What
can only be known when it runs (an argument's type, a partition size of 0, a hash of more than 10,000 characters) is
``States.IntrinsicFailure``, the error AWS names.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import uuid
from collections.abc import Callable
from typing import Any

FAILURE = "States.IntrinsicFailure"
TEXT_LIMIT = 10000  # characters of a Base64Encode, Base64Decode or Hash input (intrinsic-functions.html)
RANGE_LIMIT = 1000  # elements of an ArrayRange (intrinsic-functions.html)
HASHES = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
PATH = re.compile(r"\$[^,()\s]*")
NAME = re.compile(r"States\.[A-Za-z0-9]+")


class Failure(Exception):
    """An intrinsic function that cannot be evaluated on these values (States.IntrinsicFailure)."""


def _integer(value: Any, what: str) -> int:
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is not int:
        raise Failure(f"{what} must be an integer, got {json.dumps(value)[:40]}")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise Failure(f"{what} must be a string, got {json.dumps(value)[:40]}")
    return value


def _array(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise Failure(f"{what} must be an array, got {json.dumps(value)[:40]}")
    return value


def _format(template: Any, *values: Any) -> str:
    """Each {} of the template replaced by the next value (a string as it is, any other value as JSON); \\{ and
    \\} are braces."""
    text, out, used, position = _text(template, "the template"), [], 0, 0
    while position < len(text):
        if text[position] == "\\" and position + 1 < len(text):
            out.append(text[position + 1])
            position += 2
        elif text.startswith("{}", position):
            if used >= len(values):
                raise Failure(f"the template has more {{}} than the {len(values)} values given")
            value = values[used]
            out.append(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))
            used += 1
            position += 2
        else:
            out.append(text[position])
            position += 1
    if used != len(values):
        raise Failure(f"the template has {used} {{}} for {len(values)} values")
    return "".join(out)


def _string_to_json(text: Any) -> Any:
    try:
        return json.loads(_text(text, "the argument"))
    except ValueError as error:
        raise Failure(f"not JSON: {error}") from None


def _partition(array: Any, size: Any) -> list[list[Any]]:
    items, chunk = _array(array, "the first argument"), _integer(size, "the chunk size")
    if chunk <= 0:
        raise Failure("the chunk size must be a positive integer")
    return [items[start:start + chunk] for start in range(0, len(items), chunk)]


def _range(start: Any, end: Any, step: Any) -> list[int]:
    first, last, by = (_integer(value, what) for value, what in ((start, "start"), (end, "end"), (step, "step")))
    if by == 0:
        raise Failure("the step must not be 0")
    count = max(0, (last - first) // by + 1)
    if count > RANGE_LIMIT:
        raise Failure(f"the range would have {count} elements, more than {RANGE_LIMIT}")
    return list(range(first, last + (1 if by > 0 else -1), by))


def _get_item(array: Any, index: Any) -> Any:
    items, at = _array(array, "the first argument"), _integer(index, "the index")
    if not 0 <= at < len(items):
        raise Failure(f"the index {at} is outside an array of {len(items)}")
    return items[at]


def _unique(array: Any) -> list[Any]:
    seen: list[Any] = []
    for item in _array(array, "the argument"):
        if not any(_same(item, other) for other in seen):
            seen.append(item)
    return seen


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are one number, true is not 1."""
    return _canonical(a) == _canonical(b)


def _canonical(value: Any) -> str:
    def numbers(inner: Any) -> Any:
        if isinstance(inner, dict):
            return {key: numbers(item) for key, item in inner.items()}
        if isinstance(inner, list):
            return [numbers(item) for item in inner]
        return float(inner) if type(inner) in (int, float) else inner

    return json.dumps(numbers(value), sort_keys=True)


def _contains(array: Any, value: Any) -> bool:
    return any(_same(item, value) for item in _array(array, "the first argument"))


def _limited(text: Any) -> str:
    value = _text(text, "the argument")
    if len(value) > TEXT_LIMIT:
        raise Failure(f"the argument has {len(value)} characters, more than {TEXT_LIMIT}")
    return value


def _base64_decode(text: Any) -> str:
    try:
        return base64.b64decode(_limited(text), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as error:
        raise Failure(f"not Base64 of UTF-8 text: {error}") from None


def _hash(value: Any, algorithm: Any) -> str:
    name = HASHES.get(_text(algorithm, "the algorithm"))
    if name is None:
        raise Failure(f"the algorithm {algorithm!r} is not one of {', '.join(HASHES)}")
    return hashlib.new(name, _limited(value).encode("utf-8")).hexdigest()


def _merge(first: Any, second: Any, deep: Any) -> dict[str, Any]:
    if deep is not False:
        raise Failure("only a shallow merge (the third argument false) is defined")
    if not isinstance(first, dict) or not isinstance(second, dict):
        raise Failure("both arguments must be JSON objects")
    return {**first, **second}


def _random(start: Any, end: Any, seed: Any = None) -> int:
    low, high = _integer(start, "start"), _integer(end, "end")
    if high <= low:
        raise Failure("end must be greater than start")
    draw = random.Random(_integer(seed, "the seed")) if seed is not None else random
    return draw.randrange(low, high)


def _add(a: Any, b: Any) -> int:
    return _integer(a, "the first argument") + _integer(b, "the second argument")


def _split(text: Any, delimiters: Any) -> list[str]:
    value, separators = _text(text, "the first argument"), _text(delimiters, "the delimiter")
    if not separators:
        return [value]
    return [piece for piece in re.split("|".join(map(re.escape, separators)), value) if piece]


# name: (function, fewest arguments, most arguments)
FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "States.Format": (_format, 1, 1 << 20),
    "States.StringToJson": (_string_to_json, 1, 1),
    "States.JsonToString": (lambda value: json.dumps(value, separators=(",", ":")), 1, 1),
    "States.Array": (lambda *values: list(values), 0, 1 << 20),
    "States.ArrayPartition": (_partition, 2, 2),
    "States.ArrayContains": (_contains, 2, 2),
    "States.ArrayRange": (_range, 3, 3),
    "States.ArrayGetItem": (_get_item, 2, 2),
    "States.ArrayLength": (lambda array: len(_array(array, "the argument")), 1, 1),
    "States.ArrayUnique": (_unique, 1, 1),
    "States.Base64Encode": (lambda text: base64.b64encode(_limited(text).encode("utf-8")).decode("ascii"), 1, 1),
    "States.Base64Decode": (_base64_decode, 1, 1),
    "States.Hash": (_hash, 2, 2),
    "States.JsonMerge": (_merge, 3, 3),
    "States.MathRandom": (_random, 2, 3),
    "States.MathAdd": (_add, 2, 2),
    "States.StringSplit": (_split, 2, 2),
    "States.UUID": (lambda: str(uuid.uuid4()), 0, 0),
}


class Call:
    """One intrinsic function call, parsed: evaluated as a payload template's path is (``resolve``)."""

    __slots__ = ("arguments", "function", "name", "text")

    def __init__(self, name: str, arguments: list[Any], text: str) -> None:
        self.name, self.arguments, self.text = name, arguments, text
        self.function = FUNCTIONS[name][0]

    def resolve(self, data: Any, context: Any, field: str) -> Any:
        values = [argument.resolve(data, context, field) if hasattr(argument, "resolve") else argument
                  for argument in self.arguments]
        try:
            return self.function(*values)
        except Failure as error:
            from .asl import StatesError

            raise StatesError(FAILURE, f"Invalid arguments in {self.name} (in the field '{field}'): {error}") from None


def parse(text: str, make_path: Callable[[str], Any]) -> Call:
    """A call (``States.X(...)``) parsed, or ValueError saying what is wrong; ``make_path`` parses a JSONPath."""
    call, end = _call(text, 0, make_path)
    if text[end:].strip():
        raise ValueError(f"unexpected {text[end:end + 20]!r} after the call")
    return call


def _call(text: str, position: int, make_path: Callable[[str], Any]) -> tuple[Call, int]:
    found = NAME.match(text, position)
    if found is None or found.group() not in FUNCTIONS:
        name = found.group() if found else text[position:position + 30]
        raise ValueError(f"{name} is not an intrinsic function of the JSONPath language")
    name, position = found.group(), found.end()
    if text[position:position + 1] != "(":
        raise ValueError(f"{name} without its argument list")
    position += 1
    arguments: list[Any] = []
    while True:
        position = _skip(text, position)
        if text[position:position + 1] == ")" and not arguments:
            position += 1
            break
        argument, position = _argument(text, position, make_path)
        arguments.append(argument)
        position = _skip(text, position)
        following = text[position:position + 1]
        position += 1
        if following == ")":
            break
        if following != ",":
            raise ValueError(f"expected , or ) in the arguments of {name}")
    fewest, most = FUNCTIONS[name][1:]
    if not fewest <= len(arguments) <= most:
        wanted = str(fewest) if fewest == most else f"{fewest} or more" if most > 3 else f"{fewest} to {most}"
        raise ValueError(f"{name} takes {wanted} arguments, got {len(arguments)}")
    return Call(name, arguments, text), position


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] == " ":
        position += 1
    return position


def _argument(text: str, position: int, make_path: Callable[[str], Any]) -> tuple[Any, int]:
    character = text[position:position + 1]
    if character == "'":
        out, position = [], position + 1
        while position < len(text) and text[position] != "'":
            if text[position] == "\\" and position + 1 < len(text):
                following = text[position + 1]
                # \{ and \} stay escaped for States.Format; \' and \\ are the characters
                out.append(following if following in "'\\" else "\\" + following)
                position += 2
                continue
            out.append(text[position])
            position += 1
        if position >= len(text):
            raise ValueError("a string argument without its closing '")
        return "".join(out), position + 1
    if character == "$":
        found = PATH.match(text, position)
        assert found is not None
        return make_path(found.group()), found.end()
    if text.startswith("States.", position):
        return _call(text, position, make_path)
    for word, value in (("true", True), ("false", False), ("null", None)):
        if text.startswith(word, position):
            return value, position + len(word)
    number = NUMBER.match(text, position)
    if number is not None:
        literal = number.group()
        return (float(literal) if number.group(1) or number.group(2) else int(literal)), number.end()
    raise ValueError(f"the argument {text[position:position + 20]!r} is not a string in single quotes, a number, "
                     f"a JSONPath or an intrinsic function")
