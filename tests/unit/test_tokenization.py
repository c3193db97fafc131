"""Character and word units exactly as the contract defines them."""

import sys

import chrf_core
import pytest
from support import CONTRACT_WHITESPACE, NEAR_MISS_WHITESPACE


def test_python_whitespace_is_exactly_the_contracts_whitespace_set():
    # The layer splits with str.split(); this pins that the runtime's whitespace is the contract's set.
    runtime = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert runtime == set(CONTRACT_WHITESPACE)


@pytest.mark.parametrize("space", CONTRACT_WHITESPACE, ids=lambda c: f"U+{ord(c):04X}")
def test_every_contract_whitespace_code_point_separates_words_and_is_dropped_from_characters(space):
    counts = chrf_core.service.compute_counts(
        {"hypotheses": [f"ab{space}cd"], "references": ["abcd"], "char_order": 2, "word_order": 1}
    )
    assert counts.orders[0] == (4, 4, 4)
    assert counts.orders[1] == (3, 3, 3)
    assert chrf_core.tokens.words(f"ab{space}cd") == ["ab", "cd"]


@pytest.mark.parametrize("near_miss", NEAR_MISS_WHITESPACE, ids=lambda c: f"U+{ord(c):04X}")
def test_near_miss_whitespace_is_an_ordinary_character(near_miss):
    assert chrf_core.tokens.words(f"ab{near_miss}cd") == [f"ab{near_miss}cd"]
    counts = chrf_core.service.compute_counts({"hypotheses": [f"a{near_miss}b"], "references": ["ab"], "char_order": 1})
    assert counts.orders[0] == (3, 2, 2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(hi)", ["(hi", ")"]),
        ("...", ["..", "."]),
        ("a", ["a"]),
        (".", ["."]),
        ("«hi»", ["«hi»"]),
        ("hi…", ["hi…"]),
        ("(hi", ["(", "hi"]),
        ("Hello, world!", ["Hello", ",", "world", "!"]),
        ("שלום.", ["שלום", "."]),
        ("中文。", ["中文。"]),
    ],
)
def test_words_split_one_ascii_punctuation_mark_like_chrf_plus_plus(text, expected):
    assert chrf_core.tokens.words(text) == expected


def test_include_whitespace_keeps_every_code_point_as_given():
    counts = chrf_core.service.compute_counts(
        {"hypotheses": ["a b"], "references": ["a  b"], "char_order": 2, "include_whitespace": True}
    )
    assert counts.orders == ((3, 4, 3), (2, 3, 2))


@pytest.mark.parametrize(
    ("hypothesis", "reference", "unigrams"),
    [
        ("İ", "i\u0307", (2, 2, 2)),  # İ lowercases to i + combining dot above
        ("ΟΔΟΣ", "οδος", (4, 4, 4)),  # a final capital sigma becomes ς (final form), as in the reference
        ("STRASSE", "straße", (7, 6, 5)),  # lowercasing never turns SS into ß
    ],
)
def test_lowercase_applies_unicode_full_case_mapping(hypothesis, reference, unigrams):
    counts = chrf_core.service.compute_counts(
        {"hypotheses": [hypothesis], "references": [reference], "char_order": 1, "lowercase": True}
    )
    assert counts.orders[0] == unigrams


def test_combining_marks_and_emoji_count_as_separate_code_points_without_normalization():
    counts = chrf_core.service.compute_counts({"hypotheses": ["e\u0301👍🏽"], "references": ["é👍"], "char_order": 1})
    assert counts.orders[0] == (4, 2, 1)


def test_ngrams_never_cross_segments():
    joined = chrf_core.service.compute_counts({"hypotheses": ["abcd"], "references": ["abcd"], "char_order": 3})
    split = chrf_core.service.compute_counts({"hypotheses": ["ab", "cd"], "references": ["ab", "cd"], "char_order": 3})
    assert joined.orders == ((4, 4, 4), (3, 3, 3), (2, 2, 2))
    assert split.orders == ((4, 4, 4), (2, 2, 2), (0, 0, 0))
