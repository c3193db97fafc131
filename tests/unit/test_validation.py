"""Every validation rule of the contract, its field and message, and the order between rules."""

import copy
import math

import chrf_core
import pytest
from chrf_core import InvalidInputError

VALID = {"hypotheses": ["a"], "references": ["a"]}


def invalid(request):
    with pytest.raises(InvalidInputError) as caught:
        chrf_core.score(request)
    return caught.value


@pytest.mark.parametrize(
    ("request_", "field", "message"),
    [
        ([], None, "request: must be a JSON object, got an array"),
        ("text", None, "request: must be a JSON object, got a string"),
        (None, None, "request: must be a JSON object, got null"),
        ({**VALID, "extra": 1}, "extra", "extra: unknown key"),
        ({"references": ["a"]}, "hypotheses", "hypotheses: required key is missing"),
        ({"hypotheses": ["a"]}, "references", "references: required key is missing"),
        ({"hypotheses": "a", "references": ["a"]}, "hypotheses", "hypotheses: must be an array of strings"),
        ({"hypotheses": ["a"] * 300, "references": ["a"]}, "hypotheses", "hypotheses: at most 256 segments, got 300"),
        ({"hypotheses": [], "references": ["a"]}, "hypotheses", "hypotheses: at least 1 segment, got 0"),
        ({"hypotheses": ["a", "b", "c", 4], "references": ["a"]}, "hypotheses",
         "hypotheses[3]: must be a string, got the number 4"),
        ({"hypotheses": ["a"], "references": {"a": 1}}, "references", "references: must be an array of strings"),
        ({"hypotheses": ["a"], "references": ["a"] * 257}, "references", "references: at most 256 segments, got 257"),
        ({"hypotheses": ["a"], "references": []}, "references", "references: at least 1 segment, got 0"),
        ({"hypotheses": ["a"], "references": [None]}, "references", "references[0]: must be a string, got null"),
        ({"hypotheses": ["a"], "references": ["a", "b"]}, "references",
         "references: must have as many segments as hypotheses (1), got 2"),
        ({"hypotheses": ["a" * 40000], "references": ["b" * 30000]}, None,
         "request: all texts together must be at most 65536 UTF-8 bytes, got 70000"),
        ({"hypotheses": ["a\ud800"], "references": ["a"]}, "hypotheses", "hypotheses[0]: must not contain a lone"),
        ({"hypotheses": ["a"], "references": ["x", "\udfff"][1:]}, "references", "references[0]: must not contain"),
        ({**VALID, "char_order": 11}, "char_order", "char_order: must be an integer from 0 to 10, got 11"),
        ({**VALID, "char_order": -1}, "char_order", "char_order: must be an integer from 0 to 10, got -1"),
        ({**VALID, "char_order": 2.5}, "char_order", "char_order: must be an integer from 0 to 10, got the number 2.5"),
        ({**VALID, "char_order": True}, "char_order", "char_order: must be an integer from 0 to 10, got a boolean"),
        ({**VALID, "char_order": "6"}, "char_order", "got a string"),
        ({**VALID, "char_order": math.nan}, "char_order", "got a non-finite number"),
        ({**VALID, "char_order": math.inf}, "char_order", "got a non-finite number"),
        ({**VALID, "word_order": 5}, "word_order", "word_order: must be an integer from 0 to 4, got 5"),
        ({**VALID, "word_order": None}, "word_order", "got null"),
        ({**VALID, "char_order": 0, "word_order": 0}, "word_order", "char_order and word_order cannot both be 0"),
        ({**VALID, "char_order": 0}, "word_order", "char_order and word_order cannot both be 0"),
        ({**VALID, "beta": 0}, "beta", "beta: must be an integer from 1 to 16, got 0"),
        ({**VALID, "beta": 17}, "beta", "beta: must be an integer from 1 to 16, got 17"),
        ({**VALID, "beta": 0.5}, "beta", "beta: must be an integer from 1 to 16, got the number 0.5"),
        ({**VALID, "beta": -math.inf}, "beta", "got a non-finite number"),
        ({**VALID, "lowercase": 1}, "lowercase", "lowercase: must be a boolean (true or false), got the number 1"),
        ({**VALID, "lowercase": "true"}, "lowercase", "got a string"),
        ({**VALID, "include_whitespace": None}, "include_whitespace", "include_whitespace: must be a boolean"),
        ({**VALID, "averaging": "macro"}, "averaging", "averaging: must be one of precision_recall, per_order_f"),
        ({**VALID, "averaging": ["per_order_f"]}, "averaging", "got an array"),
    ],
)
def test_each_rule_reports_its_field_and_an_actionable_message(request_, field, message):
    error = invalid(request_)
    assert error.field == field
    assert error.message.startswith(message) or (message.startswith("got") and error.message.endswith(message))
    assert error.to_dict() == {"code": "invalid_input", "field": field, "message": error.message}


def test_size_limit_is_inclusive_and_counts_utf8_bytes():
    # 65536 bytes exactly is allowed: 3-byte CJK plus ASCII.
    chrf_core.score({"hypotheses": ["中" * 10000], "references": ["a" * 35536], "char_order": 1})
    error = invalid({"hypotheses": ["中" * 10000], "references": ["a" * 35537], "char_order": 1})
    assert error.message.endswith("got 65537")


def test_lone_surrogate_counts_three_bytes_in_the_size_check():
    error = invalid({"hypotheses": ["\ud800" * 10000], "references": ["a" * 35537]})
    assert error.field is None and error.message.endswith("got 65537")
    error = invalid({"hypotheses": ["\ud800" * 10000], "references": ["a" * 35536]})
    assert error.field == "hypotheses"


def test_lone_surrogate_in_hypotheses_is_reported_before_one_in_references():
    assert invalid({"hypotheses": ["a", "\udc00"], "references": ["\ud800", "b"]}).field == "hypotheses"


def test_integral_floats_count_as_integers_and_are_echoed_as_integers():
    output = chrf_core.score({**VALID, "char_order": 3.0, "word_order": 1.0, "beta": 2.0})
    assert (output["char_order"], output["word_order"], output["beta"]) == (3, 1, 2)
    assert all(type(output[key]) is int for key in ("char_order", "word_order", "beta"))


def test_defaults_fill_every_omitted_setting():
    output = chrf_core.score(VALID)
    assert {k: output[k] for k in ("char_order", "word_order", "beta", "lowercase", "include_whitespace",
                                    "averaging")} == {"char_order": 6, "word_order": 0, "beta": 2,
                                                      "lowercase": False, "include_whitespace": False,
                                                      "averaging": "precision_recall"}


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        # plain object before anything else is even looked at
        (["extra"], None),
        # unknown keys before missing keys
        ({"extra": 1}, "extra"),
        # missing keys before the type of the other text list
        ({"hypotheses": 3}, "references"),
        # hypotheses before references
        ({"hypotheses": [1], "references": 3}, "hypotheses"),
        # at most 256 before at least one... and before strings
        ({"hypotheses": [1] * 257, "references": ["a"]}, "hypotheses"),
        # text lists before equal counts
        ({"hypotheses": ["a"], "references": ["a", 2]}, "references"),
        # equal counts before size
        ({"hypotheses": ["a" * 70000], "references": ["a", "b"]}, "references"),
        # size before lone surrogates
        ({"hypotheses": ["\ud800" + "a" * 70000], "references": ["a"]}, None),
        # lone surrogates before settings
        ({"hypotheses": ["\ud800"], "references": ["a"], "char_order": 99}, "hypotheses"),
        # char_order before word_order, word_order before beta, and so on
        ({**VALID, "char_order": 99, "word_order": 99}, "char_order"),
        ({**VALID, "word_order": 99, "beta": 0}, "word_order"),
        ({**VALID, "char_order": 0, "word_order": 0, "beta": 0}, "word_order"),
        ({**VALID, "beta": 0, "lowercase": 0}, "beta"),
        ({**VALID, "lowercase": 0, "include_whitespace": 0}, "lowercase"),
        ({**VALID, "include_whitespace": 0, "averaging": 0}, "include_whitespace"),
    ],
)
def test_request_breaking_two_rules_reports_the_earlier_rule(request_, field):
    assert invalid(request_).field == field


def test_first_unknown_key_in_request_order_is_reported():
    assert invalid({"zeta": 1, "alpha": 2, **VALID}).field == "zeta"


def test_invalid_request_is_not_mutated():
    request = {"hypotheses": ["a", 1], "references": ["a", "b"], "char_order": 3.0}
    original = copy.deepcopy(request)
    invalid(request)
    assert request == original and type(request["char_order"]) is float


def test_valid_request_is_not_mutated_and_output_shares_no_lists_with_it():
    request = {"hypotheses": ["a b"], "references": ["a c"], "word_order": 1.0}
    original = copy.deepcopy(request)
    chrf_core.score(request)
    assert request == original and type(request["word_order"]) is float
