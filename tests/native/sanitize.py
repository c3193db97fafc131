"""`make sanitize`: the native kernel built with AddressSanitizer and UndefinedBehaviorSanitizer, driven through
thousands of generated requests (checked against the naive implementation), the adversarial shapes, several
systems against one reference, a segment large enough to release the kept buffers, and an error path. Not part of
`make test` (it needs its own build and LD_PRELOAD); run it after changing native/.
Usage: python tests/native/sanitize.py LAYER_DIR
"""

import contextlib
import pathlib
import random
import sys
from fractions import Fraction

sys.path[:0] = [sys.argv[1], str(pathlib.Path(__file__).resolve().parents[1])]

import chrf_core  # noqa: E402
import numpy  # noqa: E402
import payloads  # noqa: E402
from naive_chrf import naive_counts  # noqa: E402

assert chrf_core.KERNEL == "native", chrf_core.kernel.KERNEL_ERROR
raw_count = chrf_core.kernel.KERNELS["native"].raw_count  # count(systems, references, ...): one system or several


def native(hypotheses, references, *counting):
    return raw_count([hypotheses], references, *counting)


def systems(hypothesis_sets, references, *counting):
    return raw_count(hypothesis_sets, references, *counting, True)


rng = random.Random(5)
alphabet = [*"ab c.,(", "é", "😀", "中", "\u3000", "\u2028", "\U0010ffff", "\x00"]
for _ in range(4000):
    size = rng.randint(1, 5)
    hypotheses = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(size)]
    references = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(size)]
    char_order = rng.randint(0, 10)
    word_order = rng.randint(0 if char_order else 1, 4)
    whitespace = rng.random() < 0.3
    got = [list(triple) for triple in native(hypotheses, references, char_order, word_order, whitespace, False)]
    assert got == naive_counts(hypotheses, references, char_order, word_order, False, whitespace)
    native(hypotheses, references, char_order, word_order, whitespace, True)
for request in payloads.adversarial().values():
    native(request["hypotheses"], request["references"], request.get("char_order", 6), request.get("word_order", 0),
           False, False)
for kind in payloads.KINDS:
    native(*payloads.near_limit(kind), 10, 4, False, True)
big = "ab" * 400000
native([big], [big[1:] + "c"], 10, 4, False, False)
many = "".join(chr(0x10000 + k) for k in range(600_000))  # more distinct units than the histograms hold
native([many[::3]], [many], 6, 0, False, False)
native([" ".join(f"w{k}" for k in range(600_000))], ["w1 w2"], 0, 3, False, False)
with contextlib.suppress(TypeError):
    native(["a", 3], ["a", "b"], 2, 0, False, False)
for _ in range(2000):  # several systems against one reference: each system's rows as count gives them
    size = rng.randint(1, 4)
    references = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(size)]
    sets = [[rng.choice([reference, reference[rng.randint(0, len(reference)):], "".join(
        rng.choice(alphabet) for _ in range(rng.randint(0, 40)))]) for reference in references]
        for _ in range(rng.randint(1, 4))]
    char_order = rng.randint(0, 10)
    word_order = rng.randint(0 if char_order else 1, 4)
    whitespace = rng.random() < 0.3
    got = systems(sets, references, char_order, word_order, whitespace)
    assert got == b"".join(native(h, references, char_order, word_order, whitespace, True) for h in sets)
for request in payloads.adversarial().values():
    systems([request["hypotheses"], request["references"]], request["references"], request.get("char_order", 6),
            request.get("word_order", 0), False)
systems([[big[1:] + "c"], [big[::-1]], ["ab"]], [big], 10, 4, False)
systems([[many[::3]], [many[::-1]]], [many], 6, 0, False)
with contextlib.suppress(TypeError):
    systems([["a", "b"], ["a", 3]], ["a", "b"], 2, 0, False)
with contextlib.suppress(ValueError):
    systems([["a", "b"], ["a"]], ["a", "b"], 2, 0, False)
for _ in range(300):  # pairwise: every shape of side, both averagings, the exact fallback
    sides = [["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(rng.randint(1, 6))]
             for _ in range(2)]
    if rng.random() < 0.3:  # the samples as their own references: pairwise walks the triangle of pairs
        sides[1] = sides[0]
    char_order = rng.randint(0, 10)
    word_order = rng.randint(0 if char_order else 1, 4)
    chosen = {"char_order": char_order, "word_order": word_order, "beta": rng.randint(1, 16),
              "include_whitespace": rng.random() < 0.3, "averaging": rng.choice(chrf_core.contract.AVERAGINGS)}
    metric = chrf_core.CHRF(**chosen)
    threads = rng.randint(1, 4)
    matrix = metric.pairwise(*sides, threads=threads)
    for i, j in [(0, 0), (len(sides[0]) - 1, len(sides[1]) - 1)]:
        assert matrix[i, j] == metric.sentence_score(sides[0][i], [sides[1][j]]).score
    aggregated = metric.aggregate(*sides, threads=threads)
    if len(sides[1]) == 1:
        assert aggregated.tolist() == matrix[:, 0].tolist()
    assert [len(scores) for scores in metric.aggregate_batch([sides[0]] * 3, [sides[1]] * 3, threads=threads)] == [
        len(sides[0])] * 3
    weights = [rng.choice([0, 1, rng.random(), 1e-30, 2.5e10, 1e-300, Fraction(1, 2**1100)]) for _ in sides[1]]
    if any(weights):
        weighted = metric.aggregate(*sides, threads=threads, weights=weights)
        assert weighted.tolist() == [float(value) for value in metric.aggregate(*sides, weights=weights, exact=True)]
long_texts = [" ".join(payloads.real_pairs()[k % 40][k % 2].split()[: 3 + k % 17]) + f" {k}" for k in range(3000)]
for threads in (1, 2, 3):  # a larger corpus, with memory never written filled (ASAN max_malloc_fill_size)
    metric = chrf_core.CHRF(word_order=2)
    first = metric.aggregate(long_texts, long_texts, threads=threads)
    assert first.tolist() == metric.aggregate(long_texts, long_texts, threads=1).tolist()
    metric.pairwise(long_texts[:50], long_texts, threads=threads)
    metric.aggregate(long_texts, long_texts[::-1], threads=threads, weights=[k % 3 for k in range(3000)])
    # the references the hypotheses: the same list (read once), an equal one (found equal), one text apart
    assert metric.aggregate(long_texts, list(long_texts), threads=threads).tolist() == first.tolist()
    metric.aggregate(long_texts, long_texts[:-1] + ["x"], threads=threads)
    metric.pairwise(long_texts[:50], long_texts[:50], threads=threads)
# every weighted score flagged (the loosest tolerance) and counted exactly by the kernel, with weights so wide that
# the flagged rows' accumulators take several groups (aggregate.c's EXACT_LIMBS)
loosest, chrf_core.kernel.WEIGHTED_TOLERANCE_BITS = chrf_core.kernel.WEIGHTED_TOLERANCE_BITS, 1
wide = [2**5000 + k * 2**4000 + 1 for k in range(300)]
for threads in (1, 3):
    metric = chrf_core.CHRF(word_order=2)
    scores = metric.aggregate(long_texts[:400], long_texts[:300], threads=threads, weights=wide)
    assert scores.tolist()[:40] == [float(value) for value in metric.aggregate(
        long_texts[:40], long_texts[:300], weights=wide, exact=True)]
chrf_core.kernel.WEIGHTED_TOLERANCE_BITS = loosest
single = [chr(0x4E00 + k) for k in range(3000)]  # more distinct one-character words than half the code points
chrf_core.CHRF(word_order=2).aggregate(single[:1500], single[1500:], threads=2)
native = chrf_core.kernel.NATIVE
native.batch(False, [[big, "ab"]], [[big[::-1]]], 6, 2, False, 2, True, 1, 3, [numpy.empty((2, 1))])
native.batch(True, [[big, "ab"]], [[big[::-1], "b"]], 6, 2, False, 2, True, 1, 3,
             [(numpy.empty(2), numpy.empty((2, 8, 3), dtype=numpy.int64), None)])
native.batch(True, [[big, "ab"]], [[big[::-1], "b"]], 6, 2, False, 2, True, 64, 3,
             [(numpy.empty(2), numpy.empty((2, 8, 3), dtype=numpy.int64), numpy.array([[0.75, 0.0], [0.25, 0.0]]))])
with contextlib.suppress(TypeError):
    native.batch(False, [["a"]], [["a", 3]], 2, 0, False, 2, 0, 80, 1, [numpy.empty((1, 2))])
with contextlib.suppress(ValueError):
    native.batch(False, [["a"]], [["a", "b"]], 2, 0, False, 2, 0, 80, 1, [numpy.empty((1, 3))])
with contextlib.suppress(ValueError):
    native.batch(True, [["a"]], [["a"]], 2, 0, False, 2, 0, 80, 1,
                 [(numpy.empty(1), numpy.empty((1, 2, 2), dtype=numpy.int64), None)])
for bad_weights in (numpy.array([[0.5, 0.0]]), numpy.array([[float("nan"), 0.0], [1.0, 0.0]]), b"123"):
    with contextlib.suppress(ValueError, TypeError):
        native.batch(True, [["a"]], [["a", "b"]], 2, 0, False, 2, 0, 64, 1,
                     [(numpy.empty(1), numpy.empty((1, 2, 3), dtype=numpy.int64), bad_weights)])
for bad_exact in (numpy.zeros(3, dtype=numpy.uint32), numpy.zeros(0, dtype=numpy.uint32), b"1234567"):
    with contextlib.suppress(ValueError, TypeError):
        native.batch(True, [["a"]], [["a", "b"]], 2, 0, False, 2, 0, 1, 1,
                     [(numpy.empty(1), numpy.empty((1, 2, 3), dtype=numpy.int64),
                       numpy.array([[0.5, 0.0], [0.5, 0.0]]), bad_exact)])
with contextlib.suppress(ValueError):
    native.batch(True, [["a"]], [["a", "b"]], 2, 0, False, 2, 0, 1, 1,
                 [(numpy.empty(1), numpy.empty((1, 2, 3), dtype=numpy.int64), None, numpy.ones(2, dtype=numpy.uint32))])
for bad_output in ([numpy.empty(1)], [(numpy.empty(1),)], [(numpy.empty(1), None, None)], [None]):
    with contextlib.suppress(ValueError, TypeError):
        native.batch(True, [["a"]], [["a"]], 2, 0, False, 2, 0, 64, 1, bad_output)


class Failing(list):
    """A sequence whose item `at` raises: every entry point lets go of what it read before it."""

    def __init__(self, texts, at):
        super().__init__(texts)
        self.at = at

    def __getitem__(self, index):
        if index == self.at:
            raise RuntimeError("a failing sequence")
        return list.__getitem__(self, index)


# buffers kept between calls (keep.c: under ASan a kept block is poisoned until taken, then filled as fresh memory
# is): calls of one shape, a larger one, a much smaller one, the references reversed, and none at all
kept = native.buffers()
for texts in (long_texts[:500], long_texts[:500], long_texts, long_texts[:30], long_texts[:500]):
    for aggregating in (False, True):
        rows = len(texts) if aggregating else min(40, len(texts))
        out = ((numpy.empty(rows), numpy.empty((rows, 8, 3), dtype=numpy.int64), None) if aggregating
               else numpy.empty((rows, len(texts))))
        native.batch(aggregating, [texts[:rows]], [texts[::-1]], 6, 2, False, 2, 0, 80, 2, [out], kept)
        expected = out[0].tolist() if aggregating else out.tolist()
        native.batch(aggregating, [texts[:rows]], [texts[::-1]], 6, 2, False, 2, 0, 80, 2, [out], None)
        assert (out[0].tolist() if aggregating else out.tolist()) == expected
assert native.buffers_held(kept)[0] > 0
with contextlib.suppress(ValueError):
    native.batch(False, [["a"]], [["a"]], 2, 0, False, 2, 0, 80, 1, [numpy.empty((1, 1))], "not buffers")
for at in range(4):
    texts = Failing(["ab c", "d", "e f", "g"], at)
    with contextlib.suppress(RuntimeError):
        native.batch(True, [long_texts[:300], texts], [long_texts[:300], ["z"] * 4], 3, 1, False, 2, 0, 80, 2,
                     [(numpy.empty(300), numpy.empty((300, 4, 3), dtype=numpy.int64), None),
                      (numpy.empty(4), numpy.empty((4, 4, 3), dtype=numpy.int64), None)], kept)
del kept
for at in range(4):
    texts = Failing(["ab c", "d", "e f", "g"], at)
    with contextlib.suppress(RuntimeError):
        raw_count([texts], ["ab", "c", "d", "e"], 3, 1, False, at % 2 == 0)
    with contextlib.suppress(RuntimeError):
        raw_count([["a"] * 4, texts], ["ab", "c", "d", "e"], 3, 1, False, True)
    for aggregating in (False, True):
        out = (numpy.empty(4), numpy.empty((4, 4, 3), dtype=numpy.int64), None) if aggregating else numpy.empty((4, 4))
        with contextlib.suppress(RuntimeError):
            native.batch(aggregating, [["x"] * 4, texts], [["y"] * 4, ["z"] * 4], 3, 1, False, 2, 0, 80, 2,
                         [out, out])
print("sanitized run: no errors")
