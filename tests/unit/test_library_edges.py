"""The Python API under what careless callers pass and what large inputs cost: a str where a list of segments
belongs, matrices too large for memory, texts past the kernels' one length limit, memory per code point, Ctrl-C
during a long count."""

import subprocess
import sys
import textwrap

import chrf_core
import pytest
from chrf_core import MAX_TEXT_LENGTH, InvalidInputError
from processes import ctrl_c_after
from support import ROOT, native_kernel_or_skip

PATHS = [str(ROOT / "layers" / "chrf_core"), str(ROOT / "tests")]


def run_python(script, *, native=True, timeout=300):
    """A script in a fresh interpreter with the layer on its path (its output, error output, return code)."""
    environment = {"PYTHONPATH": ":".join(PATHS), "CHRF_CORE_NATIVE": "1" if native else "0"}
    process = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                             env=environment, timeout=timeout)
    return process.stdout, process.stderr, process.returncode


CALLS = {
    "corpus_report": lambda h, r: chrf_core.CHRF().corpus_score(h, r),
    "corpus_counts": lambda h, r: chrf_core.CHRF().corpus_counts(h, r),
    "CHRF.corpus_score": lambda h, r: chrf_core.CHRF().corpus_score(h, r),
    "CHRF.segment_scores": lambda h, r: chrf_core.CHRF().segment_scores(h, r),
    "segment_scores": lambda h, r: chrf_core.CHRF().segment_scores(h, r, exact=True),
    "segment_reports": lambda h, r: chrf_core.CHRF().segment_reports(h, r),
    "pairwise": lambda h, r: chrf_core.CHRF().pairwise(h, r),
}


@pytest.mark.parametrize("call", CALLS)
def test_a_single_str_where_segments_belong_is_a_type_error_naming_the_argument(kernel, call):
    with pytest.raises(TypeError, match=r"^hypotheses: expected a sequence of segments"):
        CALLS[call]("abc", ["abd"])
    with pytest.raises(TypeError, match=r"^references: expected a sequence of segments"):
        CALLS[call](["abc"], "abd")
    assert chrf_core.CHRF().corpus_score(("abc",), iter(["abd"])).segment_count == 1  # any other iterable is fine


def test_a_text_past_the_length_limit_is_invalid_input_for_both_kernels(kernel):
    long = "a" * (MAX_TEXT_LENGTH + 1)
    with pytest.raises(InvalidInputError, match=rf"^references\[1\]: at most {MAX_TEXT_LENGTH} code points"):
        chrf_core.CHRF().corpus_score(["a", "b"], ["a", long])
    with pytest.raises(InvalidInputError, match=rf"^texts: at most {MAX_TEXT_LENGTH} code points in all texts"):
        chrf_core.CHRF().pairwise(["a" * (MAX_TEXT_LENGTH // 2 + 1)], ["a" * (MAX_TEXT_LENGTH // 2 + 1)])


@pytest.mark.parametrize("native", [True, False])
def test_a_matrix_too_large_for_memory_is_one_clean_memory_error(native):
    out, err, code = run_python("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        import chrf_core
        texts = ["the cat sat"] * 100_000
        try:
            chrf_core.CHRF().pairwise(texts, texts)
        except MemoryError:
            print("MemoryError")
        """, native=native)
    assert (out, code) == ("MemoryError\n", 0) and "SystemError" not in err and "Traceback" not in err, err


def test_the_python_kernels_pairwise_holds_one_row_not_the_whole_matrix_of_counts():
    out, err, code = run_python("""
        import resource, chrf_core
        from payloads import real_pairs
        texts = [f"{text[:12]} {k}" for k in range(5) for pair in real_pairs() for text in pair]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        matrix = chrf_core.CHRF(word_order=2).pairwise(texts, texts)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024, matrix.shape)
        """, native=False)
    grown, shape = out.split(" ", 1)
    assert code == 0 and shape.strip() == "(400, 400)", err
    assert int(grown) < 40, f"{grown} MB more"  # 160,000 pairs x 8 orders of count tuples held at once: ~100 MB


def test_native_counting_holds_under_64_bytes_per_code_point():
    native_kernel_or_skip()  # the native kernel's own: once, in the run that has it
    out, err, code = run_python("""
        import random, resource, chrf_core
        from payloads import real_pairs
        assert chrf_core.KERNEL == "native", chrf_core.kernel.KERNEL_ERROR
        random.seed(7)
        words = " ".join(text for pair in real_pairs() for text in pair).split()
        def text(size):
            chosen, length = [], 0
            while length < size:
                chosen.append(random.choice(words))
                length += len(chosen[-1]) + 1
            return " ".join(chosen)[:size]
        points = 8_000_000
        hypothesis, reference = text(points // 2), text(points // 2)
        virtual = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
        budget = 64 * points
        resource.setrlimit(resource.RLIMIT_AS, (virtual + budget, virtual + budget))
        for settings in ({}, {"word_order": 2}, {"char_order": 10, "word_order": 4}):
            counts = chrf_core.CHRF(**settings).corpus_counts([hypothesis], [reference])
        print("counted", counts.orders[0][0])
        """, timeout=600)
    assert code == 0 and out.startswith("counted 3"), err[-2000:]


def test_ctrl_c_stops_a_long_native_count_within_a_second():
    native_kernel_or_skip()  # the native kernel's own: once, in the run that has it
    script = """
        import random, chrf_core
        assert chrf_core.KERNEL == "native"
        random.seed(3)
        text = "".join(random.choice("abcdefgh ") for _ in range(12_000_000))
        other = text[:6_000_000] + "x" + text[6_000_001:]
        print("started", flush=True)
        chrf_core.CHRF(char_order=10, word_order=4).corpus_counts([text], [other])
        print("finished", flush=True)
        """
    out, err, _, stopped_after = ctrl_c_after(textwrap.dedent(script), 1.0, ":".join(PATHS))
    assert "finished" not in out and err.rstrip().endswith("KeyboardInterrupt"), (out, err[-500:])
    assert stopped_after < 1, stopped_after


MBR_CALLS = {  # each takes several seconds, most of them building the shared n-gram tables
    "pairwise of one text against a 5M-character one": "chrf.pairwise(['abc'], [text(5_000_000)])",
    "aggregate of one text against 50k references": "chrf.aggregate([text(200)], [text(200) for _ in range(50_000)])",
    "aggregate of 30k candidates": "texts = [text(200) for _ in range(30_000)]; chrf.aggregate(texts, texts)",
}


@pytest.mark.parametrize("call", MBR_CALLS.values(), ids=MBR_CALLS.keys())
def test_ctrl_c_stops_pairwise_and_aggregate_within_a_second_while_they_build_their_tables(call):
    native_kernel_or_skip()
    script = f"""
        import random, chrf_core
        random.seed(5)
        letters = bytes.maketrans(bytes(range(256)), (b"abcdefghijklmnopqrstuvwxyz     " * 9)[:256])
        text = lambda length: random.randbytes(length).translate(letters).decode()
        chrf = chrf_core.CHRF(word_order=2)
        print("started", flush=True)
        {call}
        print("finished", flush=True)
        """
    out, err, _, stopped_after = ctrl_c_after(textwrap.dedent(script), 1.0, ":".join(PATHS))
    assert "finished" not in out and err.rstrip().endswith("KeyboardInterrupt"), (out, err[-500:])
    assert stopped_after < 1, stopped_after


@pytest.mark.parametrize("call", ["pairwise_batch", "aggregate_batch"])
def test_ctrl_c_stops_a_batch_spread_over_threads_at_once(call):
    """Issue 57 item 5: the sets of a batch ran on threads of a Python pool, where a C call never sees Ctrl-C
    (signals reach the main thread only), and the pool was waited for: 64 sets x 10,000 texts stopped 5.9-8.3 s
    after Ctrl-C on 72c9660. Now the kernel's own pool runs them (issue 56): the calling thread looks for Ctrl-C
    between its chunks of rows and while it waits, and every set in flight stops at its next chunk. (Bound generous
    for a busy machine: about 0.1 s here.)"""
    native_kernel_or_skip()
    script = f"""
        import random, chrf_core
        rng = random.Random(1)
        words = ["w%d" % i for i in range(3000)]
        sets = [[" ".join(rng.choice(words) for _ in range(30)) for _ in range(2500)] for _ in range(48)]
        print("started", flush=True)
        chrf_core.CHRF().{call}(sets, sets, threads=2)
        print("finished", flush=True)
        """
    out, err, _, stopped_after = ctrl_c_after(textwrap.dedent(script), 1.0, ":".join(PATHS))
    assert "finished" not in out and err.rstrip().endswith("KeyboardInterrupt"), (out, err[-500:])
    assert stopped_after < 3, stopped_after


def test_texts_with_more_distinct_units_than_the_kernels_histograms_hold_are_counted_alike():
    native_kernel_or_skip()
    import random

    rng = random.Random(11)
    points = [chr(0x10000 + k) for k in range(600_000)]  # more distinct code points than 2^19
    rng.shuffle(points)
    characters = "".join(points)
    words = " ".join(f"w{k}" for k in range(600_000))  # more distinct word tokens than 2^19
    native = chrf_core.kernel.KERNELS["native"]
    for hypothesis, reference, char_order, word_order in [
            (characters, characters[1000:] + characters[:1000], 6, 0),
            (characters[::2], characters, 4, 0),
            (words, words.replace("w12 ", "x12 "), 0, 2),
            (words[: len(words) // 3], words, 2, 3)]:
        settings = chrf_core.CHRF(char_order=char_order, word_order=word_order)
        assert native.count([hypothesis], [reference], settings) == chrf_core.kernel.KERNELS["python"].count(
            [hypothesis], [reference], settings)
        sets = [[hypothesis], [reference[::-1]]]  # several systems: the reference's units as the classes
        assert native.system_counts(sets, [reference], settings).tolist() == [
            native.segment_counts(hypotheses, [reference], settings).tolist() for hypotheses in sets]
