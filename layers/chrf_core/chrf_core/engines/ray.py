"""chrF on Ray Data (``pip install 'chrf-components[ray]'``): corpus scores (per group too), each row's score, MBR per
row.

Each block is scored where it lies (``map_batches`` with ``batch_format="pyarrow"``, :mod:`chrf_core.engines.arrow`)
into statistics rows; summing them is Ray's own aggregation, an ``AggregateFnV2`` (:class:`ExactCounts`): each
block's rows are checked and summed exactly where they lie (:func:`chrf_core.engines.statistics.sums`), and the
partial sums combined exactly (Python integers, carried as their JSON form), per group with ``groupby(...)``. The
report is made on the driver, exactly ``CHRF.corpus_score`` of every row (of each group's rows), however the dataset
is split. An error about a row names its column and its row within its block.

>>> import ray                                                              # doctest: +SKIP
>>> from chrf_core import CHRF                                              # doctest: +SKIP
>>> from chrf_core.engines import ray as chrf_ray                           # doctest: +SKIP
>>> data = ray.data.read_parquet("wmt.parquet")                             # doctest: +SKIP
>>> chrf_ray.corpus_score(data, CHRF(word_order=2), "hyp", "ref")           # doctest: +SKIP
>>> chrf_ray.corpus_score(data, CHRF(word_order=2), "hyp", "ref", by="system")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ray.data.aggregate import AggregateFnV2

from ..counts import Counts
from ..mbr import thread_count
from . import arrow
from . import statistics as form
from .relay import in_worker, on_driver

if TYPE_CHECKING:
    import pyarrow

    from ..metric import CHRF
    from ..report import Report


def _schema(dataset: Any) -> pyarrow.Schema | None:
    """The Arrow schema of a dataset when Ray knows it without running anything (else its blocks are checked)."""
    import pyarrow as pa

    schema = dataset.schema(fetch_if_missing=False)
    base = getattr(schema, "base_schema", None)
    return base if isinstance(base, pa.Schema) else None


def corpus_score(dataset: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                 references: str | Sequence[str] = "reference", *,
                 by: str | Sequence[str] | None = None) -> Report | form.Grouped:
    """``chrf.corpus_score`` of every row of ``dataset`` (with ``by``, of each group's rows: a ``Grouped``), byte for
    byte one process's."""
    names = form.group_names(by)
    schema = _schema(dataset)
    keys = form.fields(schema, names) if schema is not None else None
    summed = counts(statistics(dataset, chrf, hypothesis, references, by=by), by=by)
    return form.scored(chrf, summed, by, keys if keys is not None else _key_fields(summed, names))


def _key_fields(summed: Any, names: tuple[str, ...]) -> list[pyarrow.Field]:
    """The group columns' types, from their values (where the dataset's schema was not known beforehand)."""
    import pyarrow as pa

    keys = list(summed) if isinstance(summed, dict) else []
    return [pa.field(name, pa.array([key[index] if isinstance(key, tuple) else key for key in keys]).type)
            for index, name in enumerate(names)]


def statistics(dataset: Any, chrf: CHRF, hypothesis: str = "hypothesis",
               references: str | Sequence[str] = "reference", *, by: str | Sequence[str] | None = None) -> Any:
    """A dataset of statistics rows (:mod:`chrf_core.engines.statistics`): one per block, or with ``by`` one per
    group and block, lazily: keep it (``write_parquet``), or sum it with :func:`counts`."""
    names = form.group_names(by)
    schema = _schema(dataset)
    if schema is not None:
        arrow.Columns.of(schema, hypothesis, references)
        form.fields(schema, names)
    return dataset.map_batches(partial(_statistics, chrf, hypothesis, references, by), batch_format="pyarrow",
                               batch_size=None)


def _statistics(chrf: CHRF, hypothesis: str, references: str | Sequence[str], by: str | Sequence[str] | None,
                batch: pyarrow.Table) -> pyarrow.Table:
    with in_worker():
        return arrow.statistics(batch, chrf, hypothesis, references, by=by)


class ExactCounts(AggregateFnV2):  # type: ignore[misc]
    """Ray's aggregation of exact counts: a block's partial sums (:func:`_partials`, the ``counts`` column) added up
    exactly, then combined with other blocks' (Python integers; between Ray's tasks, their JSON form: an int64 holds
    no more than 2^63 - 1). The result is the sum's JSON form ("" for no rows)."""

    def __init__(self) -> None:
        super().__init__(form.PARTIAL_COLUMN, zero_factory=lambda: "", on=form.PARTIAL_COLUMN, ignore_nulls=False)

    def aggregate_block(self, block: Any) -> str:
        import pyarrow as pa

        table = block if isinstance(block, pa.Table) else pa.Table.from_pandas(block, preserve_index=False)
        return _sum_texts(table.column(form.PARTIAL_COLUMN).to_pylist())

    def combine(self, current_accumulator: str, new: str) -> str:
        return _sum_texts([current_accumulator, new])

    def finalize(self, accumulator: str) -> str:
        return accumulator


def _sum_texts(texts: list[Any]) -> str:
    with in_worker():
        parts = [{(): form.of_partial_text(text)} for text in texts if text]
        return form.partial_text(form.merged(parts)[()]) if parts else ""


def counts(statistics: Any, *, by: str | Sequence[str] | None = None) -> Counts | dict[Any, Counts]:
    """The exact sum of a dataset of statistics rows, every row checked where it lies, by Ray's aggregation
    (:class:`ExactCounts`); with ``by``, each group's (``groupby(by).aggregate``)."""
    import ray

    names = form.group_names(by)
    partials = statistics.map_batches(partial(_partials, names), batch_format="pyarrow", batch_size=None)
    with on_driver():
        if names:  # one shuffle partition per CPU: Ray's default (200) costs seconds for rows this small
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            rows = partials.groupby(list(names), num_partitions=cpus).aggregate(ExactCounts()).take_all()
        else:
            rows = [partials.aggregate(ExactCounts())]
    summed = {tuple(row[name] for name in names): form.of_partial_text(row[form.PARTIAL_COLUMN])
              for row in rows if row and row[form.PARTIAL_COLUMN]}
    return form.keyed(summed, by)


def _partials(names: tuple[str, ...], batch: pyarrow.Table) -> pyarrow.Table:
    """A block's statistics rows checked and summed per group: the group columns and each group's partial sum."""
    with in_worker():
        return form.partials(form.summed(batch, names), form.fields(batch.schema, names))


def segment_scores(dataset: Any, chrf: CHRF, hypothesis: str = "hypothesis",
                   references: str | Sequence[str] = "reference", *, column: str = "chrf") -> Any:
    """``dataset`` with a float64 column ``column``: each row's own score (``CHRF.segment_scores``)."""
    schema = _schema(dataset)
    if schema is not None:
        arrow.Columns.of(schema, hypothesis, references)
    return dataset.map_batches(partial(_segment_scores, chrf, hypothesis, references, column),
                               batch_format="pyarrow", batch_size=None)


def _segment_scores(chrf: CHRF, hypothesis: str, references: str | Sequence[str], column: str,
                    batch: pyarrow.Table) -> pyarrow.Table:
    with in_worker():
        return arrow.segment_scores(batch, chrf, hypothesis, references, column=column)


def mbr(dataset: Any, chrf: CHRF, candidates: str = "candidates", references: str | None = None, *,
        weights: str | None = None, method: str = "aggregate", matrix: bool = False, threads: int | None = None) -> Any:
    """``dataset`` with the columns of :func:`chrf_core.engines.arrow.mbr` (each row one source's candidates): every
    task asks Ray for ``threads`` CPUs (default 1) and scores on as many threads as Ray assigned it."""
    schema = _schema(dataset)
    if schema is not None:
        arrow.check_mbr_columns(schema, candidates, references, weights)
    return dataset.map_batches(partial(_mbr, chrf, candidates, references, weights, method, matrix),
                               batch_format="pyarrow", batch_size=None,
                               num_cpus=1 if threads is None else thread_count(threads))


def _mbr(chrf: CHRF, candidates: str, references: str | None, weights: str | None, method: str, matrix: bool,
         batch: pyarrow.Table) -> pyarrow.Table:
    import ray

    threads = max(1, int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1)))
    with in_worker():
        return arrow.mbr(batch, chrf, candidates, references, weights=weights, method=method, matrix=matrix,
                         threads=threads)
