"""sacreBLEU's spellings of the settings: accepted wherever settings are keywords, read back as sacreBLEU's
attributes, and an error when they contradict the contract's spelling given beside them (never silently one)."""

import chrf_core
import pytest
from chrf_core import CHRF, InvalidInputError


@pytest.mark.parametrize(("keywords", "include_whitespace", "averaging"), [
    ({"whitespace": True}, True, "precision_recall"),
    ({"whitespace": False, "include_whitespace": False}, False, "precision_recall"),
    ({"eps_smoothing": True}, False, "per_order_f"),
    ({"eps_smoothing": False, "averaging": "precision_recall"}, False, "precision_recall"),
    ({"eps_smoothing": True, "averaging": "per_order_f", "whitespace": True}, True, "per_order_f"),
    ({}, False, "precision_recall"),
])
def test_sacrebleus_spellings_set_the_settings_and_read_back(keywords, include_whitespace, averaging):
    metric = CHRF(**keywords)
    assert (metric.include_whitespace, metric.averaging) == (include_whitespace, averaging)
    assert (metric.whitespace, metric.eps_smoothing) == (include_whitespace, averaging == "per_order_f")
    assert metric == CHRF(include_whitespace=include_whitespace, averaging=averaging)  # equal, same hash
    assert hash(metric) == hash(CHRF(include_whitespace=include_whitespace, averaging=averaging))


@pytest.mark.parametrize(("keywords", "message"), [
    ({"whitespace": False, "include_whitespace": True},
     "whitespace: sacreBLEU's whitespace=False means include_whitespace=False, but include_whitespace=True was given"),
    ({"eps_smoothing": True, "averaging": "precision_recall"},
     "eps_smoothing: sacreBLEU's eps_smoothing=True means averaging='per_order_f', but "
     "averaging='precision_recall' was given"),
    ({"whitespace": "yes"}, "whitespace: must be a boolean (True or False), got a string"),
    ({"eps_smoothing": 1}, "eps_smoothing: must be a boolean (True or False), got the number 1"),
])
def test_contradicting_or_malformed_spellings_are_errors_naming_the_spelling(keywords, message):
    with pytest.raises(InvalidInputError) as caught:
        CHRF(**keywords)
    assert str(caught.value).startswith(message)


def test_chrf_takes_the_spellings_and_refuses_a_misspelt_keyword():
    report = chrf_core.CHRF(whitespace=True, eps_smoothing=True).corpus_score(["a b c"], ["a b d"])
    assert report.settings == CHRF(include_whitespace=True, averaging="per_order_f")
    assert list(chrf_core.CHRF(whitespace=True).segment_scores(["a b"], ["a b"], exact=True)) == [100]
    with pytest.raises(TypeError, match="unexpected keyword argument 'whitspace'"):
        chrf_core.CHRF(whitspace=True)


def test_the_service_and_the_pipeline_keep_to_the_contracts_spelling():
    # a request's and a batch's settings are the contract's keys only: sacreBLEU's spellings are Python's
    with pytest.raises(InvalidInputError, match="unknown key"):
        chrf_core.score({"hypotheses": ["a"], "references": ["a"], "whitespace": True})
    with pytest.raises(InvalidInputError, match="unknown key"):
        CHRF.of_settings({"eps_smoothing": True})
