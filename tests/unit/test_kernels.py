"""The counting kernels: the native one (C) and the pure-Python one count exactly what the naive implementation
counts, on generated Unicode, on real data and on the most expensive shapes we can build; and the layer reports
which kernel is active and why."""

import os
import random
import subprocess
import sys
from collections import Counter

import chrf_core
import pytest
from chrf_core import python_kernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_chrf import naive_counts
from payloads import KINDS, adversarial, near_limit
from support import ROOT, SEGMENT_TEXT, settings_strategy

NATIVE_REQUIRED = os.environ.get("CHRF_REQUIRE_BUILD") == "1" and os.environ.get("CHRF_CORE_NATIVE") != "0"


def kernels():
    """Every kernel this process can run: both, once the native one is built (make setup)."""
    if "native" not in chrf_core.KERNELS and NATIVE_REQUIRED:
        pytest.fail(f"the native kernel must load under make test: {chrf_core.KERNEL_ERROR}")
    return sorted(chrf_core.KERNELS)


def run(kernel, hypotheses, references, char_order, word_order, include_whitespace=False, lowercase=False):
    if lowercase:
        hypotheses, references = [t.lower() for t in hypotheses], [t.lower() for t in references]
    result = chrf_core.KERNELS[kernel](hypotheses, references, char_order, word_order, include_whitespace, False)
    return [list(triple) for triple in result]


def test_both_kernels_are_available_to_the_suite():
    assert "python" in chrf_core.KERNELS
    if NATIVE_REQUIRED:
        assert chrf_core.KERNEL == "native" and "native" in chrf_core.KERNELS, chrf_core.KERNEL_ERROR


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
def test_kernels_agree_on_long_repetitive_texts_past_the_short_reference_path(hyp, ref, char_order, word_order, ws):
    # Long references take the Python kernel's hashing path, short ones its string-search path.
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
        rows = memoryview(chrf_core.KERNELS[kernel](hypotheses, references, 6, 2, False, True)).cast("q")
        assert len(rows) == 40 * 8 * 3
        totals = [sum(rows[k::24]) for k in range(24)]
        assert [totals[k : k + 3] for k in range(0, 24, 3)] == run(kernel, hypotheses, references, 6, 2)


def test_python_kernel_short_reference_bound_is_what_the_docstring_promises():
    assert python_kernel.SHORT_REFERENCE <= 256


def test_native_kernel_rejects_non_text_segments_with_a_type_error():
    if "native" not in chrf_core.KERNELS:
        pytest.skip("the native kernel is not built")
    with pytest.raises(TypeError, match=r"hypotheses\[1\] must be a str"):
        chrf_core.KERNELS["native"](["a", 3], ["a", "b"], 2, 0, False, False)


def _layer_subprocess(env_extra, layer=None):
    code = "import chrf_core, json; print(json.dumps([chrf_core.KERNEL, chrf_core.KERNEL_ERROR]))"
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


def _recording(monkeypatch, name):
    """Record the calls of one of the Python kernel's helpers (and let them run)."""
    calls = []
    original = getattr(python_kernel, name)

    def record(*args):
        result = original(*args)
        calls.append((args, result))
        return result

    monkeypatch.setattr(python_kernel, name, record)
    return calls


def _python_counts(name, monkeypatch=None):
    """Count an adversarial request with the Python kernel; with ``monkeypatch``, without the stretch search (so
    that the strategies for what is left between stretches meet the whole text)."""
    if monkeypatch is not None:
        monkeypatch.setattr(python_kernel, "STRETCHES_FROM", 10**9)
    request = adversarial()[name]
    args = (request["hypotheses"], request["references"], request["char_order"], request.get("word_order", 0))
    assert run("python", *args) == naive_counts(*args)


def test_python_kernel_counts_small_alphabet_texts_down_from_a_start_order(monkeypatch):
    top_down = _recording(monkeypatch, "_add_top_down")
    letters = random.Random(2)
    hypothesis = "".join(letters.choice("ab") for _ in range(3_000))
    reference = hypothesis[:400]  # over seven times shorter: counted order by order
    assert run("python", [hypothesis], [reference], 10, 0) == naive_counts([hypothesis], [reference], 10, 0)
    (args, _), = top_down
    assert (args[5], args[6]) == (5, 1)  # orders 5..1 counted down from the 6-grams (the start for 400 of two letters)


def test_python_kernel_sorts_long_texts_and_counts_every_order_at_once(monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    _python_counts("the same, every 23rd letter (c10)", monkeypatch)
    (args, _), = by_sorting
    assert len(args[1]) == len(args[0]) == 32_768 and args[5] == 1  # every position, from order 1


def test_python_kernel_counts_a_much_shorter_side_order_by_order_and_sorts_once_n_grams_persist(monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    request = adversarial()["the same, every 23rd letter (c10)"]
    hypothesis, reference = request["hypotheses"][0][10_000:15_000], request["references"][0]
    assert run("python", [hypothesis], [reference], 10, 0) == naive_counts([hypothesis], [reference], 10, 0)
    (args, _), = by_sorting
    assert args[5] == 5 and len(args[1]) > 4_000  # after the start order 3 and order 4, most positions still live


def test_python_kernel_sorts_the_rest_of_a_hypothesis_that_repeats_its_short_reference(monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    _python_counts("a long hypothesis that repeats its 200-letter reference (c10)")
    (args, _), = by_sorting
    assert args[5] == 2 and len(args[1]) > 60_000 and len(args[3]) == 200  # from order 2: repeats at every order


def test_python_kernel_sorts_short_segments_that_repeat_themselves_from_order_2(monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    _python_counts("256 short segments, each a text twice, one letter changed on each side (c10)")
    assert [args[5] for args, _ in by_sorting] == [2] * 256  # half the matched bigrams repeat: worth sorting


def test_python_kernel_sorts_a_short_reference_once_repeats_persist_past_order_2(monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    letters = random.Random(6)
    piece = "".join(letters.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN") for _ in range(60))
    # At c6, with four orders left, the repeated bigrams are not yet worth sorting; the trigrams, with three, are.
    hypothesis, reference = piece + "!" + piece + "?" + piece[:30], piece + "#" + piece[10:]
    assert run("python", [hypothesis], [reference], 6, 0) == naive_counts([hypothesis], [reference], 6, 0)
    (args, _), = by_sorting
    assert args[5] == 3


def test_python_kernel_searches_short_references_of_real_translations_nearly_always(monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    hypotheses, references = near_limit("real")
    run("python", hypotheses, references, 10, 0)
    sorted_positions = sum(len(args[1]) + len(args[3]) for args, _ in by_sorting)
    assert sorted_positions < sum(map(len, hypotheses + references)) // 20


@st.composite
def repeating_hypotheses(draw):
    """A short reference and a hypothesis made of pieces of it, some repeated, with a few letters changed."""
    alphabet = draw(st.sampled_from(["ab", "abcdefghij", "aé😀 中", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"]))
    reference = draw(st.text(st.sampled_from(alphabet), min_size=1, max_size=python_kernel.SHORT_REFERENCE))
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


def test_python_kernel_does_not_sort_n_grams_that_part_early(monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    letters = random.Random(4)
    hypothesis = "".join(letters.choice("abcdefghij") for _ in range(300))
    reference = "".join(letters.choice("abcdefghij") for _ in range(3_000))  # unrelated: 5-grams mostly unshared
    assert run("python", [hypothesis], [reference], 10, 0) == naive_counts([hypothesis], [reference], 10, 0)
    assert not by_sorting


@pytest.mark.parametrize("letters, period", [(12, 13), (26, 13), (26, 17), (26, 23), (40, 17), (40, 19), (40, 23)])
def test_python_kernel_sorts_repeated_texts_with_scattered_changes_exactly(letters, period, monkeypatch):
    by_sorting = _recording(monkeypatch, "_add_sorted")
    choose = random.Random(1)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"[:letters]
    text = "".join(choose.choice(alphabet) for _ in range(1_200)) * 2

    def changed(at):
        return "".join(alphabet[(alphabet.index(c) + 1) % letters] if i % period == at else c
                       for i, c in enumerate(text))

    hypothesis, reference = changed(choose.randrange(period))[choose.randrange(20) :], changed(0)
    for char_order in (7, 10):
        assert run("python", [hypothesis], [reference], char_order, 0) == naive_counts(
            [hypothesis], [reference], char_order, 0)
    assert by_sorting


def _matches_among(text_h, live_h, text_r, live_r, n):
    """The naive clipped matches of order n among the n-grams that start at the given positions."""
    grams_h = Counter(text_h[i : i + n] for i in live_h if i + n <= len(text_h))
    grams_r = Counter(text_r[i : i + n] for i in live_r if i + n <= len(text_r))
    return sum((grams_h & grams_r).values())


SORTED_TEXT = st.sampled_from(["ab", "abc", "abcdefghij", "aé😀 中", "\x00\x01\x02ab", "αβγδεζηθικλμνξοπρστ"]).flatmap(
    lambda alphabet: st.text(st.sampled_from(alphabet), max_size=120))


@settings(max_examples=300, deadline=None)
@given(SORTED_TEXT, SORTED_TEXT, st.integers(1, 10), st.data(), st.sampled_from([254, 5, 3]))
def test_sorting_counts_the_matches_among_any_positions_from_any_order(text_h, text_r, orders, data, digit_base):
    # Codes written as one byte each, or with fewer digits as two or three; at every position (read in one pass) or
    # at some; from order 1 or from a later one (as after counting order by order).
    live_h = data.draw(st.lists(st.integers(0, len(text_h) - 1), unique=True).map(sorted)) if text_h else []
    live_r = data.draw(st.lists(st.integers(0, len(text_r) - 1), unique=True).map(sorted)) if text_r else []
    if data.draw(st.booleans()):
        live_h, live_r = list(range(len(text_h))), list(range(len(text_r)))
    low = data.draw(st.integers(1, orders))
    alphabet = set(text_h).union(text_r) if data.draw(st.booleans()) else None  # dense codes, or code points
    out = [0] * (3 * orders)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(python_kernel, "DIGIT_BASE", digit_base)
        codes_h, codes_r, base = python_kernel._codes(text_h, text_r, alphabet)
        python_kernel._add_sorted(codes_h, live_h, codes_r, live_r, base, low, orders, out, 0)
    assert out[2::3] == [0] * (low - 1) + [_matches_among(text_h, live_h, text_r, live_r, n)
                                           for n in range(low, orders + 1)]


def test_python_kernel_counts_near_identical_long_texts_around_the_stretches_they_share(monkeypatch):
    counted = _recording(monkeypatch, "add_orders_at")
    _python_counts("near-identical long texts, characters only (c10)")
    (args, _), = counted
    assert len(args[1]) + len(args[3]) < 40  # positions left: the two changed ends and one stretch's last nine


def test_python_kernel_counts_whole_texts_when_the_stretches_found_hold_little_of_them(monkeypatch):
    counted = _recording(monkeypatch, "add_orders_at")
    stretches = _recording(monkeypatch, "_shared_stretches")
    _python_counts("the same, every 23rd letter (c10)")
    (args, _), = counted
    assert stretches[0][1]  # a few stretches of 11 letters between the changes on both sides...
    assert len(args[1]) == len(args[0]) and len(args[3]) == len(args[2])  # ...not worth leaving out


def test_python_kernel_finds_a_stretch_moved_far_from_where_the_search_along_the_texts_looks(monkeypatch):
    letters = random.Random(3)
    text = "".join(letters.choice("abcdefghij") for _ in range(16_000))
    hypothesis, reference = text, text[9_000:] + "!" + text[:9_000]  # a 9,000-letter block moved to the end
    counted = _recording(monkeypatch, "add_orders_at")
    far = _recording(monkeypatch, "_with_far_stretches")
    assert run("python", [hypothesis], [reference], 10, 0) == naive_counts([hypothesis], [reference], 10, 0)
    (_, stretches), = far
    assert sorted(length for _, _, length in stretches)[-2:] == [7_000, 9_000]
    (args, _), = counted
    assert len(args[1]) + len(args[3]) < 100  # positions left: the stretches' last nine and the changed letter


def test_python_kernel_stretch_search_gives_up_on_texts_that_share_little(monkeypatch):
    agreements = _recording(monkeypatch, "_agreement")
    _python_counts("distinct astral code points, shuffled (c10)")
    assert 0 < len(agreements) <= 20


@st.composite
def edited_long_texts(draw):
    """A long text and a copy of it with substitutions, insertions, deletions and perhaps a block moved."""
    alphabet = draw(st.sampled_from(["ab", "abc", "abcdefghij", "ab c.", "aé😀 中"]))
    hypothesis = draw(st.text(st.sampled_from(alphabet), min_size=512, max_size=1500))
    reference = list(hypothesis)
    for at, how, letter in draw(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from("sid"),
                                                   st.sampled_from(alphabet + "!")), max_size=60)):
        at %= len(reference) or 1
        if how == "s" and reference:
            reference[at] = letter
        elif how == "i":
            reference.insert(at, letter)
        elif reference:
            del reference[at]
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(reference)))
        reference = reference[cut:] + reference[:cut]
    return hypothesis, "".join(reference)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited_long_texts(), st.integers(1, 10), st.integers(0, 4), st.booleans())
def test_kernels_count_edited_long_texts_exactly(texts, char_order, word_order, short_stretches):
    # The Python kernel counts these around the stretches the texts share; with short_stretches also the word
    # texts and texts below STRETCHES_FROM, and with far stretches of any length worth counting.
    hypothesis, reference = texts
    expected = naive_counts([hypothesis], [reference], char_order, word_order)
    with pytest.MonkeyPatch.context() as patch:
        if short_stretches:  # also the search for far stretches, at every few code points
            patch.setattr(python_kernel, "STRETCHES_FROM", 2)
            patch.setattr(python_kernel, "FAR_PROBES", 200)
            patch.setattr(python_kernel, "FAR_ANCHOR", 4)
            patch.setattr(python_kernel, "FAR_SHORTEST", 11)
        for kernel in kernels():
            assert run(kernel, [hypothesis], [reference], char_order, word_order) == expected, kernel


SMALL_ALPHABET_TEXT = st.sampled_from(["ab", "abc", "abcd", "abcdefghij", "ab c.", "aab"]).flatmap(
    lambda alphabet: st.text(st.sampled_from(alphabet), min_size=257, max_size=900))


@st.composite
def related_long_texts(draw):
    """A long hypothesis over a small alphabet and a reference made from it: edited, repeated or unrelated."""
    hypothesis = draw(SMALL_ALPHABET_TEXT)
    how = draw(st.sampled_from(["edited", "repeated", "unrelated"]))
    if how == "edited":
        at = draw(st.lists(st.integers(0, len(hypothesis) - 1), max_size=40))
        reference = "".join("!" if i in set(at) else letter for i, letter in enumerate(hypothesis))
    elif how == "repeated":
        reference = hypothesis[: len(hypothesis) // 2] * 2 + draw(st.text(st.sampled_from("ab!"), max_size=9))
    else:
        reference = draw(SMALL_ALPHABET_TEXT)
    return hypothesis, reference


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(related_long_texts(), st.integers(1, 10), st.integers(0, 4), st.booleans())
def test_kernels_count_long_small_alphabet_texts_exactly(texts, char_order, word_order, order_by_order):
    # Every strategy meets these: the Python kernel's sorting and, with order_by_order, its hashing path (start
    # order, counting down, passes, sorting once positions persist); the native kernel's (orders counted by code,
    # passes from the start order, alike classes settled).
    hypothesis, reference = texts
    expected = naive_counts([hypothesis], [reference], char_order, word_order)
    with pytest.MonkeyPatch.context() as patch:
        if order_by_order:
            patch.setattr(python_kernel, "SORTED_FROM", 10**9)
            patch.setattr(python_kernel, "SORTED_SWITCH_FROM", 2)
        for kernel in kernels():
            assert run(kernel, [hypothesis], [reference], char_order, word_order) == expected, kernel


@pytest.mark.parametrize("rest", ["x", "xyz" * 300])
def test_python_kernel_counts_texts_with_lone_surrogates_exactly(rest):
    # The word texts of a line with more than 55,296 distinct words hold surrogate code points. Keys are made from
    # the code points: read from the text in C (few positions left after the stretches) or numbered densely.
    block = "".join(chr(0xD7F0 + i % 40) for i in range(700)) + "\U0010FFFF"
    hypothesis, reference = block * 3 + rest, block * 3 + rest[::-1] + "y"
    for char_order in (1, 4, 10):
        assert run("python", [hypothesis], [reference], char_order, 0) == naive_counts(
            [hypothesis], [reference], char_order, 0)


def test_python_kernel_counts_more_distinct_words_than_code_points_exactly(monkeypatch):
    # Past the code-point range, words found on one side only share one code point per side (they match nothing).
    monkeypatch.setattr(python_kernel, "CODE_POINTS", 8)
    hypothesis, reference = "a b c d e f g h a b x", "a b c y z a b w v u"
    for word_order in (1, 2, 4):
        assert run("python", [hypothesis], [reference], 0, word_order) == naive_counts(
            [hypothesis], [reference], 0, word_order)
    monkeypatch.setattr(python_kernel, "CODE_POINTS", 3)
    with pytest.raises(ValueError, match="shares 3 distinct words"):
        run("python", [hypothesis], [reference], 0, 2)
