"""The pure-Python counting kernel: the same numbers as the native one, for every platform.

Linear in the text, and built from C-level passes over lists (arithmetic, Counter, set operations) rather than
Python loops over positions. Words are first written as one code point each (a token's index in the segment's
vocabulary), so character and word n-grams are both substrings and share one code path. Counted by position, an
n-gram is a number, its key: its code points' codes as digits (see _codes), built by one addition per position and
order and hashed at once, where a string would be copied and hashed byte by byte.

Short references are searched as strings. Long texts are first searched for long stretches they share (along the
texts, then, when that finds little, anywhere: moved blocks, repeats), whose inner n-grams match one to one and are
counted by length; what follows runs on the positions left. Per segment: the orders at which most n-grams repeat
many times are counted down, by distinct n-gram, from a start order's counts; from there each order is counted up by
position, keeping only positions whose n-gram the other side has too. When the classes of equal n-grams are small,
the kernel looks ahead: unique pairs are settled by comparing their two continuations (first, when the matches fall
fast from order to order, so that most pairs part early), n-grams all of whose occurrences on one side continue
alike by comparing the other side's top-order n-grams with that side's one, and when few top-order n-grams remain
the rest is counted down from them. Where nearly all shared n-grams come in classes of at most two occurrences a side
that persist from order to order (texts repeated with scattered changes), those classes are settled at once from
the agreements of their members' continuations, read off numbers that pack each position's next codes.
"""

from __future__ import annotations

import math
import sys
from array import array
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, compress, repeat
from operator import add, and_, eq, ge, itemgetter, mul, ne, neg, not_, or_, sub, xor
from typing import TypeVar

# Up to this many code points, a reference is searched rather than its n-grams hashed (see
# add_orders_short_reference); the bound keeps every search, and so the whole count, linear.
SHORT_REFERENCE = 256
# Shared n-grams are settled (see _alike) only from this many live positions on, when they average at most
# SMALL_CLASS occurrences (both sides together): below that, looking costs more than settling saves.
SETTLE_FROM = 64
SMALL_CLASS = 4
# Classes of at most two occurrences a side are settled at once (see _add_small_classes) when the matches of an
# order are at least this share of the previous order's (the classes persist, so carrying them would cost many
# passes), and when at most this many orders are left (their continuations fit in a word; see _words).
PERSISTENT = 0.6
WORD_CODES = 7
WORD_MASK = (1 << 8 * WORD_CODES) - 1
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
# Unique pairs are settled along their most common diagonal (see _add_diagonal) from this many on.
DIAGONAL_FROM = 256
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
    positions (the gaps and the stretches' last orders - 1 code points), counted by :func:`add_orders_from`. When
    the stretches hold little of the texts, the whole texts are counted instead (their path costs fewer passes).
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
            add_orders_from(text_h, rest_h, text_r, rest_r, out, offset, orders)
            return
    add_orders_from(text_h, list(range(length_h)), text_r, list(range(length_r)), out, offset, orders)


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
    """Add the matches of orders 1..orders among the n-grams that start at the given positions (sorted).

    Orders below a start order, where most n-grams repeat many times, are counted down from the start order's
    counts (:func:`_add_top_down`). From the start order on, each order's n-grams are the live positions'
    (n-1)-grams extended by the next code point: keys (see :func:`_codes`), one addition per position, in C.
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
    matches_below = 0  # the previous order's matches
    if start > 1:
        matches_below = _matches(chars_h, chars_r)
        out[offset + 2] += matches_below
    # From here on an n-gram is a number, its key (see _codes). The codes number the texts' alphabet densely when
    # it is known or worth a pass over the texts (mostly live), so that keys stay small.
    if whole:
        alphabet: set[str] | None = chars_h.keys() | chars_r.keys()
    elif 4 * (len(live_h) + len(live_r)) >= length_h + length_r:
        alphabet = set(text_h).union(text_r)
    else:
        alphabet = None
    codes_h, codes_r, base = _codes(text_h, text_r, alphabet)
    # The live positions of each side, in order, and their n-grams (those that have room for one).
    if whole:
        grams_h, grams_r = _keys(codes_h, start, base), _keys(codes_r, start, base)
    else:
        grams_h, grams_r = _keys_at(codes_h, live_h, start, base), _keys_at(codes_r, live_r, start, base)
    settled = [0] * (orders + 2)  # difference array over orders: matches of the settled n-grams
    differences: dict[int, list[int]] = {}  # per diagonal, where the texts differ along it (see _add_diagonal)
    words: list[list[int]] = []  # each side's words (see _words), once needed
    look_below = len(live_h) + len(live_r)  # look ahead (see below) only while fewer positions than this are live
    previous_classes = 1
    for n in range(start, orders + 1):
        if n > start:
            del live_h[len(grams_h) :], live_r[len(grams_r) :]
            del live_h[bisect_right(live_h, length_h - n) :], live_r[bisect_right(live_r, length_r - n) :]
            grams_h = _extended(grams_h, codes_h, live_h, n - 1, base)
            grams_r = _extended(grams_r, codes_r, live_r, n - 1, base)
            if not grams_h or not grams_r:
                break
        counts_h, counts_r = Counter(grams_h), Counter(grams_r)
        if n == start > 2:  # the orders below the start, counted down from it
            matches_below = _add_top_down(counts_h, counts_r, _key_at_end(codes_h, live_h, base),
                                          _key_at_end(codes_r, live_r, base), _key_prefix(base), start - 1, 1, out,
                                          offset)
        common = counts_h.keys() & counts_r.keys()
        if not common:
            break
        in_h: list[int] | None = None
        in_r: list[int] | None = None
        if len(counts_h) == len(grams_h) or len(counts_r) == len(grams_r):
            matches = len(common)
        else:  # sum of min(a, b) as (a + b - |a - b|) / 2, all in C
            in_h, in_r = list(map(counts_h.__getitem__, common)), list(map(counts_r.__getitem__, common))
            matches = (sum(in_h) + sum(in_r) - sum(map(abs, map(sub, in_h, in_r)))) // 2
        out[offset + 3 * (n - 1) + 2] += matches
        if n == orders:
            break
        # Matches that fall fast from order to order (most unique pairs will part before the top; see below).
        falling = matches_below > 0 and (matches / matches_below) ** (orders - n) < 0.5
        persistent = matches >= PERSISTENT * matches_below
        matches_below = matches
        live = len(grams_h) + len(grams_r)
        # Look ahead at the top-order n-grams of the live positions when that is likely to end the work early:
        # when the classes are small (most will not branch again) or when few top-order n-grams are expected.
        classes, growth = len(counts_h) + len(counts_r), (len(counts_h) + len(counts_r)) / previous_classes
        previous_classes = classes
        look = orders - n >= 2 and SETTLE_FROM <= live <= look_below and (
            live <= SMALL_CLASS * len(common) or (n > 1 and classes * growth ** (orders - n) <= live))
        gone: set[int] = set()
        if persistent and 2 <= orders - n <= WORD_CODES and base <= 256 and SETTLE_FROM <= live <= SMALL_CLASS * len(
                common):
            # Most shared positions in classes of at most two a side, most of them not unique pairs (which the look
            # below settles more cheaply), and most live positions shared: settle those classes all at once.
            if in_h is None or in_r is None:
                in_h, in_r = list(map(counts_h.__getitem__, common)), list(map(counts_r.__getitem__, common))
            small = list(map(and_, map((3).__gt__, in_h), map((3).__gt__, in_r)))
            sizes = list(map(add, in_h, in_r))
            in_small, shared = sum(compress(sizes, small)), sum(sizes)
            if 8 * in_small >= 7 * shared and 3 * (in_small - 2 * sizes.count(2)) >= 2 * shared and 2 * shared >= live:
                if not words:
                    words.extend((_words(codes_h), _words(codes_r)))
                gone, small_matches = _add_small_classes(
                    list(compress(common, small)), list(compress(in_h, small)), list(compress(in_r, small)),
                    grams_h, live_h, words[0], grams_r, live_r, words[1], n, orders, settled)
                matches_below = matches - small_matches
                look = False
        if look:
            # Unique pairs (an n-gram once on each side) are settled by comparing their two continuations, when the
            # matches fall fast (then most pairs part before the top, and comparing them is cheaper than their
            # top-order n-grams); then, or else first, the shared n-grams one side of which continues alike, by
            # the top-order n-grams of the live positions (this includes the pairs and the n-grams that continue
            # alike on both sides).
            pairs_first = falling
            handled: set[int] = set()
            if pairs_first:
                if in_h is None or in_r is None:
                    in_h, in_r = list(map(counts_h.__getitem__, common)), list(map(counts_r.__getitem__, common))
                unique = set(compress(common, map((2).__eq__, map(add, in_h, in_r))))  # common is unchanged
                handled = _add_unique_pairs(unique, grams_h, live_h, text_h, grams_r, live_r, text_r, n, orders,
                                            settled, out, offset, differences)
            kept = common - handled if handled else common  # (common is not needed after this)
            gone = handled
            matches_below = matches - len(handled)  # the matches of the n-grams that stay live
            # After pairs went first at an order whose classes branched fast, or where they were a quarter or more of
            # the shared n-grams (the others: small classes whose members part at different orders), the other n-grams
            # hardly ever continue alike: looking at their top-order n-grams would cost passes and settle nothing.
            tops_h: list[str] = []
            tops_r: list[str] = []
            if not pairs_first or (growth <= 2 and 4 * len(handled) < len(common)):
                rest_grams_h: Sequence[int]
                rest_grams_r: Sequence[int]
                if handled:
                    in_rest_h, in_rest_r = list(map(kept.__contains__, grams_h)), list(map(kept.__contains__, grams_r))
                    rest_h, rest_r = list(compress(live_h, in_rest_h)), list(compress(live_r, in_rest_r))
                    rest_grams_h, rest_grams_r = list(compress(grams_h, in_rest_h)), list(compress(grams_r, in_rest_r))
                else:
                    rest_h, rest_r, rest_grams_h, rest_grams_r = live_h, live_r, grams_h, grams_r
                with_top_h = bisect_right(rest_h, length_h - orders)
                with_top_r = bisect_right(rest_r, length_r - orders)
                short_h, short_r = rest_grams_h[with_top_h:], rest_grams_r[with_top_r:]  # too near the end for a top
                tops_h = [text_h[i : i + orders] for i in rest_h[:with_top_h]]
                tops_r = [text_r[i : i + orders] for i in rest_r[:with_top_r]]
                one_sided, partners = _add_one_sided(kept, counts_h, counts_r, rest_grams_h, tops_h, short_h,
                                                     rest_grams_r, tops_r, short_r, n, orders, settled, out, offset)
                kept -= one_sided
                gone = gone | one_sided
                matches_below -= partners
        # Drop the positions settled above and those whose n-gram the other side lacks (they cannot match again).
        # A pass costs, so a few of the latter are carried along until they are worth one.
        if not look:
            kept = common - gone if gone else common
        if gone or 16 * (len(counts_h) - len(common)) > len(counts_h):
            grams_h, live_h = _keep(grams_h, live_h, list(map(kept.__contains__, grams_h)))
        if gone or 16 * (len(counts_r) - len(common)) > len(counts_r):
            grams_r, live_r = _keep(grams_r, live_r, list(map(kept.__contains__, grams_r)))
        if not grams_h or not grams_r:
            break
        if not look:
            continue
        left = len(grams_h) + len(grams_r)
        if tops_h and tops_r and 4 * len(kept) <= left:  # (each n-gram left has one top-order n-gram at least)
            top_h = Counter(compress(tops_h, map(kept.__contains__, rest_grams_h)))
            top_r = Counter(compress(tops_r, map(kept.__contains__, rest_grams_r)))
            if 4 * len(top_h.keys() | top_r.keys()) <= left:
                # Few top-order n-grams left: count the higher orders down from them.
                out[offset + 3 * (orders - 1) + 2] += _matches(top_h, top_r)
                _add_top_down(top_h, top_r, _gram_at_end(text_h, live_h), _gram_at_end(text_r, live_r),
                              _prefix, orders - 1, n, out, offset)
                break
        if 4 * (len(grams_h) + len(grams_r)) > 3 * live:  # settled little: look again once half are gone
            look_below = live // 2
    running = 0
    for n in range(2, orders + 1):
        running += settled[n]
        out[offset + 3 * (n - 1) + 2] += running


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


def _add_one_sided(kept: set[int], counts_h: Counter[int], counts_r: Counter[int], grams_h: Sequence[int],
                   tops_h: list[str], short_h: Sequence[int], grams_r: Sequence[int], tops_r: list[str],
                   short_r: Sequence[int], n: int, orders: int, settled: list[int], out: list[int],
                   offset: int) -> tuple[set[int], int]:
    """Settle the shared n-grams one side of which continues alike; return them and their matches at order n.

    When all of an n-gram's occurrences on one side have the same top-order n-gram T, and that side has it at
    least as often as the other, each order n+k matches it once per occurrence on the other side whose top-order
    n-gram agrees with T on k more code points (the count on T's side is never the smaller one). ``tops_*`` are
    the top-order n-grams of the first positions of ``grams_*``, ``short_*`` the n-grams of the positions too near
    the end for one. The side with more positions (the likelier to repeat) is looked at first, the other only when
    much is left.
    """
    sides = [(counts_h, grams_h, tops_h, short_h), (counts_r, grams_r, tops_r, short_r)]
    if len(grams_r) > len(grams_h):
        sides.reverse()
    first, other = sides
    done, firsts, seconds = _alike_on_one_side(kept, *first, *other)
    left = kept - done if done else kept
    if 8 * len(left) >= len(kept):
        more, more_firsts, more_seconds = _alike_on_one_side(left, *other, *first)
        done = done | more
        firsts += more_firsts
        seconds += more_seconds
    _add_agreeing(firsts, seconds, n, n, orders, settled, out, offset)
    return done, len(firsts)


def _alike_on_one_side(kept: set[int], counts_a: Counter[int], grams_a: Sequence[int], tops_a: list[str],
                       short_a: Sequence[int], counts_b: Counter[int], grams_b: Sequence[int], tops_b: list[str],
                       short_b: Sequence[int]) -> tuple[set[int], list[str], list[str]]:
    """The n-grams of ``kept`` whose occurrences on side a all have one top-order n-gram, at least as many as on
    side b (each with a top-order n-gram there); the top-order n-grams of their occurrences on side b, and beside
    each the one of side a."""
    top_a = dict(zip(grams_a, tops_a))
    mixed = set(compress(grams_a, map(ne, tops_a, map(top_a.__getitem__, grams_a))))
    mixed.update(short_a, short_b)
    candidates = list(kept - mixed)
    alike = set(compress(candidates, map(ge, map(counts_a.__getitem__, candidates),
                                         map(counts_b.__getitem__, candidates))))
    if not alike:
        return alike, [], []
    in_b = list(map(alike.__contains__, grams_b))
    return alike, list(compress(tops_b, in_b)), list(map(top_a.__getitem__, compress(grams_b, in_b)))


def _add_unique_pairs(pairs: set[int], grams_h: Sequence[int], live_h: list[int], text_h: str, grams_r: Sequence[int],
                      live_r: list[int], text_r: str, n: int, orders: int, settled: list[int], out: list[int],
                      offset: int, differences: dict[int, list[int]]) -> set[int]:
    """Settle the unique pairs whose two occurrences both have room up to the top order; return them.

    A pair matches at order n+k while its two continuations agree on k code points. Pairs that agree all the way
    go to the difference array ``settled``; the others are followed order by order, the agreeing ones kept.
    """
    if not pairs:
        return pairs
    in_h, in_r = list(map(pairs.__contains__, grams_h)), list(map(pairs.__contains__, grams_r))
    at_h = list(compress(live_h, in_h))
    with_room = bisect_right(at_h, len(text_h) - orders)  # room for a continuation up to the top order
    del at_h[with_room:]
    handled = list(compress(grams_h, in_h))[:with_room]
    where_r = dict(zip(compress(grams_r, in_r), compress(live_r, in_r)))
    at_r = list(map(where_r.__getitem__, handled))
    room_r = len(text_r) - orders
    if at_r and max(at_r) > room_r:  # a reference occurrence too near the end: leave that pair to the passes
        fits = list(map(room_r.__ge__, at_r))
        at_h, at_r, handled = list(compress(at_h, fits)), list(compress(at_r, fits)), list(compress(handled, fits))
    if len(at_h) >= DIAGONAL_FROM:
        # Most pairs of near-identical texts lie on one diagonal (the same offset between their two positions):
        # their agreements are the distances to the next difference along it, found by bisection.
        shifts = list(map(sub, at_r, at_h))
        (shift, on), = Counter(shifts).most_common(1)
        if 2 * on >= len(at_h):
            on_diagonal = list(map(shift.__eq__, shifts))
            _add_diagonal(list(compress(at_h, on_diagonal)), shift, text_h, text_r, n, orders, settled, differences)
            off = list(map(not_, on_diagonal))
            at_h, at_r = list(compress(at_h, off)), list(compress(at_r, off))
    firsts = [text_h[i + n : i + orders] for i in at_h]
    seconds = [text_r[j + n : j + orders] for j in at_r]
    _add_agreeing(firsts, seconds, 0, n, orders, settled, out, offset)
    return set(handled)


def _add_diagonal(at_h: list[int], shift: int, text_h: str, text_r: str, n: int, orders: int,
                  settled: list[int], differences: dict[int, list[int]]) -> None:
    """Settle unique pairs at (i, i + shift), i in ``at_h``, from where the texts differ along that diagonal
    (found once per diagonal and kept in ``differences``)."""
    differ = differences.get(shift)
    if differ is None:
        first = max(0, -shift)
        end = first + min(len(text_h) - first, len(text_r) - first - shift)  # where the diagonal ends
        differ = list(compress(range(first, end), map(ne, text_h[first:], text_r[first + shift :])))
        differ.append(end)
        differences[shift] = differ
    starts = list(map(add, at_h, repeat(n)))
    nexts = map(differ.__getitem__, map(bisect_left, repeat(differ), starts))
    _add_agreements(Counter(map(min, map(sub, nexts, starts), repeat(orders - n))), n, settled)


def _add_agreements(agreements: Counter[int], n: int, settled: list[int]) -> None:
    """Add, for each count of matches agreeing on k more code points after order n, one match at orders n+1..n+k
    to the difference array ``settled``."""
    for agreed, times in agreements.items():
        settled[n + 1] += times
        settled[n + agreed + 1] -= times


def _words(codes: list[int]) -> list[int]:
    """At each position, the next WORD_CODES codes (each below 256) as one number, the first the lowest byte (zeros
    past the end); one more at len(codes). Read as eight-byte words at each of the eight alignments, in C."""
    packed = bytes(codes) + bytes(16)
    views = [array("Q", packed[at : at + 8 * ((len(packed) - at) // 8)]) for at in range(8)]
    if sys.byteorder != "little":
        for view in views:
            view.byteswap()
    return list(map(and_, chain.from_iterable(zip(*views)), repeat(WORD_MASK)))[: len(codes) + 1]


def _add_small_classes(shared: list[int], in_h: list[int], in_r: list[int], grams_h: list[int], live_h: list[int],
                       words_h: list[int], grams_r: list[int], live_r: list[int], words_r: list[int], n: int,
                       orders: int, settled: list[int]) -> tuple[set[int], int]:
    """Settle those of the given shared n-grams (each at most twice on each side, counted ``in_h``, ``in_r``) whose
    every occurrence has room up to the top order; return them and their matches at order n.

    Occurrences that agree on their next k code points have the same (n+k)-gram, and agreement is an ultrametric.
    So at order n+k, an n-gram matches once if an occurrence on one side agrees with one on the other on k more code
    points, and twice (with two on each side) if two disjoint such pairs do. An agreement is read from two words
    (see :func:`_words`): their XOR's lowest set bit is in the byte of the first code that differs.
    """
    room_h, room_r = len(words_h) - 1 - orders, len(words_r) - 1 - orders  # (a text's words: one more than its codes)
    near_end = set(grams_h[bisect_right(live_h, room_h) : len(grams_h)])
    near_end.update(grams_r[bisect_right(live_r, room_r) : len(grams_r)])
    if near_end:
        fits = list(map(not_, map(near_end.__contains__, shared)))
        shared, in_h, in_r = list(compress(shared, fits)), list(compress(in_h, fits)), list(compress(in_r, fits))
    left = orders - n
    # A low bit's length -> the agreement it means (the sentinel, one bit above a word: all of them agree).
    agreement = [left] + [min((length - 1) // 8, left) for length in range(1, 8 * WORD_CODES + 2)]
    sentinel = WORD_MASK + 1

    def first_and_last(grams: list[int], live: list[int], words: list[int]) -> tuple[dict[int, int], dict[int, int]]:
        shifted = words[n:]
        continuations = list(map(shifted.__getitem__, live[: len(grams)]))
        last = dict(zip(grams, continuations))
        return dict(zip(reversed(grams), reversed(continuations))), last

    def low_bits(a: Sequence[int], b: Sequence[int]) -> list[int]:
        differ = list(map(or_, map(xor, a, b), repeat(sentinel)))
        return list(map(and_, differ, map(neg, differ)))

    def agreements(low: Iterable[int]) -> Iterator[int]:
        return map(agreement.__getitem__, map(int.bit_length, low))

    first_h, last_h = first_and_last(grams_h, live_h, words_h)
    first_r, last_r = first_and_last(grams_r, live_r, words_r)
    h1, h2 = list(map(first_h.__getitem__, shared)), list(map(last_h.__getitem__, shared))
    r1, r2 = list(map(first_r.__getitem__, shared)), list(map(last_r.__getitem__, shared))
    # With one occurrence on a side, (h1, r1) and (h2, r2) are its two pairs (or its one pair, twice).
    low11, low22 = low_bits(h1, r1), low_bits(h2, r2)
    two = list(map(and_, map((2).__eq__, in_h), map((2).__eq__, in_r)))
    twos = two.count(True)
    one = list(map(not_, two))
    best = Counter(agreements(map(max, compress(low11, one), compress(low22, one))))
    second: Counter[int] = Counter()
    if twos:
        low11, low22 = list(compress(low11, two)), list(compress(low22, two))
        low12 = low_bits(list(compress(h1, two)), list(compress(r2, two)))
        low21 = low_bits(list(compress(h2, two)), list(compress(r1, two)))
        best.update(agreements(map(max, low11, low12, low21, low22)))
        second.update(agreements(map(max, map(min, low11, low22), map(min, low12, low21))))
    _add_agreements(best, n, settled)
    _add_agreements(second, n, settled)
    return set(shared), len(shared) + twos


def _add_agreeing(firsts: list[str], seconds: list[str], skip: int, n: int, orders: int, settled: list[int],
                  out: list[int], offset: int) -> None:
    """Add one match at each order n+k, k = 1..orders-n, for each pair (firsts[i], seconds[i]) whose continuations
    (from index ``skip`` on) agree on their first k code points: at once to the difference array ``settled`` for
    pairs that agree all the way, order by order for the others (comparing one code point per order)."""
    agree = list(map(eq, firsts, seconds))
    compared = agree.count(True)
    settled[n + 1] += compared
    settled[orders + 1] -= compared
    if compared < len(agree):
        parting = list(map(not_, agree))
        firsts, seconds = list(compress(firsts, parting)), list(compress(seconds, parting))
        for k in range(1, orders - n):  # all of them agree on their first k - 1 code points: compare the k-th
            at = itemgetter(skip + k - 1)
            agree = list(map(eq, map(at, firsts), map(at, seconds)))
            agreeing = agree.count(True)
            if not agreeing:
                break
            out[offset + 3 * (n + k - 1) + 2] += agreeing
            if agreeing < len(agree):
                firsts, seconds = list(compress(firsts, agree)), list(compress(seconds, agree))


def _add_top_down(counts_h: dict[Gram, int], counts_r: dict[Gram, int], end_h: Callable[[int], Gram | None],
                  end_r: Callable[[int], Gram | None], prefix: Callable[[int], Callable[[Gram], Gram]], high: int,
                  low: int, out: list[int], offset: int) -> int:
    """Add the matches of orders high..low+1, counted down from the counts of the live positions' (high+1)-grams;
    return those of order ``high``.

    Each order's counts are the next order's, summed by prefix, plus the one live position (if any) with room for
    this order but not the next. Costs the number of distinct n-grams per order, not the number of positions.
    """
    highest = 0
    for k in range(high, low, -1):
        shorten = prefix(k)
        counts_h, counts_r = _shorter(counts_h, shorten, end_h(k)), _shorter(counts_r, shorten, end_r(k))
        matches = _matches(counts_h, counts_r)
        out[offset + 3 * (k - 1) + 2] += matches
        if k == high:
            highest = matches
    return highest


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


def _prefix(k: int) -> Callable[[str], str]:
    """k -> a text's first k code points."""
    return itemgetter(slice(0, k))


def _key_prefix(base: int) -> Callable[[int], Callable[[int], int]]:
    """k -> the key of a (k+1)-gram's first k codes (its lowest k digits)."""
    def prefix(k: int) -> Callable[[int], int]:
        modulus: int = base**k
        return modulus.__rmod__
    return prefix


def _gram_at_end(text: str, live: list[int]) -> Callable[[int], str | None]:
    """k -> the k-gram at len(text) - k if that position is live."""
    def at_end(k: int) -> str | None:
        return text[len(text) - k :] if _is_live(live, len(text) - k) else None
    return at_end


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
    times n, so the bound on the reference keeps this linear in the text.
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
            repeated = [(gram, times) for gram, times in Counter(compress(grams, found)).items() if times > 1]
            for gram, times in repeated:
                matches -= times - min(times, _occurrences(reference, gram))
            may_repeat = bool(repeated)
        out[offset + 3 * (n - 1) + 2] += matches
        positions = list(compress(positions, found))


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
