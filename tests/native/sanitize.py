"""`make sanitize`: the native kernel built with AddressSanitizer and UndefinedBehaviorSanitizer, driven through
thousands of generated requests (checked against the naive implementation), the adversarial shapes, a segment
large enough to release the kept buffers, and an error path. Not part of `make test` (it needs its own build and
LD_PRELOAD); run it after changing kernel.c. Usage: python tests/native/sanitize.py LAYER_DIR
"""

import contextlib
import pathlib
import random
import sys

sys.path[:0] = [sys.argv[1], str(pathlib.Path(__file__).resolve().parents[1])]

import chrf_core  # noqa: E402
import payloads  # noqa: E402
from naive_chrf import naive_counts  # noqa: E402

assert chrf_core.KERNEL == "native", chrf_core.KERNEL_ERROR
native = chrf_core.KERNELS["native"]
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
with contextlib.suppress(TypeError):
    native(["a", 3], ["a", "b"], 2, 0, False, False)
print("sanitized run: no errors")
