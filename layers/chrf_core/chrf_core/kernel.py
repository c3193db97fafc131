"""The counting kernels behind one interface: the native one (C, ``chrf_core._kernel``) when it loads, else the
pure-Python one (:mod:`chrf_core.python_kernel`); both count exactly the same, in time linear in the text.

A kernel counts per-order n-grams (summed, or per segment) and scores many texts against many (MBR decoding). The
score of counts is the formula's (:mod:`chrf_core.formula`, above this module), so the MBR operations take it as
``exact``: the Python kernel scores every pair with it, the native one scores in double-double arithmetic and calls
it only where its rounding is undecided. ``KERNEL`` names the one chosen, once, at import (the only place that
tells the kernels apart is this module). Texts come in as the kernels count them (:func:`preparation.prepared`:
normalized and lowercased as the settings say, by the readers that name the text a rule refuses); each kernel
leaves out whitespace itself.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any

from . import python_kernel
from .contract import Settings
from .python_kernel import Triple as Triple  # the kernels' unit of counts, re-exported

if TYPE_CHECKING:
    import numpy

ExactScore = Callable[[Sequence[Triple] | Sequence[list[int]]], Fraction]
TOLERANCE_BITS = 80  # a native score within 2^-80 of a rounding midpoint is recomputed exactly
WEIGHTED_TOLERANCE_BITS = 100  # at most: the kernel widens it to its weighted counts' error bound (aggregate.c)
SMALLEST_DOUBLE = 2.0**-1074  # a nonzero weight share below it goes to the native kernel as it (never as 0)
COUNTS_ROWS = 1 << 16  # hypotheses of one native aggregate batch call: their counts (2-22 MB) are held until it ends


@dataclass(frozen=True)
class Weights:
    """A weight per reference, checked (``values``: all floats, or integers in the weights' proportions), exactly as
    the kernels take it: integers (a float is the rational it stands for), and for the native kernel, built when it
    asks, ``native``: (rows of little-endian 32-bit words of them, each as a double-double scaled by a power of two)."""

    values: Sequence[Any]
    floats: bool

    @property
    def equal(self) -> bool:
        """Whether every reference weighs the same (the same averages as none)."""
        return len(set(self.values)) == 1

    def integers(self) -> list[int]:
        """The integers (floats: each numerator times the largest denominator, a power of two, over its own)."""
        if not self.floats:
            return list(self.values)
        ratios = [value.as_integer_ratio() for value in self.values]
        scale = max(denominator for _, denominator in ratios)
        return [numerator * (scale // denominator) for numerator, denominator in ratios]

    @cached_property
    def native(self) -> tuple[Any, Any]:
        """(words, pairs; the kernel's shares come from the pairs, never 0 if nonzero); floats in NumPy, without a
        Python integer each: each an odd 53-bit integer times a power of two, shifted to the fewest bits that make
        every one an integer."""
        import numpy

        if not self.floats:
            limbs = max(1, (max(self.values).bit_length() + 31) // 32)
            words = numpy.frombuffer(b"".join(weight.to_bytes(4 * limbs, "little") for weight in self.values),
                                     dtype="<u4").astype(numpy.uint32).reshape(len(self.values), limbs)
            total = sum(self.values)
            highs = [weight / total for weight in self.values]  # int / int is correctly rounded, whatever the sizes
            lows = [(weight * denominator - numerator * total) / (total * denominator)  # the remainder, rounded
                    for weight, (numerator, denominator) in zip(self.values, map(float.as_integer_ratio, highs))]
            pairs = numpy.array([highs, lows]).T.copy()
            pairs[[bool(weight) and not high for weight, high in zip(self.values, highs)]] = SMALLEST_DOUBLE, 0.0
            return words, pairs
        values = numpy.asarray(self.values, dtype=numpy.float64)
        fractions, exponents = numpy.frexp(values)  # values = fraction 2^exponent, 0.5 <= fraction < 1 (0: 0 and 0)
        whole = numpy.ldexp(fractions, 53).astype(numpy.int64)  # value = whole 2^(exponent - 53), exactly
        nonzero = whole != 0
        trailing = numpy.where(nonzero, numpy.frexp((whole & -whole).astype(numpy.float64))[1] - 1, 0)
        odd = (whole >> trailing).astype(numpy.uint64)
        lowest = exponents.astype(numpy.int64) - 53 + trailing  # the value of an odd integer's lowest bit
        shift = numpy.where(nonzero, lowest + max(0, -int(lowest[nonzero].min())), 0)
        limbs = max(1, (int((shift + numpy.frexp(odd.astype(numpy.float64))[1]).max()) + 31) // 32)  # bits / 32
        words = numpy.zeros((len(values), limbs + 2), dtype=numpy.uint64)
        rows, word, offset, mask = (numpy.arange(len(values)), shift // 32, (shift % 32).astype(numpy.uint64),
                                    numpy.uint64(0xFFFFFFFF))
        low, high = (odd & mask) << offset, (odd >> numpy.uint64(32)) << offset  # below 2^63 and 2^52
        for k, part in enumerate((low & mask, (low >> numpy.uint64(32)) | (high & mask), high >> numpy.uint64(32))):
            words[rows, word + k] = part
        scaled = numpy.ldexp(values, -int(numpy.frexp(values.max())[1]))  # the largest in [0.5, 1): no sum overflows
        scaled[(scaled == 0) & nonzero] = SMALLEST_DOUBLE
        return words[:, :limbs].astype(numpy.uint32), numpy.column_stack([scaled, numpy.zeros(len(values))])


class Kernel:
    """One counting kernel."""

    name = ""

    def __init__(self, raw_count: Callable[..., Any]) -> None:
        self.raw_count = raw_count  # count(hypothesis_sets, references, char_order, word_order, include_whitespace,
        #                              per_segment): the kernel's own entry point, texts as preparation.prepared
        #                              gives them

    def _count(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings,
               per_segment: bool) -> Any:
        if len(hypotheses) != len(references):
            raise ValueError("counting: hypotheses and references differ in number")
        return self.raw_count((hypotheses,), references,
                              settings.char_order, settings.word_order, settings.include_whitespace, per_segment)

    def count(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings) -> tuple[Triple, ...]:
        """Every order's counts summed over line-aligned, already checked segments."""
        summed: tuple[Triple, ...] = self._count(hypotheses, references, settings, per_segment=False)
        return summed

    def segment_counts(self, hypotheses: Sequence[str], references: Sequence[str],
                       settings: Settings) -> numpy.ndarray:
        """Each segment's own counts: an int64 array shaped (segments, orders, 3)."""
        import numpy

        data = self._count(hypotheses, references, settings, per_segment=True)
        return numpy.frombuffer(data, dtype=numpy.int64).reshape(len(hypotheses), settings.orders, 3)

    def system_counts(self, hypothesis_sets: Sequence[Sequence[str]], references: Sequence[str],
                      settings: Settings) -> numpy.ndarray:
        """Each system's own segment counts against the same references, each reference counted once: an int64
        array shaped (systems, segments, orders, 3)."""
        import numpy

        if any(len(hypotheses) != len(references) for hypotheses in hypothesis_sets):
            raise ValueError("counting: a system's hypotheses and the references differ in number")
        data = self.raw_count(list(hypothesis_sets), references, settings.char_order, settings.word_order,
                              settings.include_whitespace, True)
        return numpy.frombuffer(data, dtype=numpy.int64).reshape(len(hypothesis_sets), len(references),
                                                                  settings.orders, 3)

    def pairwise(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings, exact: ExactScore,
                 threads: int) -> numpy.ndarray:
        """Every hypothesis against every reference: float64 scores shaped (hypotheses, references), each the
        correctly rounded value of ``exact`` of the pair's counts."""
        raise NotImplementedError

    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings, exact: ExactScore,
                  threads: int) -> tuple[numpy.ndarray, numpy.ndarray]:
        """Each hypothesis against the references' summed n-gram counts: its float64 score (correctly rounded from
        ``exact``) and its per-order counts, an int64 array shaped (hypotheses, orders, 3): R x its n-grams, the
        references' n-grams, matches."""
        raise NotImplementedError

    def pairwise_batch(self, sets: Sequence[tuple[Sequence[str], Sequence[str]]], settings: Settings,
                       exact: ExactScore, threads: int) -> list[numpy.ndarray]:
        """:meth:`pairwise` of every (hypotheses, references) set, the sets spread over ``threads`` threads (a
        threaded kernel's; the others score them in turn)."""
        return [self.pairwise(hypotheses, references, settings, exact, threads) for hypotheses, references in sets]

    def aggregate_batch(self, sets: Sequence[tuple[Sequence[str], Sequence[str]]], settings: Settings,
                        exact: ExactScore, threads: int) -> list[numpy.ndarray]:
        """:meth:`aggregate`'s scores of every set, spread as :meth:`pairwise_batch`."""
        return [self.aggregate(hypotheses, references, settings, exact, threads)[0] for hypotheses, references in sets]

    def weighted_aggregate(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings,
                           exact: ExactScore, threads: int, weights: Weights) -> numpy.ndarray:
        """:meth:`aggregate`'s scores with reference j counted as often as its integer weight says."""
        import numpy

        return numpy.array([float(exact(orders)) for orders in weighted_counts(hypotheses, references, settings,
                                                                                weights.integers())])


class PythonKernel(Kernel):
    """The plain definition: every MBR score computed exactly from the pair's counts."""

    name = "python"

    def pairwise(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings, exact: ExactScore,
                 threads: int) -> numpy.ndarray:
        import numpy

        matrix = numpy.empty((len(hypotheses), len(references)))
        for row, pairs in zip(matrix, python_kernel.pairwise(
                hypotheses, references, settings.char_order,
                settings.word_order, settings.include_whitespace)):
            row[:] = [float(exact(orders)) for orders in pairs]
        return matrix

    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings, exact: ExactScore,
                  threads: int) -> tuple[numpy.ndarray, numpy.ndarray]:
        import numpy

        scores = numpy.empty(len(hypotheses))
        counts = numpy.empty((len(hypotheses), settings.orders, 3), dtype=numpy.int64)
        for index, orders in enumerate(python_kernel.aggregate(
                hypotheses, references, settings.char_order,
                settings.word_order, settings.include_whitespace)):
            counts[index] = orders
            scores[index] = float(exact(orders))
        return scores, counts


def weighted_counts(hypotheses: Sequence[str], references: Sequence[str], settings: Settings,
                    weights: Sequence[int]) -> list[tuple[Triple, ...]]:
    """Each hypothesis' per-order counts against the references counted ``weights[j]`` times each, exactly (Python
    integers of any size, whatever kernel is chosen)."""
    return list(python_kernel.aggregate(hypotheses, references,
                                        settings.char_order, settings.word_order, settings.include_whitespace,
                                        weights))


class NativeKernel(Kernel):
    """The C kernel: MBR scores in double-double arithmetic on several threads, without the GIL; a score whose
    rounding it cannot decide is computed by ``exact``."""

    name = "native"

    def __init__(self, module: Any) -> None:
        super().__init__(module.count)
        self.module = module
        self.kept = threading.local()  # each thread's buffers (the kernel's Keep), dropped with the thread

    def buffers(self) -> Any:
        """This thread's MBR buffers: a call's big blocks (corpus, tables, scratch) kept for the next call, so that
        repeated calls of one shape reuse warm pages instead of faulting fresh ones in (glibc gives a call's heap
        back when it ends); the blocks a call does not take given back after it beyond a quarter of what it used,
        all of them past 256 MiB, and every one when the thread ends or :meth:`release_buffers` is called."""
        held = getattr(self.kept, "buffers", None)
        if held is None:
            held = self.kept.buffers = self.module.buffers()
        return held

    def release_buffers(self) -> None:
        """Give this thread's MBR buffers back now."""
        self.kept.buffers = None

    def _scoring(self, settings: Settings, tolerance_bits: int) -> tuple[Any, ...]:
        return (settings.char_order, settings.word_order, settings.include_whitespace, settings.beta,
                settings.averaging == "per_order_f", tolerance_bits)

    def _batch(self, aggregating: bool, sets: Sequence[tuple[Sequence[str], Sequence[str]]], settings: Settings,
               threads: int, outputs: list[Any], tolerance_bits: int = TOLERANCE_BITS) -> list[list[int]]:
        """The kernel's one MBR entry point: every set scored into its outputs (each set as alone); each set's
        indices whose rounding it could not decide."""
        undecided: list[list[int]] = self.module.batch(
            aggregating, [hypotheses for hypotheses, _ in sets], [references for _, references in sets],
            *self._scoring(settings, tolerance_bits), threads, outputs, self.buffers())
        return undecided

    def _aggregate(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings, threads: int,
                   weights: numpy.ndarray | None,
                   tolerance_bits: int) -> tuple[numpy.ndarray, numpy.ndarray, list[int]]:
        """The native aggregate: scores, counts (not filled with weights) and the indices it could not round."""
        outputs = [self._aggregate_outputs(len(hypotheses), settings, weights)]
        undecided = self._batch(True, [(hypotheses, references)], settings, threads, outputs, tolerance_bits)
        return outputs[0][0], outputs[0][1], undecided[0]

    @staticmethod
    def _aggregate_outputs(rows: int, settings: Settings,
                           weights: numpy.ndarray | None = None) -> tuple[numpy.ndarray, numpy.ndarray, Any]:
        import numpy

        return numpy.empty(rows), numpy.empty((rows, settings.orders, 3), dtype=numpy.int64), weights

    def pairwise(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings, exact: ExactScore,
                 threads: int) -> numpy.ndarray:
        return self.pairwise_batch([(hypotheses, references)], settings, exact, threads)[0]

    def pairwise_batch(self, sets: Sequence[tuple[Sequence[str], Sequence[str]]], settings: Settings,
                       exact: ExactScore, threads: int) -> list[numpy.ndarray]:
        """One call for all the sets: the kernel spreads them over its pool (no GIL taken between sets); the scores
        it could not round computed exactly."""
        import numpy

        matrices = [numpy.empty((len(hypotheses), len(references))) for hypotheses, references in sets]
        for matrix, undecided, (hypotheses, references) in zip(matrices, self._batch(False, sets, settings, threads,
                                                                                      matrices), sets):
            flat = matrix.reshape(-1)
            for index in undecided:
                row, column = divmod(index, len(references))
                flat[index] = float(exact(self.count([hypotheses[row]], [references[column]], settings)))
        return matrices

    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings, exact: ExactScore,
                  threads: int) -> tuple[numpy.ndarray, numpy.ndarray]:
        scores, counts, undecided = self._aggregate(hypotheses, references, settings, threads, None, TOLERANCE_BITS)
        for index in undecided:
            scores[index] = float(exact(counts[index].tolist()))
        return scores, counts

    def aggregate_batch(self, sets: Sequence[tuple[Sequence[str], Sequence[str]]], settings: Settings,
                        exact: ExactScore, threads: int) -> list[numpy.ndarray]:
        """One call for as many sets as hold COUNTS_ROWS hypotheses together (their per-order counts, which the
        undecided scores are computed from, are held until the call ends; at least one set a call)."""
        results: list[numpy.ndarray] = []
        start = 0
        while start < len(sets):
            end, rows = start + 1, len(sets[start][0])
            while end < len(sets) and rows + len(sets[end][0]) <= COUNTS_ROWS:
                rows += len(sets[end][0])
                end += 1
            group = sets[start:end]
            outputs = [self._aggregate_outputs(len(hypotheses), settings) for hypotheses, _ in group]
            for (scores, counts, _), flagged in zip(outputs, self._batch(True, group, settings, threads, outputs)):
                for index in flagged:
                    scores[index] = float(exact(counts[index].tolist()))
                results.append(scores)
            start = end
        return results

    def weighted_aggregate(self, hypotheses: Sequence[str], references: Sequence[str], settings: Settings,
                           exact: ExactScore, threads: int, weights: Weights) -> numpy.ndarray:
        """In double-double arithmetic; a score it cannot round for certain, or whose weighted counts fall below its
        range (shares far below the largest: aggregate.c), is counted exactly by the kernel too (the weights as
        multi-word integers over the n-grams it has already indexed) and rounded exactly here."""
        outputs = [(*self._aggregate_outputs(len(hypotheses), settings, weights.native[1]), weights.native[0])]
        found: list[Any] = self._batch(True, [(hypotheses, references)], settings, threads, outputs,
                                       WEIGHTED_TOLERANCE_BITS)  # with exact weights: (indices, counts, width)
        ((undecided, counted, width),) = found
        scores = outputs[0][0]
        size = 4 * width
        for number, index in enumerate(undecided):
            at = number * 3 * settings.orders * size
            values = [int.from_bytes(counted[at + k * size:at + (k + 1) * size], "little")
                      for k in range(3 * settings.orders)]
            scores[index] = float(exact([values[3 * o:3 * o + 3] for o in range(settings.orders)]))
        return scores


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
KERNELS: dict[str, Kernel] = {"python": PythonKernel(python_kernel.count)}
if NATIVE is not None:
    KERNELS["native"] = NativeKernel(NATIVE)
KERNEL = "native" if NATIVE is not None else "python"  # the chosen kernel's name (tests and the bench switch it)
if KERNEL_ERROR:
    logging.getLogger("chrf_core").warning("chrf_core: native kernel not used, counting in Python: %s", KERNEL_ERROR)


def chosen() -> Kernel:
    """The kernel every count goes through."""
    return KERNELS[KERNEL]
