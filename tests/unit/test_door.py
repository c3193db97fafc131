"""The door's methods (what the command line and the functions call instead of reaching into submodules): each
gives what the layer's own definitions give, checks what it is given, and refuses what does not fit."""

import json
from fractions import Fraction

import chrf_core
import pytest
from chrf_core import CHRF, Counts, InvalidInputError, Report, arrays
from payloads import real_pairs

PAIRS = real_pairs()[:40]
HYPOTHESES, REFERENCES = [h for h, _ in PAIRS], [r for _, r in PAIRS]


@pytest.mark.parametrize("settings", [CHRF(), CHRF(word_order=2), CHRF(char_order=10, word_order=4, beta=3,
                                                                        averaging="per_order_f", lowercase=True)])
def test_segment_counts_score_texts_and_json_lines_are_each_segments_own_report(settings):
    rows = settings.segment_counts(HYPOTHESES, REFERENCES)
    assert rows.shape == (len(PAIRS), settings.orders, 3)
    reports = list(settings.segment_reports(HYPOTHESES, REFERENCES))
    assert [settings.report(Counts.of_array(settings, 1, row)) for row in rows] == reports
    assert [arrays.exact_score(settings, row.tolist()) for row in rows] == [report.exact for report in reports]
    assert arrays.score_texts(settings, rows) == [report.to_dict()["score"] for report in reports]
    assert arrays.float_scores(settings, rows).tolist() == pytest.approx([report.score for report in reports],
                                                                         abs=1e-12)
    lines = arrays.json_lines(settings, rows, first_line=7).splitlines()
    assert lines == [json.dumps({"line": 7 + k, **report.to_dict()}) for k, report in enumerate(reports)]


def test_corpus_counts_of_parts_merge_to_the_corpus_report():
    settings = CHRF(word_order=2)
    parts = [settings.corpus_counts(HYPOTHESES[k:k + 7], REFERENCES[k:k + 7]) for k in range(0, len(PAIRS), 7)]
    assert settings.report(Counts.merge(parts)) == settings.corpus_score(HYPOTHESES, [REFERENCES])


def test_a_report_of_counts_made_with_other_settings_is_refused():
    counts = CHRF(word_order=2).corpus_counts(HYPOTHESES, REFERENCES)
    with pytest.raises(ValueError, match="other settings"):
        CHRF().report(counts)


def test_counts_and_reports_come_back_from_their_dicts():
    settings = CHRF(word_order=2, lowercase=True)
    counts = settings.corpus_counts(HYPOTHESES, REFERENCES)
    read_back = Counts.from_dict(json.loads(json.dumps(counts.to_dict())))
    assert read_back == counts and settings.report(read_back) == settings.report(counts)
    output = settings.report(counts).to_dict()
    assert Report.from_dict(output) == settings.report(counts)
    assert Report.from_dict(output).to_dict(signature=True) == {**output, "signature": settings.signature,
                                                                "normalize": None, "nrefs": None}


@pytest.mark.parametrize(("hypotheses", "message"), [
    (["a", 3], r"hypotheses\[1\]: must be a string, got the number 3"),
    (["a", "b\ud800c"], r"hypotheses\[1\]: must not contain a lone surrogate"),
    (["a", "\ud83d\ude00"], r"hypotheses\[1\]: must not contain a lone surrogate"),  # a pair is two lone ones
    (["a", "b", "c"], r"references: must have as many segments as hypotheses, got only 2"),
])
def test_segment_counts_checks_its_texts_and_names_the_first_that_breaks_a_rule(hypotheses, message):
    with pytest.raises(InvalidInputError, match=message):
        CHRF().segment_counts(hypotheses, ["a", "b"])
    with pytest.raises(TypeError, match="a single str"):
        CHRF().segment_counts("abc", "abc")


def test_a_chunk_of_texts_past_the_length_limit_names_the_text(monkeypatch):
    monkeypatch.setattr(chrf_core.texts, "MAX_TEXT_LENGTH", 5)
    with pytest.raises(InvalidInputError, match=r"references\[2\]: at most 5 code points, got 6"):
        CHRF().segment_counts(["abc", "abc", "abc"], ["abcde", "a", "abcdef"])
    assert CHRF().segment_counts(["abc", "abc"], ["abcde", "abcde"]).shape == (2, 6, 3)  # 13 together is fine


def test_a_reported_error_is_the_same_error_with_its_json_body_as_text():
    error = InvalidInputError("beta", "must be an integer from 1 to 16, got 0")
    reported = error.reported()
    assert type(reported) is InvalidInputError and str(error) == "beta: must be an integer from 1 to 16, got 0"
    assert json.loads(str(reported)) == {"code": "invalid_input", "field": "beta",
                                         "message": "beta: must be an integer from 1 to 16, got 0"}
    relayed = InvalidInputError.relayed("references", "line 3 (reference): must be a string", 3)
    assert relayed.message == str(relayed) == "line 3 (reference): must be a string"
    assert json.loads(str(relayed.reported())) == {"code": "invalid_input", "field": "references",
                                                   "message": "line 3 (reference): must be a string", "line": 3}


def test_the_formula_rules_work_on_integers_and_arrays_alike():
    import numpy
    from chrf_core.formula import effective, f_ratio

    assert [bool(effective(h, r)) for h, r in ((0, 1), (1, 0), (2, 3))] == [False, False, True]
    assert effective(numpy.array([0, 1, 2]), numpy.array([1, 0, 3])).tolist() == [False, False, True]
    numerator, denominator = f_ratio(4, 10, 8, 5)  # P = 1/2, R = 5/8, beta 2
    precision, recall = Fraction(1, 2), Fraction(5, 8)
    assert Fraction(numerator, denominator) == 5 * precision * recall / (4 * precision + recall)
