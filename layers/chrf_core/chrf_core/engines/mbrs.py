"""An mbrs metric backend: ``chrf_core`` in mbrs' metric registry, with chrF and chrF++ on every path.

mbrs (the MBR decoding toolkit) runs its own chrF through sacreBLEU's Python (its fast path, fastChrF, refuses
chrF++ and weighted reference aggregation). This module registers ``chrf_core``, an ``mbrs.metrics
.MetricAggregatable`` whose scores come from :class:`chrf_core.CHRF`: ``score``, ``scores``, ``pairwise_scores``
(the native kernel, every core), ``expected_scores_reference_aggregation`` (reference aggregation, weighted by the
softmax of ``reference_lprobs`` when mbrs gives them) and ``corpus_score``; every setting, each float correctly
rounded. Importable without mbrs; it registers only where mbrs is installed. From the command line::

    mbrs-decode hyps.txt -n 32 --metric chrf_core --metric.word_order 2 \\
        --plugin_dir "$(python -c 'import chrf_core, os; print(os.path.dirname(chrf_core.__file__))')"

(``--plugin_dir`` imports the ``chrf_core`` package, which imports this module once mbrs is loaded.)
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import InvalidInputError
from ..metric import CHRF

NAME = "chrf_core"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module of that name without a spec (made up, not installed)
        return False


AVAILABLE = _installed("mbrs") and _installed("torch")


def check_lprobs(values: Any) -> None:
    """mbrs' ``reference_lprobs``, whose softmax weights the references: each a log-probability (finite, or -inf for
    a reference of no weight), not all -inf; a broken one is named as the caller passed it."""
    if not isinstance(values, list):
        values = [values]
    for index, value in enumerate(values):
        if math.isnan(value) or value == math.inf:
            raise InvalidInputError("reference_lprobs", f"must be a log-probability (finite, or -inf for none), got "
                                                        f"{value}", index=index)
    if values and all(value == -math.inf for value in values):
        raise InvalidInputError("reference_lprobs", "must not all be -inf (every reference would weigh nothing)")


DEFAULTS = CHRF()


def metric_class() -> type:
    """The mbrs metric class (mbrs and torch imported here: they are this backend's alone), registered once."""
    import torch
    from mbrs.metrics import MetricAggregatable, get_metric, register

    try:
        return get_metric(NAME)  # type: ignore[no-any-return]
    except KeyError:
        pass

    class MetricChrfCore(MetricAggregatable):  # type: ignore[misc]
        """chrF / chrF++ from chrf_core: exact counts, correctly rounded scores, the native kernel on every core."""

        @dataclass
        class Config(MetricAggregatable.Config):  # type: ignore[misc]
            """The settings of :class:`chrf_core.CHRF` (with mbrs' and sacreBLEU's names for whitespace and
            eps_smoothing); ``threads``: the native kernel's threads (None: every core)."""

            char_order: int = DEFAULTS.char_order  # the defaults are CHRF's, written there once
            word_order: int = DEFAULTS.word_order
            beta: int = DEFAULTS.beta
            lowercase: bool = DEFAULTS.lowercase
            whitespace: bool = DEFAULTS.include_whitespace
            eps_smoothing: bool = DEFAULTS.averaging == "per_order_f"
            normalize: Optional[str] = None  # noqa: UP045 (simple_parsing reads the annotation)
            threads: Optional[int] = None  # noqa: UP045

        def __init__(self, cfg: Any) -> None:
            super().__init__(cfg)
            self.chrf = CHRF(char_order=cfg.char_order, word_order=cfg.word_order, beta=cfg.beta,
                             lowercase=cfg.lowercase, whitespace=cfg.whitespace, eps_smoothing=cfg.eps_smoothing,
                             normalize=cfg.normalize)
            self.threads = cfg.threads

        def score(self, hypothesis: str, reference: str, *_: Any, **__: Any) -> float:
            return float(self.chrf.sentence_score(hypothesis, reference).exact)

        def scores(self, hypotheses: list[str], references: list[str], *_: Any, **__: Any) -> Any:
            return torch.tensor([float(score) for score in self.chrf.segment_scores(hypotheses, references,
                                                                                    exact=True)],
                                dtype=torch.float64)

        def pairwise_scores(self, hypotheses: list[str], references: list[str], *_: Any, **__: Any) -> Any:
            return torch.from_numpy(self.chrf.pairwise(hypotheses, references, threads=self.threads))

        def expected_scores_reference_aggregation(self, hypotheses: list[str], references: list[str],
                                                  source: str | None = None,
                                                  reference_lprobs: Any = None) -> Any:
            weights = None
            if reference_lprobs is not None:
                lprobs = torch.as_tensor(reference_lprobs, dtype=torch.float64)
                check_lprobs(lprobs.tolist())
                weights = lprobs.softmax(dim=-1).tolist()
            return torch.from_numpy(self.chrf.aggregate(hypotheses, references, weights=weights,
                                                        threads=self.threads))

        def corpus_score(self, hypotheses: list[str], references_lists: list[list[str]],
                         sources: list[str] | None = None) -> float:
            return float(self.chrf.corpus_score(hypotheses, references_lists, references_per_segment=False).exact)

    register(NAME)(MetricChrfCore)
    return MetricChrfCore


if AVAILABLE:
    MetricChrfCore = metric_class()
