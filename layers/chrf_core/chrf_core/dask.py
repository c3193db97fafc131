"""chrF on Dask DataFrames (``pip install 'chrf-components[dask]'``): a corpus score, each row's score, MBR per row.

Each partition is scored where it lies (``map_partitions``, through Arrow: :mod:`chrf_core.arrow`) into one row of
int64 statistics, which Dask's own reductions sum (``sum``, with ``max`` and the row count proving no int64 sum can
have wrapped, ``unique`` the settings), in one ``dask.compute``; the report is made on the driver from the sums,
exactly ``CHRF.corpus_score`` of every row, however the frame is partitioned. An error about a row names its
column, its row within its partition and the partition. Tasks score on one thread each (Dask's workers run as
many tasks at once as they have threads); MBR takes ``threads`` for more.

>>> import dask.dataframe as dd                                                 # doctest: +SKIP
>>> from chrf_core import CHRF, dask as chrf_dask                               # doctest: +SKIP
>>> data = dd.read_parquet("wmt.parquet")                                       # doctest: +SKIP
>>> chrf_dask.corpus_score(data, CHRF(word_order=2), "hyp", "ref")              # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import arrow
from .counts import SETTINGS_COLUMN, Counts, statistics_schema, summed_columns
from .errors import InvalidInputError, describe, shown

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from .metric import CHRF
    from .report import Report


def _names(references: str | Sequence[str]) -> list[str]:
    return [references] if isinstance(references, str) else list(references)


def _where(partition_info: dict[str, Any] | None) -> str:
    return f"partition {partition_info['number']}" if partition_info else ""


def _table(part: pandas.DataFrame, columns: list[str]) -> pyarrow.Table:
    """A partition's columns as Arrow; a column Arrow cannot read as one type (numbers among strings) is an
    InvalidInputError naming it and its first value that is not a string."""
    import pyarrow as pa

    for name in columns:
        if name not in part.columns:
            arrow.column_type(pa.schema([(str(column), pa.null()) for column in part.columns]), name)
    try:
        return pa.Table.from_pandas(part[columns], preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        for name in columns:
            for row, value in enumerate(part[name].tolist()):
                if not isinstance(value, (str, list, type(None))):
                    raise InvalidInputError(shown(name), f"must be a string, got {describe(value)}", index=row,
                                            caller_key=True) from None
        raise


def _schema(frame: Any) -> pyarrow.Schema:
    """The Arrow schema of a Dask DataFrame's columns, from its meta (before any work)."""
    import pyarrow as pa

    return pa.Schema.from_pandas(frame._meta, preserve_index=False)


def statistics(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
               references: str | Sequence[str] = "reference") -> Any:
    """A Dask DataFrame of statistics rows (:mod:`chrf_core.arrow`), one per partition, lazily: keep it
    (``to_parquet``), or sum it with :func:`counts`."""
    arrow.Columns.of(_schema(frame), hypothesis, references)
    schema = statistics_schema(chrf)
    meta = schema.empty_table().to_pandas()
    return frame.map_partitions(_statistics, chrf, hypothesis, references, meta=meta, align_dataframes=False)


def _statistics(part: pandas.DataFrame, chrf: CHRF, hypothesis: str, references: str | Sequence[str],
                partition_info: dict[str, Any] | None = None) -> pandas.DataFrame:
    with arrow.in_worker(_where(partition_info)):
        table = _table(part, list(dict.fromkeys([hypothesis, *_names(references)])))
        return arrow.statistics(chrf, table, hypothesis, references).to_arrow().to_pandas()


def counts(statistics_frame: Any, settings: Any = None) -> Counts:
    """The counts of a Dask DataFrame of statistics rows, summed by Dask's reductions in one compute
    (``settings``: the CHRF that made them, which names the columns; else every column but ``settings``)."""
    import dask

    columns = summed_columns(settings, lambda: list(statistics_frame.columns))
    values = statistics_frame[columns]
    with arrow.on_driver():
        sums, maxima, settings_texts, rows = dask.compute(
            values.sum(), values.max(), statistics_frame[SETTINGS_COLUMN].unique(), statistics_frame.shape[0])
    return Counts.of_sums(settings_texts.tolist(), int(rows), sums.to_dict(), maxima.to_dict())


def corpus_score(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                 references: str | Sequence[str] = "reference") -> Report:
    """``chrf.corpus_score`` of every row of ``frame``: its ``to_dict()`` is byte for byte one process's."""
    return chrf.report(counts(statistics(frame, chrf, hypothesis, references), chrf))


def segment_scores(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference", column: str = "chrf") -> Any:
    """``frame`` with a float64 column ``column``: each row's own score (``CHRF.segment_scores``)."""
    import pandas as pd

    arrow.Columns.of(_schema(frame), hypothesis, references)
    meta = frame._meta.assign(**{column: pd.Series(dtype="float64")})
    return frame.map_partitions(_segment_scores, chrf, hypothesis, references, column, meta=meta,
                                align_dataframes=False)


def _segment_scores(part: pandas.DataFrame, chrf: CHRF, hypothesis: str, references: str | Sequence[str],
                    column: str, partition_info: dict[str, Any] | None = None) -> pandas.DataFrame:
    with arrow.in_worker(_where(partition_info)):
        table = _table(part, list(dict.fromkeys([hypothesis, *_names(references)])))
        scores = arrow.segment_scores(chrf, table, hypothesis, references)
    return part.assign(**{column: scores.to_numpy()})


def mbr(frame: Any, chrf: CHRF, candidates: str = "candidates", references: str | None = None,
        weights: str | None = None, method: str = "aggregate", matrix: bool = False, threads: int = 1) -> Any:
    """``frame`` with the columns of :func:`chrf_core.arrow.mbr` (each row one source's candidates, as lists),
    each task scoring on ``threads`` threads."""
    import pandas as pd

    arrow.check_mbr_columns(_schema(frame), candidates, references, weights)
    meta = frame._meta.assign(**{name: pd.Series(dtype="int64" if name == "mbr_best" else "object")
                                 for name in arrow.mbr_columns(method, matrix)})
    return frame.map_partitions(_mbr, chrf, candidates, references, weights, method, matrix, threads, meta=meta,
                                align_dataframes=False)


def _mbr(part: pandas.DataFrame, chrf: CHRF, candidates: str, references: str | None, weights: str | None,
         method: str, matrix: bool, threads: int, partition_info: dict[str, Any] | None = None) -> pandas.DataFrame:
    names = [name for name in (candidates, references, weights) if name is not None]
    with arrow.in_worker(_where(partition_info)):
        table = _table(part, list(dict.fromkeys(names)))
        decoded = arrow.mbr(chrf, table, candidates, references, weights, method, threads, matrix)
    return part.assign(**{name: decoded.column(name).to_pylist() for name in decoded.column_names})
