"""chrF on Ray Data (``pip install 'chrf-components[ray]'``): a corpus score, each row's score, MBR per row.

Each block is scored where it lies (``map_batches`` with ``batch_format="pyarrow"``, :mod:`chrf_core.arrow`), its
statistics one int64 row per block, which Ray's own aggregations sum (``Sum``, with ``Max`` and ``Count`` proving no
int64 sum can have wrapped, ``Unique`` the settings); the report is made on the driver from the sums, exactly
``CHRF.corpus_score`` of every row, however the dataset is split. Columns are named as in :mod:`chrf_core.arrow`;
an error about a row names its column and its row within its block.

>>> import ray                                                      # doctest: +SKIP
>>> from chrf_core import CHRF, ray as chrf_ray                     # doctest: +SKIP
>>> data = ray.data.read_parquet("wmt.parquet")                     # doctest: +SKIP
>>> chrf_ray.corpus_score(data, CHRF(word_order=2), "hyp", "ref")   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from . import arrow
from .counts import SETTINGS_COLUMN, Counts, summed_columns

if TYPE_CHECKING:
    import pyarrow

    from .metric import CHRF
    from .report import Report


def _schema(dataset: Any) -> pyarrow.Schema | None:
    """The Arrow schema of a dataset when Ray knows it without running anything (else its blocks are checked)."""
    import pyarrow as pa

    schema = dataset.schema(fetch_if_missing=False)
    base = getattr(schema, "base_schema", None)
    return base if isinstance(base, pa.Schema) else None


def _check(dataset: Any, hypothesis: str, references: str | Sequence[str]) -> None:
    schema = _schema(dataset)
    if schema is not None:
        arrow.Columns.of(schema, hypothesis, references)


def statistics(dataset: Any, chrf: CHRF, hypothesis: str = "hypothesis",
               references: str | Sequence[str] = "reference") -> Any:
    """A dataset of statistics rows (:mod:`chrf_core.arrow`), one per block, lazily: keep it (``write_parquet``),
    or sum it with :func:`counts`."""
    _check(dataset, hypothesis, references)
    return dataset.map_batches(partial(_statistics, chrf, hypothesis, references), batch_format="pyarrow",
                               batch_size=None)


def _statistics(chrf: CHRF, hypothesis: str, references: str | Sequence[str],
                batch: pyarrow.Table) -> pyarrow.Table:
    import pyarrow as pa

    with arrow.in_worker():
        return pa.Table.from_batches([arrow.statistics(chrf, batch, hypothesis, references).to_arrow()])


def counts(statistics_data: Any, settings: Any = None) -> Counts:
    """The counts of a dataset of statistics rows, summed by Ray's aggregations (``settings``: the CHRF that made
    them, which names the columns; else they are read from the dataset's schema)."""
    from ray.data.aggregate import Count, Max, Sum, Unique

    columns = summed_columns(settings, lambda: list(statistics_data.columns()))
    aggregations = [aggregation(name, alias_name=f"{kind}:{name}") for name in columns
                    for kind, aggregation in (("sum", Sum), ("max", Max))]
    with arrow.on_driver():
        result = statistics_data.aggregate(*aggregations, Count(alias_name="rows"),
                                           Unique(SETTINGS_COLUMN, alias_name="settings"))
    return Counts.of_sums(result["settings"] or [], result["rows"], {name: result[f"sum:{name}"] for name in columns},
                          {name: result[f"max:{name}"] for name in columns})


def corpus_score(dataset: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                 references: str | Sequence[str] = "reference") -> Report:
    """``chrf.corpus_score`` of every row of ``dataset``: its ``to_dict()`` is byte for byte one process's."""
    return chrf.report(counts(statistics(dataset, chrf, hypothesis, references), chrf))


def segment_scores(dataset: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference", column: str = "chrf") -> Any:
    """``dataset`` with a float64 column ``column``: each row's own score (``CHRF.segment_scores``)."""
    _check(dataset, hypothesis, references)
    return dataset.map_batches(partial(_segment_scores, chrf, hypothesis, references, column),
                               batch_format="pyarrow", batch_size=None)


def _segment_scores(chrf: CHRF, hypothesis: str, references: str | Sequence[str], column: str,
                    batch: pyarrow.Table) -> pyarrow.Table:
    with arrow.in_worker():
        return batch.append_column(column, arrow.segment_scores(chrf, batch, hypothesis, references))


def mbr(dataset: Any, chrf: CHRF, candidates: str = "candidates", references: str | None = None,
        weights: str | None = None, method: str = "aggregate", matrix: bool = False, num_cpus: float = 1) -> Any:
    """``dataset`` with the columns of :func:`chrf_core.arrow.mbr` (each row one source's candidates): every task
    asks Ray for ``num_cpus`` CPUs and scores on as many threads as Ray assigned it."""
    schema = _schema(dataset)
    if schema is not None:
        arrow.check_mbr_columns(schema, candidates, references, weights)
    return dataset.map_batches(partial(_mbr, chrf, candidates, references, weights, method, matrix),
                               batch_format="pyarrow", batch_size=None, num_cpus=num_cpus)


def _mbr(chrf: CHRF, candidates: str, references: str | None, weights: str | None, method: str, matrix: bool,
         batch: pyarrow.Table) -> pyarrow.Table:
    import ray

    threads = max(1, int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1)))
    with arrow.in_worker():
        decoded = arrow.mbr(chrf, batch, candidates, references, weights, method, threads, matrix)
    for name in decoded.column_names:
        batch = batch.append_column(name, decoded.column(name))
    return batch
