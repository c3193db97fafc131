"""chrF on Spark (``pip install 'chrf-components[spark]'``; Spark 4, Java 17): corpus scores (per group too), each
row's score, MBR per row.

Each partition is scored where it lies (``mapInArrow``, :mod:`chrf_core.engines.arrow`) into statistics rows. To sum
them, each partition's rows are first checked and summed exactly where they lie
(:func:`chrf_core.engines.statistics.sums`, another ``mapInArrow``: a row no texts could give, a negative count or
other settings is refused naming the partition and the row, and the settings are written in their one form), then
Spark's own aggregation adds the checked rows up: ``groupBy`` the settings (and the groups) with ``try_sum``, which
gives null rather than a wrapped sum (refused by name). The report is made on the driver, exactly
``CHRF.corpus_score`` of every row (of each group's rows), however the DataFrame is partitioned. Row scores and MBR
go through Arrow UDFs. An error about a row names its column, its row within its partition and the partition.

>>> from chrf_core import CHRF                                                             # doctest: +SKIP
>>> from chrf_core.engines import spark as chrf_spark                                     # doctest: +SKIP
>>> data = spark.read.parquet("wmt.parquet")                                              # doctest: +SKIP
>>> chrf_spark.corpus_score(data, CHRF(word_order=2), "hyp", "ref", by=["lp", "system"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ..counts import Counts
from ..errors import InvalidInputError
from ..mbr import thread_count
from ..settings import difference
from . import arrow
from . import statistics as form
from .relay import in_worker, on_driver

if TYPE_CHECKING:
    import pyarrow

    from ..metric import CHRF
    from ..report import Report


def _names(references: str | Sequence[str]) -> list[str]:
    return [references] if isinstance(references, str) else list(references)


def _partition() -> str:
    from pyspark import TaskContext

    context = TaskContext.get()
    return f"partition {context.partitionId()}" if context is not None else ""


def _schema(frame: Any) -> pyarrow.Schema:
    """The Arrow schema of a DataFrame's columns (before any work)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema)


def corpus_score(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                 references: str | Sequence[str] = "reference", *,
                 by: str | Sequence[str] | None = None) -> Report | form.Grouped:
    """``chrf.corpus_score`` of every row of ``frame`` (with ``by``, of each group's rows: a ``Grouped``), byte for
    byte one process's. The statistics are checked where they are made (in the same task), then summed."""
    names = form.group_names(by)
    keys = form.fields(_schema(frame), names)
    rows = _statistics_frame(frame, chrf, hypothesis, references, by, checked=True)
    return form.scored(chrf, _summed(rows, names, by), by, keys)


def statistics(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis", references: str | Sequence[str] = "reference",
               *, by: str | Sequence[str] | None = None) -> Any:
    """A DataFrame of statistics rows (:mod:`chrf_core.engines.statistics`): one per partition, or with ``by`` one
    per group and partition, lazily: keep it (``write.parquet``), or sum it with :func:`counts`."""
    return _statistics_frame(frame, chrf, hypothesis, references, by, checked=False)


def _statistics_frame(frame: Any, chrf: CHRF, hypothesis: str, references: str | Sequence[str],
                      by: str | Sequence[str] | None, checked: bool) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    names = form.group_names(by)
    schema = _schema(frame)
    arrow.Columns.of(schema, hypothesis, references)
    keys = form.fields(schema, names)
    columns = list(dict.fromkeys([*names, hypothesis, *_names(references)]))
    return frame.select(*columns).mapInArrow(partial(_statistics, chrf, hypothesis, references, by, checked),
                                             from_arrow_schema(form.schema(chrf, keys)))


def _statistics(chrf: CHRF, hypothesis: str, references: str | Sequence[str], by: str | Sequence[str] | None,
                checked: bool, batches: Iterator[pyarrow.RecordBatch]) -> Iterator[pyarrow.RecordBatch]:
    """A partition's statistics rows; ``checked``: checked where they are made, as :func:`counts` checks rows it
    reads (so that corpus_score sums them without a pass of its own)."""
    with in_worker(_partition()):
        rows = arrow.statistics(batches, chrf, hypothesis, references, by=by)
        if checked:
            form.summed(rows, form.group_names(by))
        yield from rows.to_batches()


def counts(statistics: Any, *, by: str | Sequence[str] | None = None) -> Counts | dict[Any, Counts]:
    """The exact sum of a DataFrame of statistics rows: each partition's rows checked and summed where they lie,
    then Spark's ``try_sum`` per column (grouped by the settings, and with ``by`` by the groups too)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    names = form.group_names(by)
    schema = statistics.schema
    present = [field.name for field in schema.fields]
    if form.SETTINGS_COLUMN not in present:
        raise InvalidInputError(None, f"no {form.SETTINGS_COLUMN} column (the columns: {', '.join(present[:8])})",
                                subject="statistics")
    form.fields(_schema(statistics), names)
    summed_columns = [name for name in present if name not in names and name != form.SETTINGS_COLUMN]
    checked_schema = StructType([*(schema[name] for name in names), StructField(form.SETTINGS_COLUMN, StringType()),
                                 *(StructField(name, LongType()) for name in summed_columns)])
    return _summed(statistics.mapInArrow(partial(_checked, names), checked_schema), names, by)


def _summed(checked: Any, names: tuple[str, ...], by: str | Sequence[str] | None) -> Counts | dict[Any, Counts]:
    """Checked statistics rows (the settings in their one form) summed by Spark's ``try_sum``, grouped by the
    settings and the groups; each sum checked again on the driver."""
    from pyspark.sql import functions

    summed_columns = [name for name in checked.columns if name not in names and name != form.SETTINGS_COLUMN]
    with on_driver():
        rows = checked.groupBy(form.SETTINGS_COLUMN, *names).agg(
            *(functions.try_sum(name).alias(name) for name in summed_columns)).collect()
    summed: dict[form.Key, Counts] = {}
    settings_of: dict[str, Any] = {}
    for row in rows:
        values = row.asDict()
        text = values[form.SETTINGS_COLUMN]
        settings = settings_of.setdefault(text, form.settings_of(text))
        first = next(iter(settings_of.values()))
        if settings != first:
            raise InvalidInputError(None, f"statistics of other settings ({difference(first, settings)})",
                                    subject="merge")
        totals = [values[name] for name in summed_columns]
        for name, total in zip(summed_columns, totals):
            if total is None:
                raise OverflowError(f"statistics: {name}: the sum passes 2^63 - 1, beyond Spark's long; sum the rows "
                                    f"in parts (chrf_core.engines.arrow.counts is exact)")
        try:
            summed[tuple(values[name] for name in names)] = Counts.checked(
                settings, totals[0], [totals[k:k + 3] for k in range(1, len(totals), 3)])
        except ValueError as error:
            raise InvalidInputError(None, str(error).removeprefix("counts: "), subject="statistics") from None
    return form.keyed(summed, by)


def _checked(names: tuple[str, ...], batches: Iterator[pyarrow.RecordBatch]) -> Iterator[pyarrow.RecordBatch]:
    """A partition's statistics rows checked and summed per group: one row per group, the settings in their one
    form."""
    import pyarrow as pa

    with in_worker(_partition()):
        parts = list(batches)
        groups = form.summed(parts, names)
        if groups:
            keys = form.fields(parts[0].schema, names)
            settings = next(iter(groups.values())).settings
            yield from form.table(settings, groups, [pa.field(key.name, key.type) for key in keys]).to_batches()


def segment_scores(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference", *, column: str = "chrf") -> Any:
    """``frame`` with a double column ``column``: each row's own score (``CHRF.segment_scores``), by an Arrow UDF."""
    names = _names(references)
    arrow.Columns.of(_schema(frame), hypothesis, references)
    scores = _arrow_udf(partial(_segment_scores, chrf, [hypothesis, *names]), "double")
    return frame.withColumn(column, scores(hypothesis, *names))


def _arrow_udf(function: Any, kind: Any) -> Any:
    """An Arrow UDF over a partition's batches (Spark's SCALAR_ITER: an iterator of arrays in, of arrays out)."""
    import warnings

    from pyspark.sql.functions import ArrowUDFType, arrow_udf

    with warnings.catch_warnings():  # Spark prefers type hints, which a partial cannot carry: the type is given
        warnings.simplefilter("ignore", UserWarning)
        return arrow_udf(function, kind, ArrowUDFType.SCALAR_ITER)


def _batches(names: list[str], arrays: Iterator[Any]) -> Iterator[pyarrow.RecordBatch]:
    """An Arrow UDF's arrays (one, or a tuple per batch) as record batches with their columns' names."""
    import pyarrow as pa

    for columns in arrays:
        yield pa.RecordBatch.from_arrays(list(columns) if isinstance(columns, tuple) else [columns], names=names)


def _segment_scores(chrf: CHRF, names: list[str], arrays: Iterator[Any]) -> Iterator[pyarrow.Array]:
    with in_worker(_partition()):
        yield from arrow.segment_score_arrays(_batches(names, arrays), chrf, names[0], names[1:])


def mbr(frame: Any, chrf: CHRF, candidates: str = "candidates", references: str | None = None, *,
        weights: str | None = None, method: str = "aggregate", matrix: bool = False, threads: int | None = None) -> Any:
    """``frame`` with the columns of :func:`chrf_core.engines.arrow.mbr` (each row one source's candidates), by an
    Arrow UDF; each task scores on ``threads`` threads (default: as many as it has CPUs, ``spark.task.cpus``)."""
    import pyarrow as pa
    from pyspark.sql import functions
    from pyspark.sql.pandas.types import from_arrow_type

    names = [name for name in (candidates, references, weights) if name is not None]
    arrow.check_mbr_columns(_schema(frame), candidates, references, weights)
    if threads is not None:
        thread_count(threads)
    types = arrow.mbr_types()
    outputs = arrow.mbr_columns(method, matrix)
    struct = from_arrow_type(pa.struct([(name, types[name]) for name in outputs]))
    decode = _arrow_udf(partial(_mbr, chrf, names, candidates, references, weights, method, matrix, threads), struct)
    return frame.withColumn("__mbr", decode(*names)).select(*frame.columns, *(
        functions.col(f"__mbr.{name}").alias(name) for name in outputs))


def _mbr(chrf: CHRF, names: list[str], candidates: str, references: str | None, weights: str | None, method: str,
         matrix: bool, threads: int | None, arrays: Iterator[Any]) -> Iterator[pyarrow.Array]:
    import pyarrow as pa
    from pyspark import TaskContext

    if threads is None:
        context = TaskContext.get()
        threads = max(1, context.cpus()) if context is not None else 1
    with in_worker(_partition()):
        for decoded in arrow.mbr_batches(chrf, _batches(names, arrays), candidates, references, weights, method,
                                         threads, matrix):
            yield pa.StructArray.from_arrays(decoded.columns, names=decoded.schema.names)
