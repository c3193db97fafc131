"""The reference streams: the layouts references come in (sacreBLEU's list of streams or one stream, or one list
per segment with ``references_per_segment``; never guessed), read with the hypotheses in aligned chunks of checked
(and, if asked, normalized) texts, and each segment's counts against its best reference as sacreBLEU chooses it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, NamedTuple

from .contract import TEXT_KEYS, Settings
from .counts import Counts, count_segments, segment_counts, system_counts
from .errors import InvalidInputError
from .formula import sacrebleu_scores
from .kernel import Triple
from .preparation import prepared
from .texts import check_chunk, check_flag, check_side

if TYPE_CHECKING:
    import numpy

CHUNK = 4096  # segments read and counted at a time
References = Iterable[str] | Sequence[Iterable[str | None]]  # one stream, or sacreBLEU's list of streams


def present(stream: list[Any]) -> list[str]:
    """A reference stream as counted: a missing reference (None) counts as empty (and is never chosen)."""
    return [text if text is not None else "" for text in stream] if None in stream else stream


class Sides(NamedTuple):
    """The hypotheses and the reference streams, read under ``settings`` (preparation.prepared); ``hint`` is what to add
    to a message about unequal lengths."""

    settings: Settings
    hypotheses: Iterable[str]
    streams: list[Iterable[Any]]
    hint: str = ""


PER_SEGMENT = ("if each inner list holds one segment's references (Hugging Face's and torchmetrics' layout), pass "
               "references_per_segment=True")


def sides_of(settings: Settings, hypotheses: Iterable[str], references: References,
             per_segment: bool | None = None) -> Sides:
    """The hypotheses and the reference streams, read under ``settings``: ``references`` as
    sacreBLEU takes it, a list of streams (one per
    reference translation, ``None`` where a segment lacks that one), or a single stream itself; with
    ``per_segment``, one list of references per segment, turned into streams. A layout is never guessed: N lists of
    N texts for N >= 2 hypotheses, which both could mean, need ``per_segment`` to say which."""
    check_side(TEXT_KEYS[0], hypotheses)
    check_side(TEXT_KEYS[1], references)
    if per_segment is not None:
        check_flag("references_per_segment", per_segment)
    if per_segment:
        return Sides(settings, hypotheses, _transposed(references))
    if isinstance(references, Sequence) and references and isinstance(references[0], Iterable) and not isinstance(
            references[0], (str, bytes)):
        for index, stream in enumerate(references):
            check_side(f"references[{index}]", stream)
        if per_segment is None:
            hypotheses = _refuse_either_reading(hypotheses, references)
        return Sides(settings, hypotheses, list(references), PER_SEGMENT)
    return Sides(settings, hypotheses, [references])


def _refuse_either_reading(hypotheses: Iterable[str], references: Sequence[Iterable[Any]]) -> Iterable[str]:
    """The hypotheses, unless there are N of them for N >= 2 lists of N references, which both layouts could mean:
    counted whatever holds them (of a generator, at most N + 1 are read ahead, and handed on with the rest)."""
    count = len(references)
    if count < 2 or not all(isinstance(stream, Sized) and len(stream) == count for stream in references):
        return hypotheses
    if isinstance(hypotheses, Sized):
        seen = len(hypotheses)
    else:
        rest = iter(hypotheses)
        ahead = list(islice(rest, count + 1))
        seen, hypotheses = len(ahead), chain(ahead, rest)
    if seen != count:
        return hypotheses
    raise InvalidInputError(TEXT_KEYS[1], f"{count} lists of {count} texts for {count} hypotheses read two ways: as "
                                          f"{count} reference streams, sacreBLEU's layout (references[k][i] is "
                                          f"reference k of segment i), or as one list of references per segment, "
                                          f"Hugging Face's and torchmetrics' (references[i][k]); say which: "
                                          f"references_per_segment=False or references_per_segment=True")


def _transposed(references: Any) -> list[Iterable[Any]]:
    """One list of references per segment (as many as each has) as reference streams, None where a segment has
    fewer than the most."""
    segments = []
    for index, texts in enumerate(references):
        if isinstance(texts, (str, bytes)):
            raise TypeError(f"references[{index}]: with references_per_segment=True, expected the list of segment "
                            f"{index}'s references, got a single {type(texts).__name__}; wrap it in a list")
        check_side(f"references[{index}]", texts)
        listed = list(texts)
        if not listed:
            raise InvalidInputError(TEXT_KEYS[1], "at least 1 reference per segment, got 0", index=index)
        segments.append(listed)
    width = max(map(len, segments), default=1)
    return [[texts[k] if k < len(texts) else None for texts in segments] for k in range(width)]


def chunks_of(sides: Sides) -> Iterator[tuple[list[str], list[list[Any]]]]:
    """Aligned chunks of checked texts, one list per reference stream; unequal numbers of segments are an error when
    the shorter side ends. With several streams a reference may be None (that segment lacks it), not all of one
    segment's."""
    streams = sides.streams
    several = len(streams) > 1
    offset = 0
    for hypothesis_chunk, reference_chunks in _read_chunks(sides.hypotheses, streams):
        for index, chunk in enumerate(reference_chunks):
            if len(chunk) != len(hypothesis_chunk):
                found = f"more than {offset}" if len(chunk) > len(hypothesis_chunk) else \
                    f"only {offset + len(chunk)}"
                hint = f"; {sides.hint}" if sides.hint else ""
                raise InvalidInputError(TEXT_KEYS[1], f"must have as many segments as hypotheses, got {found}{hint}",
                                        subject=f"references[{index}]" if several else None)
        if not hypothesis_chunk:
            return
        check_chunk(TEXT_KEYS[0], hypothesis_chunk, offset)
        for stream, chunk in enumerate(reference_chunks):
            if several:  # the stream named too: references[1][7000]
                check_chunk(f"{TEXT_KEYS[1]}[{stream}]", [text if text is not None else "" for text in chunk],
                            offset)
            else:
                check_chunk(TEXT_KEYS[1], chunk, offset)
        hypothesis_chunk = prepared(TEXT_KEYS[0], hypothesis_chunk, sides.settings, offset)
        reference_chunks = [prepared(TEXT_KEYS[1], chunk, sides.settings, offset) for chunk in reference_chunks]
        if several:
            for position, texts in enumerate(zip(*reference_chunks)):
                if all(text is None for text in texts):
                    raise InvalidInputError(TEXT_KEYS[1], "every reference of this segment is None (at least one "
                                                          "is needed)", index=offset + position)
        yield hypothesis_chunk, reference_chunks
        offset += len(hypothesis_chunk)


def _read_chunks(hypotheses: Iterable[str],
                 streams: list[Iterable[Any]]) -> Iterator[tuple[list[str], list[list[Any]]]]:
    """Up to CHUNK segments of each side at a time, ending with an empty hypothesis chunk (a reference stream may
    run on: the caller tells). Lists that are one chunk already are taken as they are (read, never changed)."""
    if type(hypotheses) is list and len(hypotheses) <= CHUNK and all(
            type(stream) is list and len(stream) == len(hypotheses) for stream in streams):
        if hypotheses:
            yield hypotheses, streams  # type: ignore[misc]
        yield [], [[] for _ in streams]
        return
    hypothesis_stream, reference_streams = iter(hypotheses), [iter(stream) for stream in streams]
    while True:
        hypothesis_chunk = list(islice(hypothesis_stream, CHUNK))
        yield hypothesis_chunk, [list(islice(stream, len(hypothesis_chunk) or 1)) for stream in reference_streams]
        if not hypothesis_chunk:
            return


def segment_rows(settings: Settings, sides: Sides) -> Iterator[tuple[Triple, ...]]:
    """Each segment's counts against its best reference, one segment at a time."""
    for chunk in chunks_of(sides):
        for row in best_rows(settings, *chunk).tolist():
            yield tuple(map(tuple, row))

def best_rows(settings: Settings, hypotheses: list[str], references: list[list[Any]]) -> numpy.ndarray:
    """Each segment's counts against its best reference (:func:`best_of`)."""
    if len(references) == 1:
        return segment_counts(hypotheses, references[0], settings)
    import numpy

    return best_of(settings, numpy.stack([segment_counts(hypotheses, present(stream), settings)
                                          for stream in references]), references)

def best_of(settings: Settings, rows: numpy.ndarray, references: list[list[Any]]) -> numpy.ndarray:
    """Of each segment's counts against every reference stream (``rows`` shaped (streams, segments, orders,
    3)), those against its best reference as sacreBLEU 2.6 chooses it: the first whose float score, computed
    as sacreBLEU computes it (formula.sacrebleu_scores), is strictly highest (None skipped). The score is then
    computed exactly from the chosen counts."""
    import numpy

    scores = sacrebleu_scores(settings, rows)
    scores[numpy.array([[text is None for text in stream] for stream in references])] = -numpy.inf
    best = scores.argmax(axis=0)  # the first of equals: sacreBLEU keeps a reference only if strictly better
    chosen: numpy.ndarray = rows[best, numpy.arange(rows.shape[1])]
    return chosen


def corpus_counts(settings: Settings, hypotheses: Iterable[str], references: References,
                  per_segment: bool | None) -> tuple[Counts, int | str]:
    """The corpus counts of line-aligned segments read a chunk at a time, each against its best reference, and the
    number of references per segment (sacreBLEU's nrefs: "var" where it varies)."""
    parts = []
    reference_counts: set[int] = set()
    for hypothesis_chunk, reference_chunks in chunks_of(sides_of(settings, hypotheses, references, per_segment)):
        if len(reference_chunks) == 1:
            reference_counts.add(1)
            parts.append(count_segments(hypothesis_chunk, reference_chunks[0], settings))
            continue
        reference_counts.update(len(texts) - texts.count(None) for texts in zip(*reference_chunks))
        parts.append(Counts.of_array(settings, len(hypothesis_chunk),
                                     best_rows(settings, hypothesis_chunk, reference_chunks).sum(axis=0)))
    if not parts:
        raise InvalidInputError(TEXT_KEYS[0], "at least 1 segment, got 0")
    return Counts.merge(parts), reference_counts.pop() if len(reference_counts) == 1 else "var"


def systems_rows(settings: Settings, hypothesis_sets: Sequence[Sequence[str]], references: References,
                 per_segment: bool | None) -> numpy.ndarray:
    """Several systems' own segment counts against the same references, shaped (systems, segments, orders, 3),
    each reference counted once per segment: the first system read with the references a chunk at a time, the
    others (sequences, or read whole) cut alongside."""
    import numpy

    check_side("hypothesis_sets", hypothesis_sets)
    systems = list(hypothesis_sets)
    if not systems:
        raise InvalidInputError("hypothesis_sets", "at least 1 system, got 0")
    for index, system in enumerate(systems):
        check_side(f"hypothesis_sets[{index}]", system)
        if not isinstance(system, Sequence):  # a NumPy array, a generator: read whole
            systems[index] = system = list(system)
        if len(system) != len(systems[0]):
            raise InvalidInputError(f"hypothesis_sets[{index}]", f"must have as many segments as the first "
                                                                 f"system, {len(systems[0])}, got {len(system)}")
    parts, offset = [], 0
    for first, reference_chunks in chunks_of(sides_of(settings, systems[0], references, per_segment)):
        chunks = [first] + [system[offset:offset + len(first)] for system in systems[1:]]
        for index, chunk in enumerate(chunks[1:], 1):
            try:
                check_chunk(TEXT_KEYS[0], chunk, offset)
                chunks[index] = prepared(TEXT_KEYS[0], chunk, settings, offset)
            except InvalidInputError as error:
                raise InvalidInputError(f"hypothesis_sets[{index}]", error.detail, index=error.index) from None
        rows = numpy.stack([system_counts(chunks, present(stream), settings) for stream in reference_chunks])
        parts.append(rows[0] if len(reference_chunks) == 1 else numpy.stack(
            [best_of(settings, rows[:, system], reference_chunks) for system in range(len(chunks))]))
        offset += len(first)
    if not parts:
        return numpy.empty((len(systems), 0, settings.orders, 3), dtype=numpy.int64)
    return parts[0] if len(parts) == 1 else numpy.concatenate(parts, axis=1)
