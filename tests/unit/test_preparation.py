"""One text preparation (preparation.prepared): Unicode normalization and lowercasing happen in one place, before either
kernel counts, for every reader of texts (the library's streams, MBR, the service's requests, the command line's
word marks); the kernels count texts exactly as given."""

import ast
import unicodedata

import chrf_core
import pytest
from chrf_core import CHRF, preparation, service
from chrf_core import kernel as kernel_module
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from support import ROOT

PACKAGE = ROOT / "layers" / "chrf_core" / "chrf_core"
CLI = ROOT / "cli" / "chrf_components_cli"


def test_the_kernels_count_texts_as_given_whatever_the_settings_say(kernel):
    lowered = CHRF(lowercase=True, normalize="NFC")
    counts = kernel_module.chosen().count(["ÅB"], [unicodedata.normalize("NFD", "åb")], lowered)
    assert counts[0][2] == 0  # no unigram matches: neither lowercased nor normalized by the kernel


def test_every_reader_prepares_the_texts_before_counting(kernel):
    hypothesis, reference = "ÅNGSTRÖM Größe", unicodedata.normalize("NFD", "ångström größe")
    metric = CHRF(word_order=2, lowercase=True, normalize="NFC")
    assert metric.sentence_score(hypothesis, reference).score == 100
    assert metric.corpus_score([hypothesis], [[reference]]).score == 100
    assert metric.segment_scores([hypothesis], [reference]).tolist() == [100.0]
    assert metric.system_counts([[hypothesis], [reference]], [reference])[0].tolist() == \
        metric.system_counts([[hypothesis], [reference]], [reference])[1].tolist()
    assert metric.pairwise([hypothesis], [reference]).tolist() == [[100.0]]
    assert metric.aggregate([hypothesis], [reference]).tolist() == [100.0]
    request = {"hypotheses": ["THE Cat"], "references": ["the cat"], "lowercase": True}
    assert service.score(request)["score"] == "100.000000"


def test_preparing_leaves_the_inputs_alone_and_a_missing_reference_missing():
    given_texts = ["ÅB", None, unicodedata.normalize("NFD", "Å")]
    prepared = preparation.prepared("references", given_texts, CHRF(lowercase=True, normalize="NFC"))
    assert prepared == ["åb", None, "å"]
    assert given_texts == ["ÅB", None, unicodedata.normalize("NFD", "Å")]
    plain = ["ÅB"]
    assert preparation.prepared("references", plain, CHRF()) is plain


@hypothesis_settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_the_command_lines_word_marks_use_the_kernels_lowercasing(text):
    """The marks' keys are the word tokens of the text lowercased as the kernels count it."""
    lowered = preparation.prepared_text("hypotheses", 0, text, None, True)
    assert chrf_core.words(text, None, True) == chrf_core.words(lowered)


def lowercasing_calls(path):
    """Where a module calls ``.lower()`` or the normalizer itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "lower":
            found.append(f"{path.name}:{node.lineno} .lower()")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "normalized_text":
            found.append(f"{path.name}:{node.lineno} normalized_text()")
    return found


@pytest.mark.parametrize("folder", [PACKAGE, CLI], ids=["layer", "command line"])
def test_texts_are_lowercased_and_normalized_in_preparation_py_alone(folder):
    """The rule has one home: no other module of the layer or the command line lowercases or normalizes a text (the
    command line's HTML marks asked the layer's words() for prepared keys; the kernels had their own lowercasing)."""
    modules = [path for path in sorted(folder.glob("*.py")) if path.name != "preparation.py"]
    found = [call for path in modules for call in lowercasing_calls(path)]
    assert found == []
