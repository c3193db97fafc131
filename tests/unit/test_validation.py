"""Every validation rule of the contract, its field and message, and the order between rules."""

import copy
import json

import chrf_core
import pytest
from chrf_core import InvalidInputError
from validation_cases import RULE_CASES, VALID, message_matches


def invalid(request):
    with pytest.raises(InvalidInputError) as caught:
        chrf_core.score(request)
    return caught.value


@pytest.mark.parametrize(("request_", "field", "message"), RULE_CASES)
def test_each_rule_reports_its_field_and_an_actionable_message(request_, field, message):
    error = invalid(request_)
    assert error.field == field
    assert message_matches(error.message, message), error.message
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


def test_an_unknown_key_is_named_once_in_field_and_never_in_the_message():
    error = invalid({**VALID, "my pasted translation": 1})
    assert error.field == "my pasted translation"
    assert "pasted" not in error.message and error.message.startswith("request: unknown key")


def test_a_lone_surrogate_in_an_unknown_key_is_escaped_so_the_error_encodes_as_utf8():
    error = invalid({**VALID, "\ud800x": 1})
    assert error.field == "\\ud800x"
    json.dumps(error.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_long_unknown_key_is_shortened_with_an_ellipsis():
    error = invalid({"k" * 3_200_000: 1, **VALID})
    assert len(error.field) == 64 and error.field.endswith("…")
    assert len(json.dumps(error.to_dict(), ensure_ascii=False).encode("utf-8")) < 1024


def test_an_error_placed_at_a_corpus_line_names_the_line_and_side_and_carries_both_as_data():
    error = chrf_core.InvalidInputError("references", "must be a string", index=3)
    assert error.message == "references[3]: must be a string"
    placed = error.at_line(771)
    assert placed.message == "line 771 (reference): must be a string"
    assert (placed.line, placed.index, placed.field) == (771, 3, "references")
    assert placed.to_dict() == {"code": "invalid_input", "field": "references", "message": placed.message,
                                "line": 771}
