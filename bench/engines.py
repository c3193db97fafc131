"""One engine's chrF++ corpus score of two line-aligned files, timed, for make bench's table 9 (run by .venv-engines'
Python; bench/benchmark.py times it beside `chrf-components score` on the same files, in interleaved rounds).

    python bench/engines.py ENGINE HYP REF PARTS

ENGINE is arrow (one process, chrf_core.arrow), ray, spark, dask or torchmetrics. Prints one JSON line: the engine's
start-up seconds, the scoring seconds (the files read into Arrow, handed to the engine in PARTS partitions, each
scored into statistics, the statistics summed by the engine, the report made), the partitions, the report's
score, and the size of one partition's statistics (Arrow IPC stream, JSON). Engines run on this machine's cores,
on loopback (Ray's single-machine mode, Spark's local[*] bound to 127.0.0.1).
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


def main(engine: str, hyp: str, ref: str, parts: int) -> None:
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
    step = -(-table.num_rows // parts)
    slices = [table.slice(start, step) for start in range(0, table.num_rows, step)]
    if engine == "arrow":
        from chrf_core import arrow

        report = chrf.report(arrow.statistics(chrf, table))
    elif engine == "ray":
        from chrf_core import ray as chrf_ray

        report = chrf_ray.corpus_score(ray.data.from_arrow(slices), chrf)
    elif engine == "spark":
        from chrf_core import spark as chrf_spark

        assert session is not None
        frame = session.createDataFrame(table)
        parts = frame.rdd.getNumPartitions()
        report = chrf_spark.corpus_score(frame, chrf)
    elif engine == "dask":
        import dask.dataframe as dd
        import pandas as pd
        from chrf_core import dask as chrf_dask

        frame = dd.from_map(lambda part: part.to_pandas(types_mapper=pd.ArrowDtype), slices)
        report = chrf_dask.corpus_score(frame, chrf)
    elif engine == "torchmetrics":
        from chrf_core.torchmetrics import CHRFScore

        metric = CHRFScore(chrf)
        for part in slices:
            metric.update(part.column("hypothesis").to_pylist(), part.column("reference").to_pylist())
        report = metric.compute()
    else:
        raise SystemExit(f"unknown engine {engine!r}")
    finished = time.perf_counter()

    one_part = chrf.corpus_counts(table.column("hypothesis").slice(0, 1000).to_pylist(),
                                  [table.column("reference").slice(0, 1000).to_pylist()])
    sink = pa.BufferOutputStream()
    batch = one_part.to_arrow()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    print(json.dumps({"engine": engine, "start": ready - started, "score_seconds": finished - ready,
                      "partitions": parts, "score": report.to_dict()["score"], "segments": report.segment_count,
                      "statistics_arrow_bytes": sink.getvalue().size,
                      "statistics_json_bytes": len(json.dumps(one_part.to_dict()))}))
    if session is not None:
        session.stop()
    if engine == "ray":
        ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
