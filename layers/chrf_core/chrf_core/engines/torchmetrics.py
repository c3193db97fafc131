"""chrF as a torchmetrics ``Metric`` for PyTorch and Lightning loops (``pip install 'chrf-components[torch]'``):
torchmetrics' ``CHRFScore``, exact.

Switching is an import: ``CHRFScore(n_char_order=6, n_word_order=2, beta=2.0, lowercase=False, whitespace=False,
return_sentence_level_score=False)`` takes torchmetrics' own arguments and defaults (chrF++), ``update(preds,
target)`` its layout, and ``compute()`` and ``forward`` return what it returns: a tensor on its scale, 0..1 (0.5495
for chrF 54.95), float64, correctly rounded from the exact score (and the sentences' scores with
``return_sentence_level_score``); so ``float(metric.compute())``, ``self.log("chrf", metric)`` in Lightning,
``MetricCollection`` and ``plot()`` work as with torchmetrics' own. :meth:`CHRFScore.report` gives the exact
:class:`Report` (every order's counts and fractions; ``to_dict()`` byte for byte ``corpus_score``'s). A ``CHRF``
gives any other settings: ``CHRFScore(chrf=CHRF(word_order=2, normalize="NFC"))``.

The counts are one int64 state (the statistics' row: segments, then three counts per order), added up exactly in
Python integers at each ``update`` and summed by torchmetrics' own synchronisation (DDP, ``torchrun``, Lightning)
and :meth:`merge_state` through a reduction that checks every process's row first, as the engines' statistics are
checked: counts no texts could give, a negative count, a floating-point state or a sum past 2^63 - 1 is refused by
name, never a number. The settings are a state too, reduced first, so processes or metrics of other settings refuse
to synchronise, merge or load (``load_state_dict``) before anything is summed. The counting states stay int64 on
``to()``, ``half()``, ``double()`` and ``set_dtype()`` (moved to the device, never cast).

>>> from chrf_core.engines.torchmetrics import CHRFScore
>>> metric = CHRFScore()
>>> metric.update(["The cat sat on the mat."], [["The cat sat on a mat."]])
>>> metric.update(["A dog barked."], [["The dog barked loudly."]])
>>> metric.compute()
tensor(0.5880, dtype=torch.float64)
>>> print(metric.report())
chrF2++ = 58.80
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import torch
from torchmetrics import Metric

from ..contract import AVERAGINGS, NORMALIZATIONS, SETTING_KEYS, TEXT_KEYS
from ..counts import Counts
from ..errors import InvalidInputError
from ..formula import float_scores
from ..metric import CHRF
from ..settings import ChrfSettings, difference
from ..stored import read_back
from ..texts import check_flag
from .statistics import INT64_END, statistic_columns

if TYPE_CHECKING:
    from ..report import Report

_NORMALIZE_CODES = (None, *NORMALIZATIONS)
_TORCHMETRICS_DEFAULTS = (6, 2, 2.0, False, False)  # n_char_order, n_word_order, beta, lowercase, whitespace


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


def _integers(name: str, state: torch.Tensor) -> torch.Tensor:
    """A counting state as it must be: an int64 tensor (a floating one has lost exactness, or may have)."""
    if not isinstance(state, torch.Tensor) or state.dtype != torch.int64:
        kind = state.dtype if isinstance(state, torch.Tensor) else type(state).__name__
        raise TypeError(f"{name}: a state of {kind}; chrF's counting states are int64 (exact), not to be cast")
    return state


def _one_settings(stacked: torch.Tensor, where: str = "merge") -> torch.Tensor:
    """The reduction of the settings state: every process's (or merged or loaded metric's) must be the same."""
    first = _integers("settings", stacked)[0]
    for other in stacked[1:]:
        if not torch.equal(first, other):
            mine, theirs = _settings_of_code(first.tolist()), _settings_of_code(other.tolist())
            raise ValueError(f"{where}: statistics of other settings ({difference(mine, theirs)})")
    return first


def _summed(chrf: CHRF, stacked: torch.Tensor) -> torch.Tensor:
    """The reduction of the counts state: every process's (or merged metric's) row checked as counts some texts could
    give, then summed exactly; a sum past int64 is an OverflowError naming its column."""
    rows = _integers("counts", stacked).tolist()
    for row in rows:
        _checked(chrf, row, "merge")
    return _state(chrf, [sum(column) for column in zip(*rows)])


def _checked(chrf: CHRF, row: list[int], where: str) -> Counts:
    try:
        return Counts.checked(chrf, row[0], [row[k:k + 3] for k in range(1, len(row), 3)])
    except ValueError as error:
        raise ValueError(f"{where}: a counts state no texts could give ({str(error).removeprefix('counts: ')})") \
            from None


def _state(chrf: CHRF, values: list[int], device: Any = None) -> torch.Tensor:
    for name, value in zip(statistic_columns(chrf), values):
        if value >= INT64_END:
            raise OverflowError(f"{name}: the sum {value} passes 2^63 - 1, more than an int64 state holds")
    return torch.tensor(values, dtype=torch.int64, device=device)


class CHRFScore(Metric):  # type: ignore[misc]
    """chrF / chrF++ as torchmetrics' ``CHRFScore``, exact: its arguments (``n_char_order``, ``n_word_order``,
    ``beta``, ``lowercase``, ``whitespace``, ``return_sentence_level_score``) or ``chrf``, a ``CHRF`` with any
    settings (also accepted as the first argument); ``kwargs`` go to torchmetrics' ``Metric`` (``sync_on_compute``,
    ``process_group``, ...)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    settings: torch.Tensor  # the states (add_state)
    counts: torch.Tensor

    def __init__(self, n_char_order: int | CHRF = 6, n_word_order: int = 2, beta: float = 2.0, lowercase: bool = False,
                 whitespace: bool = False, return_sentence_level_score: bool = False, *, chrf: CHRF | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(n_char_order, CHRF):  # CHRFScore(CHRF(...)), as chrf-components 1.0.0 took it
            chrf, n_char_order = n_char_order, _TORCHMETRICS_DEFAULTS[0]
        if chrf is not None:
            if not isinstance(chrf, CHRF):
                raise TypeError(f"chrf: expected a chrf_core.CHRF, got {type(chrf).__name__}")
            if (n_char_order, n_word_order, beta, lowercase, whitespace) != _TORCHMETRICS_DEFAULTS:
                raise TypeError("give the settings either as a CHRF (chrf=) or as torchmetrics' arguments, not both")
        else:
            chrf = CHRF(char_order=n_char_order, word_order=n_word_order, beta=beta,  # type: ignore[arg-type]
                        lowercase=lowercase, whitespace=whitespace)  # torchmetrics' beta is a float: 2.0 is 2
        self.chrf = chrf
        self.return_sentence_level_score = check_flag("return_sentence_level_score", return_sentence_level_score)
        # reduced in this order: other settings are refused before anything is summed
        self.add_state("settings", torch.tensor(_settings_code(chrf), dtype=torch.int64), dist_reduce_fx=_one_settings)
        self.add_state("counts", torch.zeros(1 + 3 * chrf.orders, dtype=torch.int64),
                       dist_reduce_fx=partial(_summed, chrf))
        if self.return_sentence_level_score:
            self.add_state("sentence_scores", [], dist_reduce_fx="cat")

    def update(self, preds: str | Sequence[str], target: Sequence[str] | Sequence[Sequence[str]]) -> None:
        """Adds a batch: ``preds`` its hypotheses (a str: one), ``target`` each one's references (as torchmetrics'
        CHRFScore: a flat list of str is one reference per segment, or the references of a single segment; a bare
        str is refused, as ``corpus_score`` refuses it). An empty batch (a process without data this step) adds
        nothing."""
        if isinstance(target, (str, bytes)):
            raise TypeError(f"target: expected each segment's references (a list), got a single "
                            f"{type(target).__name__}; for one segment with one reference, pass [reference]")
        hypotheses = [preds] if isinstance(preds, str) else list(preds)
        references: list[Any] = list(target)
        if not hypotheses and not references:
            return
        if references and all(isinstance(reference, str) for reference in references):
            references = [references] if len(hypotheses) == 1 else [[reference] for reference in references]
        if self.return_sentence_level_score:
            rows = self.chrf.segment_counts(hypotheses, references, references_per_segment=True)
            batch = Counts.of_array(self.chrf, len(hypotheses), rows.sum(axis=0))
            self.sentence_scores.append(torch.tensor(float_scores(self.chrf, rows) / 100, dtype=torch.float64))
        else:
            batch = self.chrf.corpus_counts(hypotheses, references, references_per_segment=True)
        values = [batch.segment_count, *(value for order in batch.orders for value in order)]
        self.counts = _state(self.chrf, [a + b for a, b in zip(_integers("counts", self.counts).tolist(), values)],
                             self.counts.device)

    def compute(self) -> Any:
        """chrF of every segment seen (in every process, once synchronised) on torchmetrics' scale (0..1), a float64
        tensor correctly rounded from the exact score; with ``return_sentence_level_score``, and each segment's."""
        score = torch.tensor(float(self._report().exact / 100), dtype=torch.float64)
        if not self.return_sentence_level_score:
            return score
        sentences = self.sentence_scores
        return score, torch.cat(sentences) if isinstance(sentences, list) else sentences

    def report(self) -> Report:
        """The exact :class:`Report` of every segment seen (in every process, synchronised as ``compute`` is)."""
        with self.sync_context(dist_sync_fn=self.dist_sync_fn, should_sync=self._to_sync,
                               should_unsync=self._should_unsync):
            return self._report()

    def _report(self) -> Report:
        counts = _checked(self.chrf, _integers("counts", self.counts).tolist(), "report")
        if counts.segment_count == 0:
            raise InvalidInputError(TEXT_KEYS[0], "at least 1 segment, got 0")
        return self.chrf.report(counts)

    def plot(self, val: Any = None, ax: Any = None) -> Any:
        """torchmetrics' plot of a value of ``compute`` or ``forward`` (default: ``compute()``)."""
        return self._plot(val, ax)

    def _apply(self, fn: Any, exclude_state: Sequence[str] = ()) -> Any:
        """torchmetrics' move (and, through ``set_dtype``, cast) of the states, but for the counting states: moved
        to the device ``fn`` moves to, kept int64."""
        counting = ("settings", "counts")
        this = super()._apply(fn, exclude_state=(*exclude_state, *counting))
        for name in counting:
            for states in (this.__dict__, this._defaults):
                moved = fn(states[name])
                states[name] = moved if moved.dtype == torch.int64 else states[name].to(moved.device)
        return this

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        """Loads the states (``persistent(True)``'s ``state_dict``) only if they are of these settings and counts some
        texts could give, int64."""
        settings, counts = state_dict.get(prefix + "settings"), state_dict.get(prefix + "counts")
        if settings is not None:
            _one_settings(torch.stack([self.settings, _integers("settings", settings)]), "load_state_dict")
        if counts is not None:
            _checked(self.chrf, _integers("counts", counts).tolist(), "load_state_dict")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

