"""The mbrs path of issue 67 (make bench, table 8, in mbrs' own environment, .venv-mbrs): mbrs' aggregate_mbr
decoder with the chrf_core metric (chrF++), 1024 samples of one source, with ``reference_lprobs`` (model-based
aggregation: the softmax of log-probabilities drawn from N(-40, sd)) against the same decode without, rounds
interleaved, best of 7; 6 sources x sd 2, 5, 10, as the weighted rows of the main bench.
Usage: .venv-mbrs/bin/python bench/mbrs_weighted.py LAYER_DIR
"""

import random
import sys
import time
import warnings
from pathlib import Path

sys.path[:0] = [sys.argv[1], str(Path(__file__).resolve().parents[1] / "tests")]
warnings.filterwarnings("ignore")  # mbrs' dependencies warn about pkg_resources on import

import chrf_core  # noqa: E402
import chrf_core.engines.mbrs  # noqa: E402  (registers the metric)
import mbrs.decoders  # noqa: E402
import mbrs.metrics  # noqa: E402
import numpy  # noqa: E402
import torch  # noqa: E402
from payloads import edited, real_pairs  # noqa: E402

assert chrf_core.KERNEL == "native", chrf_core.kernel.KERNEL_ERROR
pairs = real_pairs()
vocabulary = sorted({word for pair in pairs for text in pair for word in text.split()})
metric_class = mbrs.metrics.get_metric("chrf_core")
decoder_class = mbrs.decoders.get_decoder("aggregate_mbr")
decoder = decoder_class(decoder_class.Config(), metric_class(metric_class.Config(word_order=2)))
print(f"{'mbrs aggregate_mbr, chrF++':<34}{'weighted':>11}{'unweighted':>12}{'ratio':>8}")
ratios = []
for source in range(6):
    rng = random.Random(6 + source)  # the main bench's candidates (benchmark.mbr_candidates)
    samples = [edited(pairs[source % len(pairs)][1], rng, vocabulary) for _ in range(1024)]
    for sd in (2, 5, 10):
        lprobs = torch.tensor(numpy.random.default_rng(10 * source + sd).normal(-40, sd, len(samples)))
        times: dict[str, list[float]] = {"weighted": [], "plain": []}
        for _ in range(7):
            for name in times:
                started = time.perf_counter()
                decoder.decode(samples, samples, reference_lprobs=lprobs if name == "weighted" else None)
                times[name].append(time.perf_counter() - started)
        weighted, plain = min(times["weighted"]), min(times["plain"])
        ratios.append(weighted / plain)
        print(f"{f'source {source}, sd {sd}':<34}{weighted * 1000:>9.1f}ms{plain * 1000:>10.1f}ms{ratios[-1]:>7.2f}x")
print(f"  (mbrs' decode with reference_lprobs: {min(ratios):.2f}-{max(ratios):.2f}x the decode without)")
