"""chrF as a torchmetrics ``Metric`` for PyTorch loops (``pip install 'chrf-components[torch]'``): integer states,
summed across processes by torchmetrics' own synchronisation, and an exact report.

``update(preds, target)`` takes torchmetrics' ``CHRFScore`` layout (``target``: each segment's references, or one
reference per segment) and adds the batch's per-order counts to int64 states (``dist_reduce_fx="sum"``); the
settings are a state too, which refuses, by name, to be synchronised or merged with another's. ``compute()``
returns the :class:`Report` of everything seen in every process: ``to_dict()`` byte for byte ``corpus_score``'s
on all the segments, whatever the batches, processes and :meth:`merge_state` calls. A sum that could pass 2^63 - 1
(more n-grams than int64 holds) is an OverflowError, never a wrapped number.

>>> from chrf_core import CHRF
>>> from chrf_core.torchmetrics import CHRFScore
>>> metric = CHRFScore(CHRF(word_order=2))
>>> metric.update(["The cat sat on the mat."], [["The cat sat on a mat."]])
>>> metric.update(["A dog barked."], [["The dog barked loudly."]])
>>> print(metric.compute())
chrF2++ = 58.80
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torchmetrics import Metric

from . import arrow
from .contract import AVERAGINGS, NORMALIZATIONS, SETTING_KEYS
from .counts import INT64_END, Counts, settings_text, statistic_columns
from .metric import CHRF
from .settings import ChrfSettings, difference, read_back

if TYPE_CHECKING:
    from .report import Report

_NORMALIZE_CODES = (None, *NORMALIZATIONS)


def _settings_code(chrf: CHRF) -> list[int]:
    """Every setting as an integer (in SETTING_KEYS' order; the averaging and normalize by their index), for a tensor
    state."""
    assert SETTING_KEYS[-1] == "averaging"
    return [*(int(getattr(chrf, key)) for key in SETTING_KEYS[:-1]), AVERAGINGS.index(chrf.averaging),
            _NORMALIZE_CODES.index(chrf.normalize)]


def _settings_of_code(code: list[int]) -> ChrfSettings:
    char_order, word_order, beta, lowercase, include_whitespace, averaging, normalize = code
    return read_back(char_order, word_order, beta, bool(lowercase), bool(include_whitespace),
                     AVERAGINGS[averaging], _NORMALIZE_CODES[normalize])


def _one_settings(stacked: torch.Tensor) -> torch.Tensor:
    """The reduction of the settings state: every process's (or merged metric's) must be the same."""
    first = stacked[0]
    for other in stacked[1:]:
        if not torch.equal(first, other):
            mine, theirs = _settings_of_code(first.tolist()), _settings_of_code(other.tolist())
            raise ValueError(f"merge: statistics of other settings ({difference(mine, theirs)})")
    return first


class CHRFScore(Metric):  # type: ignore[misc]
    """chrF / chrF++ with ``chrf``'s settings (default ``CHRF()``: chrF2); ``kwargs`` go to torchmetrics'
    ``Metric`` (``sync_on_compute``, ``process_group``, ...)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 100.0

    def __init__(self, chrf: CHRF | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if chrf is not None and not isinstance(chrf, CHRF):
            raise TypeError(f"chrf: expected a chrf_core.CHRF, got {type(chrf).__name__}")
        self.chrf = chrf if chrf is not None else CHRF()
        zero = torch.zeros((), dtype=torch.int64)
        # first: states are reduced in this order, so other settings are refused before anything is summed
        self.add_state("settings", torch.tensor(_settings_code(self.chrf), dtype=torch.int64),
                       dist_reduce_fx=_one_settings)
        self.add_state("statistics", torch.zeros((self.chrf.orders, 3), dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("segments", zero.clone(), dist_reduce_fx="sum")
        self.add_state("updates", zero.clone(), dist_reduce_fx="sum")  # with largest: bounds every sum
        self.add_state("largest", zero.clone(), dist_reduce_fx="max")
        # torchmetrics wraps compute (synchronise, squeeze, clone, cache), walking what it returns as a collection,
        # which a Report is not: it wraps the summed states, and the report is made from them.
        summed = self.compute
        self.compute = lambda: self._report(*summed())  # type: ignore[method-assign]

    def update(self, preds: str | Sequence[str], target: Sequence[str] | Sequence[Sequence[str]]) -> None:
        """Adds a batch: ``preds`` its hypotheses, ``target`` each one's references (as torchmetrics' CHRFScore:
        a flat list of str is one reference per segment, or the references of a single segment). An empty batch
        (a process without data this step) adds nothing."""
        hypotheses = [preds] if isinstance(preds, str) else list(preds)
        references: list[Any] = list(target)
        if not hypotheses and not references:
            return
        if all(isinstance(reference, str) for reference in references):
            references = [references] if len(hypotheses) == 1 else [[reference] for reference in references]
        counts = self.chrf.corpus_counts(hypotheses, references, references_per_segment=True)
        values = [value for order in counts.orders for value in order]
        largest = max(counts.segment_count, *values)
        if largest >= INT64_END:
            raise OverflowError(f"update: {largest} n-grams in one batch, more than an int64 state holds")
        self.statistics += torch.tensor(values, dtype=torch.int64).reshape(-1, 3)
        self.segments += counts.segment_count
        self.updates += 1
        self.largest: torch.Tensor = torch.maximum(self.largest, torch.tensor(largest, dtype=torch.int64))

    def compute(self) -> Any:
        """The exact :class:`Report` of every segment seen (in every process, once synchronised)."""
        return self.statistics, self.segments, self.updates, self.largest

    def _report(self, statistics: torch.Tensor, segments: torch.Tensor, updates: torch.Tensor,
                largest: torch.Tensor) -> Report:
        columns = statistic_columns(self.chrf)
        values = [int(segments), *(int(value) for value in statistics.flatten().tolist())]
        counts = Counts.of_sums([settings_text(self.chrf)], int(updates), dict(zip(columns, values)),
                                      dict.fromkeys(columns, int(largest)))
        return arrow.report(counts)
