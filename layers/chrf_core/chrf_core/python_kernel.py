"""The pure-Python counting kernel: the same numbers as the native one, for every platform.

Linear in the text: for each order it hashes only the n-grams that can still match. An n-gram at a position can
occur on the other side only if its (n-1)-gram does, so after each order both sides keep just the positions
whose n-gram the other side has too; a segment stops as soon as nothing matches. Matches are clipped by
counting both sides (Counter), and once no kept n-gram repeats on either side, no longer one can, so plain sets
do from there on.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from itertools import compress
from operator import add, not_, sub

# Up to this many code points, a reference string is searched rather than its n-grams hashed (see
# add_character_orders_short_reference); the bound keeps every search, and so the whole count, linear.
SHORT_REFERENCE = 256
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


def add_orders(units_h: Sequence[str], units_r: Sequence[str], joiner: str, out: list[int], offset: int,
               orders: int) -> None:
    """Add one segment's counts of orders 1..orders to ``out[offset + 3 * (n - 1) + {0, 1, 2}]``.

    Units are characters (a str, ``joiner`` "") or word tokens (a list, ``joiner`` " ", which no token contains,
    so an n-gram is its tokens joined by spaces). Each order's n-grams are the kept (n-1)-grams extended by one
    unit, built by concatenation in C rather than sliced one by one: the next units of the surviving positions
    are the sequence shifted by n - 1, compressed by a mask of the positions still alive.
    """
    length_h, length_r = len(units_h), len(units_r)
    for n in range(1, orders + 1):
        base = offset + 3 * (n - 1)
        out[base] += max(0, length_h - n + 1)
        out[base + 1] += max(0, length_r - n + 1)
    if not length_h or not length_r:
        return
    if units_h == units_r:
        for n in range(1, min(orders, length_h) + 1):
            out[offset + 3 * (n - 1) + 2] += length_h - n + 1
        return
    if joiner:
        grams_h, grams_r = list(units_h), list(units_r)
        units_h, units_r = [joiner + unit for unit in units_h], [joiner + unit for unit in units_r]
    else:
        grams_h, grams_r = list(units_h), list(units_r)
    # Positions still counted, as masks: the n-grams are those of the live positions, in order, that have room.
    alive_h, alive_r = bytearray(b"\x01") * length_h, bytearray(b"\x01") * length_r
    paired = [0] * (orders + 2)  # difference array: matches of settled unique pairs per order
    for n in range(1, orders + 1):
        if n > 1:
            grams_h = list(map(add, grams_h, compress(units_h[n - 1 :], alive_h)))
            grams_r = list(map(add, grams_r, compress(units_r[n - 1 :], alive_r)))
            if not grams_h or not grams_r:
                break
        counts_h, counts_r = Counter(grams_h), Counter(grams_r)
        common = counts_h.keys() & counts_r.keys()
        if not common:
            break
        distinct_h, distinct_r = len(counts_h) == len(grams_h), len(counts_r) == len(grams_r)
        if distinct_h or distinct_r:
            matches = len(common)
        else:  # sum of min(a, b) as (a + b - |a - b|) / 2, all in C
            in_h, in_r = list(map(counts_h.__getitem__, common)), list(map(counts_r.__getitem__, common))
            matches = (sum(in_h) + sum(in_r) - sum(map(abs, map(sub, in_h, in_r)))) // 2
        out[offset + 3 * (n - 1) + 2] += matches
        if n == orders:
            break
        if distinct_h and distinct_r:  # every shared n-gram is a unique pair: settle them all, and done
            _settle(common, grams_h, alive_h, grams_r, alive_r, units_h, units_r, n, orders, paired)
            break
        shared = common
        if 2 * len(counts_h) > len(grams_h):  # mostly distinct: worth settling the unique pairs now
            unique = {gram for gram in common if counts_h[gram] == 1 and counts_r[gram] == 1}
            if unique:
                _settle(unique, grams_h, alive_h, grams_r, alive_r, units_h, units_r, n, orders, paired)
                shared = common - unique
        if len(shared) < len(counts_h):  # some hypothesis n-grams are not kept (else all are: no pass needed)
            keep_h = list(map(shared.__contains__, grams_h))
            _drop(alive_h, keep_h)
            grams_h = list(compress(grams_h, keep_h))
        if len(shared) < len(counts_r):
            keep_r = list(map(shared.__contains__, grams_r))
            _drop(alive_r, keep_r)
            grams_r = list(compress(grams_r, keep_r))
        if not grams_h or not grams_r:
            break
    running = 0
    for n in range(2, orders + 1):
        running += paired[n]
        out[offset + 3 * (n - 1) + 2] += running


def _settle(pairs: set[str], grams_h: Sequence[str], alive_h: bytearray, grams_r: Sequence[str],
            alive_r: bytearray, units_h: Sequence[str], units_r: Sequence[str], n: int, orders: int,
            paired: list[int]) -> None:
    """Unique pairs (an n-gram once on each side): no other position can share their longer n-grams, so each
    pair matches at every higher order for as long as the two sequences continue alike. Counted into ``paired``
    (a difference array over orders) by comparing what follows them, instead of hashing them order by order."""
    where_h = dict(zip(grams_h, compress(range(len(alive_h)), alive_h)))
    where_r = dict(zip(grams_r, compress(range(len(alive_r)), alive_r)))
    span = orders - n
    for gram in pairs:
        i, j = where_h[gram] + n, where_r[gram] + n
        after_h, after_r = units_h[i : i + span], units_r[j : j + span]
        if after_h == after_r:
            same = len(after_h)
        else:
            same = 0
            for unit_h, unit_r in zip(after_h, after_r):
                if unit_h != unit_r:
                    break
                same += 1
        if same:
            paired[n + 1] += 1
            paired[n + 1 + same] -= 1


def add_character_orders_short_reference(hypothesis: str, reference: str, out: list[int], orders: int) -> None:
    """:func:`add_orders` for characters when the reference is short (at most SHORT_REFERENCE code points).

    Only hypothesis n-grams are built: each is looked up by searching the reference string, which for a short
    reference is cheaper than hashing the reference's n-grams. A search costs at most the reference's length
    times n, so the bound on the reference keeps this linear in the text.
    """
    length_h, length_r = len(hypothesis), len(reference)
    for n in range(1, orders + 1):
        out[3 * (n - 1)] += max(0, length_h - n + 1)
        out[3 * (n - 1) + 1] += max(0, length_r - n + 1)
    if not length_h or not length_r:
        return
    if hypothesis == reference:
        for n in range(1, min(orders, length_h) + 1):
            out[3 * (n - 1) + 2] += length_h - n + 1
        return
    counts_h, counts_r = Counter(hypothesis), Counter(reference)
    common = counts_h.keys() & counts_r.keys()
    if not common:
        return
    if len(counts_h) == length_h:
        out[2] += len(common)
    else:
        out[2] += sum(map(min, map(counts_h.__getitem__, common), map(counts_r.__getitem__, common)))
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
        out[3 * (n - 1) + 2] += matches
        positions = list(compress(positions, found))


def _occurrences(text: str, part: str) -> int:
    """Occurrences of ``part`` in ``text``, overlapping ones included (str.count skips overlaps)."""
    count, start = 0, text.find(part)
    while start >= 0:
        count += 1
        start = text.find(part, start + 1)
    return count


def _drop(alive: bytearray, keep: list[bool]) -> None:
    """Mark the live positions whose n-gram is not kept (``keep`` runs over them in order) as no longer alive."""
    for position in compress(compress(range(len(alive)), alive), map(not_, keep)):
        alive[position] = 0


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
            if len(reference_chars) <= SHORT_REFERENCE:
                add_character_orders_short_reference(hypothesis_chars, reference_chars, out, char_order)
            else:
                add_orders(hypothesis_chars, reference_chars, "", out, 0, char_order)
        if word_order:
            add_orders(words(hypothesis), words(reference), " ", out, 3 * char_order, word_order)
        if per_segment:
            rows.extend(out)
    if per_segment:
        return rows.tobytes()
    return tuple((totals[k], totals[k + 1], totals[k + 2]) for k in range(0, row, 3))
