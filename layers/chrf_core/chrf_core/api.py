"""The Python API: exact chrF / chrF++ for researchers' code (notebooks, data filtering, MBR decoding).

Settings are keyword arguments named as in the contract (``char_order``, ``word_order``, ``beta``, ``lowercase``,
``include_whitespace``, ``averaging``), with its defaults and validated by its rules; a broken rule raises
:class:`InvalidInputError` (a ValueError) naming the setting. The contract's request-size limits are the service's
and do not apply here: the corpus functions take any iterables and read them in chunks.

>>> hypotheses = ["The cat sat on the mat.", "A dog barked."]
>>> references = ["The cat sat on a mat.", "The dog barked loudly."]
>>> report = corpus_report(hypotheses, references, word_order=2)
>>> report.score
Fraction(567927957436544725, 9657905386567746)
>>> report.to_dict()["score"], report.orders[6]
('58.804465', OrderScore(type='word', n=1, hypothesis_ngrams=11, reference_ngrams=12, matching_ngrams=9, beta=2))
>>> [round(float(score), 2) for score in segment_scores(hypotheses, references, word_order=2)]
[72.66, 44.17]
>>> pairwise(["a cat", "the dog"], ["the cat", "a dog"]).tolist()
[[31.25, 6.25], [19.166666666666668, 42.279411764705884]]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from itertools import islice
from typing import TYPE_CHECKING, Any

from . import counting, python_kernel
from .contract import TEXT_KEYS, Settings
from .counting import Counts, count_segments, merge_counts, segment_rows
from .errors import InvalidInputError
from .report import Report, exact_score, report_of
from .request import MAX_TEXT_LENGTH, check_encodable, check_length, check_strings, parse_strict_settings

if TYPE_CHECKING:
    import numpy

CHUNK = 4096  # segments read and counted at a time
TOLERANCE_BITS = 80  # a native score within 2^-80 of a rounding midpoint is recomputed exactly (see kernel.c)


def settings_of(**settings: Any) -> Settings:
    """The settings these keyword arguments name, the contract's defaults filled in.

    >>> settings_of(word_order=2)  # doctest: +NORMALIZE_WHITESPACE
    Settings(char_order=6, word_order=2, beta=2, lowercase=False, include_whitespace=False,
             averaging='precision_recall')
    >>> settings_of(beta=0)
    Traceback (most recent call last):
    chrf_core.errors.InvalidInputError: beta: must be an integer from 1 to 16, got 0
    """
    return parse_strict_settings(settings)


def corpus_counts(hypotheses: Iterable[str], references: Iterable[str], **settings: Any) -> Counts:
    """Per-order counts summed over line-aligned segments (any number; read in chunks of CHUNK)."""
    chosen = settings_of(**settings)
    parts = [count_segments(chunk[0], chunk[1], chosen) for chunk in _chunks(*_sides(hypotheses, references))]
    if not parts:
        raise InvalidInputError(TEXT_KEYS[0], "at least 1 segment, got 0")
    return merge_counts(parts)


def corpus_report(hypotheses: Iterable[str], references: Iterable[str], **settings: Any) -> Report:
    """The corpus score with every order's counts and exact fractions: the numbers, and with ``to_dict()`` the
    JSON, of the contract's output and of the corpus pipeline's report for the same segments."""
    return report_of(corpus_counts(hypotheses, references, **settings))


def segment_reports(hypotheses: Iterable[str], references: Iterable[str], **settings: Any) -> Iterator[Report]:
    """Each segment's own report, in order, as the segments are read."""
    chosen = settings_of(**settings)
    return (report_of(counts) for counts in _segment_counts(*_sides(hypotheses, references), chosen))


def segment_scores(hypotheses: Iterable[str], references: Iterable[str], **settings: Any) -> Iterator[Fraction]:
    """Each segment's exact score (0..100), in order, as the segments are read."""
    chosen = settings_of(**settings)
    return (exact_score(chosen, counts.orders) for counts in _segment_counts(*_sides(hypotheses, references), chosen))


def pairwise(hypotheses: Sequence[str], references: Sequence[str], **settings: Any) -> numpy.ndarray:
    """Every hypothesis scored against every reference, as for minimum Bayes risk decoding.

    A float64 NumPy array shaped (len(hypotheses), len(references)): ``matrix[i, j]`` is the score of hypothesis i
    against reference j alone, correctly rounded from its exact fraction. The native kernel counts each text's
    n-grams once, without the GIL; the texts together may hold at most MAX_TEXT_LENGTH code points.
    """
    import numpy

    chosen = settings_of(**settings)
    sides = [_segments(key, texts) for key, texts in zip(TEXT_KEYS, (hypotheses, references))]
    for key, texts in zip(TEXT_KEYS, sides):
        if not texts:
            raise InvalidInputError(key, "at least 1 segment, got 0")
        check_strings(key, texts)
        check_encodable(key, texts)
    total = sum(map(len, sides[0])) + sum(map(len, sides[1]))
    if total > MAX_TEXT_LENGTH:
        raise InvalidInputError(None, f"at most {MAX_TEXT_LENGTH} code points in all texts together, got {total}",
                                subject="texts")
    rows, columns = len(sides[0]), len(sides[1])
    counted = [[text.lower() for text in texts] for texts in sides] if chosen.lowercase else sides
    matrix = numpy.empty((rows, columns))
    flat = matrix.reshape(-1)
    if counting.KERNEL == "native":
        inexact = counting.NATIVE.pairwise(counted[0], counted[1], chosen.char_order, chosen.word_order,
                                           chosen.include_whitespace, chosen.beta, chosen.averaging == "per_order_f",
                                           TOLERANCE_BITS, matrix)
        for index in inexact:
            hypothesis, reference = divmod(index, columns)
            orders = count_segments([sides[0][hypothesis]], [sides[1][reference]], chosen).orders
            flat[index] = float(exact_score(chosen, orders))
    else:
        for row, pairs in zip(matrix, python_kernel.pairwise(counted[0], counted[1], chosen.char_order,
                                                              chosen.word_order, chosen.include_whitespace)):
            row[:] = [float(exact_score(chosen, orders)) for orders in pairs]
    return matrix


def _not_one_text(name: str, texts: Iterable[str]) -> None:
    """A single str where a side's segments belong is a mistake (it would be scored one character per segment)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name}: expected a sequence of segments (one str each), got a single "
                        f"{type(texts).__name__}; wrap it in a list")


def _segments(name: str, texts: Iterable[str]) -> list[str]:
    _not_one_text(name, texts)
    return list(texts)


def _sides(hypotheses: Iterable[str], references: Iterable[str]) -> tuple[Iterable[str], Iterable[str]]:
    _not_one_text(TEXT_KEYS[0], hypotheses)
    _not_one_text(TEXT_KEYS[1], references)
    return hypotheses, references


def _chunks(hypotheses: Iterable[str], references: Iterable[str]) -> Iterator[tuple[list[str], list[str]]]:
    """Aligned chunks of checked texts; unequal numbers of segments are an error when the shorter side ends."""
    hypothesis_stream, reference_stream = iter(hypotheses), iter(references)
    offset = 0
    while True:
        chunk: tuple[list[str], list[str]] = list(islice(hypothesis_stream, CHUNK)), []
        chunk[1].extend(islice(reference_stream, len(chunk[0]) or 1))
        if len(chunk[0]) != len(chunk[1]):
            found = f"more than {offset}" if len(chunk[1]) > len(chunk[0]) else f"only {offset + len(chunk[1])}"
            raise InvalidInputError(TEXT_KEYS[1], f"must have as many segments as hypotheses, got {found}")
        if not chunk[0]:
            return
        for key, texts in zip(TEXT_KEYS, chunk):
            check_strings(key, texts, offset)
            check_encodable(key, texts, offset)
            check_length(key, texts, offset)
        yield chunk
        offset += len(chunk[0])


def _segment_counts(hypotheses: Iterable[str], references: Iterable[str], settings: Settings) -> Iterator[Counts]:
    width = 3 * (settings.char_order + settings.word_order)
    for chunk in _chunks(hypotheses, references):
        rows = segment_rows(chunk[0], chunk[1], settings)
        for start in range(0, len(rows), width):
            orders = tuple((rows[at], rows[at + 1], rows[at + 2]) for at in range(start, start + width, 3))
            yield Counts(settings, 1, orders)
