"""chrF on Dask DataFrames (``pip install 'chrf-components[dask]'``): corpus scores (per group too), each row's score,
MBR per row.

Each partition is scored where it lies (``map_partitions``, through Arrow: :mod:`chrf_core.engines.arrow`) into
statistics rows. Summing them is a Dask ``reduction``: each partition's rows are checked and summed exactly where
they lie (:func:`chrf_core.engines.statistics.sums`), and Dask's tree of ``aggregate`` steps adds the partial sums up
exactly (Python integers, carried as their JSON form), per group with ``by``. The report is made on the driver,
exactly ``CHRF.corpus_score`` of every row (of each group's rows), however the frame is partitioned. An error about
a row names its column, its row within its partition and the partition. Tasks score on one thread each (Dask's
workers run as many tasks at once as they have threads); MBR takes ``threads`` for more.

>>> import dask.dataframe as dd                                                  # doctest: +SKIP
>>> from chrf_core import CHRF                                                   # doctest: +SKIP
>>> from chrf_core.engines import dask as chrf_dask                              # doctest: +SKIP
>>> data = dd.read_parquet("wmt.parquet")                                        # doctest: +SKIP
>>> chrf_dask.corpus_score(data, CHRF(word_order=2), "hyp", "ref", by="system")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..counts import Counts
from ..errors import InvalidInputError, describe, shown
from ..mbr import thread_count
from . import arrow
from . import statistics as form
from .relay import in_worker, on_driver

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from ..metric import CHRF
    from ..report import Report


def _names(references: str | Sequence[str]) -> list[str]:
    return [references] if isinstance(references, str) else list(references)


def _where(partition_info: dict[str, Any] | None) -> str:
    return f"partition {partition_info['number']}" if partition_info else ""


def _schema(frame: Any) -> pyarrow.Schema:
    """The Arrow schema of a Dask DataFrame's columns, from its meta (before any work)."""
    import pyarrow as pa

    return pa.Schema.from_pandas(frame._meta, preserve_index=False)


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


def _pandas(table: pyarrow.Table) -> pandas.DataFrame:
    """An Arrow table as pandas with Arrow's types kept (an integer group column with nulls stays integers)."""
    import pandas as pd

    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _refuse_columns_made_text(frame: Any, columns: Sequence[str]) -> None:
    """A column of Python lists (or numbers) given to ``dd.from_pandas`` with Dask's defaults reaches every task as
    the values' text (Dask's ``dataframe.convert-string`` turns a column of Python objects into strings before any
    of our code sees it): refused, naming the column and the fix, where the frame's own pandas data shows it."""
    import pandas as pd

    walk = getattr(getattr(frame, "expr", None), "walk", None)
    for node in walk() if walk is not None else ():
        if type(node).__name__ != "FromPandas" or not node.operand("pyarrow_strings_enabled"):
            continue
        original = getattr(node.operand("frame"), "_data", None)
        if not isinstance(original, pd.DataFrame):
            continue
        for name in columns:
            if name in original.columns and original[name].dtype == object:
                kind = pd.api.types.infer_dtype(original[name], skipna=True)
                if kind not in ("string", "empty"):
                    raise InvalidInputError(shown(name), f"Dask's string conversion (dataframe.convert-string) "
                                                         f"turns this column of Python objects ({kind}) into their "
                                                         f"text; give lists as Arrow lists (pd.ArrowDtype(pa.list_("
                                                         f"pa.string())), as dd.read_parquet gives them) or make the "
                                                         f"frame within dask.config.set({{'dataframe.convert-string'"
                                                         f": False}})", caller_key=True)


def corpus_score(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                 references: str | Sequence[str] = "reference", *,
                 by: str | Sequence[str] | None = None) -> Report | form.Grouped:
    """``chrf.corpus_score`` of every row of ``frame`` (with ``by``, of each group's rows: a ``Grouped``), byte for
    byte one process's."""
    keys = form.fields(_schema(frame), form.group_names(by))
    return form.scored(chrf, counts(statistics(frame, chrf, hypothesis, references, by=by), by=by), by, keys)


def statistics(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis", references: str | Sequence[str] = "reference",
               *, by: str | Sequence[str] | None = None) -> Any:
    """A Dask DataFrame of statistics rows (:mod:`chrf_core.engines.statistics`): one per partition, or with ``by``
    one per group and partition, lazily: keep it (``to_parquet``), or sum it with :func:`counts`."""
    names = form.group_names(by)
    schema = _schema(frame)
    _refuse_columns_made_text(frame, [hypothesis, *_names(references)])
    arrow.Columns.of(schema, hypothesis, references)
    keys = form.fields(schema, names)
    meta = _pandas(form.schema(chrf, keys).empty_table())
    return frame.map_partitions(_statistics, chrf, hypothesis, references, by, meta=meta, align_dataframes=False)


def _statistics(part: pandas.DataFrame, chrf: CHRF, hypothesis: str, references: str | Sequence[str],
                by: str | Sequence[str] | None, partition_info: dict[str, Any] | None = None) -> pandas.DataFrame:
    with in_worker(_where(partition_info)):
        table = _table(part, list(dict.fromkeys([*form.group_names(by), hypothesis, *_names(references)])))
        return _pandas(arrow.statistics(table, chrf, hypothesis, references, by=by))


def counts(statistics: Any, *, by: str | Sequence[str] | None = None) -> Counts | dict[Any, Counts]:
    """The exact sum of a Dask DataFrame of statistics rows, every row checked where it lies, by a Dask
    ``reduction`` of exact partial sums; with ``by``, each group's."""
    import pyarrow as pa

    names = form.group_names(by)
    keys = form.fields(_schema(statistics), names)
    meta = _pandas(pa.schema([*keys, pa.field(form.PARTIAL_COLUMN, pa.string())]).empty_table())
    partials = statistics.map_partitions(_partials, names, meta=meta, align_dataframes=False)
    with on_driver():
        total = partials.reduction(_added, aggregate=_added, combine=_added, meta=meta).compute()
    table = pa.Table.from_pandas(total, preserve_index=False)
    summed = {key: form.of_partial_text(text) for key, text in zip(
        zip(*(table.column(name).to_pylist() for name in names)) if names else iter(lambda: (), None),
        table.column(form.PARTIAL_COLUMN).to_pylist())}
    return form.keyed(summed, by)


def _partials(part: pandas.DataFrame, names: tuple[str, ...],
              partition_info: dict[str, Any] | None = None) -> pandas.DataFrame:
    """A partition's statistics rows checked and summed per group: the group columns and each group's partial sum."""
    import pyarrow as pa

    with in_worker(_where(partition_info)):
        table = pa.Table.from_pandas(part, preserve_index=False)
        return _pandas(form.partials(form.summed(table, names), form.fields(table.schema, names)))


def _added(partials: pandas.DataFrame) -> pandas.DataFrame:
    """Partial sums (of several partitions) added up per group, exactly."""
    import pyarrow as pa

    table = pa.Table.from_pandas(partials, preserve_index=False)
    names = tuple(name for name in table.column_names if name != form.PARTIAL_COLUMN)
    keys = zip(*(table.column(name).to_pylist() for name in names)) if names else iter(lambda: (), None)
    with in_worker():
        parts = [{key: form.of_partial_text(text)} for key, text in zip(keys, table.column(form.PARTIAL_COLUMN)
                                                                         .to_pylist())]
        return _pandas(form.partials(form.merged(parts), [table.schema.field(name) for name in names]))


def segment_scores(frame: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference", *, column: str = "chrf") -> Any:
    """``frame`` with a float64 column ``column``: each row's own score (``CHRF.segment_scores``)."""
    import pandas as pd

    _refuse_columns_made_text(frame, [hypothesis, *_names(references)])
    arrow.Columns.of(_schema(frame), hypothesis, references)
    meta = frame._meta.assign(**{column: pd.Series(dtype="float64")})
    return frame.map_partitions(_segment_scores, chrf, hypothesis, references, column, meta=meta,
                                align_dataframes=False)


def _segment_scores(part: pandas.DataFrame, chrf: CHRF, hypothesis: str, references: str | Sequence[str],
                    column: str, partition_info: dict[str, Any] | None = None) -> pandas.DataFrame:
    with in_worker(_where(partition_info)):
        table = _table(part, list(dict.fromkeys([hypothesis, *_names(references)])))
        scores = arrow.segment_scores(table, chrf, hypothesis, references, column=column).column(column)
    return part.assign(**{column: scores.to_numpy()})


def mbr(frame: Any, chrf: CHRF, candidates: str = "candidates", references: str | None = None, *,
        weights: str | None = None, method: str = "aggregate", matrix: bool = False, threads: int | None = None) -> Any:
    """``frame`` with the columns of :func:`chrf_core.engines.arrow.mbr` (each row one source's candidates, as lists),
    each task scoring on ``threads`` threads (default 1)."""
    import pandas as pd

    names = [name for name in (candidates, references, weights) if name is not None]
    _refuse_columns_made_text(frame, names)
    arrow.check_mbr_columns(_schema(frame), candidates, references, weights)
    threads = 1 if threads is None else thread_count(threads)
    meta = frame._meta.assign(**{name: pd.Series(dtype="int64" if name == "mbr_best" else "object")
                                 for name in arrow.mbr_columns(method, matrix)})
    return frame.map_partitions(_mbr, chrf, candidates, references, weights, method, matrix, threads, meta=meta,
                                align_dataframes=False)


def _mbr(part: pandas.DataFrame, chrf: CHRF, candidates: str, references: str | None, weights: str | None,
         method: str, matrix: bool, threads: int, partition_info: dict[str, Any] | None = None) -> pandas.DataFrame:
    names = [name for name in (candidates, references, weights) if name is not None]
    with in_worker(_where(partition_info)):
        table = _table(part, list(dict.fromkeys(names)))
        decoded = arrow.mbr(table, chrf, candidates, references, weights=weights, method=method, matrix=matrix,
                            threads=threads)
    return part.assign(**{name: decoded.column(name).to_pylist() for name in arrow.mbr_columns(method, matrix)})
