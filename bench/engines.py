"""One engine's chrF++ scores of two line-aligned files, timed, for make bench's table 9 (run by .venv-engines' Python;
bench/benchmark.py times it beside `chrf-components score` on the same files, in interleaved rounds).

    python bench/engines.py ENGINE HYP REF PARTS [corpus | groups SYSTEMS | parquet FOLDER]

ENGINE is arrow (one process, chrf_core.engines.arrow), ray, spark, dask, torchmetrics, or (groups only) loop: one
process scoring each group with its own ``CHRF.corpus_score``, as a group-by is written by hand. Prints one JSON line:
the engine's start-up seconds, the scoring seconds, the partitions, the score (for groups, the sum of the groups'
scores and their number), and the size of one partition's statistics (Arrow IPC stream, JSON).

- corpus: the files read into Arrow, handed to the engine in PARTS partitions, each scored into statistics, the
  statistics checked and summed by the engine, the report made;
- groups: a WMT-shaped table, SYSTEMS systems that each translated the same segments (the files' lines, cut to an
  equal share), rows in system order as a results table is written, in PARTS partitions of skewed sizes (half of
  the rows in the first); one ``corpus_score(..., by="system")``;
- parquet: the files written once as a Parquet file of PARTS row groups in FOLDER, then the engine's own reader
  (ray.data.read_parquet, spark.read.parquet, dd.read_parquet, pyarrow.parquet) and ``corpus_score``, with the
  phases timed apart: reading alone (the data materialized), then scoring what was read.

Engines run on this machine's cores, on loopback (Ray's single-machine mode, Spark's local[*] bound to 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def read_lines(path: str) -> Any:
    """A file's lines as an Arrow string array, never as Python strings (the file mapped, split by Arrow), one segment
    per line as the command line reads them: split at each newline, the last one ending the file."""
    import pyarrow as pa
    import pyarrow.compute as pc

    data = pa.memory_map(path).read_buffer()
    offsets = pa.array([0, data.size], pa.int64()).buffers()[1]
    whole = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, data])
    whole.validate(full=True)  # UTF-8
    lines = pc.split_pattern(whole, pattern="\n").flatten()
    return lines.slice(0, len(lines) - 1) if lines[len(lines) - 1].as_py() == "" else lines


def systems_table(table: Any, systems: int) -> Any:
    """``systems`` systems that each translated the same segments: the lines cut to an equal share each, as a WMT
    results table holds them (a ``system`` column, rows in system order)."""
    import pyarrow as pa

    share = table.num_rows // systems
    names = pa.array([f"system-{index:03d}" for index in range(systems) for _ in range(share)])
    return table.slice(0, share * systems).add_column(0, "system", names)


def skewed(table: Any, parts: int) -> list[Any]:
    """``parts`` consecutive slices, half of the rows in the first, the rest in equal shares."""
    first = table.num_rows // 2 if parts > 1 else table.num_rows
    step = -(-(table.num_rows - first) // max(1, parts - 1))
    return [table.slice(0, first)] + [table.slice(start, step) for start in range(first, table.num_rows, step)]


def main(engine: str, hyp: str, ref: str, parts: int, mode: str = "corpus", extra: str = "") -> None:
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    started = time.perf_counter()
    import pyarrow as pa
    from chrf_core import CHRF

    chrf = CHRF(word_order=2)
    session = None
    if engine == "ray":
        import ray

        ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False
    elif engine == "spark":
        from pyspark.sql import SparkSession

        session = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false").config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.memory", "2g")
                   .getOrCreate())
        session.sparkContext.setLogLevel("FATAL")
    ready = time.perf_counter()

    table = pa.table({"hypothesis": read_lines(hyp), "reference": read_lines(ref)})
    by = None
    phases: dict[str, float] = {}
    if mode == "groups":
        table, by = systems_table(table, int(extra)), "system"
        slices = skewed(table, parts)
    else:
        step = -(-table.num_rows // parts)
        slices = [table.slice(start, step) for start in range(0, table.num_rows, step)]
    if mode == "parquet":
        import pyarrow.parquet as pq

        path = os.path.join(extra, "corpus.parquet")
        pq.write_table(table, path, row_group_size=-(-table.num_rows // parts))
        ready = time.perf_counter()
    scoring = time.perf_counter()
    if engine == "loop":  # one process, a corpus_score per group, as written by hand
        columns = table.to_pydict()
        rows: dict[Any, list[int]] = {}
        for index, system in enumerate(columns["system"]):
            rows.setdefault(system, []).append(index)
        result: Any = {system: chrf.corpus_score([columns["hypothesis"][i] for i in indices],
                                                 [[columns["reference"][i] for i in indices]])
                       for system, indices in rows.items()}
    elif engine == "arrow":
        from chrf_core.engines import arrow

        if mode == "parquet":
            import pyarrow.parquet as pq

            data = pq.read_table(path)
            phases["read"] = time.perf_counter() - scoring
            result = arrow.corpus_score(data, chrf)
        else:
            result = arrow.corpus_score(table, chrf, by=by)
    elif engine == "ray":
        from chrf_core.engines import ray as chrf_ray

        if mode == "parquet":
            dataset = ray.data.read_parquet(path).materialize()
            phases["read"] = time.perf_counter() - scoring
            parts = dataset.num_blocks()
        else:
            dataset = ray.data.from_arrow(slices)
        result = chrf_ray.corpus_score(dataset, chrf, by=by)
    elif engine == "spark":
        from chrf_core.engines import spark as chrf_spark

        assert session is not None
        if mode == "parquet":
            frame = session.read.parquet(path).cache()
            frame.count()
            phases["read"] = time.perf_counter() - scoring
        else:
            frame = session.createDataFrame(pa.concat_tables(slices))
        parts = frame.rdd.getNumPartitions()
        result = chrf_spark.corpus_score(frame, chrf, by=by)
    elif engine == "dask":
        import dask.dataframe as dd
        import pandas as pd
        from chrf_core.engines import dask as chrf_dask

        if mode == "parquet":
            frame = dd.read_parquet(path, dtype_backend="pyarrow").persist()
            phases["read"] = time.perf_counter() - scoring
            parts = frame.npartitions
        else:
            frame = dd.from_map(lambda part: part.to_pandas(types_mapper=pd.ArrowDtype), slices)
        result = chrf_dask.corpus_score(frame, chrf, by=by)
    elif engine == "torchmetrics":
        from chrf_core.engines.torchmetrics import CHRFScore

        metric = CHRFScore(chrf=chrf)
        for part in slices:
            metric.update(part.column("hypothesis").to_pylist(), [[text] for text in part.column("reference")
                                                                  .to_pylist()])
        result = metric.report()
    else:
        raise SystemExit(f"unknown engine {engine!r}")
    finished = time.perf_counter()

    from chrf_core.engines import statistics as form

    one_part = chrf.corpus_counts(table.column("hypothesis").slice(0, 1000).to_pylist(),
                                  [table.column("reference").slice(0, 1000).to_pylist()])
    sink = pa.BufferOutputStream()
    rows_of_one = form.to_arrow(one_part)
    with pa.ipc.new_stream(sink, rows_of_one.schema) as writer:
        writer.write_table(rows_of_one)
    if by is None:
        score, groups = result.to_dict()["score"], 1
    else:
        score, groups = sum(report.exact for report in result.values()), len(result)
        score = f"{float(score):.6f}"
    print(json.dumps({"engine": engine, "mode": mode, "start": ready - started, "score_seconds": finished - scoring,
                      "phases": phases, "partitions": parts, "score": score, "groups": groups,
                      "statistics_arrow_bytes": sink.getvalue().size,
                      "statistics_json_bytes": len(json.dumps(one_part.to_dict()))}))
    if session is not None:
        session.stop()
    if engine == "ray":
        ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:])
