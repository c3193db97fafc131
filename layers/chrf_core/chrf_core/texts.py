"""The rules every text obeys, wherever it comes from (a request, a batch, a Python call): a string, encodable as
UTF-8 (no lone surrogate), at most MAX_TEXT_LENGTH code points; and a side's segments are never one str."""

from __future__ import annotations

from collections.abc import Mapping, MappingView, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from .errors import LONE_SURROGATE, InvalidInputError, describe

# Code points of one text, and of all texts of one pairwise call together: the native kernel's 32-bit indices.
MAX_TEXT_LENGTH = 2**28 - 1


def check_strings(key: str, texts: Sequence[Any], offset: int = 0) -> None:
    """Every text is a string (``offset``: the index of the first, when these are part of a longer stream)."""
    for index, text in enumerate(texts, offset):
        if not isinstance(text, str):
            raise InvalidInputError(key, f"must be a string, got {describe(text)}", index=index)


def joined_texts(key: str, texts: Sequence[Any], offset: int = 0) -> str:
    """The texts joined into one string, which the rules below measure in C-level passes; the first that is not a
    string is named (check_strings)."""
    try:
        return "".join(texts)
    except TypeError:
        check_strings(key, texts, offset)
        raise


def check_encodable(key: str, texts: Sequence[str], offset: int = 0) -> None:
    """No text holds a lone surrogate (which cannot be UTF-8)."""
    if not _encodable("".join(texts)):
        for index, text in enumerate(texts, offset):
            if not text.isascii() and LONE_SURROGATE.search(text):
                raise InvalidInputError(key, "must not contain a lone surrogate code point (U+D800..U+DFFF)",
                                        index=index)


def _encodable(text: str) -> bool:
    """Whether ``text`` is free of surrogate code points, in one C-level pass: UTF-16 refuses them as UTF-8 does,
    and encodes Python's usual text (two bytes a code point) at about twice UTF-8's speed."""
    if text.isascii():
        return True
    try:
        text.encode("utf-16-le")
    except UnicodeEncodeError:
        return False
    return True


def check_length(key: str, texts: Sequence[str], offset: int = 0) -> None:
    """No text holds more than MAX_TEXT_LENGTH code points (what both kernels count; the service's texts are far
    shorter)."""
    for index, text in enumerate(texts, offset):
        if len(text) > MAX_TEXT_LENGTH:
            raise InvalidInputError(key, f"at most {MAX_TEXT_LENGTH} code points, got {len(text)}", index=index)


def check_chunk(key: str, texts: Sequence[Any], offset: int = 0) -> None:
    """Every rule a text of a Python call obeys, checked in C-level passes over the chunk joined (a rule broken is
    then found text by text, to name the first that breaks it)."""
    joined = joined_texts(key, texts, offset)
    if not _encodable(joined):
        check_encodable(key, texts, offset)
    if len(joined) > MAX_TEXT_LENGTH:
        check_length(key, texts, offset)


def check_side(name: str, texts: object) -> None:
    """What may stand where a side's segments (or its streams, candidate sets, weights) belong: anything iterated in
    a fixed order. A single str would be scored one character per segment; a set, a dict or a dict view has no order
    of its own (a set of str is ordered by hash, which changes from run to run), so lines would be paired at
    random: both are TypeErrors naming the argument."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name}: expected a sequence of segments (one str each), got a single "
                        f"{type(texts).__name__}; wrap it in a list")
    check_ordered(name, texts)


UNORDERED = (AbstractSet, Mapping, MappingView)


def check_ordered(name: str, value: object) -> None:
    """A set, a dict or a dict view where values are paired by position is a TypeError naming the argument."""
    if isinstance(value, UNORDERED):
        raise TypeError(f"{name}: expected a sequence in order (a list, a tuple, an array or a generator), got a "
                        f"{type(value).__name__}, which has no order of its own")


def check_flag(name: str, value: object) -> bool:
    """A keyword that switches something on or off must be a bool: ``exact="no"`` would otherwise read as True."""
    if type(value) is not bool:
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__}")
    return value


def utf8_size(text: str) -> int:
    """UTF-8 size of a text as the size limit counts it (a lone surrogate as the 3 bytes of its encoded form)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def measured(text: str) -> tuple[int, bool]:
    """A text's utf8_size and whether it is encodable (no lone surrogate), in one pass for valid text."""
    if text.isascii():
        return len(text), True
    try:
        return len(text.encode("utf-8")), True
    except UnicodeEncodeError:
        return utf8_size(text), False
