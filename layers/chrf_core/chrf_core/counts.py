"""Per-order n-gram counts of segments: hypothesis totals, reference totals and clipped matches.

Counts are plain sums over segments, so the counts of any split of a corpus add up to the counts of the whole
(:meth:`Counts.merge`). The counting itself is the chosen kernel's (:mod:`chrf_core.kernel`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .contract import INTEGER_RANGES, SETTING_KEYS, Settings
from .errors import InvalidInputError
from .kernel import Triple, chosen
from .settings import ChrfSettings

if TYPE_CHECKING:
    import numpy


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
        """A JSON-ready form, for carrying counts between processes (for example pipeline batches)."""
        return {
            "settings": self.settings.as_dict(),
            "segment_count": self.segment_count,
            "orders": [list(order) for order in self.orders],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Counts:
        """Counts read back from :meth:`to_dict`'s output (from storage, another process), every value checked:
        ValueError naming what is wrong, or what no texts could give. Their settings equal the ``CHRF`` that made
        them."""
        if not isinstance(data, dict) or set(data) != {"settings", "segment_count", "orders"}:
            raise ValueError("counts: expected an object with settings, segment_count and orders")
        settings_data = data["settings"]
        if not isinstance(settings_data, dict) or set(settings_data) != set(SETTING_KEYS) or any(
                type(settings_data[key]) is not int for key in INTEGER_RANGES):
            raise ValueError("counts: settings must name every setting, integers as integers")
        try:
            settings = ChrfSettings.of_settings(settings_data)
        except InvalidInputError as error:
            raise ValueError(f"counts: {error.message}") from None
        return cls._checked(settings, data["segment_count"], data["orders"])

    @classmethod
    def _checked(cls, settings: Settings, segment_count: Any, orders: Any) -> Counts:
        if type(segment_count) is not int or segment_count < 1:
            raise ValueError("counts: segment_count must be a positive integer")
        if not isinstance(orders, list) or len(orders) != settings.orders or not all(
                isinstance(order, list) and len(order) == 3 and all(type(v) is int and v >= 0 for v in order)
                for order in orders):
            raise ValueError("counts: orders must be one [hypothesis, reference, matching] per n-gram order")
        counts = cls(settings, segment_count, tuple((h, r, m) for h, r, m in orders))
        problem = counts.inconsistency()
        if problem:
            raise ValueError(f"counts: {problem}")
        return counts

    @classmethod
    def merge(cls, parts: Iterable[Counts]) -> Counts:
        """The sum of the counts of several disjoint sets of segments scored with identical settings."""
        parts = list(parts)
        if not parts:
            raise ValueError("merge: nothing to merge")
        settings = parts[0].settings
        for part in parts[1:]:
            if part.settings != settings:
                raise ValueError(f"merge: settings differ ({part.settings.as_dict()} vs {settings.as_dict()})")
        orders = tuple(
            (sum(order[0] for order in column), sum(order[1] for order in column), sum(order[2] for order in column))
            for column in zip(*(part.orders for part in parts))
        )
        return cls(settings, sum(part.segment_count for part in parts), orders)

    def inconsistency(self) -> str | None:
        """What makes these counts impossible for any texts, if anything (None when some texts give them).

        A segment of L units (code points or word tokens) has max(0, L - n + 1) n-grams of order n, so from one
        order to the next a side's total falls by the number of segments with at least n - 1 units: by at most
        the segments, by at least one while any n-gram is left, and never by more than at the order before.
        Matches never exceed either side's n-grams nor the matches of the order before, and a side's word
        tokens never exceed its characters (a token is at least one code point that is not whitespace)."""
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
