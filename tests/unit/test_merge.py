"""Counts are additive: merging the counts of any split equals scoring the whole."""

import itertools

import chrf_core
import pytest
from chrf_core import Counts, Settings
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
        chrf_core.compute_counts(
            {"hypotheses": request["hypotheses"][a:b], "references": request["references"][a:b], **settings_keys}
        )
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    merged = chrf_core.merge_counts(parts)
    assert merged == chrf_core.compute_counts(request)
    assert chrf_core.build_report(merged) == chrf_core.score(request)


def test_counts_survive_a_json_round_trip():
    counts = chrf_core.compute_counts({"hypotheses": ["a b c"], "references": ["a c b"], "word_order": 2})
    assert Counts.from_dict(counts.to_dict()) == counts


def test_merging_counts_made_with_different_settings_is_an_error():
    one = chrf_core.compute_counts({"hypotheses": ["a"], "references": ["a"]})
    other = chrf_core.compute_counts({"hypotheses": ["a"], "references": ["a"], "beta": 3})
    with pytest.raises(ValueError, match="settings differ"):
        chrf_core.merge_counts([one, other])


def test_merging_nothing_is_an_error():
    with pytest.raises(ValueError, match="nothing to merge"):
        chrf_core.merge_counts([])


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"settings": Settings().as_dict(), "segment_count": 1},
        {"settings": {}, "segment_count": 1, "orders": []},
        {"settings": Settings().as_dict(), "segment_count": 0, "orders": [[0, 0, 0]] * 6},
        {"settings": Settings().as_dict(), "segment_count": 1, "orders": [[0, 0, 0]] * 5},
        {"settings": Settings().as_dict(), "segment_count": 1, "orders": [[1, 1, 2]] * 6},
        {"settings": Settings().as_dict(), "segment_count": 1, "orders": [[1, -1, 0]] * 6},
        {"settings": {**Settings().as_dict(), "beta": 0}, "segment_count": 1, "orders": [[0, 0, 0]] * 6},
    ],
)
def test_malformed_stored_counts_are_rejected(data):
    with pytest.raises(ValueError, match="counts"):
        Counts.from_dict(data)
