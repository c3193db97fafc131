"""chrF on Spark (``pip install 'chrf-components[spark]'``; Spark 4, Java 17): a corpus score, each row's score, MBR
per row.

Each partition is scored where it lies (``mapInArrow``, :mod:`chrf_core.arrow`) into one row of int64 statistics,
which Spark's own aggregation sums (``try_sum``, which gives null rather than a wrapped sum, with ``max`` and
``count`` proving every sum exact; ``groupBy`` the settings, so statistics of other settings are refused by name);
the report is made on the driver from the sums, exactly ``CHRF.corpus_score`` of every row, however the
DataFrame is partitioned. Row scores and MBR go through Arrow UDFs. An error about a row names its column, its row
within its partition and the partition.

>>> from chrf_core import CHRF, spark as chrf_spark                                     # doctest: +SKIP
>>> data = spark.read.parquet("wmt.parquet")                                             # doctest: +SKIP
>>> chrf_spark.corpus_score(data, CHRF(word_order=2), "hyp", "ref")                      # doctest: +SKIP
>>> chrf_spark.segment_scores(data, CHRF(word_order=2), "hyp", "ref").write.parquet(...)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from . import arrow
from .counts import SETTINGS_COLUMN, Counts, same_settings, statistics_schema, summed_columns

if TYPE_CHECKING:
    import pyarrow

    from .metric import CHRF
    from .report import Report


def _names(references: str | Sequence[str]) -> list[str]:
    return [references] if isinstance(references, str) else list(references)


def _partition() -> str:
    from pyspark import TaskContext

    context = TaskContext.get()
    return f"partition {context.partitionId()}" if context is not None else ""


def statistics(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
               references: str | Sequence[str] = "reference") -> Any:
    """A DataFrame of statistics rows (:mod:`chrf_core.arrow`), one per partition, lazily: keep it
    (``write.parquet``), or sum it with :func:`counts`."""
    from pyspark.sql.pandas.types import from_arrow_schema

    columns = list(dict.fromkeys([hypothesis, *_names(references)]))
    arrow.Columns.of(_schema(frame), hypothesis, references)
    schema = from_arrow_schema(statistics_schema(chrf))
    return frame.select(*columns).mapInArrow(partial(_statistics, chrf, hypothesis, references), schema)


def _schema(frame: Any) -> pyarrow.Schema:
    """The Arrow schema of a DataFrame's columns (before any work)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema)


def _statistics(chrf: CHRF, hypothesis: str, references: str | Sequence[str],
                batches: Iterator[pyarrow.RecordBatch]) -> Iterator[pyarrow.RecordBatch]:
    with arrow.in_worker(_partition()):
        yield arrow.statistics(chrf, batches, hypothesis, references).to_arrow()


def counts(statistics_frame: Any, settings: Any = None) -> Counts:
    """The counts of a DataFrame of statistics rows, summed by Spark (``settings``: the CHRF that made them, which
    names the columns; else every column but ``settings``)."""
    from pyspark.sql import functions

    columns = summed_columns(settings, lambda: list(statistics_frame.columns))
    aggregations = [function(name).alias(f"{kind}:{name}") for name in columns
                    for kind, function in (("sum", functions.try_sum), ("max", functions.max))]
    with arrow.on_driver():
        groups = statistics_frame.groupBy(SETTINGS_COLUMN).agg(
            *aggregations, functions.count(functions.lit(1)).alias("rows")).collect()
    same_settings(group[SETTINGS_COLUMN] for group in groups)  # one group, or an error naming what differs
    group = groups[0].asDict()
    return Counts.of_sums([group[SETTINGS_COLUMN]], group["rows"], {name: group[f"sum:{name}"] for name in columns},
                          {name: group[f"max:{name}"] for name in columns})


def corpus_score(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                 references: str | Sequence[str] = "reference") -> Report:
    """``chrf.corpus_score`` of every row of ``frame``: its ``to_dict()`` is byte for byte one process's."""
    return chrf.report(counts(statistics(frame, chrf, hypothesis, references), chrf))


def segment_scores(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference", column: str = "chrf") -> Any:
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
    with arrow.in_worker(_partition()):
        yield from arrow.segment_score_arrays(chrf, _batches(names, arrays), names[0], names[1:])


def mbr(frame: Any, chrf: CHRF, candidates: str = "candidates", references: str | None = None,
        weights: str | None = None, method: str = "aggregate", matrix: bool = False) -> Any:
    """``frame`` with the columns of :func:`chrf_core.arrow.mbr` (each row one source's candidates), by an Arrow
    UDF; each task scores on as many threads as it has CPUs (``spark.task.cpus``)."""
    import pyarrow as pa
    from pyspark.sql import functions
    from pyspark.sql.pandas.types import from_arrow_type

    names = [name for name in (candidates, references, weights) if name is not None]
    arrow.check_mbr_columns(_schema(frame), candidates, references, weights)
    types = arrow.mbr_types()
    outputs = arrow.mbr_columns(method, matrix)
    struct = from_arrow_type(pa.struct([(name, types[name]) for name in outputs]))
    decode = _arrow_udf(partial(_mbr, chrf, names, candidates, references, weights, method, matrix), struct)
    return frame.withColumn("__mbr", decode(*names)).select(*frame.columns, *(
        functions.col(f"__mbr.{name}").alias(name) for name in outputs))


def _mbr(chrf: CHRF, names: list[str], candidates: str, references: str | None, weights: str | None, method: str,
         matrix: bool, arrays: Iterator[Any]) -> Iterator[pyarrow.Array]:
    import pyarrow as pa
    from pyspark import TaskContext

    context = TaskContext.get()
    threads = max(1, context.cpus()) if context is not None else 1
    with arrow.in_worker(_partition()):
        for decoded in arrow.mbr_batches(chrf, _batches(names, arrays), candidates, references, weights, method,
                                         threads, matrix):
            yield pa.StructArray.from_arrays(decoded.columns, names=decoded.schema.names)
