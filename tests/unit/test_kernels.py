"""The counting kernels: the native one (C) and the pure-Python one count exactly what the naive implementation
counts, on generated Unicode, on real data and on the most expensive shapes we can build; and the layer reports
which kernel is active and why."""

import os
import random
import subprocess
import sys

import chrf_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_chrf import naive_counts
from payloads import KINDS, adversarial, near_limit
from support import ROOT, SEGMENT_TEXT, native_kernel_or_skip, settings_strategy

NATIVE_REQUIRED = os.environ.get("CHRF_REQUIRE_BUILD") == "1" and os.environ.get("CHRF_CORE_NATIVE") != "0"


def kernels():
    """Every kernel this process can run: both, once the native one is built (make setup)."""
    if "native" not in chrf_core.kernel.KERNELS and NATIVE_REQUIRED:
        pytest.fail(f"the native kernel must load under make test: {chrf_core.kernel.KERNEL_ERROR}")
    return sorted(chrf_core.kernel.KERNELS)


def run(kernel, hypotheses, references, char_order, word_order, include_whitespace=False, lowercase=False):
    if lowercase:
        hypotheses, references = [t.lower() for t in hypotheses], [t.lower() for t in references]
    count = chrf_core.kernel.KERNELS[kernel].raw_count
    result = count([hypotheses], references, char_order, word_order, include_whitespace, False)
    return [list(triple) for triple in result]


def test_the_native_kernel_is_active_when_the_suite_requires_it():
    if not NATIVE_REQUIRED:
        pytest.skip("not in this run: only make test requires the native kernel (CHRF_REQUIRE_BUILD=1, not switched "
                    "off)")
    assert chrf_core.KERNEL == "native" and set(chrf_core.kernel.KERNELS) == {"native", "python"}, (
        chrf_core.kernel.KERNEL_ERROR)


@st.composite
def segment_sets(draw):
    pairs = draw(st.lists(st.tuples(SEGMENT_TEXT, SEGMENT_TEXT), min_size=1, max_size=6))
    return [h for h, _ in pairs], [r for _, r in pairs], draw(settings_strategy())


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segment_sets())
def test_every_kernel_counts_what_the_naive_implementation_counts(case):
    hypotheses, references, request = case
    expected = naive_counts(hypotheses, references, request["char_order"], request["word_order"],
                            request["lowercase"], request["include_whitespace"])
    for kernel in kernels():
        got = run(kernel, hypotheses, references, request["char_order"], request["word_order"],
                  request["include_whitespace"], request["lowercase"])
        assert got == expected, kernel


LONG_TEXT = st.text(st.sampled_from("ab c.,(d\u3000😀中é"), min_size=200, max_size=1200)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LONG_TEXT, LONG_TEXT, st.integers(1, 10), st.integers(0, 4), st.booleans())
def test_kernels_agree_on_long_repetitive_texts(hyp, ref, char_order, word_order, ws):
    expected = naive_counts([hyp, hyp[:50]], [ref, ref[:60]], char_order, word_order, False, ws)
    for kernel in kernels():
        assert run(kernel, [hyp, hyp[:50]], [ref, ref[:60]], char_order, word_order, ws) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_kernels_agree_on_near_limit_payloads_of_every_kind(kind):
    hypotheses, references = near_limit(kind)
    for char_order, word_order in ((6, 0), (6, 2), (10, 4)):
        results = {kernel: run(kernel, hypotheses, references, char_order, word_order) for kernel in kernels()}
        assert len({str(result) for result in results.values()}) == 1, results
        assert results["python"] == naive_counts(hypotheses, references, char_order, word_order)


@pytest.mark.parametrize("name", sorted(adversarial()))
def test_kernels_agree_on_the_adversarial_requests(name):
    request = adversarial()[name]
    args = (request["hypotheses"], request["references"], request.get("char_order", 6), request.get("word_order", 0))
    expected = naive_counts(*args)
    for kernel in kernels():
        assert run(kernel, *args) == expected, kernel
    chrf_core.score(request)  # a valid request: within every contract limit


def test_per_segment_rows_sum_to_the_corpus_counts_in_every_kernel():
    hypotheses, references = near_limit("real", segments=40)
    for kernel in kernels():
        raw_count = chrf_core.kernel.KERNELS[kernel].raw_count
        rows = memoryview(raw_count([hypotheses], references, 6, 2, False, True)).cast("q")
        assert len(rows) == 40 * 8 * 3
        totals = [sum(rows[k::24]) for k in range(24)]
        assert [totals[k : k + 3] for k in range(0, 24, 3)] == run(kernel, hypotheses, references, 6, 2)


def test_each_kernel_counts_one_system_or_several_through_its_one_entry_point():
    """count(systems, references, ...): one system is counted pair by pair, several against their reference once;
    the rows are the same either way, and the sums are over segments and systems."""
    hypotheses, references = near_limit("real", segments=12)
    sets = [hypotheses, references[::-1], [text[: len(text) // 2] for text in hypotheses]]
    if "native" in chrf_core.kernel.KERNELS:
        assert not hasattr(chrf_core.kernel.NATIVE, "count_systems")
    for kernel in kernels():
        raw_count = chrf_core.kernel.KERNELS[kernel].raw_count
        alone = [raw_count([system], references, 6, 2, False, True) for system in sets]
        assert raw_count(sets, references, 6, 2, False, True) == b"".join(alone), kernel
        rows = memoryview(b"".join(alone)).cast("q")
        summed = raw_count(sets, references, 6, 2, False, False)
        assert [list(triple) for triple in summed] == [
            [sum(rows[k + j::24]) for j in range(3)] for k in range(0, 24, 3)], kernel


def test_native_kernel_rejects_non_text_segments_with_a_type_error():
    native_kernel_or_skip()
    with pytest.raises(TypeError, match=r"hypotheses\[1\] must be a str"):
        chrf_core.kernel.KERNELS["native"].raw_count([["a", 3]], ["a", "b"], 2, 0, False, False)


def _layer_subprocess(env_extra, layer=None):
    code = "import chrf_core, json; print(json.dumps([chrf_core.KERNEL, chrf_core.kernel.KERNEL_ERROR]))"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(layer or ROOT / "layers" / "chrf_core"),
           **env_extra}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_chrf_core_native_0_selects_the_python_kernel_without_a_warning():
    completed = _layer_subprocess({"CHRF_CORE_NATIVE": "0"})
    assert completed.stdout.strip() == '["python", null]' and completed.stderr == ""


def test_a_kernel_that_is_present_but_cannot_load_is_reported_once_not_silently(tmp_path):
    layer = tmp_path / "layer"
    (layer / "chrf_core").mkdir(parents=True)
    for source in (ROOT / "layers" / "chrf_core" / "chrf_core").glob("*.py"):
        (layer / "chrf_core" / source.name).write_bytes(source.read_bytes())
    (layer / "chrf_core" / "_kernel.abi3.so").write_bytes(b"\x7fELF not really a shared object")
    completed = _layer_subprocess({}, layer)
    kernel, reason = __import__("json").loads(completed.stdout)
    assert kernel == "python" and reason.startswith("present but failed to load")
    assert completed.stderr.count("native kernel not used") == 1




# ---- generated shapes the native kernel treats specially: every kernel against the naive one ------------------


@st.composite
def repeating_hypotheses(draw):
    """A short reference and a hypothesis made of pieces of it, some repeated, with a few letters changed."""
    alphabet = draw(st.sampled_from(["ab", "abcdefghij", "aé😀 中", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"]))
    reference = draw(st.text(st.sampled_from(alphabet), min_size=1, max_size=256))
    pieces = draw(st.lists(st.tuples(st.integers(0, len(reference)), st.integers(0, len(reference)),
                                     st.integers(1, 6)), min_size=1, max_size=8))
    hypothesis = list("".join(reference[start:end] * times for start, end, times in pieces) or reference)
    for at in draw(st.lists(st.integers(0, len(hypothesis) - 1), max_size=5)):
        hypothesis[at] = "!"
    return "".join(hypothesis), reference


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(repeating_hypotheses(), st.integers(1, 10))
def test_kernels_count_hypotheses_that_repeat_a_short_reference_exactly(texts, char_order):
    hypothesis, reference = texts
    expected = naive_counts([hypothesis], [reference], char_order, 0)
    for kernel in kernels():
        assert run(kernel, [hypothesis], [reference], char_order, 0) == expected, kernel


@pytest.mark.parametrize(("letters", "period"), [(12, 13), (26, 13), (26, 17), (26, 23), (40, 17), (40, 23)])
def test_kernels_count_repeated_texts_with_scattered_changes_exactly(letters, period):
    choose = random.Random(1)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"[:letters]
    text = "".join(choose.choice(alphabet) for _ in range(1_200)) * 2

    def changed(at):
        return "".join(alphabet[(alphabet.index(c) + 1) % letters] if i % period == at else c
                       for i, c in enumerate(text))

    hypothesis, reference = changed(choose.randrange(period))[choose.randrange(20) :], changed(0)
    for char_order in (7, 10):
        expected = naive_counts([hypothesis], [reference], char_order, 0)
        for kernel in kernels():
            assert run(kernel, [hypothesis], [reference], char_order, 0) == expected, kernel


@st.composite
def related_long_texts(draw):
    """A long text over a small alphabet and another made from it: edited (substitutions, insertions, deletions,
    perhaps rotated), repeated, or unrelated."""
    alphabet = draw(st.sampled_from(["ab", "abc", "abcd", "abcdefghij", "ab c.", "aab", "aé😀 中"]))
    hypothesis = draw(st.text(st.sampled_from(alphabet), min_size=257, max_size=1500))
    how = draw(st.sampled_from(["edited", "repeated", "unrelated"]))
    if how == "repeated":
        return hypothesis, hypothesis[: len(hypothesis) // 2] * 2 + draw(st.text(st.sampled_from("ab!"), max_size=9))
    if how == "unrelated":
        return hypothesis, draw(st.text(st.sampled_from(alphabet), min_size=257, max_size=900))
    reference = list(hypothesis)
    for at, edit, letter in draw(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from("sid"),
                                                    st.sampled_from(alphabet + "!")), max_size=60)):
        at %= len(reference) or 1
        if edit == "s" and reference:
            reference[at] = letter
        elif edit == "i":
            reference.insert(at, letter)
        elif reference:
            del reference[at]
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(reference)))
        reference = reference[cut:] + reference[:cut]
    return hypothesis, "".join(reference)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(related_long_texts(), st.integers(1, 10), st.integers(0, 4))
def test_kernels_count_long_related_texts_exactly(texts, char_order, word_order):
    hypothesis, reference = texts
    expected = naive_counts([hypothesis], [reference], char_order, word_order)
    for kernel in kernels():
        assert run(kernel, [hypothesis], [reference], char_order, word_order) == expected, kernel


@pytest.mark.parametrize("rest", ["x", "xyz" * 300])
def test_kernels_count_texts_with_lone_surrogates_and_the_last_code_point_exactly(rest):
    block = "".join(chr(0xD7F0 + i % 40) for i in range(700)) + "\U0010FFFF"
    hypothesis, reference = block * 3 + rest, block * 3 + rest[::-1] + "y"
    for char_order, word_order in ((1, 0), (4, 2), (10, 4)):
        expected = naive_counts([hypothesis], [reference], char_order, word_order)
        for kernel in kernels():
            assert run(kernel, [hypothesis], [reference], char_order, word_order) == expected, kernel
