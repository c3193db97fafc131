"""`make bench`: the layer against sacreBLEU on the same near-limit payloads, in one run, side by side.

Payloads: 256 segments of real MT output and references (English, Czech, Russian, Chinese, from the chrF++
tool's examples), each side trimmed to 128 UTF-8 bytes so a request holds just under 65536 bytes of text.
Figures are the best of several repeats (the least disturbed by other load on a shared machine).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import timeit

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "popovic"
sys.path[:0] = [str(ROOT / "layers" / "chrf_core")]

import chrf_core  # noqa: E402
from sacrebleu.metrics import CHRF  # noqa: E402

CONFIGURATIONS = [(6, 0), (6, 2), (10, 4)]


def trim(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")[:limit]
    return encoded.decode("utf-8", "ignore")


def payload(segments: int = 256, side_bytes: int = 128) -> tuple[list[str], list[str]]:
    pairs = []
    for language in ("en", "cs", "ru", "zh"):
        hyps = (DATA / f"example.hyp.{language}").read_text(encoding="utf-8").splitlines()
        refs = (DATA / f"example.ref.{language}").read_text(encoding="utf-8").splitlines()
        pairs += zip(hyps, refs)
    chosen = [pairs[(i * 7) % len(pairs)] for i in range(segments)]
    return [trim(h, side_bytes) for h, _ in chosen], [trim(r, side_bytes) for _, r in chosen]


def best_seconds_side_by_side(first, second, rounds: int = 15, number: int = 3) -> tuple[float, float]:
    """Best time per call of each function, alternating them so both see the same machine load."""
    first_times, second_times = [], []
    for _ in range(rounds):
        first_times.append(timeit.timeit(first, number=number) / number)
        second_times.append(timeit.timeit(second, number=number) / number)
    return min(first_times), min(second_times)


def import_milliseconds(module: str) -> float:
    """Best of 5 fresh interpreters: the time `import module` takes, with the layer and function as Lambda lays them."""
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    path = f"{ROOT / 'functions' / 'chrf_components'}:{ROOT / 'layers' / 'chrf_core'}"
    runs = [
        float(subprocess.check_output([sys.executable, "-c", code], env={"PYTHONPATH": path}, text=True))
        for _ in range(5)
    ]
    return min(runs)


def main() -> None:
    hypotheses, references = payload()
    text_bytes = sum(len(t.encode("utf-8")) for t in hypotheses + references)
    print(f"payload: {len(hypotheses)} segments, {text_bytes} UTF-8 bytes of text (en, cs, ru, zh)")
    print(f"python {sys.version.split()[0]}; best of 15 alternating rounds x 3 calls each\n")
    print(f"{'config':<12}{'chrf_core ms':>14}{'sacreBLEU ms':>14}{'speed-up':>10}  score (both)")
    for char_order, word_order in CONFIGURATIONS:
        request = {"hypotheses": hypotheses, "references": references,
                   "char_order": char_order, "word_order": word_order}
        metric = CHRF(char_order=char_order, word_order=word_order)
        ours, theirs = best_seconds_side_by_side(
            lambda request=request: chrf_core.score(request),
            lambda metric=metric: metric.corpus_score(hypotheses, [references]),
        )
        our_score = chrf_core.score(request)["score"]
        their_score = metric.corpus_score(hypotheses, [references]).score
        label = f"c{char_order} w{word_order}"
        print(f"{label:<12}{ours * 1000:>14.2f}{theirs * 1000:>14.2f}{theirs / ours:>9.2f}x  "
              f"{our_score} / {their_score:.6f}")
    print(f"\nimport chrf_core (the layer):   {import_milliseconds('chrf_core'):6.1f} ms (best of 5, fresh)")
    print(f"import app (handler + layer):  {import_milliseconds('app'):6.1f} ms (Powertools Logger and Metrics)")


if __name__ == "__main__":
    main()
