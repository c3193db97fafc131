"""Comparing systems against a baseline with paired significance tests, as sacreBLEU does.

* Paired bootstrap resampling (Koehn 2004): the same resamples of segment indices for every system; a system's
  95% interval is the 2.5th to 97.5th percentile of its resampled scores, and the p-value is sacreBLEU's: the
  share of resamples whose centred |difference| reaches the observed |difference| ((c + 1) / (n + 1)).
* Paired approximate randomization (Riezler and Maxwell 2005): swap the two systems' outputs per segment at
  random; the p-value is the share of shuffles whose |difference| reaches the observed one ((c + 1) / (n + 1)).

Every resampled score comes from the resample's summed per-segment counts (a corpus score, not an average of
segment scores), computed a block of resamples at a time with NumPy, so memory stays near that of the counts
themselves (int32, one row per segment). The draws are sacreBLEU 2.6's, value for value: with the same seed
(default 12345, as sacreBLEU) the resamples and shuffles are the same and so are the p-values, ties aside.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

import chrf_core
import numpy as np
from chrf_core.arrays import float_scores

DEFAULT_SEED = 12345


class SystemResult(TypedDict):
    """One system in a comparison: its corpus score (the exact score rounded to six decimals), 95% interval,
    and (not for the baseline) the difference from the baseline and its p-value: every number a float."""

    name: str
    score: float
    ci: list[float]
    delta: float | None
    p_value: float | None
MAX_RESAMPLES = 100_000  # bootstrap resamples or randomization trials (sacreBLEU's defaults: 1,000 and 10,000)
BLOCK_ELEMENTS = 1 << 21  # resample cells drawn at a time (a multiple of 32: see _swap_rows)

Blocks = list[np.ndarray]  # a system's per-segment counts: int32 blocks of rows, in line order, never joined


def corpus_scores(settings: chrf_core.CHRF, stats: np.ndarray) -> np.ndarray:
    """Scores (0..100) of many summed count vectors at once: ``stats`` has shape (samples, 3 * orders)."""
    return float_scores(settings, stats.reshape(len(stats), -1, 3))


def weighted_totals(weights: np.ndarray, blocks: Blocks) -> np.ndarray:
    """``weights @ counts`` exactly (float64 holds every total), the counts converted a block at a time, so
    memory stays near that of the compact counts themselves."""
    totals = np.zeros((weights.shape[0], blocks[0].shape[1]))
    start = 0
    for block in blocks:
        end = start + block.shape[0]
        totals += weights[:, start:end].astype(np.float64) @ block.astype(np.float64)
        start = end
    return totals


def bootstrap_scores(settings: chrf_core.CHRF, systems: list[Blocks], samples: int,
                     seed: int) -> list[np.ndarray]:
    """Each system's scores on the same ``samples`` bootstrap resamples of its segments.

    The resamples are sacreBLEU's: ``default_rng(seed).choice(segments, size=(samples, segments))``, drawn a block
    of rows at a time (bounded integers continue one stream across calls)."""
    segments = sum(block.shape[0] for block in systems[0])
    rng = np.random.default_rng(seed)
    scores: list[list[np.ndarray]] = [[] for _ in systems]
    rows_per_block = max(1, BLOCK_ELEMENTS // segments)
    for done in range(0, samples, rows_per_block):
        size = min(rows_per_block, samples - done)
        indices = rng.choice(segments, size=(size, segments), replace=True)
        weights = np.stack([np.bincount(row, minlength=segments) for row in indices])
        del indices
        for k, blocks in enumerate(systems):
            scores[k].append(corpus_scores(settings, weighted_totals(weights, blocks)))
    return [np.concatenate(parts) for parts in scores]


def _swap_rows(seed: int, trials: int, segments: int) -> Iterator[np.ndarray]:
    """The rows of sacreBLEU's ``default_rng(seed).integers(2, size=(trials, segments), dtype=bool)``, a block
    at a time. NumPy draws booleans 32 to a 32-bit word and starts a fresh word at every call, so the stream
    continues exactly only when each call draws a multiple of 32: the flat stream is drawn in such pieces and
    cut into rows, the part of a row left over carried to the next piece."""
    rng = np.random.default_rng(seed)
    left = trials * segments
    carry = np.zeros(0, dtype=bool)
    while left:
        piece = min(BLOCK_ELEMENTS, left)
        bits = np.concatenate([carry, rng.integers(2, size=piece, dtype=bool)])
        left -= piece
        whole = len(bits) // segments * segments
        if whole:
            yield bits[:whole].reshape(-1, segments)
        carry = bits[whole:]


def totals(blocks: Blocks) -> np.ndarray:
    """A system's summed counts (int64)."""
    return np.asarray(np.sum([block.sum(axis=0, dtype=np.int64) for block in blocks], axis=0, dtype=np.int64))


def randomization_differences(settings: chrf_core.CHRF, baseline: Blocks, system: Blocks,
                              trials: int, seed: int) -> np.ndarray:
    """|score(A) - score(B)| over ``trials`` shuffles that swap the two systems' outputs per segment, with
    sacreBLEU's draws (``--paired-ar``): A takes the baseline's segment where the draw is true."""
    segments = sum(block.shape[0] for block in baseline)
    base_total, system_total = totals(baseline).astype(np.float64), totals(system).astype(np.float64)
    difference = [np.subtract(b, s, dtype=np.int32) for b, s in zip(baseline, system)]
    out = []
    for swap in _swap_rows(seed, trials, segments):
        moved = weighted_totals(swap, difference)  # what taking the baseline's segments moves, per trial
        out.append(np.abs(corpus_scores(settings, system_total + moved) - corpus_scores(settings, base_total - moved)))
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


def compare(settings: chrf_core.CHRF, names: list[str], rows: list[Blocks], bootstrap: int,
            randomization: int, seed: int) -> tuple[list[chrf_core.Report], list[SystemResult]]:
    """Reports (exact corpus scores) and results (score, interval, delta, p-value) of each system, the baseline
    first. ``rows`` are per-segment count rows, (segments, 3 * orders) int32 blocks, one list per system."""
    reports = [settings.report(chrf_core.Counts.of_array(settings, sum(block.shape[0] for block in blocks),
                                                         totals(blocks))) for blocks in rows]
    exact = [report.score for report in reports]
    resampled = bootstrap_scores(settings, rows, bootstrap, seed)
    results: list[SystemResult] = []
    for index, (name, report) in enumerate(zip(names, reports)):
        low, high = interval(resampled[index])
        result: SystemResult = {"name": name, "score": float(chrf_core.score_text(report.exact)),
                                "ci": [round(low, 6), round(high, 6)],
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
