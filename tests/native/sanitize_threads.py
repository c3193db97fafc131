"""`make sanitize`, second part: the native kernel built with ThreadSanitizer, its MBR calls on several threads
(the wavefront that builds the corpus's ids, the threads that score rows), both kinds of n-grams, the references
the hypotheses or not, weighted or not. A data race ends the run with exit status 66.
Usage: python tests/native/sanitize_threads.py LAYER_DIR
"""

import pathlib
import sys

sys.path[:0] = [sys.argv[1], str(pathlib.Path(__file__).resolve().parents[1])]

import chrf_core  # noqa: E402
import payloads  # noqa: E402

assert chrf_core.KERNEL == "native", chrf_core.kernel.KERNEL_ERROR
texts = [" ".join(payloads.real_pairs()[k % 40][k % 2].split()[: 3 + k % 17]) + f" {k}" for k in range(3000)]
for threads in (2, 3):
    for word_order in (0, 2):
        metric = chrf_core.CHRF(word_order=word_order)
        alone = metric.aggregate(texts, texts, threads=threads)
        assert alone.tolist() == metric.aggregate(texts, list(texts), threads=1).tolist()
        metric.aggregate(texts, texts[::-1], threads=threads)
        metric.aggregate(texts, texts[::-1], threads=threads, weights=[k % 3 for k in range(3000)])
        metric.pairwise(texts[:40], texts, threads=threads)
        samples = texts[:300]
        assert metric.pairwise(samples, samples, threads=threads).tolist() == metric.pairwise(
            samples, samples + ["x"], threads=threads)[:, :-1].tolist()
        metric.aggregate_batch([texts[:500], texts[500:1000]], [texts[:500], texts[1000:1500]], threads=threads)
        small = [texts[k:k + 20] for k in range(0, 600, 20)]  # the batch's jobs on the pool, each set on one thread
        assert [m.tolist() for m in metric.pairwise_batch(small, small, threads=threads)] == [
            metric.pairwise(s, s, threads=1).tolist() for s in small]
        metric.pairwise_batch([texts[:200], texts[200:400]], [texts[:300]] * 2, threads=2 * threads)  # rows nested
print("thread-sanitized run: no errors")
