"""Per-order n-gram counts of segments: hypothesis totals, reference totals and clipped matches.

Counts are plain sums over segments, so the counts of any split of a corpus add up to the counts of the whole
(:func:`merge_counts`). The counting itself is done by a kernel: the native one (C, ``chrf_core._kernel``) when
it loads, else the pure-Python one; both count exactly the same, in time linear in the text.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from . import python_kernel
from .contract import INTEGER_RANGES, SETTING_KEYS
from .errors import InvalidInputError

if TYPE_CHECKING:
    import numpy

    from .metric import CHRF

Triple = tuple[int, int, int]


# What both kernels are: python_kernel.count and the native count (C), called as
# count(hypotheses, references, char_order, word_order, include_whitespace, per_segment).
Kernel = Callable[[Sequence[str], Sequence[str], int, int, bool, bool], Any]


def _load_native() -> tuple[Any, str | None]:
    """The native kernel's module, or None and why not (None, None when switched off by CHRF_CORE_NATIVE=0)."""
    if os.environ.get("CHRF_CORE_NATIVE", "1") == "0":
        return None, None
    try:
        from . import _kernel  # type: ignore[attr-defined]
    except ImportError as error:
        present = any(name.startswith("_kernel.") for name in os.listdir(os.path.dirname(__file__)))
        if not present:
            return None, "not built (no _kernel extension beside chrf_core)"
        return None, f"present but failed to load: {error}"
    _kernel.set_seed(int.from_bytes(os.urandom(8), "little"))
    return _kernel, None


NATIVE, KERNEL_ERROR = _load_native()
KERNELS: dict[str, Kernel] = {"python": python_kernel.count}
if NATIVE is not None:
    KERNELS["native"] = NATIVE.count
KERNEL = "native" if NATIVE is not None else "python"
if KERNEL_ERROR:
    logging.getLogger("chrf_core").warning("chrf_core: native kernel not used, counting in Python: %s", KERNEL_ERROR)


class Counts(NamedTuple):
    """Summed per-order counts: ``orders[i]`` is (hypothesis_ngrams, reference_ngrams, matching_ngrams).

    Orders are character n = 1..char_order, then word n = 1..word_order.
    """

    settings: CHRF
    segment_count: int
    orders: tuple[Triple, ...]

    @classmethod
    def of_array(cls, settings: CHRF, segment_count: int, summed: Any) -> Counts:
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
        """Rebuild counts from :meth:`to_dict` output, checking every value (they may come from storage)."""
        from .metric import CHRF

        if not isinstance(data, dict) or set(data) != {"settings", "segment_count", "orders"}:
            raise ValueError("counts: expected an object with settings, segment_count and orders")
        settings_data, segment_count, orders = data["settings"], data["segment_count"], data["orders"]
        if not isinstance(settings_data, dict) or set(settings_data) != set(SETTING_KEYS) or any(
                type(settings_data[key]) is not int for key in INTEGER_RANGES):
            raise ValueError("counts: settings must name every setting, integers as integers")
        try:
            settings = CHRF.of_settings(settings_data)
        except InvalidInputError as error:
            raise ValueError(f"counts: {error.message}") from None
        if type(segment_count) is not int or segment_count < 1:
            raise ValueError("counts: segment_count must be a positive integer")
        if not isinstance(orders, list) or len(orders) != settings.char_order + settings.word_order or not all(
                isinstance(order, list) and len(order) == 3 and all(type(v) is int and v >= 0 for v in order)
                for order in orders):
            raise ValueError("counts: orders must be one [hypothesis, reference, matching] per n-gram order")
        counts = cls(settings, segment_count, tuple((h, r, m) for h, r, m in orders))
        problem = counts.inconsistency()
        if problem:
            raise ValueError(f"counts: {problem}")
        return counts

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


def lowercased(texts: Sequence[str], settings: CHRF) -> Sequence[str]:
    """The texts as the kernels count them: lowercased when the settings ask for it (copies; inputs unchanged)."""
    return [text.lower() for text in texts] if settings.lowercase else texts


def _count(hypotheses: Sequence[str], references: Sequence[str], settings: CHRF, per_segment: bool) -> Any:
    if len(hypotheses) != len(references):
        raise ValueError("counting: hypotheses and references differ in number")
    return KERNELS[KERNEL](lowercased(hypotheses, settings), lowercased(references, settings), settings.char_order,
                           settings.word_order, settings.include_whitespace, per_segment)


def count_segments(hypotheses: Sequence[str], references: Sequence[str], settings: CHRF) -> Counts:
    """Counts of every order summed over line-aligned, already validated segments."""
    return Counts(settings, len(hypotheses), _count(hypotheses, references, settings, per_segment=False))


def segment_counts(hypotheses: Sequence[str], references: Sequence[str], settings: CHRF) -> numpy.ndarray:
    """Each segment's own counts: an int64 NumPy array shaped (segments, orders, 3), (hypothesis n-grams, reference
    n-grams, matches) per order."""
    import numpy

    data = _count(hypotheses, references, settings, per_segment=True)
    return numpy.frombuffer(data, dtype=numpy.int64).reshape(len(hypotheses), settings.orders, 3)


def pairwise(hypotheses: Sequence[str], references: Sequence[str], settings: CHRF, tolerance_bits: int,
             threads: int) -> tuple[numpy.ndarray, list[int]]:
    """Every hypothesis against every reference: the float64 matrix of scores and the flat indices whose rounding
    the native kernel could not decide (the Python kernel's scores are all exact)."""
    import numpy

    from .report import exact_score

    matrix = numpy.empty((len(hypotheses), len(references)))
    counted = lowercased(hypotheses, settings), lowercased(references, settings)
    if KERNEL == "native":
        undecided = NATIVE.pairwise(*counted, settings.char_order, settings.word_order, settings.include_whitespace,
                                    settings.beta, settings.averaging == "per_order_f", tolerance_bits, threads,
                                    matrix)
        return matrix, undecided
    for row, pairs in zip(matrix, python_kernel.pairwise(*counted, settings.char_order, settings.word_order,
                                                         settings.include_whitespace)):
        row[:] = [float(exact_score(settings, orders)) for orders in pairs]
    return matrix, []


def aggregate(hypotheses: Sequence[str], references: Sequence[str], settings: CHRF, tolerance_bits: int,
              threads: int) -> tuple[numpy.ndarray, numpy.ndarray, list[int]]:
    """Each hypothesis against the references' summed n-gram counts: its score, its per-order counts (an int64
    array shaped (hypotheses, orders, 3): R x its n-grams, the references' n-grams, matches) and the indices whose
    rounding the native kernel could not decide (the Python kernel's scores are all exact)."""
    import numpy

    from .report import exact_score

    scores = numpy.empty(len(hypotheses))
    counts = numpy.empty((len(hypotheses), settings.orders, 3), dtype=numpy.int64)
    counted = lowercased(hypotheses, settings), lowercased(references, settings)
    if KERNEL == "native":
        undecided = NATIVE.aggregate(*counted, settings.char_order, settings.word_order, settings.include_whitespace,
                                     settings.beta, settings.averaging == "per_order_f", tolerance_bits, threads,
                                     scores, counts)
        return scores, counts, undecided
    for index, orders in enumerate(python_kernel.aggregate(*counted, settings.char_order, settings.word_order,
                                                           settings.include_whitespace)):
        counts[index] = orders
        scores[index] = float(exact_score(settings, orders))
    return scores, counts, []


def merge_counts(parts: Iterable[Counts]) -> Counts:
    """Sum the counts of several disjoint sets of segments scored with identical settings."""
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
    return Counts(settings, sum(part.segment_count for part in parts), orders)
