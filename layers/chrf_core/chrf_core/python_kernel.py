"""The pure-Python counting kernel: the plain definition of the numbers, for where the native kernel cannot load.

Per segment, side and order, a Counter of the n-grams (substrings of code points, or tuples of word tokens);
the matches of an order are the clipped sum over the n-grams both sides have, Σ min(hypothesis count, reference
count), which is what ``Counter & Counter`` holds. Each order is one pass over each side, so a segment costs
time linear in its length times the number of orders (at most 10 + 4), whatever its text. It counts what the
native kernel counts, which the suite checks on every run; speed is the native kernel's job.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from .tokens import words

Units = TypeVar("Units", str, tuple[str, ...])  # a side's text as code points, or as word tokens
Triple = tuple[int, int, int]  # one order's (hypothesis n-grams, reference n-grams, matching n-grams)


def ngrams(units: Units, n: int) -> Counter[Units]:
    """How often each n-gram (n adjacent units) occurs."""
    return Counter(units[start : start + n] for start in range(len(units) - n + 1))


def add_orders(hypothesis: Units, reference: Units, orders: int, out: list[int], offset: int) -> None:
    """Add each order's (hypothesis n-grams, reference n-grams, clipped matches) to ``out`` from ``offset``."""
    for n in range(1, orders + 1):
        hypothesis_grams, reference_grams = ngrams(hypothesis, n), ngrams(reference, n)
        at = offset + 3 * (n - 1)
        out[at] += max(0, len(hypothesis) - n + 1)
        out[at + 1] += max(0, len(reference) - n + 1)
        out[at + 2] += sum((hypothesis_grams & reference_grams).values())


def count(
    hypothesis_sets: Sequence[Sequence[str]],
    references: Sequence[str],
    char_order: int,
    word_order: int,
    include_whitespace: bool,
    per_segment: bool,
) -> tuple[tuple[int, int, int], ...] | bytes:
    """Same interface and results as the native kernel's ``count`` (texts as counted): each system's hypotheses
    against the same references, the (hypothesis, reference, matching) counts of every order summed over segments
    and systems, or with ``per_segment`` each segment's row of them as native int64s, system after system."""
    row = 3 * (char_order + word_order)
    rows = [array("q") for _ in hypothesis_sets]
    if len(hypothesis_sets) == 1:  # a pair at a time
        for hypothesis, reference in zip(hypothesis_sets[0], references, strict=True):
            out = [0] * row
            if char_order:
                if include_whitespace:
                    add_orders(hypothesis, reference, char_order, out, 0)
                else:  # Python's whitespace is the contract's set
                    add_orders("".join(hypothesis.split()), "".join(reference.split()), char_order, out, 0)
            if word_order:
                add_orders(tuple(words(hypothesis)), tuple(words(reference)), word_order, out, 3 * char_order)
            rows[0].extend(out)
    else:  # each reference's n-grams counted once per segment
        for segment, reference in enumerate(references):
            column = profile(reference, char_order, word_order, include_whitespace)
            for system, hypotheses in zip(rows, hypothesis_sets, strict=True):
                counted = profile(hypotheses[segment], char_order, word_order, include_whitespace)
                system.extend(value for triple in matched(counted, column) for value in triple)
    if per_segment:
        return b"".join(system.tobytes() for system in rows)
    totals = [sum(sum(system[k::row]) for system in rows) for k in range(row)]
    return tuple((totals[k], totals[k + 1], totals[k + 2]) for k in range(0, row, 3))


FEW = 64  # hypotheses few enough that the references are searched for their n-grams alone
GATHERED = 1 << 16  # occurrences gathered before they are counted


def units_of(text: str, include_whitespace: bool) -> tuple[str, tuple[str, ...]]:
    """What a text's n-grams are made of: its characters (whitespace left out unless kept; Python's whitespace is
    the contract's set) and its word tokens."""
    return text if include_whitespace else "".join(text.split()), tuple(words(text))


def profile(text: str, char_order: int, word_order: int, include_whitespace: bool) -> list[tuple[int, Counter[Any]]]:
    """A text's n-grams of every order, characters first: (how many, how often each)."""
    characters, tokens = units_of(text, include_whitespace)
    return [(max(0, len(units) - n + 1), ngrams(units, n))
            for units, orders in ((characters, char_order), (tokens, word_order)) for n in range(1, orders + 1)]


def occurrences(text: str, char_order: int, word_order: int, include_whitespace: bool,
                wanted: list[set[Any]]) -> list[tuple[int, list[Any]]]:
    """A text's n-grams of every order, characters first: how many, and each occurrence of one of ``wanted``'s
    (per order, a set that holds every n-gram's first n - 1 units too: an n-gram is looked for only there)."""
    characters, tokens = units_of(text, include_whitespace)
    out: list[tuple[int, list[Any]]] = []
    for units, orders, first in ((characters, char_order, 0), (tokens, word_order, char_order)):
        starts: Sequence[int] = range(len(units))
        for n in range(1, orders + 1):
            want = wanted[first + n - 1]
            starts = [start for start in starts if units[start:start + n] in want]
            out.append((max(0, len(units) - n + 1), [units[start:start + n] for start in starts]))
    return out


def matched(row: list[tuple[int, Counter[Any]]], column: list[tuple[int, Counter[Any]]]) -> tuple[Triple, ...]:
    """One pair's per-order counts from its two texts' profiles: (hypothesis n-grams, reference n-grams, the
    clipped matches, Counter & Counter)."""
    return tuple((hyp_total, ref_total, sum((hyp_grams & ref_grams).values()))
                 for (hyp_total, hyp_grams), (ref_total, ref_grams) in zip(row, column))


def pairwise(
    hypotheses: Sequence[str], references: Sequence[str], char_order: int, word_order: int, include_whitespace: bool
) -> Iterator[list[tuple[tuple[int, int, int], ...]]]:
    """Every hypothesis against every reference, a row at a time: each pair's per-order counts, as ``count`` gives
    them for the pair alone, each text's n-grams counted once (memory: the references' n-grams and one row)."""
    columns = [profile(reference, char_order, word_order, include_whitespace) for reference in references]
    for row in (profile(hypothesis, char_order, word_order, include_whitespace) for hypothesis in hypotheses):
        yield [matched(row, column) for column in columns]


def aggregate(
    hypotheses: Sequence[str], references: Sequence[str], char_order: int, word_order: int, include_whitespace: bool,
    weights: Sequence[int] | None = None,
) -> Iterator[tuple[tuple[int, int, int], ...]]:
    """Each hypothesis against the references' n-gram counts summed, as per-order counts: with R references,
    (R x its n-grams, the references' n-grams, the sum over n-grams g of min(R x its count of g, the references'
    count of g)), so that the contract's formula on them scores against the references' average counts exactly.
    With integer ``weights`` (one per reference), reference j counts weights[j] times and R is their sum. A few
    hypotheses (the native kernel's undecided ones) are counted first, and of the references only the n-grams they
    have: an n-gram is looked for only where its first n - 1 units are one of theirs."""
    weights = [1] * len(references) if weights is None else weights
    r = sum(weights)
    orders = char_order + word_order
    summed: list[Counter[Any]] = [Counter() for _ in range(orders)]
    totals = [0] * orders
    rows: Iterator[list[tuple[int, Counter[Any]]]] | list[list[tuple[int, Counter[Any]]]]
    rows = (profile(hypothesis, char_order, word_order, include_whitespace) for hypothesis in hypotheses)
    wanted: list[set[Any]] | None = None
    if len(hypotheses) <= FEW:
        rows = list(rows)
        wanted = [set().union(*(row[o][1] for row in rows)) for o in range(orders)]
    if wanted is None:
        for reference, weight in zip(references, weights, strict=True):
            for o, (total, grams) in enumerate(profile(reference, char_order, word_order, include_whitespace)):
                summed[o].update({gram: weight * count for gram, count in grams.items()} if weight != 1 else grams)
                totals[o] += weight * total
    else:  # the occurrences in references of one weight gathered (a bounded number), counted together at C speed
        found: dict[int, list[list[Any]]] = {}
        pending = 0

        def add_all() -> None:
            for weight, gathered in found.items():
                for o, seen in enumerate(gathered):
                    counted = Counter(seen)
                    summed[o].update({gram: weight * count for gram, count in counted.items()} if weight != 1
                                     else counted)
            found.clear()

        for reference, weight in zip(references, weights, strict=True):
            gathered = found.setdefault(weight, [[] for _ in range(orders)])
            for o, (total, seen) in enumerate(occurrences(reference, char_order, word_order, include_whitespace,
                                                          wanted)):
                gathered[o] += seen
                totals[o] += weight * total
                pending += len(seen)
            if pending > GATHERED:
                add_all()
                pending = 0
        add_all()
    for row in rows:
        yield tuple((r * total, totals[o], sum(min(r * count, summed[o][gram]) for gram, count in grams.items()))
                    for o, (total, grams) in enumerate(row))
