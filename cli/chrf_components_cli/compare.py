"""Comparing systems against a baseline with paired significance tests, as sacreBLEU does.

* Paired bootstrap resampling (Koehn 2004): the same resamples of segment indices for every system; a system's
  95% interval is the 2.5th to 97.5th percentile of its resampled scores, and the p-value is sacreBLEU's: the
  share of resamples whose centred |difference| reaches the observed |difference| ((c + 1) / (n + 1)).
* Paired approximate randomization (Riezler and Maxwell 2005): swap the two systems' outputs per segment at
  random; the p-value is the share of shuffles whose |difference| reaches the observed one ((c + 1) / (n + 1)).

Every resampled score comes from the resample's summed per-segment counts (a corpus score, not an average of
segment scores), computed for all resamples at once with NumPy. With the same seed (default 12345, as
sacreBLEU) the same numbers come out; sacreBLEU draws its resamples the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any, TypedDict

import chrf_core
import numpy as np

DEFAULT_SEED = 12345


class SystemResult(TypedDict):
    """One system in a comparison: its exact corpus score, 95% interval, and (not for the baseline) the
    difference from the baseline and its p-value."""

    name: str
    score: str
    ci: list[float]
    delta: float | None
    p_value: float | None
BLOCK_ELEMENTS = 1 << 22  # resample indices drawn per block, to bound memory on large test sets


def corpus_scores(settings: chrf_core.Settings, stats: np.ndarray) -> np.ndarray:
    """Scores (0..100) of many count vectors at once: ``stats`` has shape (samples, 3 * orders)."""
    hyp, ref, match = stats[:, 0::3], stats[:, 1::3], stats[:, 2::3]
    beta_squared = settings.beta**2
    with np.errstate(divide="ignore", invalid="ignore"):
        if settings.averaging == "per_order_f":
            f_scores = np.where((hyp > 0) & (ref > 0), (1 + beta_squared) * match / (beta_squared * ref + hyp), 0.0)
            mean: np.ndarray = 100 * f_scores.mean(axis=1)
            return mean
        effective = (hyp > 0) & (ref > 0)
        count = effective.sum(axis=1)
        precision = np.where(effective, match / np.where(hyp > 0, hyp, 1), 0.0).sum(axis=1) / np.maximum(count, 1)
        recall = np.where(effective, match / np.where(ref > 0, ref, 1), 0.0).sum(axis=1) / np.maximum(count, 1)
        denominator = beta_squared * precision + recall
        score = np.where(denominator > 0, 100 * (1 + beta_squared) * precision * recall / np.where(
            denominator > 0, denominator, 1), 0.0)
    result: np.ndarray = np.asarray(score)
    return result


def _blocks(samples: int, segments: int) -> Iterator[int]:
    per_block = max(1, BLOCK_ELEMENTS // max(segments, 1))
    done = 0
    while done < samples:
        size = min(per_block, samples - done)
        yield size
        done += size


def bootstrap_scores(settings: chrf_core.Settings, systems: list[np.ndarray], samples: int,
                     seed: int) -> list[np.ndarray]:
    """Each system's scores on the same ``samples`` bootstrap resamples of its segments (rows of counts)."""
    segments = systems[0].shape[0]
    rng = np.random.default_rng(seed)
    scores: list[list[np.ndarray]] = [[] for _ in systems]
    matrices = [system.astype(np.float64) for system in systems]
    for size in _blocks(samples, segments):
        indices = rng.choice(segments, size=(size, segments), replace=True)
        offsets = (np.arange(size) * segments)[:, None]
        weights = np.bincount((indices + offsets).ravel(), minlength=size * segments).reshape(size, segments)
        weights = weights.astype(np.float64)
        for k, matrix in enumerate(matrices):
            scores[k].append(corpus_scores(settings, weights @ matrix))
    return [np.concatenate(parts) for parts in scores]


def randomization_differences(settings: chrf_core.Settings, baseline: np.ndarray, system: np.ndarray,
                              trials: int, seed: int) -> np.ndarray:
    """|score(A) - score(B)| over ``trials`` shuffles that swap the two systems' outputs per segment."""
    segments = baseline.shape[0]
    rng = np.random.default_rng(seed)
    base, other = baseline.astype(np.float64), system.astype(np.float64)
    out = []
    for size in _blocks(trials, segments):
        swap = rng.integers(2, size=(size, segments), dtype=bool)
        keep = (~swap).astype(np.float64)
        swapped = swap.astype(np.float64)
        shuffled_a = swapped @ base + keep @ other
        shuffled_b = keep @ base + swapped @ other
        out.append(np.abs(corpus_scores(settings, shuffled_a) - corpus_scores(settings, shuffled_b)))
    return np.concatenate(out)


def p_value(statistics: np.ndarray, observed: float) -> float:
    """(c + 1) / (n + 1), c the statistics at least as large as the observed value.

    sacreBLEU (after MultEval) counts only those strictly larger, which calls an identical copy of the baseline
    significant (p = 1 / (n + 1)); counting ties too gives that copy p = 1 and changes nothing else, as ties
    between real-valued statistics do not otherwise occur.
    """
    return float((np.sum(statistics >= observed) + 1) / (len(statistics) + 1))


def interval(scores: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of resampled scores (sacreBLEU's bounds)."""
    ordered = np.sort(scores)
    lower = len(ordered) // 40
    return float(ordered[lower]), float(ordered[len(ordered) - lower - 1])


def compare(settings: chrf_core.Settings, names: list[str], rows: list[np.ndarray], bootstrap: int,
            randomization: int, seed: int) -> tuple[list[dict[str, Any]], list[SystemResult]]:
    """Reports (exact corpus scores) and results (score, interval, delta, p-value) of each system, the baseline
    first. ``rows`` are per-segment count rows, one (segments, 3 * orders) array per system."""
    reports = []
    for matrix in rows:
        totals = matrix.sum(axis=0)
        orders = tuple((int(totals[k]), int(totals[k + 1]), int(totals[k + 2])) for k in range(0, len(totals), 3))
        reports.append(chrf_core.build_report(chrf_core.Counts(settings, int(matrix.shape[0]), orders)))
    exact = [float(Fraction(report["score_fraction"])) for report in reports]
    resampled = bootstrap_scores(settings, rows, bootstrap, seed)
    results: list[SystemResult] = []
    for index, (name, report) in enumerate(zip(names, reports)):
        low, high = interval(resampled[index])
        result: SystemResult = {"name": name, "score": report["score"], "ci": [round(low, 6), round(high, 6)],
                                "delta": None, "p_value": None}
        if index:
            observed = abs(exact[index] - exact[0])
            if randomization:
                statistics = randomization_differences(settings, rows[0], rows[index], randomization, seed)
            else:
                differences = np.abs(resampled[index] - resampled[0])
                statistics = differences - differences.mean()
            result["delta"] = round(exact[index] - exact[0], 6)
            result["p_value"] = round(p_value(statistics, observed), 6)
        results.append(result)
    return reports, results
