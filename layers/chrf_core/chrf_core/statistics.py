"""Per-order n-gram counts of a set of segments: hypothesis totals, reference totals and clipped matches.

Counts are plain sums over segments, so the counts of any split of a corpus add up to the counts of the
whole (:func:`merge_counts`). Shortcuts keep this fast without changing a number:

* totals are arithmetic: a sequence of length L has max(0, L - n + 1) n-grams of order n;
* a segment whose hypothesis equals its reference matches everything;
* every matching n+1-gram starts with a matching n-gram, so each order builds only the hypothesis n-grams
  at positions where the previous order matched, and stops the segment when nothing matched;
* likewise, once an order has no repeated match, no higher order has one, so clipping is skipped from there.
"""

from __future__ import annotations

from collections import Counter, namedtuple
from collections.abc import Iterable, Sequence
from itertools import compress
from typing import Any

from .request import InvalidInputError, Settings, parse_settings

ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # string.punctuation


class Counts(namedtuple("Counts", ("settings", "segment_count", "orders"))):
    """Summed per-order counts: ``orders[i]`` is (hypothesis_ngrams, reference_ngrams, matching_ngrams).

    Orders are character n = 1..char_order, then word n = 1..word_order. An immutable record.
    """

    __slots__ = ()
    settings: Settings
    segment_count: int
    orders: tuple[tuple[int, int, int], ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for carrying counts between processes (for example pipeline batches)."""
        return {
            "settings": self.settings.as_dict(),
            "segment_count": self.segment_count,
            "orders": [list(order) for order in self.orders],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Counts:
        """Rebuild counts from :meth:`to_dict` output, checking every value (they may come from storage)."""
        if not isinstance(data, dict) or set(data) != {"settings", "segment_count", "orders"}:
            raise ValueError("counts: expected an object with settings, segment_count and orders")
        settings_data = data["settings"]
        if not isinstance(settings_data, dict) or set(settings_data) != set(Settings().as_dict()):
            raise ValueError("counts: settings must name every setting")
        try:
            settings = parse_settings(settings_data)
        except InvalidInputError as error:
            raise ValueError(f"counts: {error.message}") from None
        segment_count, orders = data["segment_count"], data["orders"]
        if type(segment_count) is not int or segment_count < 1:
            raise ValueError("counts: segment_count must be a positive integer")
        if not isinstance(orders, list) or len(orders) != settings.char_order + settings.word_order:
            raise ValueError("counts: orders must hold one entry per n-gram order")
        triples = []
        for order in orders:
            if (
                not isinstance(order, list)
                or len(order) != 3
                or any(type(value) is not int or value < 0 for value in order)
                or order[2] > min(order[0], order[1])
            ):
                raise ValueError("counts: each order must be [hypothesis, reference, matching] counts")
            triples.append((order[0], order[1], order[2]))
        return cls(settings, segment_count, tuple(triples))


def count_segments(hypotheses: Sequence[str], references: Sequence[str], settings: Settings) -> Counts:
    """Count n-grams of every order over line-aligned, already validated segments."""
    char_order, word_order = settings.char_order, settings.word_order
    totals = [[0, 0, 0] for _ in range(char_order + word_order)]
    char_totals, word_totals = totals[:char_order], totals[char_order:]
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        if settings.lowercase:
            hypothesis, reference = hypothesis.lower(), reference.lower()
        if char_order:
            if settings.include_whitespace:
                _add_orders(hypothesis, reference, char_totals)
            else:
                _add_orders("".join(hypothesis.split()), "".join(reference.split()), char_totals)
        if word_order:
            _add_orders(tuple(words(hypothesis)), tuple(words(reference)), word_totals)
    return Counts(settings, len(hypotheses), tuple((h, r, m) for h, r, m in totals))


def merge_counts(parts: Iterable[Counts]) -> Counts:
    """Sum the counts of several disjoint sets of segments scored with identical settings."""
    parts = list(parts)
    if not parts:
        raise ValueError("merge: nothing to merge")
    settings = parts[0].settings
    for part in parts[1:]:
        if part.settings != settings:
            raise ValueError(f"merge: settings differ ({part.settings.as_dict()} vs {settings.as_dict()})")
    orders = tuple(tuple(map(sum, zip(*column))) for column in zip(*(part.orders for part in parts)))
    return Counts(settings, sum(part.segment_count for part in parts), orders)


def words(text: str) -> list[str]:
    """Word tokens as chrF++.py's separate_punctuation makes them.

    Split on whitespace; a one-code-point word stays whole; otherwise one trailing, else one leading,
    ASCII punctuation mark is split off.
    """
    tokens = []
    for word in text.split():
        if word[-1] in ASCII_PUNCTUATION and len(word) > 1:
            tokens += (word[:-1], word[-1])
        elif word[0] in ASCII_PUNCTUATION and len(word) > 1:
            tokens += (word[0], word[1:])
        else:
            tokens.append(word)
    return tokens


def _add_orders(hypothesis: str | tuple[str, ...], reference: str | tuple[str, ...], totals: list[list[int]]) -> None:
    """Add one segment's counts for orders 1..len(totals) to ``totals``.

    Only hypothesis n-grams that can still match are ever built: the n-gram at position i can occur in the
    reference only if the (n-1)-gram at i does, so each order looks only at the positions where the previous
    order found its n-gram in the reference. Every occurrence of a matching n-gram sits at such a position, so
    counts restricted to them are exact. Reference n-grams are not built for characters at all: the reference
    string is searched directly.
    """
    hyp_length, ref_length = len(hypothesis), len(reference)
    for n, total in enumerate(totals, start=1):
        total[0] += max(0, hyp_length - n + 1)
        total[1] += max(0, ref_length - n + 1)
    if hypothesis == reference:
        for n, total in enumerate(totals, start=1):
            total[2] += max(0, hyp_length - n + 1)
        return
    if not hyp_length or not ref_length:
        return
    # Order 1: clipped matches of the units themselves.
    is_text = isinstance(reference, str)
    if is_text:  # characters repeat: count them
        hyp_counts, ref_counts = Counter(hypothesis), Counter(reference)
        common = hyp_counts.keys() & ref_counts.keys()
        distinct = len(hyp_counts) == hyp_length
    else:  # words mostly do not: a set is enough when every hypothesis word is distinct
        hyp_set = set(hypothesis)
        common = hyp_set.intersection(reference)
        distinct = len(hyp_set) == hyp_length
    if not common:
        return
    if distinct:
        totals[0][2] += len(common)
    else:
        if not is_text:
            hyp_counts, ref_counts = Counter(hypothesis), Counter(reference)
        totals[0][2] += sum(map(min, map(hyp_counts.__getitem__, common), map(ref_counts.__getitem__, common)))
    positions = list(compress(range(hyp_length), map(common.__contains__, hypothesis)))
    may_repeat = True
    for n, total in enumerate(totals[1:], start=2):
        if positions and positions[-1] > hyp_length - n:
            positions.pop()  # the last (n-1)-gram has no room to grow
        if not positions:
            return
        grams = [hypothesis[i : i + n] for i in positions]
        if is_text:
            found = list(map(reference.__contains__, grams))
        else:
            found = list(map(set([reference[i : i + n] for i in range(ref_length - n + 1)]).__contains__, grams))
        matches = found.count(True)
        if not matches:
            return
        total[2] += matches
        if may_repeat:
            # A repeated hypothesis n-gram matches only as often as the reference has it too. Once an order has
            # no repeated match, no higher order can (a repeated n-gram repeats its (n-1)-gram prefix).
            matched = list(compress(grams, found))
            repeated = {gram: count for gram, count in Counter(matched).items() if count > 1}
            for gram, count in repeated.items():
                total[2] -= count - min(count, _overlapping_count(reference, gram))
            may_repeat = bool(repeated)
        positions = list(compress(positions, found))


def _overlapping_count(sequence: str | tuple[str, ...], part: str | tuple[str, ...]) -> int:
    """Occurrences of ``part`` in ``sequence``, overlapping ones included (str.count skips overlaps)."""
    if isinstance(sequence, str):
        count, start = 0, sequence.find(part)
        while start >= 0:
            count += 1
            start = sequence.find(part, start + 1)
        return count
    size = len(part)
    return sum(1 for i in range(len(sequence) - size + 1) if sequence[i : i + size] == part)
