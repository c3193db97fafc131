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


def score_texts(settings: chrf_core.Settings, rows: np.ndarray) -> list[str]:
    """Each row's score as the contract writes it (six decimals, ties to even, from the exact fraction), for many
    rows at once. Computed in floating point, whose error is far below a millionth of a point, and written from it
    wherever that cannot round differently from the exact fraction; a row within 1e-4 of a millionth's tie is
    scored exactly instead."""
    values = corpus_scores(settings, rows.astype(np.float64))
    scaled = values * 1_000_000
    texts = [f"{value:.6f}" for value in values.tolist()]
    for index in np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < 1e-4).tolist():
        row = rows[index].tolist()
        orders = [(row[k], row[k + 1], row[k + 2]) for k in range(0, len(row), 3)]
        texts[index] = chrf_core.score_text(chrf_core.exact_score(settings, orders))
    return texts


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


def bootstrap_scores(settings: chrf_core.Settings, systems: list[Blocks], samples: int,
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


def randomization_differences(settings: chrf_core.Settings, baseline: Blocks, system: Blocks,
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


def compare(settings: chrf_core.Settings, names: list[str], rows: list[Blocks], bootstrap: int,
            randomization: int, seed: int) -> tuple[list[chrf_core.Report], list[SystemResult]]:
    """Reports (exact corpus scores) and results (score, interval, delta, p-value) of each system, the baseline
    first. ``rows`` are per-segment count rows, (segments, 3 * orders) int32 blocks, one list per system."""
    reports = []
    for blocks in rows:
        summed = totals(blocks)
        orders = tuple((int(summed[k]), int(summed[k + 1]), int(summed[k + 2])) for k in range(0, len(summed), 3))
        segments = sum(block.shape[0] for block in blocks)
        reports.append(chrf_core.report_of(chrf_core.Counts(settings, segments, orders)))
    exact = [float(report.score) for report in reports]
    resampled = bootstrap_scores(settings, rows, bootstrap, seed)
    results: list[SystemResult] = []
    for index, (name, report) in enumerate(zip(names, reports)):
        low, high = interval(resampled[index])
        result: SystemResult = {"name": name, "score": float(chrf_core.score_text(report.score)),
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
