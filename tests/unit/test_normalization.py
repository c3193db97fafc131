"""Opt-in Unicode normalization (sacreBLEU #224: a precomposed and a decomposed "für" do not match): the library's
and the command line's ``normalize="NFC" | "NFKC"``, applied before lowercasing in every count, recorded in the
signature, and no setting of the contract (the service's requests and outputs are unchanged)."""

import unicodedata

import chrf_core
import pytest
from chrf_core import CHRF, Counts, InvalidInputError
from chrf_core import kernel as kernel_module
from test_kernels import kernels

PRECOMPOSED = "Die Größe für Äpfel"
DECOMPOSED = unicodedata.normalize("NFD", PRECOMPOSED)


@pytest.fixture(params=kernels())
def kernel(request, monkeypatch):
    monkeypatch.setattr(kernel_module, "KERNEL", request.param)
    return request.param


def test_a_decomposed_reference_matches_its_precomposed_hypothesis_only_when_normalized(kernel):
    assert DECOMPOSED != PRECOMPOSED
    assert CHRF(word_order=2).sentence_score(PRECOMPOSED, DECOMPOSED).score < 50
    for form in ("NFC", "NFKC"):
        metric = CHRF(word_order=2, normalize=form)
        assert metric.sentence_score(PRECOMPOSED, DECOMPOSED).score == 100
        assert metric.pairwise([PRECOMPOSED], [DECOMPOSED]).tolist() == [[100.0]]
        assert metric.aggregate([PRECOMPOSED], [DECOMPOSED, DECOMPOSED]).tolist() == [100.0]
        assert metric.segment_scores([DECOMPOSED], [PRECOMPOSED]).tolist() == [100.0]


def test_nfkc_folds_compatibility_characters_and_nfc_does_not(kernel):
    assert CHRF(normalize="NFKC").sentence_score("ﬁne ２", "fine 2").score == 100
    assert CHRF(normalize="NFC").sentence_score("ﬁne ２", "fine 2").score < 100


def test_normalization_comes_before_lowercasing_and_leaves_the_inputs_alone(kernel):
    hypotheses, references = ["ÅNGSTRÖM"], [unicodedata.normalize("NFD", "ångström")]
    metric = CHRF(lowercase=True, normalize="NFC")
    assert metric.corpus_score(hypotheses, references).score == 100
    assert hypotheses == ["ÅNGSTRÖM"] and references == [unicodedata.normalize("NFD", "ångström")]


def test_the_signature_records_it_and_the_contracts_output_does_not_change():
    plain, normalized = CHRF(word_order=2), CHRF(word_order=2, normalize="NFC")
    assert plain.signature == ("chrf-components:1.0.0|chrF2++|nc:6|nw:2|space:no|case:mixed|avg:precision_recall|"
                               "hyp:all")
    assert normalized.signature == plain.signature + "|norm:NFC"
    assert normalized.as_dict() == plain.as_dict()
    report = normalized.corpus_score([PRECOMPOSED], [PRECOMPOSED]).to_dict()
    assert report == plain.corpus_score([PRECOMPOSED], [PRECOMPOSED]).to_dict()  # same keys, same numbers
    assert normalized != plain and hash(normalized) != hash(plain)


def test_counts_made_with_and_without_it_do_not_merge():
    with pytest.raises(ValueError, match="settings differ"):
        Counts.merge([CHRF(normalize="NFC").corpus_counts(["a"], ["a"]), CHRF().corpus_counts(["a"], ["a"])])


@pytest.mark.parametrize("value", ["NFD", "nfc", "", 1, True])
def test_an_unknown_form_is_an_error_naming_the_setting(value):
    with pytest.raises(InvalidInputError, match="normalize: must be one of NFC, NFKC or None"):
        CHRF(normalize=value)


def test_the_service_and_the_pipeline_have_no_such_setting():
    with pytest.raises(InvalidInputError, match="unknown key"):
        chrf_core.score({"hypotheses": ["a"], "references": ["a"], "normalize": "NFC"})
    with pytest.raises(InvalidInputError, match="unknown key"):
        CHRF.of_settings({"normalize": "NFC"})
    assert chrf_core.corpus_report([PRECOMPOSED], [DECOMPOSED], normalize="NFC").score == 100
