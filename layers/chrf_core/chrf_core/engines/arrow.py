"""Arrow in, Arrow out: chrF of Arrow data by column names, in one process, and the reading of Arrow data every
engine module scores its partitions with.

The data is a ``pyarrow`` Table, RecordBatch, RecordBatchReader or an iterable of batches, read a batch at a time
(memory flat over a reader). The hypotheses are one column of strings; the references one column of strings, several
(sacreBLEU's several references: a null where a segment lacks one), or one column of lists of strings (each
segment's references, Hugging Face's layout). A rule broken is an :class:`InvalidInputError` naming the column and
the row (``hyp[17]: must be a string, got null``), counted from the first row of the data given.

The calls are those of every engine module: :func:`corpus_score` (one exact report, or with ``by`` one per group),
:func:`statistics` (the statistics rows: :mod:`chrf_core.engines.statistics`), :func:`counts` (their exact sum),
:func:`segment_scores` and :func:`mbr`.

>>> import pyarrow as pa
>>> from chrf_core import CHRF
>>> from chrf_core.engines import arrow
>>> table = pa.table({"system": ["A", "A", "B"], "hypothesis": ["a cat", "the dog", "a cat"],
...                   "reference": ["the cat", "a dog", "the cat"]})
>>> print(arrow.corpus_score(table, CHRF()))
chrF2 = 22.76
>>> {system: report.to_dict()["score"] for system, report in arrow.corpus_score(table, CHRF(), by="system").items()}
{'A': '23.888889', 'B': '31.250000'}
>>> arrow.statistics(table, CHRF(), by="system").column("char1_matching_ngrams").to_pylist()
[6, 3]
>>> [round(score, 4) for score in arrow.segment_scores(table, CHRF()).column("chrf").to_pylist()]
[31.25, 42.2794, 31.25]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from ..contract import TEXT_KEYS
from ..counts import Counts
from ..errors import InvalidInputError, shown
from ..mbr import weight_shares
from . import statistics as form

if TYPE_CHECKING:
    import numpy
    import pyarrow

    from ..metric import CHRF
    from ..report import Report

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
    elif isinstance(data, pa.Table):  # an empty table is one empty batch: its columns are still checked
        yield from data.to_batches(max_chunksize=BATCH_ROWS) or [pa.RecordBatch.from_pylist([], schema=data.schema)]
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
        """The columns named, checked against the schema: present once, strings (or lists of strings for a single
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

    def texts(self, batch: pyarrow.RecordBatch, offset: int) -> tuple[list[Any], list[Any]]:
        """The hypotheses and the references (one list per reference column, or the lists of references) of a
        batch, as Python lists (None for a null); ``offset``: the index of its first row in the data."""
        if self.per_segment:
            _check_lists(batch, self.references[0], offset)
        references = [values(batch, name, offset) for name in self.references]
        return values(batch, self.hypothesis, offset), references[0] if self.per_segment else references

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
    """The type of column ``name``: an InvalidInputError naming it (and the columns there are) if it is missing or
    there is more than one column of that name."""
    if name not in schema.names:
        there = ", ".join(shown(column, 32) for column in schema.names[:20]) or "none"
        raise InvalidInputError(shown(name), f"no such column (the columns: {there})", caller_key=True)
    if schema.names.count(name) > 1:
        raise InvalidInputError(shown(name), f"{schema.names.count(name)} columns have this name (rename all but "
                                             f"one)", caller_key=True)
    return schema.field(name).type


def values(batch: pyarrow.RecordBatch, name: str, offset: int = 0) -> list[Any]:
    """A column's values as Python objects (None for a null); bytes that are not UTF-8 in a column of strings (which
    Arrow holds as it was given them) are named by column and row."""
    column = batch.column(name)
    try:
        listed: list[Any] = column.to_pylist()
    except UnicodeDecodeError:
        for row in range(len(column)):
            try:
                column[row].as_py()
            except UnicodeDecodeError:
                raise InvalidInputError(shown(name), "must be valid UTF-8 (the column holds other bytes as a string)",
                                        index=offset + row, caller_key=True) from None
        raise
    return listed


def _check_lists(batch: pyarrow.RecordBatch, name: str, offset: int) -> None:
    """A column of each segment's references holds a list of strings in every row: a null list, or a null among a
    list's strings, is named by column, row and item."""
    import pyarrow.compute as pc

    column = batch.column(name)
    if column.null_count:
        row = pc.index(pc.is_null(column), True).as_py()
        raise InvalidInputError(shown(name), "must be a list of strings (the segment's references), got null",
                                index=offset + row, caller_key=True)
    if column.values.null_count:
        for row, texts in enumerate(column.to_pylist()):
            if None in texts:
                raise InvalidInputError(shown(name), f"item {texts.index(None)}: must be a string, got null",
                                        index=offset + row, caller_key=True)


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


def _batches(data: Any, hypothesis: str, references: str | Sequence[str], by: tuple[str, ...] = ()
             ) -> Iterator[tuple[pyarrow.RecordBatch, Columns, int]]:
    """Each batch with its columns checked (the group columns too) and the index of its first row in the data."""
    offset, columns, schema = 0, None, None
    for batch in batches_of(data):
        if columns is None or batch.schema != schema:
            columns, schema = Columns.of(batch.schema, hypothesis, references), batch.schema
            form.fields(schema, by)
        yield batch, columns, offset
        offset += batch.num_rows


# ---- scoring data --------------------------------------------------------------------------------------------


def corpus_score(data: Any, chrf: CHRF, hypothesis: str = "hypothesis", references: str | Sequence[str] = "reference",
                 *, by: str | Sequence[str] | None = None) -> Report | form.Grouped:
    """``chrf.corpus_score`` of every row, exact; with ``by`` (a column, or several), of each group's rows: a
    :class:`~chrf_core.engines.statistics.Grouped` of each group's key to its report."""
    rows = statistics(data, chrf, hypothesis, references, by=by)
    return form.scored(chrf, counts(rows, by=by), by, [rows.schema.field(name) for name in form.group_names(by)])


def statistics(data: Any, chrf: CHRF, hypothesis: str = "hypothesis", references: str | Sequence[str] = "reference",
               *, by: str | Sequence[str] | None = None) -> pyarrow.Table:
    """The data's statistics (:mod:`chrf_core.engines.statistics`): one row (of zeros for no rows), or with ``by``
    one row per group there is, the group columns first."""
    names = form.group_names(by)
    keys: list[pyarrow.Field] | None = None
    groups: dict[form.Key, Counts] = {} if names else {(): Counts.empty(chrf)}
    for batch, columns, offset in _batches(data, hypothesis, references, names):
        keys = form.fields(batch.schema, names)
        if batch.num_rows:
            part = _grouped(chrf, batch, columns, offset, names) if names else {(): _counted(chrf, batch, columns,
                                                                                              offset)}
            form.add(groups, part)
    if keys is None:  # no batch at all: the group columns' types are not known
        import pyarrow as pa

        keys = [pa.field(name, pa.null()) for name in names]
    return form.table(chrf, groups, keys)


def _counted(chrf: CHRF, batch: pyarrow.RecordBatch, columns: Columns, offset: int) -> Counts:
    hypotheses, reference_texts = columns.texts(batch, offset)
    with located(columns, offset):
        return chrf.corpus_counts(hypotheses, reference_texts, references_per_segment=columns.per_segment)


def _grouped(chrf: CHRF, batch: pyarrow.RecordBatch, columns: Columns, offset: int,
             names: tuple[str, ...]) -> dict[form.Key, Counts]:
    """A batch's counts per group: each segment's counts (one kernel call for the batch), summed per group."""
    import numpy
    import pyarrow as pa
    import pyarrow.compute as pc

    hypotheses, reference_texts = columns.texts(batch, offset)
    with located(columns, offset):
        rows = chrf.segment_counts(hypotheses, reference_texts, references_per_segment=columns.per_segment)
    keys = pa.table({f"k{index}": _plain(batch.column(name)) for index, name in enumerate(names)})
    keys = keys.append_column("row", pa.array(numpy.arange(batch.num_rows)))
    grouped = keys.group_by([f"k{index}" for index in range(len(names))], use_threads=False).aggregate(
        [("row", "list")])
    lists = grouped.column("row_list").combine_chunks()
    lengths = pc.list_value_length(lists).to_numpy()
    starts = numpy.concatenate([[0], numpy.cumsum(lengths)[:-1]])
    sums = numpy.add.reduceat(rows[lists.flatten().to_numpy()], starts, axis=0)
    key_values = zip(*(grouped.column(f"k{index}").to_pylist() for index in range(len(names))))
    return {key: Counts.of_array(chrf, int(length), total) for key, length, total in zip(key_values, lengths, sums)}


def _plain(column: Any) -> Any:
    """A group column as its values (a dictionary-encoded one decoded)."""
    import pyarrow as pa

    return column.dictionary_decode() if pa.types.is_dictionary(column.type) else column


def counts(statistics: Any, *, by: str | Sequence[str] | None = None) -> Counts | dict[Any, Counts]:
    """The exact sum of statistics rows (a Table, a RecordBatch or an iterable of them), every row checked
    (:func:`chrf_core.engines.statistics.sums`); with ``by``, each group's (its key: the value for one column named
    as a str, else a tuple)."""
    return form.keyed(form.sums(statistics, by), by)


def segment_scores(data: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference", *, column: str = "chrf") -> pyarrow.Table:
    """The data with a float64 column ``column``: each row's own score (0..100), :meth:`CHRF.segment_scores` of the
    rows."""
    import pyarrow as pa

    parts = [batch.append_column(pa.field(column, pa.float64()), _segment_scores(chrf, batch, columns, offset))
             for batch, columns, offset in _batches(data, hypothesis, references)]
    return pa.Table.from_batches(parts) if parts else pa.table({})


def segment_score_arrays(data: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                         references: str | Sequence[str] = "reference") -> Iterator[pyarrow.Array]:
    """Each row's score a batch at a time, as the batches are read."""
    for batch, columns, offset in _batches(data, hypothesis, references):
        yield _segment_scores(chrf, batch, columns, offset)


def _segment_scores(chrf: CHRF, batch: pyarrow.RecordBatch, columns: Columns, offset: int) -> pyarrow.Array:
    import pyarrow as pa

    hypotheses, reference_texts = columns.texts(batch, offset)
    with located(columns, offset):
        scores = chrf.segment_scores(hypotheses, reference_texts, references_per_segment=columns.per_segment)
    return pa.array(scores, pa.float64())


# ---- MBR ------------------------------------------------------------------------------------------------------


def mbr(data: Any, chrf: CHRF, candidates: str = "candidates", references: str | None = None, *,
        weights: str | None = None, method: str = "aggregate", matrix: bool = False,
        threads: int | None = None) -> pyarrow.Table:
    """Minimum Bayes risk decoding of rows that each hold one source's candidates (a column of lists of strings),
    scored against the row's pseudo-references (``references``, a column of lists; default: the candidates
    themselves), optionally weighted (``weights``, a column of lists of numbers, one per reference), on ``threads``
    threads (default: every core). The data with the columns ``mbr_utilities`` (each candidate's expected utility:
    :meth:`CHRF.aggregate`'s scores, or :meth:`CHRF.pairwise`'s rows averaged with the weights' shares),
    ``mbr_best`` (the index of the highest, the first of equals), ``mbr_winner`` (that candidate) and, with
    ``matrix`` and ``method="pairwise"``, ``mbr_matrix``."""
    import pyarrow as pa

    parts = []
    for batch, decoded in _mbr_pairs(chrf, data, candidates, references, weights, method, threads, matrix):
        for name in decoded.schema.names:
            batch = batch.append_column(decoded.schema.field(name), decoded.column(name))
        parts.append(batch)
    return pa.Table.from_batches(parts) if parts else pa.table({})


def mbr_columns(method: str, matrix: bool) -> list[str]:
    """The columns :func:`mbr` adds."""
    return list(MBR_COLUMNS if matrix and method == "pairwise" else MBR_COLUMNS[:3])


def mbr_batches(chrf: CHRF, data: Any, candidates: str = "candidates", references: str | None = None,
                weights: str | None = None, method: str = "aggregate", threads: int | None = None,
                matrix: bool = False) -> Iterator[pyarrow.RecordBatch]:
    """The columns :func:`mbr` adds, a batch at a time, as the batches are read."""
    for _, decoded in _mbr_pairs(chrf, data, candidates, references, weights, method, threads, matrix):
        yield decoded


def _mbr_pairs(chrf: CHRF, data: Any, candidates: str, references: str | None, weights: str | None, method: str,
               threads: int | None, matrix: bool) -> Iterator[tuple[pyarrow.RecordBatch, pyarrow.RecordBatch]]:
    """Each batch with the columns :func:`mbr` adds to it."""
    if method not in METHODS:
        raise InvalidInputError("method", f"must be one of {', '.join(METHODS)}, got {shown(str(method))}")
    offset = 0
    for batch in batches_of(data):
        check_mbr_columns(batch.schema, candidates, references, weights)
        sets = _lists(batch, candidates, offset)
        reference_sets = sets if references is None else _lists(batch, references, offset)
        shares = None if weights is None else _lists(batch, weights, offset)
        yield batch, _mbr_rows(chrf, sets, reference_sets, shares, method, threads, matrix,
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
    listed = values(batch, name, offset)
    if None in listed:
        raise InvalidInputError(shown(name), "must be a list, got null", index=offset + listed.index(None),
                                caller_key=True)
    return listed


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
                utilities.append(weighted_mean(scores, weight_shares(share, len(refs))))
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


def weighted_mean(scores: numpy.ndarray, shares: list[float]) -> numpy.ndarray:
    """Each row of a pairwise matrix averaged with the references' shares of the weight (:func:`weight_shares`:
    each at most 1, so no product overflows, whatever the weights' scale)."""
    import numpy

    result: numpy.ndarray = numpy.average(scores, axis=1, weights=shares)
    return result


def _row_error(error: InvalidInputError | TypeError, names: tuple[str, str, str], field: str | None,
               row: int) -> InvalidInputError:
    """An MBR error about one row's text or weight, named by column and row: ``candidates[12]: item 3: ...``."""
    column = {TEXT_KEYS[0]: names[0], TEXT_KEYS[1]: names[1], "weights": names[2]}.get(field or "", names[0])
    if isinstance(error, InvalidInputError):
        detail = (f"item {error.index}: " if error.index is not None else "") + error.detail
    else:  # weight_shares' TypeErrors: weights[3]: expected a number, got NoneType
        detail = str(error).replace("weights[", "item ").replace("]:", ":", 1)
    return InvalidInputError(shown(column), detail, index=row, caller_key=True)
