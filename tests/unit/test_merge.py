"""Counts are additive: merging the counts of any split equals scoring the whole."""

import itertools
import json

import chrf_core
import pytest
from chrf_core import CHRF as Settings
from chrf_core import Counts
from hypothesis import given, settings
from hypothesis import strategies as st
from support import requests_strategy


@settings(max_examples=400, deadline=None)
@given(requests_strategy(max_segments=12), st.data())
def test_merging_counts_of_random_chunks_equals_scoring_the_whole(request, data):
    size = len(request["hypotheses"])
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, size - 1)), max_size=size)) - {size})
    bounds = [0, *cuts, size]
    settings_keys = {k: v for k, v in request.items() if k not in ("hypotheses", "references")}
    parts = [
        chrf_core.service.compute_counts(
            {"hypotheses": request["hypotheses"][a:b], "references": request["references"][a:b], **settings_keys}
        )
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    merged = chrf_core.Counts.merge(parts)
    assert merged == chrf_core.service.compute_counts(request)
    assert [part.inconsistency() for part in parts] == [None] * len(parts)  # real counts are never refused
    assert chrf_core.report.report_of(merged).to_dict() == chrf_core.score(request)


def test_counts_survive_a_json_round_trip():
    counts = chrf_core.service.compute_counts({"hypotheses": ["a b c"], "references": ["a c b"], "word_order": 2})
    assert chrf_core.Counts.from_dict(counts.to_dict()) == counts


def test_counts_and_reports_read_back_carry_a_chrf_that_scores_again():
    """One settings type (issue 56): what stored counts and a contract output read back as is a CHRF, equal to the
    one that made them, whose methods score (a separate settings type, without them, was read back before)."""
    chrf = chrf_core.CHRF(word_order=2, lowercase=True)
    counts = chrf.corpus_counts(["A b", "c"], ["a c", "c"])
    stored = chrf_core.Counts.from_dict(json.loads(json.dumps(counts.to_dict())))
    report = chrf_core.Report.from_dict(chrf.report(counts).to_dict())
    for settings_ in (stored.settings, report.settings):
        assert type(settings_) is chrf_core.CHRF and settings_ == chrf
        assert settings_.corpus_score(["A b", "c"], ["a c", "c"]).to_dict() == chrf.report(counts).to_dict()


def test_the_json_form_is_version_1_with_every_setting_and_reads_the_unversioned_one_back():
    counts = chrf_core.CHRF(word_order=2, normalize="NFKC").corpus_counts(["a b"], ["a c"])
    stored = counts.to_dict()
    assert list(stored) == ["version", "settings", "segment_count", "orders"] and stored["version"] == 1
    assert stored["settings"] == {**counts.settings.as_dict(), "normalize": "NFKC"}
    assert chrf_core.Counts.from_dict(json.loads(json.dumps(stored))) == counts  # normalize kept
    plain = chrf_core.CHRF().corpus_counts(["a b"], ["a c"])
    unversioned = {"settings": plain.settings.as_dict(), "segment_count": 1, "orders": [list(o) for o in plain.orders]}
    assert chrf_core.Counts.from_dict(unversioned) == plain  # chrf-components 1.0.0's pipeline batches


def test_an_empty_part_merges_as_zero_and_alone_is_no_corpus():
    chrf = chrf_core.CHRF(word_order=2)
    counts = chrf.corpus_counts(["a b"], ["a c"])
    empty = chrf_core.Counts.empty(chrf)
    assert chrf_core.Counts.merge([empty, counts, empty]) == counts
    assert chrf_core.Counts.from_dict(empty.to_dict()) == empty
    with pytest.raises(chrf_core.InvalidInputError, match="hypotheses: at least 1 segment, got 0"):
        chrf.report(empty)


def test_merging_counts_made_with_different_settings_is_an_error():
    one = chrf_core.service.compute_counts({"hypotheses": ["a"], "references": ["a"]})
    other = chrf_core.service.compute_counts({"hypotheses": ["a"], "references": ["a"], "beta": 3})
    with pytest.raises(ValueError, match=r"statistics of other settings \(beta 2 vs 3\)"):
        chrf_core.Counts.merge([one, other])


def test_merging_nothing_is_an_error():
    with pytest.raises(ValueError, match="nothing to merge"):
        chrf_core.Counts.merge([])


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"settings": Settings().as_dict(), "segment_count": 1},
        {"settings": {}, "segment_count": 1, "orders": []},
        {"settings": Settings().as_dict(), "segment_count": -1, "orders": [[0, 0, 0]] * 6},
        {"settings": Settings().as_dict(), "segment_count": 0, "orders": [[1, 1, 1]] + [[0, 0, 0]] * 5},
        {"version": 2, "settings": Settings().as_dict(), "segment_count": 1, "orders": [[0, 0, 0]] * 6},
        {"settings": Settings().as_dict(), "segment_count": 1, "orders": [[0, 0, 0]] * 5},
        {"settings": Settings().as_dict(), "segment_count": 1, "orders": [[1, 1, 2]] * 6},
        {"settings": Settings().as_dict(), "segment_count": 1, "orders": [[1, -1, 0]] * 6},
        {"settings": {**Settings().as_dict(), "beta": 0}, "segment_count": 1, "orders": [[0, 0, 0]] * 6},
    ],
)
def test_malformed_stored_counts_are_rejected(data):
    with pytest.raises(ValueError, match="counts"):
        chrf_core.Counts.from_dict(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=30), st.text(max_size=30)), min_size=1, max_size=8),
       st.integers(1, 10), st.integers(1, 4), st.booleans(), st.booleans())
def test_counts_of_any_texts_pass_every_consistency_rule(pairs, char_order, word_order, whitespace, lowercase):
    hypotheses = [h.replace("\ud800", "") for h, _ in pairs]
    references = [r for _, r in pairs]
    settings_ = Settings(char_order=char_order, word_order=word_order, include_whitespace=whitespace,
                         lowercase=lowercase)
    try:
        counts = chrf_core.counts.count_segments(hypotheses, references, settings_)
    except UnicodeEncodeError:  # lone surrogates: the contract refuses them before counting
        return
    assert counts.inconsistency() is None


ONE = Settings(char_order=3, word_order=1)


@pytest.mark.parametrize(("segments", "orders", "problem"), [
    (1, [(9, 9, 0), (9, 9, 0), (9, 9, 0), (3, 3, 0)], "char 2: hypothesis n-grams do not fall from order 1 (9)"),
    (1, [(9, 9, 0), (4, 8, 0), (3, 7, 0), (3, 3, 0)], "char 2: hypothesis n-grams fall by 5 from order 1, more "
                                                      "than the 1 segments"),
    (3, [(9, 9, 0), (7, 8, 0), (4, 7, 0), (3, 3, 0)], "char 3: hypothesis n-grams fall by 3 from order 2, more "
                                                      "than the drop to order 2 (2)"),
    (1, [(9, 9, 0), (8, 8, 0), (7, 7, 0), (500, 3, 0)], "word 1: 500 hypothesis tokens from 9 characters"),
    (2, [(9, 9, 0), (7, 7, 0), (5, 5, 0), (3, 9, 0)], None),
])
def test_counts_that_no_texts_give_are_named(segments, orders, problem):
    assert Counts(ONE, segments, tuple(orders)).inconsistency() == problem
