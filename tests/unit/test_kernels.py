"""The counting kernels: the native one (C) and the pure-Python one count exactly what the naive implementation
counts, on generated Unicode, on real data and on the most expensive shapes we can build; and the layer reports
which kernel is active and why."""

import os
import random
import subprocess
import sys

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


def test_python_kernel_counts_small_alphabet_texts_down_from_a_start_order_and_from_the_top(monkeypatch):
    top_down = _recording(monkeypatch, "_add_top_down")
    _python_counts("random two-letter text against itself, one letter changed (c10)", monkeypatch)
    assert [(args[5], args[6]) for args, _ in top_down] == [(9, 1)]  # orders 9..2, down from the 10-grams


def test_python_kernel_settles_repeated_n_grams_that_continue_alike(monkeypatch):
    one_sided = _recording(monkeypatch, "_add_one_sided")
    _python_counts("a random text twice against itself, characters only (c10)", monkeypatch)
    assert one_sided and len(one_sided[0][1][0]) > 10_000  # most 5-grams: twice on each side, alike to the top


def test_python_kernel_settles_n_grams_that_continue_alike_on_one_side(monkeypatch):
    one_sided = _recording(monkeypatch, "_add_one_sided")
    _python_counts("a random text twice against the same with every 11th letter changed (c10)", monkeypatch)
    settled, partners = one_sided[0][1]
    assert len(settled) > 10_000 and partners > 10_000  # 5-grams twice in h, once or twice in r


def test_python_kernel_follows_unique_pairs_that_part_at_every_distance(monkeypatch):
    pairs = _recording(monkeypatch, "_add_unique_pairs")
    diagonal = _recording(monkeypatch, "_add_diagonal")
    _python_counts("a random text against itself with every 11th letter changed (c10)", monkeypatch)
    assert pairs and len(pairs[0][1]) > 10_000  # most 5-grams: once on each side, parting at every distance
    assert diagonal[0][0][1] == 0 and len(diagonal[0][0][0]) > 10_000  # at the same place on both sides


def test_python_kernel_finds_where_the_texts_differ_along_a_diagonal_once_per_segment(monkeypatch):
    diagonal = _recording(monkeypatch, "_add_diagonal")
    _python_counts("a random text against itself with every 11th letter changed (c10)", monkeypatch)
    differences = diagonal[0][0][7]
    assert len(diagonal) > 1 and all(args[7] is differences for args, _ in diagonal)  # one per segment, shared
    assert set(differences) == {args[1] for args, _ in diagonal}  # one list per diagonal, found at its first use


def test_python_kernel_takes_unique_pairs_first_where_matches_fall_and_then_skips_the_one_sided_look(monkeypatch):
    pairs = _recording(monkeypatch, "_add_unique_pairs")
    one_sided = _recording(monkeypatch, "_add_one_sided")
    _python_counts("a 40-letter random text against itself with every 11th letter changed (c10)", monkeypatch)
    first = pairs[0][0][7]  # the order of the first look: the start order, 3 for 40 letters
    assert first == 3 and len(pairs[0][1]) > 10_000
    assert all(args[9] != first for args, _ in one_sided)  # classes branch fast: nothing to settle


def test_python_kernel_skips_the_one_sided_look_once_unique_pairs_settled_a_quarter_of_the_shared_n_grams(
        monkeypatch):
    pairs = _recording(monkeypatch, "_add_unique_pairs")
    one_sided = _recording(monkeypatch, "_add_one_sided")
    _python_counts("a random text twice against the same, every 13th letter changed to another letter, at other "
                   "places on each side (c10)", monkeypatch)
    # At orders 6, 7, 8 over half of the shared n-grams are unique pairs; the rest come in classes of two on each
    # side whose members part at different orders, so that few continue alike on one side: not worth a look.
    assert [args[7] for args, _ in pairs] == [6, 7, 8] and len(pairs[0][1]) > 5_000
    assert not one_sided


def test_python_kernel_settles_classes_of_at_most_two_a_side_at_once_where_they_persist(monkeypatch):
    small = _recording(monkeypatch, "_add_small_classes")
    _python_counts("the same, every 23rd letter (c10)", monkeypatch)
    (args, (settled, matches)), *_ = small
    # At order 4 nearly every shared 4-gram is in a class of at most two a side that persists for orders: the
    # two copies of the text on each side agree up to a changed letter.
    assert args[9] == 4 and len(settled) > 15_000 and matches > len(settled) + 5_000  # many matched twice


def test_python_kernel_leaves_classes_that_part_soon_or_are_unique_pairs_to_the_look(monkeypatch):
    small = _recording(monkeypatch, "_add_small_classes")
    _python_counts("a 40-letter random text against itself with every 11th letter changed (c10)", monkeypatch)
    _python_counts("a random text twice against the same, every 13th letter changed to another letter, at other "
                   "places on each side (c10)", monkeypatch)
    assert not small


@pytest.mark.parametrize("letters, period", [(12, 13), (26, 13), (26, 17), (26, 23), (40, 17), (40, 19), (40, 23)])
def test_python_kernel_settles_small_classes_exactly_on_repeated_texts_with_scattered_changes(letters, period,
                                                                                            monkeypatch):
    small = _recording(monkeypatch, "_add_small_classes")
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
    assert small  # (classes of two a side, settled at once)


def test_words_hold_the_next_seven_codes_lowest_first_and_zeros_past_the_end():
    codes = [random.Random(5).randrange(256) for _ in range(100)]
    words = python_kernel._words(codes)
    assert len(words) == len(codes) + 1
    for at in range(len(words)):
        assert words[at] == sum(code << 8 * i for i, code in enumerate(codes[at : at + 7]))


def test_python_kernel_counts_down_from_top_order_n_grams_once_few_remain(monkeypatch):
    top_down = _recording(monkeypatch, "_add_top_down")
    _python_counts("a run of one letter, then random text, against itself, one changed (c10)", monkeypatch)
    assert any(args[5] == 9 and args[6] > 1 for args, _ in top_down)  # after looking ahead at order args[6]


def test_python_kernel_counts_near_identical_long_texts_around_the_stretches_they_share(monkeypatch):
    counted = _recording(monkeypatch, "add_orders_from")
    _python_counts("near-identical long texts, characters only (c10)")
    (args, _), = counted
    assert len(args[1]) + len(args[3]) < 40  # positions left: the two changed ends and one stretch's last nine


def test_python_kernel_counts_whole_texts_when_the_stretches_found_hold_little_of_them(monkeypatch):
    counted = _recording(monkeypatch, "add_orders_from")
    stretches = _recording(monkeypatch, "_shared_stretches")
    _python_counts("the same, every 23rd letter (c10)")
    (args, _), = counted
    assert stretches[0][1]  # a few stretches of 11 letters between the changes on both sides...
    assert len(args[1]) == len(args[0]) and len(args[3]) == len(args[2])  # ...not worth leaving out


def test_python_kernel_finds_a_stretch_moved_far_from_where_the_search_along_the_texts_looks(monkeypatch):
    letters = random.Random(3)
    text = "".join(letters.choice("abcdefghij") for _ in range(16_000))
    hypothesis, reference = text, text[9_000:] + "!" + text[:9_000]  # a 9,000-letter block moved to the end
    counted = _recording(monkeypatch, "add_orders_from")
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
@given(related_long_texts(), st.integers(1, 10), st.integers(0, 4))
def test_kernels_count_long_small_alphabet_texts_exactly(texts, char_order, word_order):
    # Every strategy meets these: the Python kernel's hashing path (start order, look-ahead, alike, pairs, counting
    # down) and the native kernel's (orders counted by code, passes from the start order, alike classes settled).
    hypothesis, reference = texts
    expected = naive_counts([hypothesis], [reference], char_order, word_order)
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
