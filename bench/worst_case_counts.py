"""The worst-case table's deterministic column: each adversarial request through the handler, counted by valgrind.

Cost = instructions + 10 x L1 data misses + 40 x misses of a 1 MB last level (about an L2), per request, against
the same count for a typical near-limit real-MT request at the same settings. Unlike times, counts do not depend
on the load of a shared machine. Needs valgrind; takes about 8 minutes per kernel.

Usage: python bench/worst_case_counts.py native|python [REPEATS]
(internally, `--one KERNEL NAME N` runs one request N times under the counter).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))  # the suite's payloads
import payloads

TYPICAL = "typical"


def request(name: str, settings: tuple[int, int]) -> dict:
    if name == TYPICAL:
        hypotheses, references = payloads.near_limit("real")
        return {"hypotheses": hypotheses, "references": references, "char_order": settings[0],
                "word_order": settings[1]}
    return payloads.adversarial()[name]


def run_one(kernel: str, name: str, settings: tuple[int, int], repeats: int) -> None:
    import benchmark
    from chrf_core import kernel as kernels

    invoke = benchmark.quiet_handler()
    body = request(name, settings)
    kernels.KERNEL = kernel
    for _ in range(repeats):
        assert "error" not in invoke(body)


def counted(kernel: str, name: str, settings: tuple[int, int], repeats: int) -> float:
    def cost(times: int) -> int:
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--LL=1048576,16,64",
                   "--cachegrind-out-file=/dev/null", sys.executable, __file__, "--one", kernel, name,
                   f"{settings[0]},{settings[1]}", str(times)]
        # One hash seed for every run: otherwise the import's count moves with the seed by more than a native
        # request costs, and the difference below would measure that.
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        report = subprocess.run(command, capture_output=True, text=True, check=True, env=environment).stderr

        def total(label: str) -> int:
            return int(re.search(label + r"\s*:\s*([\d,]+)", report).group(1).replace(",", ""))  # type: ignore[union-attr]

        return total(r"I\s+refs") + 10 * total("D1  misses") + 40 * total("LL misses")

    return (cost(repeats + 1) - cost(1)) / repeats  # the import and the first call (warming) subtracted


def main() -> None:
    if sys.argv[1] == "--one":
        order, words = sys.argv[4].split(",")
        run_one(sys.argv[2], sys.argv[3], (int(order), int(words)), int(sys.argv[5]))
        return
    kernel, repeats = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2
    settings = {name: (body.get("char_order", 6), body.get("word_order", 0))
                for name, body in payloads.adversarial().items()}
    with ThreadPoolExecutor(2) as pool:
        typical = {s: pool.submit(counted, kernel, TYPICAL, s, repeats) for s in set(settings.values())}
        worst = {name: pool.submit(counted, kernel, name, s, repeats) for name, s in settings.items()}
        print(f"{'request':<78}{kernel + ' (counted)':>18}{'vs typ.':>9}")
        for name, s in settings.items():
            value = worst[name].result()
            print(f"{name:<78}{value / 1e6:>17.1f}M{value / typical[s].result():>8.1f}x", flush=True)


if __name__ == "__main__":
    main()
