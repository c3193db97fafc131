"""Requests that break one contract rule each, with the field and message the rule must report.

Shared by the layer's tests and the handler's (HTTP and direct invoke), so every rule is pinned everywhere.
"""

import math

VALID = {"hypotheses": ["a"], "references": ["a"]}

# (request, field, expected message: its start, or its end when it starts with "got")
RULE_CASES = [
        ([], None, "request: must be a JSON object, got an array"),
        ("text", None, "request: must be a JSON object, got a string"),
        (None, None, "request: must be a JSON object, got null"),
        ({**VALID, "extra": 1}, "extra", "request: unknown key (named in field); allowed keys are hypotheses,"),
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
        ({**VALID, "char_order": 0, "word_order": 0}, "word_order",
         "word_order: char_order and word_order cannot both be 0"),
        ({**VALID, "char_order": 0}, "word_order", "word_order: char_order and word_order cannot both be 0"),
        ({**VALID, "beta": 0}, "beta", "beta: must be an integer from 1 to 16, got 0"),
        ({**VALID, "beta": 17}, "beta", "beta: must be an integer from 1 to 16, got 17"),
        ({**VALID, "beta": 0.5}, "beta", "beta: must be an integer from 1 to 16, got the number 0.5"),
        ({**VALID, "beta": 10**5000}, "beta", "beta: must be an integer from 1 to 16, got a number out of range"),
        ({**VALID, "beta": 1e300}, "beta", "beta: must be an integer from 1 to 16, got a number out of range"),
        ({**VALID, "beta": -math.inf}, "beta", "got a non-finite number"),
        ({**VALID, "lowercase": 1}, "lowercase", "lowercase: must be a boolean (true or false), got the number 1"),
        ({**VALID, "lowercase": "true"}, "lowercase", "got a string"),
        ({**VALID, "include_whitespace": None}, "include_whitespace", "include_whitespace: must be a boolean"),
        ({**VALID, "averaging": "macro"}, "averaging", "averaging: must be one of precision_recall, per_order_f"),
        ({**VALID, "averaging": ["per_order_f"]}, "averaging", "got an array"),
    ]


def message_matches(actual: str, expected: str) -> bool:
    return actual.endswith(expected) if expected.startswith("got") else actual.startswith(expected)
