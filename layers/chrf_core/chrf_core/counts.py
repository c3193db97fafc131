"""Per-order n-gram counts of segments: hypothesis totals, reference totals and clipped matches.

Counts are plain sums over segments, so the counts of any split of a corpus add up to the counts of the whole
(:meth:`Counts.merge`). The counting itself is the chosen kernel's (:mod:`chrf_core.kernel`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .contract import Settings
from .errors import describe
from .kernel import Triple, chosen
from .settings import difference
from .stored import of_stored, stored

if TYPE_CHECKING:
    import numpy

STATISTICS_VERSION = 1  # of the statistics' stored forms: Counts.to_dict (JSON), the engines' Arrow form
SIDES = ("hypothesis", "reference", "matching")  # the three counts of an order, in their order


class Counts(NamedTuple):
    """Summed per-order counts: ``orders[i]`` is (hypothesis_ngrams, reference_ngrams, matching_ngrams).

    Orders are character n = 1..char_order, then word n = 1..word_order.
    """

    settings: Settings
    segment_count: int
    orders: tuple[Triple, ...]

    @classmethod
    def of_array(cls, settings: Settings, segment_count: int, summed: Any) -> Counts:
        """Counts from an array of (hypothesis, reference, matching) per order: shape (orders, 3), or flat."""
        flat = [int(value) for value in (summed.reshape(-1).tolist() if hasattr(summed, "reshape") else summed)]
        return cls(settings, segment_count, tuple((flat[k], flat[k + 1], flat[k + 2])
                                                  for k in range(0, len(flat), 3)))

    def to_dict(self) -> dict[str, Any]:
        """The statistics' JSON form, version 1 (docs/at-scale.md): ``{"version": 1, "settings": {...every setting,
        normalize too}, "segment_count": N, "orders": [[hypothesis, reference, matching], ...]}``, for keeping counts
        and carrying them between processes (pipeline batches, engines' partitions)."""
        return {
            "version": STATISTICS_VERSION,
            "settings": stored(self.settings),
            "segment_count": self.segment_count,
            "orders": [list(order) for order in self.orders],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Counts:
        """Counts read back from :meth:`to_dict`'s output (from storage, another process), every value checked:
        ValueError naming what is wrong, or what no texts could give. Their settings equal the ``CHRF`` that made
        them. The form without ``version`` (chrf-components 1.0.0's pipeline batches, no ``normalize``) reads as
        version 1."""
        keys = {"settings", "segment_count", "orders"}
        if not isinstance(data, dict) or set(data) - {"version"} != keys:
            raise ValueError("counts: expected an object with settings, segment_count and orders")
        if "version" in data and (type(data["version"]) is not int or data["version"] != STATISTICS_VERSION):
            raise ValueError(f"counts: version {describe(data['version'])} is not one this library reads "
                             f"({STATISTICS_VERSION})")
        settings = of_stored(data["settings"])
        return cls.checked(settings, data["segment_count"], data["orders"])

    @classmethod
    def checked(cls, settings: Settings, segment_count: Any, orders: Any) -> Counts:
        """Counts from stored values (a segment count, a list of [hypothesis, reference, matching] per order), each
        checked: a ValueError naming what no texts could give. An empty part (0 segments) counts nothing."""
        if type(segment_count) is not int or segment_count < 0:
            raise ValueError(f"counts: segment_count must be an integer from 0, got {describe(segment_count)}")
        if not isinstance(orders, list) or len(orders) != settings.orders or not all(
                isinstance(order, list) and len(order) == 3 for order in orders):
            raise ValueError(f"counts: orders must be one [hypothesis, reference, matching] per n-gram order "
                             f"({settings.orders})")
        for (kind, n), order in zip(order_labels(settings.char_order, settings.word_order), orders):
            for side, value in zip(SIDES, order):
                if type(value) is not int or value < 0:
                    raise ValueError(f"counts: {kind} {n} {side}: must be an integer from 0, got {describe(value)}")
        counts = cls(settings, segment_count, tuple((h, r, m) for h, r, m in orders))
        problem = counts.inconsistency()
        if problem:
            raise ValueError(f"counts: {problem}")
        return counts

    @classmethod
    def merge(cls, parts: Iterable[Counts]) -> Counts:
        """The sum of the counts of several disjoint sets of segments scored with identical settings (ValueError
        naming the settings that differ otherwise)."""
        parts = list(parts)
        if not parts:
            raise ValueError("merge: nothing to merge")
        settings = parts[0].settings
        for part in parts[1:]:
            if part.settings != settings:
                raise ValueError(f"merge: statistics of other settings ({difference(settings, part.settings)})")
        orders = tuple(
            (sum(order[0] for order in column), sum(order[1] for order in column), sum(order[2] for order in column))
            for column in zip(*(part.orders for part in parts))
        )
        return cls(settings, sum(part.segment_count for part in parts), orders)

    @classmethod
    def empty(cls, settings: Settings) -> Counts:
        """The counts of no segments (an empty partition's), which merge as zero."""
        return cls(settings, 0, ((0, 0, 0),) * settings.orders)

    def inconsistency(self) -> str | None:
        """What makes these counts impossible for any texts, if anything (None when some texts give them).

        A segment of L units (code points or word tokens) has max(0, L - n + 1) n-grams of order n, so from one
        order to the next a side's total falls by the number of segments with at least n - 1 units: by at most
        the segments, by at least one while any n-gram is left, and never by more than at the order before.
        Matches never exceed either side's n-grams nor the matches of the order before, and a side's word
        tokens never exceed its characters (a token is at least one code point that is not whitespace)."""
        if self.segment_count == 0 and any(any(order) for order in self.orders):
            return "0 segments but some n-grams"
        labels = order_labels(self.settings.char_order, self.settings.word_order)
        for (kind, n), (hypothesis, reference, matching) in zip(labels, self.orders):
            if matching > min(hypothesis, reference):
                return f"{kind} {n}: {matching} matches but {hypothesis} hypothesis and {reference} reference n-grams"
        for index in range(1, len(self.orders)):
            (kind, n), (previous_kind, _) = labels[index], labels[index - 1]
            if kind == previous_kind and any(self.orders[index][k] > self.orders[index - 1][k] for k in range(3)):
                return f"{kind} {n}: more n-grams or matches than order {n - 1}"
        char_order = self.settings.char_order
        for kind, orders in (("char", self.orders[:char_order]), ("word", self.orders[char_order:])):
            for side, name in ((0, "hypothesis"), (1, "reference")):
                problem = self._impossible_drop(kind, name, [order[side] for order in orders])
                if problem:
                    return problem
        if char_order and self.settings.word_order:
            for side, name in ((0, "hypothesis"), (1, "reference")):
                words, characters = self.orders[char_order][side], self.orders[0][side]
                if words > characters:
                    return f"word 1: {words} {name} tokens from {characters} characters"
        return None

    def _impossible_drop(self, kind: str, side: str, totals: list[int]) -> str | None:
        largest = self.segment_count
        for n in range(2, len(totals) + 1):
            drop = totals[n - 2] - totals[n - 1]
            if drop > largest:
                bound = f"the {largest} segments" if n == 2 else f"the drop to order {n - 1} ({largest})"
                return f"{kind} {n}: {side} n-grams fall by {drop} from order {n - 1}, more than {bound}"
            if drop == 0 and totals[n - 2] > 0:
                return f"{kind} {n}: {side} n-grams do not fall from order {n - 1} ({totals[n - 2]})"
            largest = drop
        return None


def order_labels(char_order: int, word_order: int) -> list[tuple[str, int]]:
    """The (type, n) of every order, characters first."""
    return [("char", n) for n in range(1, char_order + 1)] + [("word", n) for n in range(1, word_order + 1)]


def count_segments(hypotheses: Sequence[str], references: Sequence[str], settings: Settings) -> Counts:
    """Counts of every order summed over line-aligned, already checked segments."""
    return Counts(settings, len(hypotheses), chosen().count(hypotheses, references, settings))


def segment_counts(hypotheses: Sequence[str], references: Sequence[str], settings: Settings) -> numpy.ndarray:
    """Each segment's own counts: an int64 NumPy array shaped (segments, orders, 3), (hypothesis n-grams, reference
    n-grams, matches) per order."""
    return chosen().segment_counts(hypotheses, references, settings)


def system_counts(hypothesis_sets: Sequence[Sequence[str]], references: Sequence[str],
                  settings: Settings) -> numpy.ndarray:
    """Several systems' own segment counts against the same references, each reference counted once: an int64 NumPy
    array shaped (systems, segments, orders, 3)."""
    return chosen().system_counts(hypothesis_sets, references, settings)
