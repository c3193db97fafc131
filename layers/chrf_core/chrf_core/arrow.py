"""Arrow in, Arrow out: chrF of Arrow data by column names, and the statistics' Arrow form that the engines sum.

The data is a ``pyarrow`` RecordBatch, Table, RecordBatchReader or an iterable of batches, read a batch at a time
(memory flat over a reader). The hypotheses are one column of strings; the references one column of strings, several
(sacreBLEU's several references: a null where a segment lacks one), or one column of lists of strings (each
segment's references, Hugging Face's layout). A rule broken is an :class:`InvalidInputError` naming the column and
the row (``hyp[17]: must be a string, got null``), counted from the first row of the data given.

:func:`statistics` gives the data's counts, whose Arrow form (:meth:`Counts.to_arrow`, one int64 row) the engine
modules (:mod:`chrf_core.ray`, :mod:`chrf_core.spark`, :mod:`chrf_core.dask`) make per partition and sum with the
engine's own aggregation (:meth:`Counts.of_sums`); what they share is at the end of this module.

>>> import pyarrow as pa
>>> from chrf_core import CHRF
>>> from chrf_core import arrow
>>> table = pa.table({"hypothesis": ["a cat", "the dog"], "reference": ["the cat", "a dog"]})
>>> counts = arrow.statistics(CHRF(), table)
>>> counts.to_arrow().column("char1_matching_ngrams").to_pylist(), CHRF().report(counts).to_dict()["score"]
([6], '23.888889')
>>> [round(score, 4) for score in arrow.segment_scores(CHRF(), table).to_pylist()]
[31.25, 42.2794]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from .contract import TEXT_KEYS
from .counts import Counts
from .errors import InvalidInputError, shown
from .mbr import integer_weights
from .settings import stored

if TYPE_CHECKING:
    import pyarrow

    from .metric import CHRF
    from .report import Report

BATCH_ROWS = 65536  # rows of a Table read at a time
MBR_COLUMNS = ("mbr_utilities", "mbr_best", "mbr_winner", "mbr_matrix")
METHODS = ("aggregate", "pairwise")


# ---- reading data --------------------------------------------------------------------------------------------


def batches_of(data: Any) -> Iterator[pyarrow.RecordBatch]:
    """The record batches of a Table (at most BATCH_ROWS rows each, without copying), a RecordBatch, a
    RecordBatchReader, or an iterable of batches or tables."""
    import pyarrow as pa

    if isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.Table):
        yield from data.to_batches(max_chunksize=BATCH_ROWS)
    elif isinstance(data, (pa.RecordBatchReader, Iterable)) and not isinstance(data, (str, bytes, Mapping)):
        for part in data:
            if not isinstance(part, (pa.RecordBatch, pa.Table)):
                raise TypeError(f"data: expected pyarrow record batches, got a {type(part).__name__}")
            yield from batches_of(part)
    else:
        raise TypeError(f"data: expected a pyarrow Table, RecordBatch, RecordBatchReader or an iterable of batches, "
                        f"got a {type(data).__name__}")


class Columns(NamedTuple):
    """Where the texts are: the hypotheses' column, the references' (one per reference, or one of lists)."""

    hypothesis: str
    references: tuple[str, ...]
    per_segment: bool  # one column of lists: each segment's references

    @classmethod
    def of(cls, schema: pyarrow.Schema, hypothesis: str, references: str | Sequence[str]) -> Columns:
        """The columns named, checked against the schema: present, strings (or lists of strings for a single
        references column)."""
        names = (references,) if isinstance(references, str) else tuple(references)
        if not names or not all(isinstance(name, str) for name in (hypothesis, *names)):
            raise TypeError("columns: name the hypotheses' column and at least one references' column, as str")
        per_segment = len(names) == 1 and _is_list(column_type(schema, names[0]))
        for name in (hypothesis, *names):
            kind = column_type(schema, name)
            if not _is_text(kind) and not (per_segment and name == names[0]):
                raise InvalidInputError(shown(name), f"must be a column of strings, got {kind}", caller_key=True)
        return cls(hypothesis, names, per_segment)

    def texts(self, batch: pyarrow.RecordBatch) -> tuple[list[Any], list[Any]]:
        """The hypotheses and the references (one list per reference column, or the lists of references) of a
        batch, as Python lists (None for a null)."""
        references = [batch.column(name).to_pylist() for name in self.references]
        return batch.column(self.hypothesis).to_pylist(), references[0] if self.per_segment else references

    def moved(self, error: InvalidInputError, offset: int) -> InvalidInputError:
        """A library error about a chunk's texts, placed at the column and row (``offset``: the chunk's first)."""
        field = error.field or ""
        if field == TEXT_KEYS[0]:
            column = self.hypothesis
        elif field.startswith(TEXT_KEYS[1]):
            stream = re.fullmatch(r"references\[(\d+)\]", field)
            column = self.references[int(stream.group(1)) if stream and not self.per_segment else 0]
        else:
            return error
        index = None if error.index is None else offset + error.index
        return InvalidInputError(shown(column), error.detail, index=index, caller_key=True)


def column_type(schema: pyarrow.Schema, name: str) -> pyarrow.DataType:
    """The type of column ``name``: an InvalidInputError naming it (and the columns there are) if it is missing."""
    if name not in schema.names:
        there = ", ".join(shown(column, 32) for column in schema.names[:20]) or "none"
        raise InvalidInputError(shown(name), f"no such column (the columns: {there})", caller_key=True)
    return schema.field(name).type


def _is_text(kind: pyarrow.DataType) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return _is_text(kind.value_type)
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
                or pa.types.is_null(kind))


def _is_list(kind: pyarrow.DataType) -> bool:
    import pyarrow as pa

    return bool((pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind)
                 or pa.types.is_fixed_size_list(kind)) and _is_text(kind.value_type))


@contextmanager
def located(columns: Columns, offset: int) -> Iterator[None]:
    """Library errors about a batch's texts, named by column and row."""
    try:
        yield
    except InvalidInputError as error:
        raise columns.moved(error, offset) from None


def _batches(data: Any, hypothesis: str, references: str | Sequence[str]
             ) -> Iterator[tuple[pyarrow.RecordBatch, Columns, int]]:
    """Each batch with its columns checked and the index of its first row in the data."""
    offset, columns, schema = 0, None, None
    for batch in batches_of(data):
        if columns is None or batch.schema != schema:
            columns, schema = Columns.of(batch.schema, hypothesis, references), batch.schema
        yield batch, columns, offset
        offset += batch.num_rows


# ---- scoring data --------------------------------------------------------------------------------------------


def statistics(chrf: CHRF, data: Any, hypothesis: str = "hypothesis",
               references: str | Sequence[str] = "reference") -> Counts:
    """The counts of every row (their statistics: :meth:`Counts.to_arrow`); no rows count as nothing
    (:meth:`Counts.empty`), so that an empty partition merges as zero."""
    total = Counts.empty(chrf)
    for batch, columns, offset in _batches(data, hypothesis, references):
        if batch.num_rows:
            hypotheses, reference_texts = columns.texts(batch)
            with located(columns, offset):
                part = chrf.corpus_counts(hypotheses, reference_texts, references_per_segment=columns.per_segment)
            total = Counts.merge([total, part])
    return total


def segment_scores(chrf: CHRF, data: Any, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference") -> pyarrow.ChunkedArray:
    """Each row's own score (0..100), float64, in order: :meth:`CHRF.segment_scores` of the rows."""
    import pyarrow as pa

    return pa.chunked_array(list(segment_score_arrays(chrf, data, hypothesis, references)), pa.float64())


def segment_score_arrays(chrf: CHRF, data: Any, hypothesis: str = "hypothesis",
                         references: str | Sequence[str] = "reference") -> Iterator[pyarrow.Array]:
    """:func:`segment_scores` a batch at a time, as the batches are read."""
    import pyarrow as pa

    for batch, columns, offset in _batches(data, hypothesis, references):
        hypotheses, reference_texts = columns.texts(batch)
        with located(columns, offset):
            scores = chrf.segment_scores(hypotheses, reference_texts, references_per_segment=columns.per_segment)
        yield pa.array(scores, pa.float64())


def mbr(chrf: CHRF, data: Any, candidates: str = "candidates", references: str | None = None,
        weights: str | None = None, method: str = "aggregate", threads: int | None = None,
        matrix: bool = False) -> pyarrow.Table:
    """Minimum Bayes risk decoding of rows that each hold one source's candidates (a column of lists of strings),
    scored against the row's pseudo-references (``references``, a column of lists; default: the candidates
    themselves), optionally weighted (``weights``, a column of lists of numbers, one per reference). Gives the
    columns ``mbr_utilities`` (each candidate's expected utility: :meth:`CHRF.aggregate`'s scores, or
    :meth:`CHRF.pairwise`'s rows averaged with the weights), ``mbr_best`` (the index of the highest, the first of
    equals), ``mbr_winner`` (that candidate) and, with ``matrix`` and ``method="pairwise"``, ``mbr_matrix``."""
    import pyarrow as pa

    types = mbr_types()
    schema = pa.schema([(name, types[name]) for name in mbr_columns(method, matrix)])
    return pa.Table.from_batches(list(mbr_batches(chrf, data, candidates, references, weights, method, threads,
                                                  matrix)), schema)


def mbr_columns(method: str, matrix: bool) -> list[str]:
    """The columns :func:`mbr` gives."""
    return list(MBR_COLUMNS if matrix and method == "pairwise" else MBR_COLUMNS[:3])


def mbr_batches(chrf: CHRF, data: Any, candidates: str = "candidates", references: str | None = None,
                weights: str | None = None, method: str = "aggregate", threads: int | None = None,
                matrix: bool = False) -> Iterator[pyarrow.RecordBatch]:
    """:func:`mbr` a batch at a time, as the batches are read."""
    if method not in METHODS:
        raise InvalidInputError("method", f"must be one of {', '.join(METHODS)}, got {shown(str(method))}")
    offset = 0
    for batch in batches_of(data):
        check_mbr_columns(batch.schema, candidates, references, weights)
        sets = _lists(batch, candidates, offset)
        reference_sets = sets if references is None else _lists(batch, references, offset)
        shares = None if weights is None else _lists(batch, weights, offset)
        yield _mbr_rows(chrf, sets, reference_sets, shares, method, threads, matrix,
                        (candidates, references or candidates, weights or ""), offset)
        offset += batch.num_rows


def check_mbr_columns(schema: pyarrow.Schema, candidates: str, references: str | None, weights: str | None) -> None:
    """MBR's columns are there: the candidates and references lists of strings, the weights lists of numbers."""
    for name in (candidates, references, weights):
        if name is None:
            continue
        kind = column_type(schema, name)
        if not (_is_list(kind) or (name == weights and _is_numbers(kind))):
            wanted = "numbers" if name == weights else "strings"
            raise InvalidInputError(shown(name), f"must be a column of lists of {wanted}, got {kind}",
                                    caller_key=True)


def _is_numbers(kind: pyarrow.DataType) -> bool:
    import pyarrow as pa

    return bool((pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind))
                and (pa.types.is_integer(kind.value_type) or pa.types.is_floating(kind.value_type)))


def _lists(batch: pyarrow.RecordBatch, name: str, offset: int) -> list[list[Any]]:
    values: list[Any] = batch.column(name).to_pylist()
    if None in values:
        raise InvalidInputError(shown(name), "must be a list, got null", index=offset + values.index(None),
                                caller_key=True)
    return values


def mbr_types() -> dict[str, pyarrow.DataType]:
    """The Arrow types of :func:`mbr`'s columns."""
    import pyarrow as pa

    return {"mbr_utilities": pa.list_(pa.float64()), "mbr_best": pa.int64(), "mbr_winner": pa.string(),
            "mbr_matrix": pa.list_(pa.list_(pa.float64()))}


def _mbr_rows(chrf: CHRF, sets: list[list[Any]], reference_sets: list[list[Any]], shares: list[list[Any]] | None,
              method: str, threads: int | None, matrix: bool, names: tuple[str, str, str],
              offset: int) -> pyarrow.RecordBatch:
    """One batch of rows decoded: each set with its references and weights (unweighted sets in one batch call)."""
    import numpy
    import pyarrow as pa

    matrices: list[Any] = []
    if shares is None:
        try:
            if method == "aggregate":
                utilities = chrf.aggregate_batch(sets, reference_sets, threads=threads)
            else:
                matrices = chrf.pairwise_batch(sets, reference_sets, threads=threads)
                utilities = [scores.mean(axis=1) for scores in matrices]
        except InvalidInputError as error:
            found = re.fullmatch(r"(hypothesis|reference)_sets\[(\d+)\]", error.field or "")
            if found is None:
                raise
            raise _row_error(error, names, "hypotheses" if found.group(1) == "hypothesis" else "references",
                             offset + int(found.group(2))) from None
    else:
        utilities = []
        for row, (texts, refs, share) in enumerate(zip(sets, reference_sets, shares)):
            try:
                if method == "aggregate":
                    utilities.append(chrf.aggregate(texts, refs, threads=threads, weights=share))
                    continue
                scores = chrf.pairwise(texts, refs, threads=threads)
                matrices.append(scores)
                utilities.append(numpy.average(scores, axis=1, weights=integer_weights(share, len(refs))))
            except (InvalidInputError, TypeError) as error:
                raise _row_error(error, names, getattr(error, "field", "weights"), offset + row) from None
    best = [int(numpy.argmax(scores)) for scores in utilities]
    columns = {"mbr_utilities": [scores.tolist() for scores in utilities], "mbr_best": best,
               "mbr_winner": [texts[index] for texts, index in zip(sets, best)]}
    if matrix and method == "pairwise":
        columns["mbr_matrix"] = [scores.tolist() for scores in matrices]
    types = mbr_types()
    return pa.RecordBatch.from_pydict({name: pa.array(columns[name], types[name])
                                       for name in mbr_columns(method, matrix)})


def _row_error(error: InvalidInputError | TypeError, names: tuple[str, str, str], field: str | None,
               row: int) -> InvalidInputError:
    """An MBR error about one row's text or weight, named by column and row: ``candidates[12]: item 3: ...``."""
    column = {TEXT_KEYS[0]: names[0], TEXT_KEYS[1]: names[1], "weights": names[2]}.get(field or "", names[0])
    if isinstance(error, InvalidInputError):
        detail = (f"item {error.index}: " if error.index is not None else "") + error.detail
    else:  # integer_weights' TypeErrors: weights[3]: expected a number, got NoneType
        detail = str(error).replace("weights[", "item ").replace("]:", ":", 1)
    return InvalidInputError(shown(column), detail, index=row, caller_key=True)


# ---- what every engine module shares -------------------------------------------------------------------------


def report(counts: Counts) -> Report:
    """The report of counts read back or summed by an engine (:meth:`CHRF.report` with their settings)."""
    from .metric import CHRF

    return CHRF(**stored(counts.settings)).report(counts)  # type: ignore[arg-type]


@contextmanager
def in_worker(where: str | None = None) -> Iterator[None]:
    """Our errors, raised in an engine's worker (``where`` first: ``partition 3: hyp[17]: ...``), in the one form
    every engine passes back: text (Ray keeps a worker's exception but not its cause; Spark only its traceback's
    text), the error's JSON body (:meth:`InvalidInputError.reported`), which :func:`on_driver` reads back."""
    try:
        yield
    except InvalidInputError as error:
        message = f"{where}: {error.message}" if where else error.message
        raise InvalidInputError.relayed(error.field, message, error.line).reported() from None


@contextmanager
def on_driver() -> Iterator[None]:
    """An engine's exception that carries our error from a worker becomes that error, alone (no engine
    traceback in front of our message)."""
    try:
        yield
    except InvalidInputError as error:
        if not error.json_text:
            raise
        raise InvalidInputError.relayed(error.field, error.message, error.line) from None
    except Exception as error:
        ours = InvalidInputError.found_in(error)
        if ours is None:
            raise
        raise ours from None
