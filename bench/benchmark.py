
"""`make bench`: chrf-components against sacreBLEU 2.6, side by side in one run, rounds interleaved.

1. The whole Lambda handler (direct invoke: validation, counting, the exact report, logging and metrics) with
   each counting kernel, against sacreBLEU's CHRF(...).corpus_score, on near-limit requests (256 segments, just
   under 64 KB) of three kinds of data (tests/payloads.py): real MT, high overlap, low overlap.
2. The worst case: the most expensive valid requests we can build, against a typical near-limit request of real
   MT at the same settings, through the handler, with each kernel.
3. The command line: `chrf-components score` against `sacrebleu -m chrf`, with peak memory (RSS).
4. `chrf-components compare`: 3 systems x 3,000 segments x 1,000 bootstrap resamples.
5. Cold start: import times.
6. `chrf-components segments` (text and --json) against `score` on the same lines.
7. `CHRF().pairwise` (every hypothesis against every reference, as in MBR decoding) against
   `fastchrf.pairwise_chrf` and sacreBLEU's `sentence_score`, at 256 x 256 and 1024 x 1024.
8. MBR decoding in fastChrF's own set-up (n = 4 ... 1024 samples, batches of 1 and 32 sources, chrF and chrF++):
   `pairwise_batch` and `aggregate_batch` against fastChrF's `pairwise_chrf` and `aggregate_chrf`.
9. Beyond one machine: the corpus score of 1M real lines on Ray, Spark, Dask, torchmetrics and
   chrf_core.engines.arrow (.venv-engines, bench/engines.py) against `score` on the same files, and the size of one
   part's statistics; scores per group of a WMT-shaped table (300 systems) on each engine against a loop of
   corpus_score per group; a Parquet file read by each engine, reading and scoring timed apart.
10. The corpus pipeline on this machine: `pipeline run --local` (serve's S3 and Step Functions, the state machine on
   the local runner, the functions in their environments) against `score --json` on the same 1M and 5M lines: time
   and the peak of the RSS summed over the command and all its processes (the functions' environments included),
   and that peak against the first size's (flat: about 1x), rounds interleaved.

Times are the best of several interleaved rounds (the least disturbed by other load on a shared machine).
`python bench/benchmark.py --quick` runs fewer rounds and smaller command-line corpora. `--baseline SO` loads a
second build of the native kernel (another revision's `_kernel.abi3.so`) and times it in the same rounds as this
one, as kernel "base" in tables 1 and 2 and as a column with the ratio (base / this build) in tables 7 and 8: an A/B
of a kernel change in one run (the command-line tables, 3, 4 and 6, run this build alone).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import pathlib
import random
import resource
import subprocess
import sys
import tempfile
import time
import timeit
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "cli"), str(ROOT / "layers" / "chrf_core"),
                str(ROOT / "functions" / "chrf_components")]

import chrf_core  # noqa: E402
import lambda_handlers  # noqa: E402
import numpy  # noqa: E402
import payloads  # noqa: E402
from sacrebleu.metrics import CHRF  # noqa: E402

CONFIGURATIONS = [(6, 0), (6, 2), (10, 4)]
BIN = pathlib.Path(sys.executable).parent
BASE = "base"  # the --baseline kernel's name in chrf_core.kernel.KERNELS, when one is loaded


def load_baseline(path: str) -> None:
    """Another build of the native kernel, as kernel BASE beside this one (its own copy of the library)."""
    import importlib.machinery
    import importlib.util
    import shutil

    copy = pathlib.Path(tempfile.mkdtemp()) / pathlib.Path(path).name  # a file of its own: dlopen loads it anew
    shutil.copy(path, copy)
    spec = importlib.util.spec_from_file_location("chrf_core._kernel", copy,
                                                  loader=importlib.machinery.ExtensionFileLoader("chrf_core._kernel",
                                                                                                str(copy)))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    module.set_seed(int.from_bytes(os.urandom(8), "little"))
    chrf_core.kernel.KERNELS[BASE] = chrf_core.kernel.NativeKernel(module if hasattr(module, "buffers")
                                                                   else WithoutBuffers(module))


class WithoutBuffers:
    """A kernel built before MBR buffers were kept between calls (issue 67): its batch takes none."""

    def __init__(self, module: object) -> None:
        self.module = module

    def __getattr__(self, name: str) -> object:
        return getattr(self.module, name)

    @staticmethod
    def buffers() -> None:
        return None

    def batch(self, *arguments: object) -> object:
        return self.module.batch(*arguments[:-1])  # type: ignore[attr-defined]


def with_base(functions: dict[str, object]) -> dict[str, object]:
    """The timed functions, each also with the baseline kernel (as "NAME base") when one is loaded."""
    if BASE not in chrf_core.kernel.KERNELS:
        return functions
    return {**functions, **{f"{name} {BASE}": with_kernel(BASE, function) for name, function in functions.items()}}


def versus(best: dict[str, float], name: str) -> str:
    """The baseline's time for `name` and its ratio to this build's, when a baseline is loaded."""
    if f"{name} {BASE}" not in best:
        return ""
    return f"  base {best[f'{name} {BASE}'] * 1000:.2f} ms ({best[f'{name} {BASE}'] / best[name]:.3f}x)"


WARM_BELOW = 0.05  # seconds: a call shorter than this is timed right after an untimed one of its own


def best_of(functions: dict[str, object], rounds: int, number: int) -> dict[str, float]:
    """Best seconds per call of each function, calling them in turn each round so they share the machine's load. A
    short call is timed right after an untimed call of its own, so that none is timed in the caches the one before
    it left: fastChrF's call (all cores, its own memory) made the next library's sub-millisecond call up to 1.4x
    slower than the same call after itself, which showed as a kernel's chrF++ column slower than its baseline's."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for round_ in range(rounds):
        for name, function in list(functions.items())[::-1 if round_ % 2 else 1]:
            if not times[name] or min(times[name]) < WARM_BELOW:
                function()  # type: ignore[operator]
            times[name].append(timeit.timeit(function, number=number) / number)  # type: ignore[arg-type]
    return {name: min(values) for name, values in times.items()}


def with_kernel(kernel: str, function):  # type: ignore[no-untyped-def]
    from chrf_core import kernel as kernels

    def call():  # type: ignore[no-untyped-def]
        previous, kernels.KERNEL = kernels.KERNEL, kernel
        try:
            return function()
        finally:
            kernels.KERNEL = previous

    return call


def quiet_handler():  # type: ignore[no-untyped-def]
    """The API function loaded as Lambda loads it, its logs and metrics written to nowhere."""
    handler = lambda_handlers.load()
    sink = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    sys.modules["observability"].logger.registered_handler.stream = sink

    def invoke(request):  # type: ignore[no-untyped-def]
        with contextlib.redirect_stdout(sink):
            return handler(request, lambda_handlers.LambdaContext())

    return invoke


def handler_table(invoke, rounds: int) -> None:  # type: ignore[no-untyped-def]
    kernels = sorted(chrf_core.kernel.KERNELS, reverse=True)  # python, then native if built
    print("1. The handler (direct invoke) against sacreBLEU corpus_score, near-limit requests\n")
    header = f"{'data':<14}{'config':<9}{'sacreBLEU':>11}" + "".join(f"{k:>11}{'speed-up':>10}" for k in kernels)
    print(header + "\n" + "-" * len(header))
    for kind in payloads.KINDS:
        hypotheses, references = payloads.near_limit(kind)
        for char_order, word_order in CONFIGURATIONS:
            request = {"hypotheses": hypotheses, "references": references, "char_order": char_order,
                       "word_order": word_order}
            metric = CHRF(char_order=char_order, word_order=word_order)
            functions = {"sacreBLEU": lambda metric=metric, h=hypotheses, r=references: metric.corpus_score(h, [r])}
            for kernel in kernels:
                functions[kernel] = with_kernel(kernel, lambda request=request: invoke(request))
            best = best_of(functions, rounds, 3)
            row = f"{kind:<14}{f'c{char_order} w{word_order}':<9}{best['sacreBLEU'] * 1000:>9.1f}ms"
            for kernel in kernels:
                row += f"{best[kernel] * 1000:>9.2f}ms{best['sacreBLEU'] / best[kernel]:>9.1f}x"
            print(row)


def worst_case_table(invoke, rounds: int) -> None:  # type: ignore[no-untyped-def]
    kernels = sorted(chrf_core.kernel.KERNELS, reverse=True)
    print("\n2. The most expensive valid requests, against a typical real-MT request at the same settings\n")
    header = f"{'request':<66}" + "".join(f"{k:>11}{'vs typ.':>9}" for k in kernels)
    print(header + "\n" + "-" * len(header))
    hypotheses, references = payloads.near_limit("real")
    for name, request in payloads.adversarial().items():
        # The typical request at the same settings is timed in the same rounds, so that a change in the shared
        # machine's load between rows cannot change a ratio.
        typical = {"hypotheses": hypotheses, "references": references, "char_order": request.get("char_order", 6),
                   "word_order": request.get("word_order", 0)}
        functions = {}
        for kernel in kernels:
            functions[kernel] = with_kernel(kernel, lambda request=request: invoke(request))
            functions[f"{kernel} typical"] = with_kernel(kernel, lambda typical=typical: invoke(typical))
        best = best_of(functions, rounds, 1)
        row = f"{name:<66}"
        for kernel in kernels:
            row += f"{best[kernel] * 1000:>9.1f}ms{best[kernel] / best[f'{kernel} typical']:>8.1f}x"
        print(row)


def corpus_files(folder: pathlib.Path, segments: int) -> tuple[pathlib.Path, pathlib.Path]:
    """Line-aligned files of real MT output and references, varied so that no two segments repeat exactly."""
    rng = random.Random(1)
    pairs = payloads.real_pairs()
    hyp, ref = folder / f"{segments}.hyp", folder / f"{segments}.ref"
    with hyp.open("w", encoding="utf-8") as h, ref.open("w", encoding="utf-8") as r:
        for index in range(segments):
            hypothesis, reference = pairs[rng.randrange(len(pairs))]
            h.write(f"{hypothesis} {index % 997}\n")
            r.write(f"{reference} {index % 991}\n")
    return hyp, ref


def measure(argv: list[str], timeout: float) -> tuple[float, float] | None:
    """Wall seconds and peak RSS (MB) of a command, or None if it ran out of time. GNU time reports the RSS when
    it is installed: a child's own ru_maxrss can include the pages of this (large) process it was forked from."""
    gnu_time = pathlib.Path("/usr/bin/time")
    with tempfile.NamedTemporaryFile("r") as report:
        prefix = [str(gnu_time), "-q", "-f", "%M", "-o", report.name] if gnu_time.exists() else []
        started = time.perf_counter()
        process = subprocess.Popen(prefix + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            status = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None
        elapsed = time.perf_counter() - started
        if status:
            raise RuntimeError(f"{argv[0]} failed with status {status}")
        if prefix:
            return elapsed, int(report.read().split()[-1]) / 1024
    return elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and every process descended from it, now (from /proc; shared pages counted in
    each process that maps them, so an upper bound)."""
    parents: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                parents[int(entry)], sizes[int(entry)] = int(fields[1]), int(fields[21]) * PAGE
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = {pid}, {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return sum(sizes.get(each, 0) for each in found)


PAGE = os.sysconf("SC_PAGE_SIZE")


def measure_tree(argv: list[str], timeout: float) -> tuple[float, float] | None:
    """Wall seconds and the peak of the summed RSS (MB) of a command and all its processes, sampled every 50 ms,
    or None if it ran out of time: what a run holds at once, however it is spread over processes."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        if time.perf_counter() - started > timeout:
            process.kill()
            process.wait()
            return None
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    if process.returncode:
        raise RuntimeError(f"{argv[0]} failed with status {process.returncode}")
    return elapsed, peak / 2**20


def command_line_table(sizes: list[int], sacrebleu_limit: int, timeout: float) -> None:
    print("\n3. Command line: chrf-components score against sacrebleu -m chrf (chrF++), real MT data\n")
    header = f"{'segments':>10}{'chrf-components':>22}{'sacreBLEU':>22}{'speed-up':>10}"
    print(header + "\n" + "-" * len(header))
    with tempfile.TemporaryDirectory() as folder:
        for segments in sizes:
            hyp, ref = corpus_files(pathlib.Path(folder), segments)
            ours = measure([str(BIN / "chrf-components"), "score", str(hyp), str(ref), "--word-order", "2"], timeout)
            theirs = None
            if segments <= sacrebleu_limit:
                theirs = measure([str(BIN / "sacrebleu"), str(ref), "-i", str(hyp), "-m", "chrf", "--chrf-word-order",
                                  "2", "-b"], timeout)
            ours_text = f"{ours[0]:8.1f} s {ours[1]:7.0f} MB" if ours else "timed out"
            theirs_text = f"{theirs[0]:8.1f} s {theirs[1]:7.0f} MB" if theirs else (
                "not run" if segments > sacrebleu_limit else "timed out")
            ratio = f"{theirs[0] / ours[0]:9.1f}x" if ours and theirs else ""
            print(f"{segments:>10}{ours_text:>22}{theirs_text:>22}{ratio:>10}")
            hyp.unlink()
            ref.unlink()


def compare_timing(rounds: int) -> None:
    print("\n4. compare: 3 systems x 3,000 segments x 1,000 bootstrap resamples (paired bootstrap)\n")
    from chrf_components_cli.main import main

    rng = random.Random(4)
    pairs = payloads.real_pairs()
    chosen = [pairs[rng.randrange(len(pairs))] for _ in range(3000)]
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name, texts in (("ref", [r for _, r in chosen]), ("base", [h for h, _ in chosen]),
                            ("a", [" ".join(h.split()[1:]) for h, _ in chosen]),
                            ("b", [h.replace("e", "é") for h, _ in chosen])):
            path = pathlib.Path(folder) / name
            path.write_text("\n".join(texts) + "\n", encoding="utf-8")
            paths.append(str(path))
        best = float("inf")
        for _ in range(rounds):
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                main(["compare", *paths, "--word-order", "2"])
            best = min(best, time.perf_counter() - started)
        whole = measure([str(BIN / "chrf-components"), "compare", *paths, "--word-order", "2"], 120)
    print(f"  in-process best of {rounds}: {best:.2f} s; as a command (interpreter start included): "
          f"{whole[0]:.2f} s, {whole[1]:.0f} MB" if whole else "  timed out")


def segments_table(sizes: list[int], timeout: float) -> None:
    print("\n6. segments: every segment's score (text, --json) against score, same lines (chrF++), output to nowhere\n")
    header = f"{'segments':>10}{'score':>12}{'segments':>12}{'ratio':>8}{'--json':>12}{'ratio':>8}"
    print(header + "\n" + "-" * len(header))
    with tempfile.TemporaryDirectory() as folder:
        for segments in sizes:
            hyp, ref = corpus_files(pathlib.Path(folder), segments)
            times = {}
            for name, extra in (("score", []), ("segments", []), ("--json", ["--json"])):
                command = "score" if name == "score" else "segments"
                result = measure([str(BIN / "chrf-components"), command, str(hyp), str(ref), "--word-order", "2",
                                  *extra], timeout)
                times[name] = result[0] if result else float("nan")
            print(f"{segments:>10}{times['score']:>10.1f} s{times['segments']:>10.1f} s"
                  f"{times['segments'] / times['score']:>7.1f}x{times['--json']:>10.1f} s"
                  f"{times['--json'] / times['score']:>7.1f}x")


def mbr_candidates(count: int, source: int = 3) -> list[str]:
    """Sampled translations of one source: a real reference with a quarter of its words replaced, some dropped."""
    rng = random.Random(6 + source)
    pairs = payloads.real_pairs()
    vocabulary = sorted({word for pair in pairs for text in pair for word in text.split()})
    return [payloads.edited(pairs[source % len(pairs)][1], rng, vocabulary) for _ in range(count)]


def real_lines(count: int) -> list[str]:
    pairs = payloads.real_pairs()
    return [f"{pairs[index % len(pairs)][index % 2]} {index}" for index in range(count)]


def pairwise_table(rounds: int) -> None:
    import fastchrf

    print("\n7. pairwise (c6 w0): every hypothesis against every reference, against fastChrF and sacreBLEU\n")
    header = (f"{'data':<16}{'size':>11}{'chrf_core':>12}{'fastChrF':>11}{'speed-up':>10}{'sacreBLEU':>13}"
              f"{'speed-up':>10}")
    print(header + "\n" + "-" * len(header))
    metric = CHRF()
    for kind, make in (("real MT lines", real_lines), ("MBR candidates", mbr_candidates)):
        for size in (256, 1024):
            texts = make(2 * size)
            hypotheses, references = texts[:size], texts[size:] if kind == "real MT lines" else texts[:size]
            functions = with_base({
                "ours": lambda h=hypotheses, r=references: chrf_core.CHRF().pairwise(h, r),
                "fastchrf": lambda h=hypotheses, r=references: fastchrf.pairwise_chrf([h], [r]),
            })
            best = best_of(functions, rounds if size == 256 else max(1, rounds // 3), 1)
            ours, theirs = chrf_core.CHRF().pairwise(hypotheses, references), fastchrf.pairwise_chrf([hypotheses],
                                                                                             [references])[0]
            difference = max(abs(ours[i, j] - theirs[i][j]) for i in range(size) for j in range(size))
            assert difference <= 1e-9, f"pairwise and fastChrF differ by {difference}"
            rows = 32  # sacreBLEU: one sentence_score per pair; a sample of rows, scaled to the whole matrix
            started = time.perf_counter()
            for hypothesis in hypotheses[:rows]:
                for reference in references:
                    metric.sentence_score(hypothesis, [reference])
            sacrebleu_time = (time.perf_counter() - started) * size / rows
            print(f"{kind:<16}{f'{size} x {size}':>11}{best['ours']:>10.3f} s{best['fastchrf']:>9.2f} s"
                  f"{best['fastchrf'] / best['ours']:>9.1f}x{sacrebleu_time:>10.1f} s *"
                  f"{sacrebleu_time / best['ours']:>8.0f}x{versus(best, 'ours')}")
    print("  (agreement with fastChrF: every score within 1e-9; * sacreBLEU timed on 32 rows and scaled)")


def mbr_table(rounds: int) -> None:
    """MBR decoding in fastChrF's own set-up: n sampled translations of a source as both hypotheses and pseudo-
    references, for a batch of sources in one call; pairs per second per core (for aggregate, the n x n pairs it
    stands for), every library on every core."""
    import fastchrf

    cores = chrf_core.mbr.available_cores()
    print(f"\n8. MBR decoding (fastChrF's set-up): n samples per source, a batch of sources per call, {cores} cores;"
          "\n   time per call, and pairs per second per core\n")
    header = (f"{'method':<10}{'n':>6}{'batch':>7}{'chrF':>11}{'fastChrF':>11}{'speed-up':>10}{'pairs/s/core':>14}"
              f"{'chrF++':>11}")
    print(header + "\n" + "-" * len(header))
    shapes = [(n, batch) for batch in (1, 32) for n in (4, 16, 64, 256, 1024)] + [(32, 64)]
    for method in ("pairwise", "aggregate"):
        for n, batch in shapes:
            pairs = n * n * batch
            if (method == "pairwise" and pairs > 256 * 256 * 32) or (method == "aggregate" and n * batch > 2**15):
                continue
            sets = [mbr_candidates(n, source) for source in range(batch)]
            ours, ours_plus = getattr(chrf_core.CHRF(), f"{method}_batch"), getattr(
                chrf_core.CHRF(word_order=2), f"{method}_batch")
            theirs = getattr(fastchrf, f"{method}_chrf")
            functions = {"ours": lambda o=ours, s=sets: o(s, s), "fastchrf": lambda t=theirs, s=sets: t(s, s),
                         "plus": lambda o=ours_plus, s=sets: o(s, s)}
            functions = {**functions, **{name: function for name, function in with_base(
                {"ours": functions["ours"], "plus": functions["plus"]}).items() if name.endswith(f" {BASE}")}}
            fewer = rounds if pairs <= 2**16 else max(1, rounds // 3) if pairs <= 2**20 else 1
            best = best_of(functions, fewer, 1)
            difference = max(float(abs(mine - numpy.array(other)).max())
                             for mine, other in zip(ours(sets, sets), theirs(sets, sets)))
            assert difference <= 1e-9, f"{method} and fastChrF differ by {difference}"
            print(f"{method:<10}{n:>6}{batch:>7}{best['ours'] * 1000:>9.2f}ms{best['fastchrf'] * 1000:>9.1f}ms"
                  f"{best['fastchrf'] / best['ours']:>9.1f}x{pairs / best['ours'] / cores:>14.3g}"
                  f"{best['plus'] * 1000:>9.2f}ms{versus(best, 'ours')}{versus(best, 'plus')}")
    print("  (agreement with fastChrF: every score within 1e-9; fastChrF cannot count words, so chrF++ is ours alone)")
    weighted_rows(rounds)
    threads_table(rounds, cores)


def weighted_rows(rounds: int) -> None:
    """aggregate 1024 with mbrs' softmax weights (of log-probabilities drawn from N(-40, sd)) against the same call
    unweighted, rounds interleaved: 6 sources x sd 2, 5, 10, and one share below 2^-400 (issue 67)."""
    import numpy

    metric = chrf_core.CHRF()
    print("\n   aggregate 1024 with softmax weights, against the same call unweighted (best of the same rounds):\n")
    print(f"{'call':<34}{'weighted':>11}{'unweighted':>12}{'ratio':>8}")
    worst = 0.0
    for source in range(6):
        samples = mbr_candidates(1024, source)
        calls = {"plain": lambda s=samples: metric.aggregate(s, s)}
        for sd in (2, 5, 10):
            lprobs = numpy.random.default_rng(10 * source + sd).normal(-40, sd, len(samples))
            weights = numpy.exp(lprobs - lprobs.max())
            calls[str(sd)] = lambda s=samples, w=weights: metric.aggregate(s, s, weights=w)
        if source == 0:
            lprobs = numpy.random.default_rng(5).normal(-20, 6, len(samples))
            lprobs[7] = lprobs.max() - 300  # one share below 2^-400
            tiny = numpy.exp(lprobs - lprobs.max())
            calls["tiny"] = lambda s=samples, w=tiny: metric.aggregate(s, s, weights=w)
        best = best_of(calls, max(5, rounds), 1)
        for name in calls:
            if name == "plain":
                continue
            ratio = best[name] / best["plain"]
            worst = max(worst, ratio)
            label = f"source {source}, " + ("a share below 2^-400" if name == "tiny" else f"sd {name}")
            print(f"{label:<34}{best[name] * 1000:>9.1f}ms{best['plain'] * 1000:>10.1f}ms{ratio:>7.2f}x")
    print(f"  (the worst weighted call: {worst:.2f}x the unweighted one)\n")
    mbrs_python = ROOT / ".venv-mbrs" / "bin" / "python"
    if not mbrs_python.exists():
        print("   (no .venv-mbrs for mbrs' own decoder with reference_lprobs: make setup-mbrs)")
        return
    script, layer = ROOT / "bench" / "mbrs_weighted.py", ROOT / "layers" / "chrf_core"
    ran = subprocess.run([str(mbrs_python), str(script), str(layer)], capture_output=True, text=True, timeout=1800)
    print(ran.stdout.rstrip() if ran.returncode == 0 else f"   (mbrs_weighted.py failed: {ran.stderr[-500:]})")


def threads_table(rounds: int, cores: int) -> None:
    """The MBR calls on 1, 2 and every core, timed in the same rounds."""
    print("\n   scaling with threads (chrF, best of the same rounds):\n")
    counts = sorted({1, 2, cores})
    print(f"{'call':<30}" + "".join(f"{f'{k} thread' + ('s' if k > 1 else ''):>13}" for k in counts))
    big, sets = mbr_candidates(1024), [mbr_candidates(32, source) for source in range(64)]
    tiny = [mbr_candidates(2, source)[:2] for source in range(4)] * 25_000  # 10^5 sets of 2
    metric = chrf_core.CHRF()
    lprobs = numpy.random.default_rng(5).normal(-20, 6, len(big))
    lprobs[7] = lprobs.max() - 300  # mbrs' softmax weights with one share below 2^-400
    weights = numpy.exp(lprobs - lprobs.max())
    calls = (("pairwise 1024 x 1024", lambda k: metric.pairwise(big, big, threads=k), max(1, rounds // 2)),
             ("aggregate 1024", lambda k: metric.aggregate(big, big, threads=k), 3 * rounds),
             ("aggregate 1024, a tiny weight", lambda k: metric.aggregate(big, big, threads=k, weights=weights),
              3 * rounds),
             ("pairwise_batch 64 sets of 32", lambda k: metric.pairwise_batch(sets, sets, threads=k), rounds),
             ("aggregate_batch 64 sets of 32", lambda k: metric.aggregate_batch(sets, sets, threads=k), 3 * rounds),
             ("pairwise_batch 10^5 sets of 2", lambda k: metric.pairwise_batch(tiny, tiny, threads=k),
              max(1, rounds // 2)))
    for name, call, repeats in calls:  # the calls of a few milliseconds repeated more: a best of few is noise here
        best = best_of(with_base({str(k): lambda k=k, call=call: call(k) for k in counts}), repeats, 1)
        print(f"{name:<30}" + "".join(f"{best[str(k)] * 1000:>11.1f}ms" for k in counts)
              + "".join(versus(best, str(k)) for k in counts))


ENGINES_PYTHON = ROOT / ".venv-engines" / "bin" / "python"
ENGINES = ("arrow", "dask", "torchmetrics", "ray", "spark")
GROUP_ENGINES = ("loop", "arrow", "dask", "ray", "spark")
PARQUET_ENGINES = ("arrow", "dask", "ray", "spark")


def engine_run(engine: str, hyp: pathlib.Path, ref: pathlib.Path, timeout: float,
               *mode: str) -> tuple[float, float, dict[str, Any]] | None:
    """One run of bench/engines.py in .venv-engines: the command's wall seconds, its peak RSS and what it printed."""
    with tempfile.NamedTemporaryFile("r") as output:
        argv = [str(ENGINES_PYTHON), str(ROOT / "bench" / "engines.py"), engine, str(hyp), str(ref), "8", *mode]
        timed = measure(["/bin/sh", "-c", '"$@" > "$0"', output.name, *argv], timeout)
        return None if not timed else (timed[0], timed[1], json.loads(output.read()))


def engines_table(segments: int, rounds: int, timeout: float) -> None:
    """Each engine's corpus score of the same files as one process's `score`, in interleaved rounds; scores per
    group of a WMT-shaped table against a loop of corpus_score per group; a Parquet file read by each engine, the
    reading and the scoring timed apart (table 9)."""
    print(f"\n9. Beyond one machine: chrF++ corpus score of {segments:,} real lines on each engine ({os.cpu_count()} "
          f"cores here) against one process's `score`, best of {rounds} interleaved rounds\n")
    if not ENGINES_PYTHON.exists():
        print("  (no .venv-engines: make setup-engines)")
        return
    header = (f"{'engine':<14}{'command':>10}{'start-up':>10}{'scoring':>10}{'vs score':>10}{'driver RSS':>12}"
              f"{'parts':>7}  statistics of one part")
    print(header + "\n" + "-" * len(header))
    best: dict[str, list[float]] = {}
    details: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        hyp, ref = corpus_files(pathlib.Path(folder), segments)
        expected = json.loads(subprocess.run([str(BIN / "chrf-components"), "score", str(hyp), str(ref),
                                              "--word-order", "2", "--json"], capture_output=True, text=True,
                                             check=True).stdout)["score"]
        for _ in range(rounds):
            timed = measure([str(BIN / "chrf-components"), "score", str(hyp), str(ref), "--word-order", "2"], timeout)
            if timed:
                best["score"] = min(best.get("score", [math.inf, 0]), [timed[0], timed[1]])
            for engine in ENGINES:
                run = engine_run(engine, hyp, ref, timeout)
                if not run:
                    continue
                if run[2]["score"] != expected:
                    raise RuntimeError(f"{engine}: score {run[2]['score']}, one process {expected}")
                if run[0] < best.get(engine, [math.inf])[0]:
                    best[engine], details[engine] = [run[0], run[1]], run[2]
    score_seconds = best["score"][0]
    print(f"{'score (1 core)':<14}{score_seconds:>9.1f}s{'':>10}{score_seconds:>9.1f}s{'1.00x':>10}"
          f"{best['score'][1]:>9.0f} MB{1:>7}")
    for engine in ENGINES:
        if engine not in details:
            print(f"{engine:<14}{'timed out':>10}")
            continue
        result = details[engine]
        print(f"{engine:<14}{best[engine][0]:>9.1f}s{result['start']:>9.1f}s{result['score_seconds']:>9.1f}s"
              f"{best[engine][0] / score_seconds:>9.2f}x{best[engine][1]:>9.0f} MB{result['partitions']:>7}  "
              f"{result['statistics_arrow_bytes']:,} B Arrow IPC, {result['statistics_json_bytes']} B JSON")
    print("  (command: the whole process, interpreter and engine start-up included; vs score: command / score's;\n"
          "   every engine's report equals score --json's; RSS: the driver's (Ray's and Spark's workers are other "
          "processes);\n   arrow: chrf_core.engines.arrow in one process; torchmetrics: update() per part in one "
          "process)")
    groups_rows(segments * 6 // 10, rounds, timeout)
    parquet_rows(segments // 5, rounds, timeout)


def groups_rows(segments: int, rounds: int, timeout: float) -> None:
    """Scores per group: a WMT-shaped table (300 systems, each the same segments; rows in system order, 8 partitions
    of skewed sizes), one corpus_score(..., by="system") per engine against a loop of corpus_score per group."""
    systems = 300
    print(f"\n   Scores per group, one pass: {systems} systems x {segments // systems:,} segments ({segments:,} rows, "
          f"8 partitions, half the rows in the first), by=\"system\",\n   against a loop of corpus_score per group "
          f"in one process (loop); best of {rounds} interleaved rounds\n")
    header = f"{'engine':<14}{'command':>10}{'start-up':>10}{'scoring':>10}{'vs loop':>10}{'driver RSS':>12}"
    print(header + "\n" + "-" * len(header))
    best: dict[str, tuple[float, float, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        hyp, ref = corpus_files(pathlib.Path(folder), segments)
        for _ in range(rounds):
            for engine in GROUP_ENGINES:
                run = engine_run(engine, hyp, ref, timeout, "groups", str(systems))
                if not run:
                    continue
                if "loop" in best and (run[2]["score"], run[2]["groups"]) != (best["loop"][2]["score"], systems):
                    raise RuntimeError(f"{engine}: {run[2]['groups']} groups, scores summing to {run[2]['score']}")
                if engine not in best or run[0] < best[engine][0]:
                    best[engine] = run
    for engine in GROUP_ENGINES:
        if engine not in best or "loop" not in best:
            print(f"{engine:<14}{'timed out':>10}")
            continue
        seconds, memory, result = best[engine]
        print(f"{engine:<14}{seconds:>9.1f}s{result['start']:>9.1f}s{result['score_seconds']:>9.1f}s"
              f"{result['score_seconds'] / best['loop'][2]['score_seconds']:>9.2f}x{memory:>9.0f} MB")
    print("  (vs loop: scoring seconds against the loop's; every engine's 300 reports equal the loop's)")


def parquet_rows(segments: int, rounds: int, timeout: float) -> None:
    """A Parquet file (8 row groups) read by each engine's own reader, then scored: where the time goes."""
    print(f"\n   A Parquet file of {segments:,} rows read by each engine's own reader, then corpus_score: start-up, "
          f"reading (the data\n   materialized) and scoring timed apart; best of {rounds} interleaved rounds\n")
    header = f"{'engine':<14}{'command':>10}{'start-up':>10}{'reading':>10}{'scoring':>10}{'parts':>7}"
    print(header + "\n" + "-" * len(header))
    best: dict[str, tuple[float, float, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        hyp, ref = corpus_files(pathlib.Path(folder), segments)
        for _ in range(rounds):
            for engine in PARQUET_ENGINES:
                run = engine_run(engine, hyp, ref, timeout, "parquet", folder)
                if run and (engine not in best or run[0] < best[engine][0]):
                    best[engine] = run
    for engine in PARQUET_ENGINES:
        if engine not in best:
            print(f"{engine:<14}{'timed out':>10}")
            continue
        seconds, _, result = best[engine]
        reading = result["phases"]["read"]
        print(f"{engine:<14}{seconds:>9.1f}s{result['start']:>9.1f}s{reading:>9.1f}s"
              f"{result['score_seconds'] - reading:>9.1f}s{result['partitions']:>7}")
    print("  (start-up: the engine's, and for all of them writing the file; parts: the blocks or partitions the "
          "reader made)")


def import_times() -> None:
    code = "import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    path = f"{ROOT / 'functions' / 'chrf_components'}:{ROOT / 'layers' / 'chrf_core'}"
    print("\n5. Cold start: import time in a fresh interpreter (best of 5)\n")
    for module, what in (("chrf_core", "the layer"), ("app", "the API handler, Powertools Logger and Metrics")):
        runs = [float(subprocess.check_output([sys.executable, "-c", code.format(module=module)],
                                              env={"PYTHONPATH": path}, text=True)) for _ in range(5)]
        print(f"  import {module:<10} {min(runs):6.1f} ms  ({what})")


def local_pipeline_table(sizes: list[int], rounds: int, timeout: float) -> None:
    """`pipeline run --local` against `score --json` on the same real lines, each size's rounds interleaved: wall time
    and the peak of the RSS summed over the command and all its processes (serve's functions' workers included)."""
    print(f"\n10. The corpus pipeline on this machine: pipeline run --local against score --json, real lines (chrF), "
          f"best of {rounds}; peak: RSS summed over the command and all its processes\n")
    header = f"{'segments':>10}  {'command':<22}{'time':>10}{'peak':>11}{'time / score':>14}{'peak / first':>14}"
    print(header + "\n" + "-" * len(header))
    first: dict[str, float] = {}
    for segments in sizes:
        with tempfile.TemporaryDirectory() as folder:
            hyp, ref = corpus_files(pathlib.Path(folder), segments)
            commands = {"score --json": [str(BIN / "chrf-components"), "score", "--json", str(hyp), str(ref)],
                        "pipeline run --local": [str(BIN / "chrf-components"), "pipeline", "run", str(hyp), str(ref),
                                                 "--local", "--json", "--template", str(ROOT / "template.yaml")]}
            best: dict[str, tuple[float, float]] = {}
            for _ in range(rounds):
                for name, argv in commands.items():
                    found = measure_tree(argv, timeout)
                    if found and (name not in best or found[0] < best[name][0]):
                        best[name] = found
        for name in commands:
            if name not in best:
                print(f"{segments:>10}  {name:<22}{'timed out':>10}")
                continue
            seconds, memory = best[name]
            first.setdefault(name, memory)
            ratio = f"{seconds / best['score --json'][0]:13.1f}x" if "score --json" in best else ""
            print(f"{segments:>10}  {name:<22}{seconds:9.1f}s{memory:8.0f} MB{ratio:>14}"
                  f"{memory / first[name]:13.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, smaller command-line corpora")
    parser.add_argument("--tables", default="1,2,3,4,5,6,7,8,9,10", help="which tables, by number (default: all)")
    parser.add_argument("--baseline", metavar="SO", help="another build of _kernel.abi3.so, timed beside this one")
    args = parser.parse_args()
    if args.baseline:
        load_baseline(args.baseline)
    tables = {int(number) for number in args.tables.split(",")}
    rounds = 3 if args.quick else 9
    kernels = ", ".join(sorted(chrf_core.kernel.KERNELS))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; kernels: {kernels};"
          f" best of {rounds} interleaved rounds\n")
    if "native" not in chrf_core.kernel.KERNELS:
        print(f"(native kernel not loaded: {chrf_core.kernel.KERNEL_ERROR}; run make setup)\n")
    invoke = quiet_handler()
    sizes = [10_000, 100_000] if args.quick else [100_000, 1_000_000]
    tables_in_order = [
        lambda: handler_table(invoke, rounds),
        lambda: worst_case_table(invoke, rounds),
        lambda: command_line_table(sizes, sacrebleu_limit=100_000, timeout=1800),
        lambda: compare_timing(3 if args.quick else 5),
        import_times,
        lambda: segments_table(sizes, timeout=1800),
        lambda: pairwise_table(3 if args.quick else 6),
        lambda: mbr_table(3 if args.quick else 6),
        lambda: engines_table(100_000 if args.quick else 1_000_000, 2 if args.quick else 3, timeout=1800),
        lambda: local_pipeline_table([100_000, 500_000] if args.quick else [1_000_000, 5_000_000],
                                      1 if args.quick else 2, timeout=3600),
    ]
    for number, table in enumerate(tables_in_order, 1):
        if number in tables:
            table()


if __name__ == "__main__":
    main()
