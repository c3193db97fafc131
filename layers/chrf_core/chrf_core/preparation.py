"""How a text is prepared before it is counted, in one place for every reader (the library's streams, MBR, the
service, the command line's word marks): Unicode-normalized when the settings' opt-in ``normalize`` says so
(bounded: linear time, Ctrl-C seen, within MAX_TEXT_LENGTH once normalized), then lowercased when ``lowercase``
does. The kernels count texts as :func:`prepared` gives them."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from .contract import Settings
from .errors import InvalidInputError
from .texts import MAX_TEXT_LENGTH

# ---- opt-in Unicode normalization, bounded ---------------------------------------------------------------------

STREAM_SAFE = 30  # UAX #15's Stream-Safe Text Format: at most this many non-starters in a row
CGJ = "\u034f"  # COMBINING GRAPHEME JOINER, which UAX #15 inserts to end a run (a starter that combines with nothing)
NORMALIZE_CHUNK = 1 << 16  # code points normalized at a time (Ctrl-C is seen between chunks)
SCAN_WINDOW = 1 << 20  # code points a whole-text scan reads at a time (Ctrl-C is seen between windows)
NEAR = 64  # code points after a piece's end searched first for a place to split it
HANGUL_S, HANGUL_L, HANGUL_V, HANGUL_T = 0xAC00, range(0x1100, 0x1113), range(0x1161, 0x1176), range(0x11A8, 0x11C3)


class _NonStarters:
    """What the Stream-Safe Text Format needs to know of each character, from its NFKD decomposition: ``pure``
    holds the characters made of non-starters only (as many as ``count`` says, else 1), ``edges`` the leading and
    trailing non-starters of the others. ``splits`` finds a character a text may be normalized in pieces just before
    (one whose decomposition starts with a starter that no composition takes as its second part: nothing before it
    can reorder or compose across it); where a text has none, :func:`_pair_split` finds a pair of characters the
    second of which nothing the first can end as composes with (``first``, ``last``, ``unsafe_after``). ``kept``
    says, per form, how many code points of a character's decomposition no composition can take (a lower bound of
    its normalized length) where that is not 1. Built once, on first use (about 0.3 s)."""

    def __init__(self) -> None:
        import unicodedata  # here: normalization is opt-in, the service's cold start never needs it

        pure_chars, self.count, self.edges = [], {}, {}
        # Hangul vowels and final consonants combine with what precedes them (algorithmically)
        backward = {chr(code) for code in [*HANGUL_V, *HANGUL_T]}
        firsts: dict[str, set[str]] = {chr(v): {chr(code) for code in HANGUL_L} for v in HANGUL_V}
        lv = {chr(HANGUL_S + 28 * index) for index in range(19 * 21)}
        firsts.update({chr(code): set(lv) for code in HANGUL_T})
        second_part = {char: chr(HANGUL_V[0] + (ord(char) - HANGUL_S) // 28 % 21) for char in lv}
        decomposed_forms: dict[str, dict[str, str]] = {"NFC": {}, "NFKC": {}}
        no_split, starts = [], []
        for code in range(0x110000):
            char = chr(code)
            decomposition = unicodedata.decomposition(char)
            if not unicodedata.combining(char) and not decomposition:
                continue
            if decomposition and not decomposition.startswith("<") and len(decomposition.split()) == 2:
                first, second = (chr(int(part, 16)) for part in decomposition.split())
                backward.add(second)  # the second part of a canonical pair
                firsts.setdefault(second, set()).add(first)
                second_part[char] = second
            decomposed = unicodedata.normalize("NFKD", char)
            if decomposition:
                decomposed_forms["NFKC"][char] = decomposed
                decomposed_forms["NFC"][char] = unicodedata.normalize("NFD", char)
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
        shortest = self.shortest = -(-(STREAM_SAFE + 1 - 2 * longest_edge) // most)
        pure = "".join(pure_chars)
        self.runs = re.compile("[" + re.escape(pure) + "]{" + str(shortest) + ",}")
        self.not_pure = re.compile("[^" + re.escape(pure) + "]")
        # Where a text may hold a run, found fast: the regular expression engine tests a class of the Basic
        # Multilingual Plane in one step and a list of ranges one range at a time, so every astral character is in.
        self.may_run = re.compile("[" + re.escape("".join(c for c in pure_chars if c <= "\uffff"))
                                  + "\U00010000-\U0010ffff]{" + str(shortest) + ",}")
        # Hangul syllables decompose algorithmically (unicodedata.decomposition says nothing of them).
        for index in range(19 * 21 * 28):
            syllable = unicodedata.normalize("NFD", chr(HANGUL_S + index))
            for form in decomposed_forms.values():
                form[chr(HANGUL_S + index)] = syllable
        self.first = {form: {char: parts[0] for char, parts in table.items() if parts[0] != char}
                      for form, table in decomposed_forms.items()}
        self.last = {form: {char: parts[-1] for char, parts in table.items() if parts[-1] != char}
                     for form, table in decomposed_forms.items()}
        # A boundary before c (its decomposition's first code point) is unsafe after x (the last of what precedes)
        # when x, or a composite x ends up the last part of, composes with c.
        self.unsafe_after: dict[str, frozenset[str]] = {}
        for char, first_parts in firsts.items():
            unsafe, frontier = set(first_parts), list(first_parts)
            while frontier:
                part = second_part.get(frontier.pop())
                if part is not None and part not in unsafe:
                    unsafe.add(part)
                    frontier.append(part)
            self.unsafe_after[char] = frozenset(unsafe)

        def kept(parts: str) -> int:
            return sum(not unicodedata.combining(part) and part not in backward for part in parts)

        self.kept: dict[str, dict[str, int]] = {}
        for name, table in decomposed_forms.items():
            counted = {char: kept(parts) for char, parts in table.items()}
            self.kept[name] = {char: value for char, value in counted.items() if value != 1}
            self.kept[name].update({char: 0 for char in [*pure_chars, *backward] if char not in table})
        # Per form: the most code points one code point decomposes into (U+FDFA: 18 in NFKC), and whether a code
        # point can become several that no composition takes away (NFKC only).
        self.growth_of = {form: max(len(parts) for parts in table.values()) for form, table in decomposed_forms.items()}
        self.expands = {form: max(table.values()) > 1 for form, table in self.kept.items()}


_NON_STARTERS: _NonStarters | None = None


def _table() -> _NonStarters:
    global _NON_STARTERS
    if _NON_STARTERS is None:
        _NON_STARTERS = _NonStarters()
    return _NON_STARTERS


def _windows(text: str, table: _NonStarters) -> Iterator[tuple[int, int]]:
    """``text`` in windows of about SCAN_WINDOW code points, each ended where no run of pure characters crosses
    it; inside a run longer than a window, where the run goes on for a window more and has at least a run's
    shortest length before (so that both parts are found as runs, and the second goes on with the first's count)."""
    start = 0
    while start < len(text):
        end = start + SCAN_WINDOW
        if end < len(text):
            after = table.not_pure.search(text, end, end + SCAN_WINDOW)
            if after:
                end = after.start()
            else:
                back = end
                while end - back < table.shortest and not table.not_pure.match(text, back - 1):
                    back -= 1
                end = end if end - back >= table.shortest else back
        yield start, min(end, len(text))
        start = end


def stream_safe(text: str) -> str:
    """``text`` in UAX #15's Stream-Safe Text Format: a COMBINING GRAPHEME JOINER inserted before a character that
    would make more than 30 non-starters in a row (counted in NFKD), which keeps normalization linear (CPython
    reorders a run of combining marks in quadratic time). Text without such a run, all real text, is returned as it
    is (one regular-expression scan, a window at a time)."""
    if text.isascii():
        return text
    table = _table()
    pieces: list[str] = []
    last = 0
    count = 0
    for window in _windows(text, table):
        if not table.may_run.search(text, *window):
            continue
        for run in table.runs.finditer(text, *window):
            start, end = run.span()
            if not start == last > 0:  # else a run cut at a window's end, going on with its count
                count = table.edges.get(text[start - 1], (0, 0))[1] if start else 0
            pieces.append(text[last:start])
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
    """One text Unicode-normalized (``form`` "NFC" or "NFKC") in linear time: made stream-safe, then checked and
    normalized a piece at a time (so Ctrl-C is seen), within MAX_TEXT_LENGTH code points once normalized. A text
    long enough to pass that limit once decomposed is refused, by an InvalidInputError naming it and the form, as
    soon as what it must become passes it: first by what no composition can take away (counted, not normalized),
    then by its normalized pieces; from the point where they outgrow twice the input only their lengths are kept
    (the text is normalized again once it is known to fit)."""
    text = stream_safe(text)
    if text.isascii():
        return text
    table = _table()
    if len(text) * table.growth_of[form] <= MAX_TEXT_LENGTH:  # cannot outgrow the limit: normalized as it comes
        return _joined(text, form)
    if table.expands[form]:  # NFKC: a character may become several that no composition takes away
        least = _least_length(text, form)
        if least > MAX_TEXT_LENGTH:
            raise _too_long(key, index, form, least)
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
        return _joined(text, form)
    return "".join(pieces)


def _joined(text: str, form: Any) -> str:
    """``text`` normalized, piece by piece; ``text`` itself when every piece already is."""
    pieces = list(_normalized_pieces(text, form))
    return text if len(pieces) == 1 and pieces[0] is text else "".join(pieces)


def _least_length(text: str, form: str) -> int:
    """At least how many code points ``text`` has once normalized (what no composition can take away), counted a
    window at a time and given as soon as it passes MAX_TEXT_LENGTH."""
    from collections import Counter

    kept = _table().kept[form]
    total = 0
    for start in range(0, len(text), SCAN_WINDOW):
        window = text[start:start + SCAN_WINDOW]
        total += len(window) + sum(times * (kept[char] - 1) for char, times in Counter(window).items()
                                   if char in kept)
        if total > MAX_TEXT_LENGTH:
            break
    return total


def _normalized_pieces(text: str, form: Any) -> Iterator[str]:
    """``text`` normalized a piece at a time, split where normalizing the pieces is normalizing the whole; a piece
    already normalized is given as it is (the whole text, when it is one piece)."""
    import unicodedata

    start = 0
    while start < len(text):
        end = _split_from(text, start + NORMALIZE_CHUNK, form)
        piece = text[start:end] if start or end < len(text) else text
        yield piece if unicodedata.is_normalized(form, piece) else unicodedata.normalize(form, piece)
        start = end


def _split_from(text: str, start: int, form: str) -> int:
    """The first place from ``start`` on where ``text`` may be cut into pieces normalized apart (its length if
    none): a split point, else a pair split (:func:`_pair_split`), looked for a window at a time."""
    splits = _table().splits
    while start < len(text):
        for reach in (NEAR, SCAN_WINDOW):  # a split is nearly always within a few code points
            split = splits.search(text, start, start + reach)
            found = split.start() if split else _pair_split(text, start, start + reach, form)
            if found is not None:
                return found
        start += SCAN_WINDOW
    return len(text)


def _pair_split(text: str, start: int, end: int, form: str) -> int | None:
    """The first place in ``text[start:end]`` where a text without split points may still be normalized in pieces:
    before a starter that nothing the previous character can end as composes with (a run of Hangul vowels, ...)."""
    import unicodedata

    table = _table()
    first, last, unsafe_after = table.first[form], table.last[form], table.unsafe_after
    for index in range(max(start, 1), min(end, len(text))):
        char = first.get(text[index], text[index])
        before = last.get(text[index - 1], text[index - 1])
        if (not unicodedata.combining(char) and not unicodedata.combining(before)
                and before not in unsafe_after.get(char, ())):
            return index
    return None


def _too_long(key: str, index: int, form: str, length: int) -> InvalidInputError:
    return InvalidInputError(key, f"at most {MAX_TEXT_LENGTH} code points once normalized (normalize={form}), got "
                                  f"more than {min(length, MAX_TEXT_LENGTH)}", index=index)


def prepared(key: str, texts: Sequence[Any], settings: Settings, offset: int = 0) -> list[Any]:
    """The one text preparation: a chunk's texts as both kernels count them under ``settings``, Unicode-normalized
    when its ``normalize`` says so (bounded, as :func:`normalized_text` says), then lowercased when its
    ``lowercase`` does; a missing reference (None) stays None. The list itself when neither applies, else a new one
    (inputs unchanged). Each kernel leaves out whitespace itself, as it reads a text's characters."""
    form, lowercase = settings.normalize, settings.lowercase
    if form is None and not lowercase:
        return texts if isinstance(texts, list) else list(texts)
    return [text if text is None else prepared_text(key, index, text, form, lowercase)
            for index, text in enumerate(texts, offset)]


def prepared_text(key: str, index: int, text: str, form: str | None, lowercase: bool) -> str:
    """One text (or word token) as :func:`prepared` makes it: normalized under ``form`` (None: not), then lowercased
    when ``lowercase``."""
    if form is not None:
        text = normalized_text(key, index, text, form)
    return text.lower() if lowercase else text
