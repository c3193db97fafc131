"""The pure-Python counting kernel: the same numbers as the native one, for every platform.

Linear in the text, and built from C-level passes over lists (arithmetic, Counter, set operations) rather than
Python loops over positions. Words are first written as one code point each (a token's index in the segment's
vocabulary), so character and word n-grams are both substrings and share one code path. Counted by position, an
n-gram is a number, its key: its code points' codes as digits (see _codes), built by one addition per position and
order and hashed at once, where a string would be copied and hashed byte by byte.

Short references are searched as strings. Long texts are first searched for long stretches they share (along the
texts, then, when that finds little, anywhere: moved blocks, repeats), whose inner n-grams match one to one and are
counted by length; what follows runs on the positions left. When both sides have many positions left, they are
counted by sorting: each position's next code points as one number, sorted once, so that the equal n-grams of every
order lie together and each order's matches are read off the sorted numbers; that costs the same on any data, where
n-grams that persist from order to order (texts repeated with scattered changes) would cost a pass per order. Else
(a short side, or one much longer than the other), orders at which most n-grams repeat many times are counted down,
by distinct n-gram, from a start order's counts; from there each order is counted up by position, keeping only
positions whose n-gram the other side has too, until most positions persist from one order to the next, when the
rest is sorted.
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from itertools import accumulate, chain, compress, islice, repeat
from operator import add, lshift, mul, sub, xor
from typing import TypeVar

# Up to this many code points, a reference is searched rather than its n-grams hashed (see
# add_orders_short_reference); the bound keeps every search, and so the whole count, linear. There, the rest is
# sorted once the repeated matches of an order times the orders left reach this many per position to sort (more at
# order 2, where short n-grams repeat by chance).
SHORT_REFERENCE = 256
REPEATS_TO_SORT = 1.0
REPEATS_TO_SORT_AT_ORDER_2 = 1.5
# Texts with at least this many positions left on each side, and at most SORTED_BALANCE times as many on one side
# as on the other, are counted by sorting (see _add_sorted), at a cost that does not depend on the data; counted
# order by order, n-grams that persist (texts repeated with scattered changes) cost a pass per order.
SORTED_FROM = 256
SORTED_BALANCE = 4
# Counted order by order, the rest is sorted (see add_orders_from) once at least this share of an order's live
# positions stays live at the next (the n-grams persist), with at least SORTED_FROM_ORDER orders and
# SORTED_SWITCH_FROM positions left.
PERSISTENT = 0.6
SORTED_FROM_ORDER = 2
SORTED_SWITCH_FROM = 64
# For sorting, codes are written as bytes 2..255 (DIGIT_BASE digits; 0 and 1 pad the hypothesis and the reference).
DIGIT_BASE = 254
PLUS_TWO = bytes((value + 2) & 255 for value in range(256))
SIDE_STEP = (1,) + (-1,) * 255  # a sorted number's low byte -> +1 for a hypothesis n-gram (0), -1 for a reference one
# Texts at least this long (both) are first searched for long stretches they share (see _shared_stretches), and
# a stretch counts when it is at least this many code points longer than the top order.
STRETCHES_FROM = 512
STRETCH_OVER_ORDER = 1
# Stretches are counted by length only when they hold at least 1/STRETCHES_WORTH of the shorter text: leaving a few
# positions out costs the count of what is left a pass over the text (whole texts are counted more cheaply).
STRETCHES_WORTH = 16
# The search follows an agreement to its end, then re-finds one by looking up the next code points of one text
# within this many code points of the current place in the other.
RESYNC_WINDOW = 256
# When the search along the texts covers less than half of the shorter one, up to FAR_PROBES evenly spaced points of
# the hypothesis outside the stretches found are looked up anywhere in the reference (FAR_ANCHOR code points: from
# 100 on, str.find runs in linear time), so that blocks moved far, or texts repeated, are found too; such a stretch
# counts from FAR_SHORTEST code points on.
FAR_PROBES = 64
FAR_ANCHOR = 100
FAR_SHORTEST = 256
# Up to this base, extending keys looks each code's weight up in a table instead of multiplying (see _extended).
SCALE_TABLE = 4096
# Code points are read from the text's UTF-32 encoding into an array of this four-byte type (see _code_points).
FOUR_BYTE_ARRAY = next((code for code in "IL" if array(code).itemsize == 4), "")
NATIVE_UTF_32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"
CODE_POINTS = sys.maxunicode + 1  # how many distinct words a segment pair can have as one code point each
Gram = TypeVar("Gram", str, int)  # an n-gram: its text, or its key (see _codes)
ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # string.punctuation


def words(text: str) -> list[str]:
    """Word tokens as chrF++.py's separate_punctuation makes them.

    Split on whitespace; a one-code-point word stays whole; otherwise one trailing, else one leading,
    ASCII punctuation mark is split off.
    """
    tokens: list[str] = []
    for word in text.split():
        if len(word) > 1 and word[-1] in ASCII_PUNCTUATION:
            tokens += (word[:-1], word[-1])
        elif len(word) > 1 and word[0] in ASCII_PUNCTUATION:
            tokens += (word[0], word[1:])
        else:
            tokens.append(word)
    return tokens


def token_texts(tokens_h: list[str], tokens_r: list[str]) -> tuple[str, str]:
    """Both sides' tokens as strings of one code point per token, equal code points for equal tokens.

    Code points are only compared, never encoded, so surrogates serve like any other. A request holds far fewer
    than CODE_POINTS distinct tokens; should a segment pair (a command-line line of megabytes) hold more, the
    tokens found on one side only become one code point per side: n-grams holding them can match nothing either
    way, and the totals do not depend on which tokens they are.
    """
    vocabulary = dict.fromkeys(tokens_h)
    vocabulary.update(dict.fromkeys(tokens_r))
    if len(vocabulary) <= CODE_POINTS:
        code = dict(zip(vocabulary, map(chr, range(len(vocabulary)))))
        return "".join(map(code.__getitem__, tokens_h)), "".join(map(code.__getitem__, tokens_r))
    shared = set(tokens_h).intersection(tokens_r)
    if len(shared) + 2 > CODE_POINTS:
        raise ValueError(f"a segment pair shares {len(shared)} distinct words; the pure-Python kernel counts at "
                         f"most {CODE_POINTS - 2} (the native kernel has no such limit)")
    code = dict(zip(shared, map(chr, range(2, len(shared) + 2))))
    return ("".join([code.get(token, "\x00") for token in tokens_h]),
            "".join([code.get(token, "\x01") for token in tokens_r]))


def add_orders(text_h: str, text_r: str, out: list[int], offset: int, orders: int) -> None:
    """Add the matches of orders 1..orders of two different non-empty texts to ``out[offset + 3 * (n - 1) + 2]``.

    Long texts are first searched for long stretches they share: along the texts, then, if that covers less than
    half of the shorter one, by looking points of the hypothesis up anywhere in the reference (moved blocks,
    repeated texts). Each stretch's n-grams that start before its last orders - 1 code points lie within it at every
    order, and the other text has the same ones: they match one to one, at every order, and are counted by length.
    As min(x + a, x + b) = x + min(a, b), the rest of the matches are those among the n-grams of the remaining
    positions (the gaps and the stretches' last orders - 1 code points), counted by :func:`add_orders_at`. When
    the stretches hold little of the texts, the whole texts are counted instead (read whole, they cost less).
    """
    length_h, length_r = len(text_h), len(text_r)
    if min(length_h, length_r) >= STRETCHES_FROM and orders > 1:
        stretches = _shared_stretches(text_h, text_r, orders + STRETCH_OVER_ORDER)
        if 2 * sum(length for _, _, length in stretches) < min(length_h, length_r):
            stretches = _with_far_stretches(text_h, text_r, stretches)
        tail = orders - 1
        inner = sum(length for _, _, length in stretches) - len(stretches) * tail
        if STRETCHES_WORTH * inner >= min(length_h, length_r):  # else counting the whole texts costs less
            for n in range(1, orders + 1):
                out[offset + 3 * (n - 1) + 2] += inner
            rest_h = _outside(sorted((at_h, at_h + length - tail) for at_h, _, length in stretches), length_h)
            rest_r = _outside(sorted((at_r, at_r + length - tail) for _, at_r, length in stretches), length_r)
            add_orders_at(text_h, rest_h, text_r, rest_r, out, offset, orders)
            return
    add_orders_at(text_h, list(range(length_h)), text_r, list(range(length_r)), out, offset, orders)


def add_orders_at(text_h: str, live_h: list[int], text_r: str, live_r: list[int], out: list[int], offset: int,
                  orders: int) -> None:
    """Add the matches of orders 1..orders among the n-grams that start at the given positions (sorted): by sorting
    (see :func:`_add_sorted`) when both sides have many and about as many, else order by order
    (:func:`add_orders_from`), which costs less where most n-grams part early and adapts where they persist."""
    fewer, more = sorted((len(live_h), len(live_r)))
    if fewer < SORTED_FROM or more > SORTED_BALANCE * fewer or orders == 1:
        add_orders_from(text_h, live_h, text_r, live_r, out, offset, orders)
        return
    codes_h, codes_r, base = _codes(text_h, text_r, _alphabet(text_h, live_h, text_r, live_r))
    _add_sorted(codes_h, live_h, codes_r, live_r, base, 1, orders, out, offset)


def _outside(spans: list[tuple[int, int]], length: int) -> list[int]:
    """The positions below ``length`` outside the given disjoint spans [start, end), sorted by start."""
    rest, end = [], 0
    for start, stop in spans:
        rest.append(range(end, start))
        end = stop
    rest.append(range(end, length))
    return list(chain.from_iterable(rest))


def add_orders_from(text_h: str, live_h: list[int], text_r: str, live_r: list[int], out: list[int], offset: int,
                    orders: int) -> None:
    """Add the matches of orders 1..orders among the n-grams that start at the given positions (sorted), order by
    order.

    Orders below a start order, where most n-grams repeat many times, are counted down from the start order's
    counts (:func:`_add_top_down`). From the start order on, each order's n-grams are the live positions'
    (n-1)-grams extended by the next code point: keys (see :func:`_codes`), one addition per position, in C, and
    positions whose n-gram the other side lacks are dropped. Once most positions of an order stay live at the next
    (the n-grams persist, as in texts repeated with scattered changes), the rest is sorted (:func:`_add_sorted`)
    rather than carried through a pass per order: the passes cost at most a few times the positions, the sort once.
    """
    length_h, length_r = len(text_h), len(text_r)
    whole = len(live_h) == length_h and len(live_r) == length_r
    if whole:
        chars_h, chars_r = Counter(text_h), Counter(text_r)
    else:
        chars_h, chars_r = Counter(map(text_h.__getitem__, live_h)), Counter(map(text_r.__getitem__, live_r))
    if chars_h.keys().isdisjoint(chars_r.keys()):
        return
    start = min(_start_order(chars_h, len(live_h)), _start_order(chars_r, len(live_r)), orders)
    if start > 1:
        out[offset + 2] += _matches(chars_h, chars_r)
    # From here on an n-gram is a number, its key (see _codes).
    codes_h, codes_r, base = _codes(text_h, text_r, _alphabet(text_h, live_h, text_r, live_r))
    # The live positions of each side, in order, and their n-grams (those that have room for one).
    if whole:
        grams_h, grams_r = _keys(codes_h, start, base), _keys(codes_r, start, base)
    else:
        grams_h, grams_r = _keys_at(codes_h, live_h, start, base), _keys_at(codes_r, live_r, start, base)
    for n in range(start, orders + 1):
        if n > start:
            del live_h[len(grams_h) :], live_r[len(grams_r) :]
            del live_h[bisect_right(live_h, length_h - n) :], live_r[bisect_right(live_r, length_r - n) :]
            grams_h = _extended(grams_h, codes_h, live_h, n - 1, base)
            grams_r = _extended(grams_r, codes_r, live_r, n - 1, base)
            if not grams_h or not grams_r:
                return
        counts_h, counts_r = Counter(grams_h), Counter(grams_r)
        if n == start > 2:  # the orders below the start, counted down from it
            _add_top_down(counts_h, counts_r, _key_at_end(codes_h, live_h, base), _key_at_end(codes_r, live_r, base),
                          _key_prefix(base), start - 1, 1, out, offset)
        common = counts_h.keys() & counts_r.keys()
        if not common:
            return
        if len(counts_h) == len(grams_h) or len(counts_r) == len(grams_r):
            matches = len(common)
        else:  # sum of min(a, b) as (a + b - |a - b|) / 2, all in C
            in_h, in_r = list(map(counts_h.__getitem__, common)), list(map(counts_r.__getitem__, common))
            matches = (sum(in_h) + sum(in_r) - sum(map(abs, map(sub, in_h, in_r)))) // 2
        out[offset + 3 * (n - 1) + 2] += matches
        if n == orders:
            return
        # Drop the positions whose n-gram the other side lacks (they cannot match again). A pass costs, so a few are
        # carried along until they are worth one.
        before = len(grams_h) + len(grams_r)
        if 16 * (len(counts_h) - len(common)) > len(counts_h):
            grams_h, live_h = _keep(grams_h, live_h, list(map(common.__contains__, grams_h)))
        if 16 * (len(counts_r) - len(common)) > len(counts_r):
            grams_r, live_r = _keep(grams_r, live_r, list(map(common.__contains__, grams_r)))
        left = len(grams_h) + len(grams_r)
        if n > start and orders - n >= SORTED_FROM_ORDER and left >= SORTED_SWITCH_FROM and (
                left >= PERSISTENT * before):
            _add_sorted(codes_h, live_h[: len(grams_h)], codes_r, live_r[: len(grams_r)], base, n + 1, orders, out,
                        offset)
            return


def _shared_stretches(text_h: str, text_r: str, shortest: int) -> list[tuple[int, int, int]]:
    """Stretches of at least ``shortest`` code points that the texts share, in order: (start in h, start in r,
    length).

    Greedy from the start: follow the agreement as far as it goes (slices compared in C, doubling then halving),
    then re-find one by looking up the next ``shortest`` code points of one text near the current place in the
    other. Any stretches count exactly (see :func:`add_orders`), so the search may miss some; it takes time linear
    in the text and gives up when it stops paying (after a few fruitless tries, more for each stretch found),
    so texts that share little cost it little.
    """
    length_h, length_r = len(text_h), len(text_r)
    stretches: list[tuple[int, int, int]] = []
    tries, i, j = 16, 0, 0
    while tries > 0 and i < length_h and j < length_r:
        length = _agreement(text_h, i, text_r, j)
        if length >= shortest:
            stretches.append((i, j, length))
            tries += length // 32
        else:
            tries -= 1
        i, j = i + length, j + length
        for skip in range(1, RESYNC_WINDOW, shortest):  # past the difference: one side, then the other
            anchor = text_h[i + skip : i + skip + shortest]
            at = text_r.find(anchor, j, j + RESYNC_WINDOW + shortest) if len(anchor) == shortest else -1
            if at >= 0:
                i, j = i + skip, at
                break
            anchor = text_r[j + skip : j + skip + shortest]
            at = text_h.find(anchor, i, i + RESYNC_WINDOW + shortest) if len(anchor) == shortest else -1
            if at >= 0:
                i, j = at, j + skip
                break
            tries -= 1
            if tries <= 0:
                break
        else:
            i, j = i + RESYNC_WINDOW, j + RESYNC_WINDOW
    return stretches


def _with_far_stretches(text_h: str, text_r: str, stretches: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """``stretches`` and the long ones found by looking up points of the hypothesis anywhere in the reference.

    At up to FAR_PROBES evenly spaced points outside the stretches so far, the next FAR_ANCHOR code points are
    searched in the reference (str.find, in C, linear for such needles); a hit is followed back and forth, and kept
    when it is at least FAR_SHORTEST long and overlaps no stretch on either side. At most FAR_PROBES searches and
    as many agreements, each linear in the text: linear in the text.
    """
    taken_h = sorted((at_h, at_h + length) for at_h, _, length in stretches)
    taken_r = sorted((at_r, at_r + length) for _, at_r, length in stretches)
    found = list(stretches)
    reversed_h, reversed_r = text_h[::-1], text_r[::-1]
    length_h, length_r = len(text_h), len(text_r)
    step = max(FAR_ANCHOR, length_h // FAR_PROBES)
    i, probes = 0, FAR_PROBES
    while i + FAR_ANCHOR <= length_h and probes > 0:
        inside = bisect_right(taken_h, (i, length_h)) - 1
        if inside >= 0 and taken_h[inside][1] > i:  # within a stretch: go on after it
            i = max(i + step, taken_h[inside][1])
            continue
        probes -= 1
        j = text_r.find(text_h[i : i + FAR_ANCHOR])
        if j >= 0:
            back = _agreement(reversed_h, length_h - i, reversed_r, length_r - j)
            start_h, start_r = i - back, j - back
            length = back + _agreement(text_h, i, text_r, j)
            if length >= FAR_SHORTEST and _free(taken_h, start_h, length) and _free(taken_r, start_r, length):
                found.append((start_h, start_r, length))
                insort(taken_h, (start_h, start_h + length))
                insort(taken_r, (start_r, start_r + length))
                i = start_h + length
                continue
        i += step
    return found


def _free(taken: list[tuple[int, int]], start: int, length: int) -> bool:
    """Whether [start, start + length) overlaps none of the sorted disjoint spans ``taken``."""
    at = bisect_right(taken, (start, start))
    return (at == 0 or taken[at - 1][1] <= start) and (at == len(taken) or taken[at][0] >= start + length)


def _agreement(text_h: str, i: int, text_r: str, j: int) -> int:
    """How many code points ``text_h[i:]`` and ``text_r[j:]`` share from their start; linear in the answer."""
    limit = min(len(text_h) - i, len(text_r) - j)
    agreed, step = 0, 16
    while agreed < limit and text_h[i + agreed : i + agreed + step] == text_r[j + agreed : j + agreed + step]:
        agreed, step = agreed + step, 2 * step
    while step > 1 and agreed < limit:  # the difference is within the next step: halve it
        step //= 2
        if text_h[i + agreed : i + agreed + step] == text_r[j + agreed : j + agreed + step]:
            agreed += step
    return min(agreed, limit)


def _add_sorted(codes_h: list[int], live_h: list[int], codes_r: list[int], live_r: list[int], base: int, low: int,
                orders: int, out: list[int], offset: int) -> None:
    """Add the matches of orders low..orders among the n-grams at the live positions (sorted), all orders at once.

    Each position's next ``orders`` codes become one number, the first code its highest digit, so that sorting the
    numbers of both sides brings the equal n-grams of every order together; below them, one byte: 0 in a
    hypothesis number, nonzero in a reference one (the code that follows). The n-grams of order n are then the runs
    of sorted numbers that agree on their first n codes, read off the highest bit in which neighbours differ, and a
    run holding a hypothesis and b reference numbers has min(a, b) = (a + b - |a - b|) / 2 matches, where a - b is
    a difference of prefix sums of +1 (hypothesis) and -1. Near the end, the numbers are padded with codes that no
    text has, different on each side, so that n-grams past the end match nothing. Costs one sort, the same for any
    data, and per order a few passes over that order's run boundaries.
    """
    if base <= DIGIT_BASE:
        width, buffer_h, buffer_r = 1, bytes(codes_h).translate(PLUS_TWO), bytes(codes_r).translate(PLUS_TWO)
    else:
        distinct = set(codes_h).union(codes_r)
        width = 1 if len(distinct) <= DIGIT_BASE else 2 if len(distinct) <= DIGIT_BASE**2 else 3
        digits = {code: bytes(number // DIGIT_BASE**k % DIGIT_BASE + 2 for k in range(width - 1, -1, -1))
                  for number, code in enumerate(distinct)}
        buffer_h, buffer_r = b"".join(map(digits.__getitem__, codes_h)), b"".join(map(digits.__getitem__, codes_r))
    span = orders * width
    buffer_h += bytes(span)
    buffer_r += b"\x01" * (span + 1)
    if width == 1 and len(live_h) == len(codes_h) and len(live_r) == len(codes_r):  # every position: one pass each
        windows_h = _windows(span).findall(buffer_h)[: len(codes_h)]
        windows_r = _windows(span + 1).findall(buffer_r)[: len(codes_r)]
    else:
        starts_h = live_h if width == 1 else list(map(mul, live_h, repeat(width)))
        starts_r = live_r if width == 1 else list(map(mul, live_r, repeat(width)))
        windows_h = list(map(buffer_h.__getitem__, map(slice, starts_h, map(span.__add__, starts_h))))
        windows_r = list(map(buffer_r.__getitem__, map(slice, starts_r, map((span + 1).__add__, starts_r))))
    numbers = list(map(lshift, map(int.from_bytes, windows_h), repeat(8)))
    numbers.extend(map(int.from_bytes, windows_r))
    if len(numbers) < 2:
        return
    numbers.sort()
    differ = list(map(xor, islice(numbers, 1, None), numbers))
    agreeing = bytes(map(int.bit_length, differ)).translate(_agreeing_codes(orders, width))
    low_bytes = accumulate(map((255).__and__, differ), xor, initial=numbers[0] & 255)
    balance = list(accumulate(map(SIDE_STEP.__getitem__, low_bytes), initial=0))  # hypothesis - reference numbers
    total, last = len(numbers), balance[-1]
    at_bounds = balance[1:-1]  # the balance before each number but the first
    for n in range(orders, low - 1, -1):  # each order's run boundaries are some of the next order's
        at_bounds = list(compress(at_bounds, agreeing.translate(_below(n))))
        agreeing = agreeing.translate(None, _at_least(n))
        unmatched = abs(last)
        if at_bounds:
            unmatched = sum(map(abs, map(sub, islice(at_bounds, 1, None), at_bounds))) + abs(at_bounds[0]) + abs(
                last - at_bounds[-1])
        out[offset + 3 * (n - 1) + 2] += (total - unmatched) // 2


@cache
def _windows(length: int) -> re.Pattern[bytes]:
    """A pattern whose findall gives every run of ``length`` bytes, overlapping ones included."""
    return re.compile(b"(?=(.{%d}))" % length, re.DOTALL)


@cache
def _agreeing_codes(orders: int, width: int) -> bytes:
    """A table from the length of the XOR of two sorted neighbours (see :func:`_add_sorted`) to how many of their
    first codes agree: the highest differing bit lies in byte (length - 1) // 8 from the low end; byte 0 is the side
    byte, bytes 1.. hold the codes from the last one, ``width`` bytes each."""
    agree = [orders] * 9 + [orders - 1 - ((length - 1) // 8 - 1) // width
                            for length in range(9, 8 * orders * width + 9)]
    return bytes(agree + [0] * (256 - len(agree)))


@cache
def _below(n: int) -> bytes:
    """A table keeping the neighbours that agree on fewer than n codes: boundaries between n-grams."""
    return bytes(value < n for value in range(256))


@cache
def _at_least(n: int) -> bytes:
    """The agreement values to drop once order n is counted."""
    return bytes(range(n, 256))


def _add_top_down(counts_h: dict[Gram, int], counts_r: dict[Gram, int], end_h: Callable[[int], Gram | None],
                  end_r: Callable[[int], Gram | None], prefix: Callable[[int], Callable[[Gram], Gram]], high: int,
                  low: int, out: list[int], offset: int) -> None:
    """Add the matches of orders high..low+1, counted down from the counts of the live positions' (high+1)-grams.

    Each order's counts are the next order's, summed by prefix, plus the one live position (if any) with room for
    this order but not the next. Costs the number of distinct n-grams per order, not the number of positions.
    """
    for k in range(high, low, -1):
        shorten = prefix(k)
        counts_h, counts_r = _shorter(counts_h, shorten, end_h(k)), _shorter(counts_r, shorten, end_r(k))
        out[offset + 3 * (k - 1) + 2] += _matches(counts_h, counts_r)


def _matches(counts_h: dict[Gram, int], counts_r: dict[Gram, int]) -> int:
    """Clipped matches: the sum over shared n-grams of the smaller count."""
    return _clipped(counts_h, counts_r, counts_h.keys() & counts_r.keys())


def _clipped(counts_h: dict[Gram, int], counts_r: dict[Gram, int], grams: set[Gram]) -> int:
    """The sum over ``grams`` (each counted on both sides) of the smaller count."""
    return sum(map(min, map(counts_h.__getitem__, grams), map(counts_r.__getitem__, grams)))


def _start_order(counts: Counter[str], length: int) -> int:
    """The order from which n-grams are counted upward (those below it are counted down from it).

    Below it most n-grams repeat many times, which is cheaper to count down, by distinct n-gram, than up, by
    position. Estimated as the first order at which the text's perplexity per code point (its entropy as a
    number of equally likely code points) gives an eighth as many n-grams as positions.
    """
    entropy: float = math.log(length) - sum(map(mul, counts.values(), map(math.log, counts.values()))) / length
    if entropy < 0.4:  # nearly one repeated code point
        return length
    return max(1, math.ceil(math.log(max(length / 8, 1)) / entropy))


def _shorter(counts: dict[Gram, int], shorten: Callable[[Gram], Gram], at_end: Gram | None) -> dict[Gram, int]:
    """Counts of k-grams from counts of (k+1)-grams: summed by prefix (``shorten``), plus ``at_end``, the k-gram of
    the live position at len - k, if there is one (it has no (k+1)-gram)."""
    shorter: dict[Gram, int] = {}
    get = shorter.get
    for gram, times in zip(map(shorten, counts), counts.values()):
        shorter[gram] = get(gram, 0) + times
    if at_end is not None:
        shorter[at_end] = get(at_end, 0) + 1
    return shorter


def _key_prefix(base: int) -> Callable[[int], Callable[[int], int]]:
    """k -> the key of a (k+1)-gram's first k codes (its lowest k digits)."""
    def prefix(k: int) -> Callable[[int], int]:
        modulus: int = base**k
        return modulus.__rmod__
    return prefix


def _key_at_end(codes: list[int], live: list[int], base: int) -> Callable[[int], int | None]:
    """k -> the key of the k-gram at len(codes) - k if that position is live."""
    def at_end(k: int) -> int | None:
        return _key(codes, len(codes) - k, k, base) if _is_live(live, len(codes) - k) else None
    return at_end


def _is_live(live: list[int], position: int) -> bool:
    """Whether ``position`` is among the live positions (sorted)."""
    at = bisect_left(live, position)
    return position >= 0 and at < len(live) and live[at] == position


def _key(codes: list[int], at: int, n: int, base: int) -> int:
    """The key of the n-gram at ``at``: its codes as digits in ``base``, the first code the lowest digit."""
    key = 0
    for code in reversed(codes[at : at + n]):
        key = key * base + code
    return key


def _alphabet(text_h: str, live_h: list[int], text_r: str, live_r: list[int]) -> set[str] | None:
    """The texts' alphabet, for codes that number it densely (small keys), when that is worth a pass over the texts:
    when at least a quarter of their positions are live."""
    if 4 * (len(live_h) + len(live_r)) >= len(text_h) + len(text_r):
        return set(text_h).union(text_r)
    return None


def _codes(text_h: str, text_r: str, alphabet: set[str] | None) -> tuple[list[int], list[int], int]:
    """Both texts' codes, one per code point, and the base of the keys written with them.

    An n-gram's key is the sum of its i-th code times base**i: the first code is the lowest digit, so extending an
    n-gram adds one term and its first k code points' key is the key modulo base**k. Equal keys of one order are
    equal n-grams. Given the texts' alphabet, the codes number it densely (small digits, so keys stay within one
    machine word up to higher orders); else they are the code points.
    """
    if alphabet is not None:
        code = {point: number for number, point in enumerate(alphabet)}
        return list(map(code.__getitem__, text_h)), list(map(code.__getitem__, text_r)), max(2, len(code))
    base = 128 if text_h.isascii() and text_r.isascii() else sys.maxunicode + 1
    return _code_points(text_h), _code_points(text_r), base


def _code_points(text: str) -> list[int]:
    """The code points of ``text`` (lone surrogates included), by passes in C."""
    if FOUR_BYTE_ARRAY:
        return array(FOUR_BYTE_ARRAY, text.encode(NATIVE_UTF_32, "surrogatepass")).tolist()
    return list(map(ord, text))


def _codes_at(codes: list[int], live: Sequence[int], shift: int) -> Iterator[int]:
    """The codes at the live positions + shift, which must lie in the text (a slice when every position is live,
    then a lookup in a shifted copy while most are, else sums)."""
    if len(live) == len(codes) - shift:  # sorted distinct positions below len - shift, as many: all of them
        return iter(codes[shift:])
    if 4 * len(live) >= len(codes):
        return map(codes[shift:].__getitem__, live)
    return map(codes.__getitem__, map(shift.__add__, live))


def _keys(codes: list[int], n: int, base: int) -> list[int]:
    """Every n-gram's key, in order, built by doubling (a 2k-gram is a k-gram plus the next one times base**k)."""
    if n == 1:
        return codes
    keys, size = _extended(codes, codes, range(len(codes) - 1), 1, base), 2
    while 2 * size <= n:
        keys, size = list(map(add, keys, map(mul, keys[size:], repeat(base**size)))), 2 * size
    if size < n:
        keys = list(map(add, keys, map(mul, _keys(codes[size:], n - size, base), repeat(base**size))))
    return keys


def _keys_at(codes: list[int], live: list[int], n: int, base: int) -> list[int]:
    """The keys of the n-grams at the live positions (sorted) that have room for one."""
    live = live[: bisect_right(live, len(codes) - n)]
    keys = list(_codes_at(codes, live, 0))
    for j in range(1, n):
        keys = _extended(keys, codes, live, j, base)
    return keys


def _extended(keys: list[int], codes: list[int], live: Sequence[int], shift: int, base: int) -> list[int]:
    """The keys of the (shift)-grams at the live positions extended by one code, the one at live + shift."""
    weight = base**shift
    following = _codes_at(codes, live, shift)
    if base <= SCALE_TABLE and 4 * base <= len(keys):  # each code's weight from a table: one new object per key
        return list(map(add, keys, map([code * weight for code in range(base)].__getitem__, following)))
    return list(map(add, keys, map(mul, following, repeat(weight))))


def add_orders_short_reference(hypothesis: str, reference: str, out: list[int], offset: int, orders: int) -> None:
    """:func:`add_orders` when the reference is short (at most SHORT_REFERENCE code points).

    Only hypothesis n-grams are built: each is looked up by searching the reference string, which for a short
    reference is cheaper than hashing the reference's n-grams. A search costs at most the reference's length
    times n, so the bound on the reference keeps this linear in the text. A matched n-gram that the hypothesis
    repeats costs more searches, to clip it to the reference's count; when repeats are many (a hypothesis that
    repeats itself, or a long one that repeats the reference), the rest is sorted once instead (see
    :func:`_add_sorted`).
    """
    length_h = len(hypothesis)
    counts_h, counts_r = Counter(hypothesis), Counter(reference)
    common = counts_h.keys() & counts_r.keys()
    if not common:
        return
    if len(counts_h) == length_h:
        out[offset + 2] += len(common)
    else:
        out[offset + 2] += _clipped(counts_h, counts_r, common)
    positions = list(compress(range(length_h), map(common.__contains__, hypothesis)))
    may_repeat = True
    for n in range(2, orders + 1):
        while positions and positions[-1] + n > length_h:
            positions.pop()
        if not positions:
            return
        grams = [hypothesis[i : i + n] for i in positions]
        found = list(map(reference.__contains__, grams))
        matches = found.count(True)
        if not matches:
            return
        if may_repeat:
            # A repeated hypothesis n-gram matches only as often as the reference has it. Once no matched n-gram
            # repeats, no longer one can (it would repeat its prefix).
            matched = Counter(compress(grams, found))
            if _worth_sorting(matches - len(matched), orders - n, matches + len(reference), n):
                codes_h, codes_r, base = _codes(hypothesis, reference, set(hypothesis).union(reference))
                _add_sorted(codes_h, list(compress(positions, found)), codes_r, list(range(len(reference))), base, n,
                            orders, out, offset)
                return
            repeated = [(gram, times) for gram, times in matched.items() if times > 1]
            for gram, times in repeated:
                matches -= times - min(times, _occurrences(reference, gram))
            may_repeat = bool(repeated)
        out[offset + 3 * (n - 1) + 2] += matches
        positions = list(compress(positions, found))


def _worth_sorting(repeats: int, orders_left: int, positions: int, n: int) -> bool:
    """Whether sorting ``positions`` costs less than clipping ``repeats`` repeated matches at order n, and as many
    at each order left, were they to persist."""
    return (REPEATS_TO_SORT_AT_ORDER_2 if n == 2 else REPEATS_TO_SORT) * positions <= repeats * orders_left


def _occurrences(text: str, part: str) -> int:
    """Occurrences of ``part`` in ``text``, overlapping ones included (str.count skips overlaps)."""
    count, start = 0, text.find(part)
    while start >= 0:
        count += 1
        start = text.find(part, start + 1)
    return count


def _keep(grams: list[int], live: list[int], keep: list[bool]) -> tuple[list[int], list[int]]:
    """The kept n-grams and the kept live positions (``keep`` runs over the n-grams, which are a prefix of them)."""
    kept = list(compress(live, keep))
    kept.extend(live[len(keep) :])
    return list(compress(grams, keep)), kept


def add_segment(hypothesis: str, reference: str, out: list[int], offset: int, orders: int) -> None:
    """Add one segment's counts of orders 1..orders (characters or token code points) at ``out[offset:]``."""
    for n in range(1, orders + 1):
        out[offset + 3 * (n - 1)] += max(0, len(hypothesis) - n + 1)
        out[offset + 3 * (n - 1) + 1] += max(0, len(reference) - n + 1)
    add_matches(hypothesis, reference, out, offset, orders)


def add_matches(hypothesis: str, reference: str, out: list[int], offset: int, orders: int) -> None:
    """Add the matches of orders 1..orders at ``out[offset + 3 * (n - 1) + 2]``: the identical and empty cases
    here, those of two different non-empty texts by the string search or the hashing path."""
    if not hypothesis or not reference:
        return
    if hypothesis == reference:
        for n in range(1, min(orders, len(hypothesis)) + 1):
            out[offset + 3 * (n - 1) + 2] += len(hypothesis) - n + 1
        return
    if len(reference) <= SHORT_REFERENCE:
        add_orders_short_reference(hypothesis, reference, out, offset, orders)
    else:
        add_orders(hypothesis, reference, out, offset, orders)


def count(
    hypotheses: Sequence[str],
    references: Sequence[str],
    char_order: int,
    word_order: int,
    include_whitespace: bool,
    per_segment: bool,
) -> tuple[tuple[int, int, int], ...] | bytes:
    """Same interface and results as the native kernel's ``count`` (texts already lowercased if asked)."""
    row = 3 * (char_order + word_order)
    totals = [0] * row
    rows = array("q")
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        out = [0] * row if per_segment else totals
        if char_order:
            if not include_whitespace:
                hypothesis_chars, reference_chars = "".join(hypothesis.split()), "".join(reference.split())
            else:
                hypothesis_chars, reference_chars = hypothesis, reference
            add_segment(hypothesis_chars, reference_chars, out, 0, char_order)
        if word_order:
            add_segment(*token_texts(words(hypothesis), words(reference)), out, 3 * char_order, word_order)
        if per_segment:
            rows.extend(out)
    if per_segment:
        return rows.tobytes()
    return tuple((totals[k], totals[k + 1], totals[k + 2]) for k in range(0, row, 3))
