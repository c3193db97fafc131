"""Scoring line-aligned files of any size through the layer: corpus counts, and optionally every segment's score.

Counts are sums over segments, so the files are read and counted chunk by chunk (lines.py) and the chunk counts
summed: memory is bounded by a chunk. The command line calls the layer directly, so no request limit applies (a
line may be longer than a request could be); the service keeps the contract's limits.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from operator import eq, gt, or_
from typing import TextIO

import chrf_core
from chrf_core.arrays import exact_score

from .lines import LineFile, aligned_chunks, progress_size

HISTOGRAM_BINS = 20  # segment scores in steps of 5 points


@dataclass
class Facts:
    """What the diagnosis needs to know beyond the counts."""

    segments: int = 0
    empty_hypotheses: int = 0
    empty_references: int = 0
    identical: int = 0
    unspaced: int = 0  # non-empty segments whose hypothesis or reference has no whitespace: one word


@dataclass(order=True)
class Segment:
    """One segment's score, with its texts (kept only for the worst few)."""

    score: Fraction
    line: int
    hypothesis: str = field(compare=False, default="")
    reference: str = field(compare=False, default="")


@dataclass
class CorpusResult:
    counts: chrf_core.Counts
    facts: Facts
    histogram: list[int] | None = None
    worst: list[Segment] = field(default_factory=list)


class WorstSegments:
    """The ``size`` lowest-scoring segments seen so far (earlier lines first among equal scores)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.heap: list[tuple[Fraction, int, Segment]] = []  # max-heap on (score, line) through negation

    def offer(self, score: Fraction, line: int, hypothesis: str, reference: str) -> None:
        if not self.size:
            return
        if len(self.heap) < self.size:
            heapq.heappush(self.heap, (-score, -line, Segment(score, line, hypothesis, reference)))
        elif (-score, -line) > self.heap[0][:2]:
            heapq.heapreplace(self.heap, (-score, -line, Segment(score, line, hypothesis, reference)))

    def lowest_first(self) -> list[Segment]:
        return sorted(entry[2] for entry in self.heap)


def score_files(
    hypothesis_file: LineFile,
    reference_files: list[LineFile],
    settings: chrf_core.CHRF,
    per_segment: bool = False,
    worst: int = 0,
    progress: Callable[[int], None] | None = None,
) -> CorpusResult:
    """Corpus counts of line-aligned files (several reference files: each segment against its best reference);
    with ``per_segment``, a histogram of segment scores and the ``worst`` lowest-scoring segments too (shown with
    the first reference)."""
    parts: list[chrf_core.Counts] = []
    facts = Facts()
    histogram = [0] * HISTOGRAM_BINS
    lowest = WorstSegments(worst)
    for hypotheses, *reference_streams in aligned_chunks([hypothesis_file, *reference_files]):
        first = facts.segments + 1
        references = reference_streams[0]
        observe(facts, hypotheses, references, settings.word_order > 0)
        if per_segment:
            counts = settings.segment_counts(hypotheses, reference_streams, references_per_segment=False)
            parts.append(chrf_core.Counts.of_array(settings, len(hypotheses), counts.sum(axis=0)))
            for index, orders in enumerate(counts.tolist()):
                score = exact_score(settings, orders)
                histogram[min(HISTOGRAM_BINS - 1, int(score * HISTOGRAM_BINS / 100))] += 1
                lowest.offer(score, first + index, hypotheses[index], references[index])
        else:
            parts.append(settings.corpus_counts(hypotheses, reference_streams, references_per_segment=False))
        if progress:
            progress(facts.segments)
        if len(parts) > 1:
            parts = [chrf_core.Counts.merge(parts)]
    return CorpusResult(chrf_core.Counts.merge(parts), facts, histogram if per_segment else None, lowest.lowest_first())


def observe(facts: Facts, hypotheses: list[str], references: list[str], words: bool) -> None:
    """Count what the diagnosis needs, with C-level passes over the chunk (this runs on every line)."""
    facts.segments += len(hypotheses)
    facts.empty_hypotheses += hypotheses.count("")
    facts.empty_references += references.count("")
    same = list(map(eq, hypotheses, references))
    facts.identical += sum(same)
    if words:  # only word orders care whether a text has spaces
        one_h = map((1).__eq__, map(len, map(str.split, hypotheses)))
        one_r = map((1).__eq__, map(len, map(str.split, references)))
        facts.unspaced += sum(map(gt, map(or_, one_h, one_r), same))  # one word on a side, and not identical


def progress_printer(files: list[LineFile], stream: TextIO | None = None) -> Callable[[int], None] | None:
    """A progress line on stderr, only when stderr is a terminal (never in logs or pipes)."""
    out = stream or sys.stderr
    if not out.isatty():
        return None
    total = progress_size(files)

    def show(segments: int) -> None:
        done = sum(file.offset for file in files)
        share = f" ({100 * done / total:.0f}%)" if total else ""
        out.write(f"\rscored {segments} segments{share}")
        out.flush()

    return show


def finish_progress(progress: Callable[[int], None] | None) -> None:
    if progress:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()
