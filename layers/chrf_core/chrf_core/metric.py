"""``CHRF``: the scoring settings, checked by the contract's rules, and everything scored with them.

It is shaped like sacreBLEU's ``CHRF``: settings as keyword arguments (named and defaulted as the contract names
them), then ``corpus_score``, ``sentence_score`` and, for minimum Bayes risk decoding, ``pairwise`` and
``aggregate`` (and their ``_batch`` forms, on every core); every number is
the contract's, exact. The whole project passes settings around as a ``CHRF``.

>>> from chrf_core import CHRF
>>> hypotheses = ["The cat sat on the mat.", "A dog barked."]
>>> references = ["The cat sat on a mat.", "The dog barked loudly."]
>>> chrf = CHRF(word_order=2)
>>> result = chrf.corpus_score(hypotheses, [references])  # sacreBLEU's layout: a list of one reference stream
>>> print(result)
chrF2++ = 58.80
>>> result.score, result.exact
(58.80446480935931, Fraction(567927957436544725, 9657905386567746))
>>> result.to_dict()["score"], result.orders[6]
('58.804465', OrderScore(type='word', n=1, hypothesis_ngrams=11, reference_ngrams=12, matching_ngrams=9, beta=2))
>>> chrf.signature
'chrf-components:1.0.0|chrF2++|nc:6|nw:2|space:no|case:mixed|avg:precision_recall|hyp:all'
>>> chrf.segment_scores(hypotheses, references).round(2).tolist()
[72.66, 44.17]
>>> chrf.pairwise(["a cat", "the dog"], ["the cat", "a dog"]).tolist()
[[29.363033873343152, 12.5], [20.625, 36.85304990757856]]
>>> CHRF(beta=0)
Traceback (most recent call last):
chrf_core.errors.InvalidInputError: beta: must be an integer from 1 to 16, got 0
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, overload

from . import mbr
from .contract import TEXT_KEYS
from .counts import Counts
from .errors import InvalidInputError
from .formula import exact_score, float_scores
from .report import Report, report_of
from .settings import ChrfSettings, difference
from .stored import reads_back_as
from .streams import References, best_rows, chunks_of, corpus_counts, segment_rows, sides_of, systems_rows
from .texts import check_flag, check_side

if TYPE_CHECKING:
    import numpy


@reads_back_as  # settings read back (stored counts, reports, metric states) are made as a CHRF
@dataclass(frozen=True, eq=False)  # equal, and hashed, as its settings are
class CHRF(ChrfSettings):
    """chrF / chrF++ with the contract's settings: character orders 1..char_order, word orders 1..word_order (2 gives
    chrF++), recall weighted beta times precision, optional lowercasing and whitespace kept in character n-grams,
    and the averaging (``"precision_recall"``: sacreBLEU 2.x; ``"per_order_f"``: chrF++.py's arithmetic).

    A rule broken on construction raises :class:`InvalidInputError` (a ValueError) naming the setting; 6.0 counts as 6
    (as in JSON), a boolean never counts as a number. sacreBLEU's spellings work too, and read back: ``whitespace``
    is ``include_whitespace``, ``eps_smoothing=True`` is ``averaging="per_order_f"`` (chrF++.py's arithmetic, which
    sacreBLEU's epsilon smoothing gives) and False is ``"precision_recall"``; a spelling that contradicts the other
    is an error. Instances are immutable and hashable."""

    # ---- scoring ---------------------------------------------------------------------------------------------

    def corpus_score(self, hypotheses: Iterable[str], references: References, *,
                     references_per_segment: bool | None = None) -> Report:
        """The corpus score of line-aligned segments, with every order's counts and exact fractions; ``to_dict()``
        is the contract's JSON output (the service's and the corpus pipeline's for the same segments).

        ``references`` as sacreBLEU takes it: a list of reference streams (one per reference translation, each
        holding every segment's; ``None`` where a segment lacks that one), or one stream itself. Any iterables, of
        any length: they are read CHUNK segments at a time. With ``references_per_segment=True``, one list of
        references per segment instead (Hugging Face's and torchmetrics' layout; read whole). A list of N lists of N
        texts for N >= 2 hypotheses, which both layouts could mean, is refused unless ``references_per_segment``
        says which (False: sacreBLEU's)."""
        return report_of(*corpus_counts(self, hypotheses, references, references_per_segment))

    def corpus_counts(self, hypotheses: Iterable[str], references: References, *,
                      references_per_segment: bool | None = None) -> Counts:
        """The per-order counts behind :meth:`corpus_score`: mergeable with other segments' counts
        (:meth:`Counts.merge`), scored by :meth:`report`."""
        return corpus_counts(self, hypotheses, references, references_per_segment)[0]

    def sentence_score(self, hypothesis: str, references: str | Sequence[str | None]) -> Report:
        """One segment's score (sacreBLEU's ``sentence_score``): ``references`` a list of its references (against
        the best one, as :meth:`corpus_score` chooses), or one reference."""
        if not isinstance(hypothesis, str):
            raise TypeError(f"hypothesis: expected a str, got {type(hypothesis).__name__}")
        if isinstance(references, str):
            return self.corpus_score([hypothesis], [references])
        check_side(TEXT_KEYS[1], references)
        if not references:
            raise InvalidInputError(TEXT_KEYS[1], "at least 1 reference, got 0")
        return self.corpus_score([hypothesis], [list(references)], references_per_segment=True)

    @overload
    def segment_scores(self, hypotheses: Iterable[str], references: References, exact: Literal[False] = False, *,
                       references_per_segment: bool | None = None) -> numpy.ndarray | Iterator[float]: ...

    @overload
    def segment_scores(self, hypotheses: Iterable[str], references: References, exact: Literal[True], *,
                       references_per_segment: bool | None = None) -> Iterator[Fraction]: ...

    def segment_scores(self, hypotheses: Iterable[str], references: References, exact: bool = False, *,
                       references_per_segment: bool | None = None
                       ) -> numpy.ndarray | Iterator[float] | Iterator[Fraction]:
        """Each segment's own score (0..100), in order: a float64 NumPy array when both sides are sequences, else
        an iterator that reads the segments as it goes; with ``exact``, an iterator of exact Fractions. The floats
        come from one vectorised formula, within 1e-12 of the exact value (which ``exact`` gives). ``references``
        and ``references_per_segment`` as for :meth:`corpus_score`."""
        sides = sides_of(self, hypotheses, references, references_per_segment)
        if check_flag("exact", exact):
            return (exact_score(self, orders) for orders in segment_rows(self, sides))
        floats = (float_scores(self, best_rows(self, *chunk)) for chunk in chunks_of(sides))
        if isinstance(sides.hypotheses, Sequence) and all(isinstance(stream, Sequence) for stream in sides.streams):
            import numpy

            parts = list(floats)
            return numpy.concatenate(parts) if parts else numpy.empty(0)
        return (score for part in floats for score in part.tolist())

    def segment_reports(self, hypotheses: Iterable[str], references: References, *,
                        references_per_segment: bool | None = None) -> Iterator[Report]:
        """Each segment's own report, in order, as the segments are read."""
        sides = sides_of(self, hypotheses, references, references_per_segment)
        return (report_of(Counts(self, 1, orders)) for orders in segment_rows(self, sides))

    def pairwise(self, hypotheses: Sequence[str], references: Sequence[str], *,
                 threads: int | None = None) -> numpy.ndarray:
        """Every hypothesis scored against every reference alone, as for minimum Bayes risk decoding: a float64
        NumPy array shaped (len(hypotheses), len(references)), each entry correctly rounded from its exact
        fraction. Each text's n-grams are counted once; the native kernel runs on ``threads`` threads (default:
        every core) without the GIL. The texts together may hold at most MAX_TEXT_LENGTH code points."""
        return mbr.pairwise(self, *mbr.checked(self, hypotheses, references), mbr.thread_count(threads))

    @overload
    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], *, exact: Literal[False] = False,
                  threads: int | None = None, weights: Any = None) -> numpy.ndarray: ...

    @overload
    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], *, exact: Literal[True],
                  threads: int | None = None, weights: Any = None) -> list[Fraction]: ...

    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], *, exact: bool = False,
                  threads: int | None = None, weights: Any = None) -> numpy.ndarray | list[Fraction]:
        """Each hypothesis scored once against the references' averaged n-gram counts (reference aggregation for
        MBR decoding, linear in the number of references): a float64 array, each entry correctly rounded from its
        exact fraction, or with ``exact`` the Fractions. With one reference it is ``pairwise``'s column. With
        ``weights`` (one number per reference, from 0; a list, a NumPy array or a tensor), the average is weighted
        by them, normalised to sum to 1 (mbrs' ``reference_lprobs`` as their softmax). See :mod:`chrf_core.mbr`
        for the exact definition.

        >>> CHRF().aggregate(["a cat", "the dog"], ["the cat", "a dog"]).round(4).tolist()
        [24.0791, 24.37]
        >>> CHRF().aggregate(["a cat", "the dog"], ["the cat", "a dog"], weights=[3, 1]).round(4).tolist()
        [28.0383, 21.5498]
        """
        return mbr.aggregate(self, *mbr.checked(self, hypotheses, references), mbr.thread_count(threads), exact,
                             weights)

    def pairwise_batch(self, hypothesis_sets: Sequence[Sequence[str]], reference_sets: Sequence[Sequence[str]], *,
                       threads: int | None = None) -> list[numpy.ndarray]:
        """:meth:`pairwise` for many candidate sets (one per source sentence) in one call, the sets spread over
        ``threads`` threads (default: every core): one matrix per set, in order."""
        return mbr.batch(self, True, hypothesis_sets, reference_sets, mbr.thread_count(threads))

    def aggregate_batch(self, hypothesis_sets: Sequence[Sequence[str]], reference_sets: Sequence[Sequence[str]], *,
                        threads: int | None = None) -> list[numpy.ndarray]:
        """:meth:`aggregate` for many candidate sets in one call, spread over the threads: one array per set."""
        return mbr.batch(self, False, hypothesis_sets, reference_sets, mbr.thread_count(threads))

    # ---- counts (for the command line, the functions and other tools; chrf_core.arrays scores count arrays) -----

    def segment_counts(self, hypotheses: Sequence[str], references: References, *,
                       references_per_segment: bool | None = None) -> numpy.ndarray:
        """Each segment's own per-order counts: an int64 NumPy array shaped (segments, orders, 3), (hypothesis
        n-grams, reference n-grams, matches) per order, for :meth:`float_scores`, :meth:`score_texts`,
        :meth:`json_lines` or summing (:meth:`Counts.of_array`). Line-aligned texts, checked; with several
        reference streams, each segment's counts against its best reference (as :meth:`corpus_score`)."""
        import numpy

        rows = [best_rows(self, *chunk) for chunk in chunks_of(sides_of(self, hypotheses, references,
                                                                      references_per_segment))]
        if len(rows) == 1:
            return rows[0]
        return numpy.concatenate(rows) if rows else numpy.empty((0, self.orders, 3), dtype=numpy.int64)

    def system_counts(self, hypothesis_sets: Sequence[Sequence[str]], references: References, *,
                      references_per_segment: bool | None = None) -> numpy.ndarray:
        """Several systems' own segment counts against the same references: an int64 NumPy array shaped (systems,
        segments, orders, 3), for each system what :meth:`segment_counts` gives, each reference counted once per
        segment rather than once per system (comparing systems). Line-aligned texts, checked."""
        return systems_rows(self, hypothesis_sets, references, references_per_segment)

    def report(self, counts: Counts) -> Report:
        """The report of counts made with these settings (:meth:`corpus_counts`, merged ones, read-back ones): as
        :meth:`corpus_score` of the same segments, at least one."""
        if counts.settings != self:
            raise ValueError(f"report: counts made with other settings ({difference(self, counts.settings)})")
        if counts.segment_count == 0:
            raise InvalidInputError(TEXT_KEYS[0], "at least 1 segment, got 0")
        return report_of(counts)

