"""The rules every text obeys, wherever it comes from (a request, a batch, a Python call): a string, encodable as
UTF-8 (no lone surrogate), at most MAX_TEXT_LENGTH code points; and a side's segments are never one str."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, MappingView, Sequence
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
    try:
        joined = "".join(texts)
    except TypeError:
        check_strings(key, texts, offset)
        raise
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


# ---- opt-in Unicode normalization, bounded ---------------------------------------------------------------------

STREAM_SAFE = 30  # UAX #15's Stream-Safe Text Format: at most this many non-starters in a row
CGJ = "\u034f"  # COMBINING GRAPHEME JOINER, which UAX #15 inserts to end a run (a starter that combines with nothing)
NORMALIZE_CHUNK = 1 << 16  # code points normalized at a time (Ctrl-C is seen between chunks)


class _NonStarters:
    """What the Stream-Safe Text Format needs to know of each character, from its NFKD decomposition: ``pure``
    holds the characters made of non-starters only (as many as ``count`` says, else 1), ``edges`` the leading and
    trailing non-starters of the others. ``splits`` finds a character a text may be normalized in pieces just before
    (one whose decomposition starts with a starter that no composition takes as its second part: nothing before it
    can reorder or compose across it). Built once, on first use (about 0.3 s)."""

    def __init__(self) -> None:
        import unicodedata  # here: normalization is opt-in, the service's cold start never needs it

        pure_chars, self.count, self.edges = [], {}, {}
        self.growth = 1  # the most code points one code point decomposes into (U+FDFA: 18)
        # Hangul vowels and final consonants combine with what precedes them (algorithmically)
        backward = {chr(code) for code in [*range(0x1161, 0x1176), *range(0x11A8, 0x11C3)]}
        no_split, starts = [], []
        for code in range(0x110000):
            char = chr(code)
            decomposition = unicodedata.decomposition(char)
            if not unicodedata.combining(char) and not decomposition:
                continue
            if decomposition and not decomposition.startswith("<") and len(decomposition.split()) == 2:
                backward.add(chr(int(decomposition.split()[1], 16)))  # the second part of a canonical pair
            decomposed = unicodedata.normalize("NFKD", char)
            self.growth = max(self.growth, len(decomposed))
            if unicodedata.combining(decomposed[0]):
                no_split.append(char)
            else:
                starts.append((char, decomposed[0]))
            parts = [unicodedata.combining(part) > 0 for part in decomposed]
            if all(parts):
                pure_chars.append(char)
                if len(parts) != 1:
                    self.count[char] = len(parts)
                continue
            leading = next(index for index, non_starter in enumerate(parts) if not non_starter)
            trailing = next(index for index, non_starter in enumerate(reversed(parts)) if not non_starter)
            if leading or trailing:
                self.edges[char] = (leading, trailing)
        no_split += sorted(char for char in backward if not unicodedata.combining(char))
        no_split += [char for char, first in starts if first in backward]  # U+3161 is NFKD U+1173, a vowel
        self.splits = re.compile("[^" + re.escape("".join(no_split)) + "]")
        longest_edge = max(max(edge) for edge in self.edges.values())
        most = max(self.count.values(), default=1)
        # A run of fewer pure characters than this cannot pass the limit, whatever stands around it.
        shortest = -(-(STREAM_SAFE + 1 - 2 * longest_edge) // most)
        self.runs = re.compile("[" + re.escape("".join(pure_chars)) + "]{" + str(shortest) + ",}")


_NON_STARTERS: _NonStarters | None = None


def stream_safe(text: str) -> str:
    """``text`` in UAX #15's Stream-Safe Text Format: a COMBINING GRAPHEME JOINER inserted before a character that
    would make more than 30 non-starters in a row (counted in NFKD), which keeps normalization linear (CPython
    reorders a run of combining marks in quadratic time). Text without such a run, all real text, is returned as it
    is (one regular-expression scan)."""
    global _NON_STARTERS
    if text.isascii():
        return text
    if _NON_STARTERS is None:
        _NON_STARTERS = _NonStarters()
    table = _NON_STARTERS
    pieces: list[str] = []
    last = 0
    for run in table.runs.finditer(text):
        start, end = run.span()
        pieces.append(text[last:start])
        count = table.edges.get(text[start - 1], (0, 0))[1] if start else 0
        chars = run.group()
        if not any(char in table.count for char in chars):  # one non-starter each: CGJ every 30 characters
            first = max(0, STREAM_SAFE - count)
            pieces.append(chars[:first])
            pieces += [CGJ + chars[index:index + STREAM_SAFE] for index in range(first, len(chars), STREAM_SAFE)]
            count = count + len(chars) if len(chars) <= first else (len(chars) - first - 1) % STREAM_SAFE + 1
        else:
            for char in chars:
                size = table.count.get(char, 1)
                if count + size > STREAM_SAFE:
                    pieces.append(CGJ)
                    count = 0
                pieces.append(char)
                count += size
        if end < len(text) and count + table.edges.get(text[end], (0, 0))[0] > STREAM_SAFE:
            pieces.append(CGJ)
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def normalized_text(key: str, index: int, text: str, form: Any) -> str:
    """One text Unicode-normalized (``form`` "NFC" or "NFKC") in linear time: made stream-safe, then normalized a
    piece at a time (so Ctrl-C is seen), within MAX_TEXT_LENGTH code points once normalized. A text long enough to
    pass that limit once decomposed is refused, by an InvalidInputError naming it and the form, as soon as its
    normalized pieces pass it, and from the point where they outgrow twice the input only their lengths are kept
    (the text is normalized again once it is known to fit)."""
    import unicodedata

    text = stream_safe(text)
    if text.isascii() or unicodedata.is_normalized(form, text):
        return text
    assert _NON_STARTERS is not None  # stream_safe built it
    if len(text) * _NON_STARTERS.growth <= MAX_TEXT_LENGTH:  # cannot outgrow the limit: normalized as it comes
        return "".join(_normalized_pieces(text, form))
    pieces: list[str] | None = []
    total = 0
    for piece in _normalized_pieces(text, form):
        total += len(piece)
        if total > MAX_TEXT_LENGTH:
            raise _too_long(key, index, form, total)
        if pieces is not None:
            pieces.append(piece)
            if total > 2 * len(text):  # a large growth: first make sure the whole is within the limit
                pieces = None
    if pieces is None:
        return "".join(_normalized_pieces(text, form))
    return "".join(pieces)


def _normalized_pieces(text: str, form: Any) -> Iterator[str]:
    import unicodedata

    assert _NON_STARTERS is not None
    splits = _NON_STARTERS.splits
    start = 0
    while start < len(text):
        split = splits.search(text, start + NORMALIZE_CHUNK)
        end = split.start() if split else len(text)
        yield unicodedata.normalize(form, text[start:end])
        start = end


def _too_long(key: str, index: int, form: str, length: int) -> InvalidInputError:
    return InvalidInputError(key, f"at most {MAX_TEXT_LENGTH} code points once normalized (normalize={form}), got "
                                  f"more than {min(length, MAX_TEXT_LENGTH)}", index=index)


def normalized(key: str, texts: Sequence[Any], form: str | None, offset: int = 0) -> Sequence[Any]:
    """A chunk's texts as they are counted under the settings' ``normalize`` (None: unchanged; a missing reference,
    None, stays None), each bounded as :func:`normalized_text` says."""
    if form is None:
        return texts
    return [text if text is None else normalized_text(key, index, text, form)
            for index, text in enumerate(texts, offset)]
