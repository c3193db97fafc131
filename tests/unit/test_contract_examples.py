import json

import chrf_core
import jsonschema
import pytest
from support import CONTRACT, CONTRACT_PATH, SHARED_CONTRACT_PATH


@pytest.mark.parametrize("example", CONTRACT["examples"], ids=lambda e: json.dumps(e["input"]))
def test_contract_example_output_is_reproduced_byte_for_byte(example):
    output = chrf_core.score(example["input"])
    assert json.dumps(output) == json.dumps(example["output"])
    jsonschema.validate(output, CONTRACT["output_schema"])


def test_repository_copy_of_contract_matches_shared_spec():
    if not SHARED_CONTRACT_PATH.exists():
        pytest.skip("../shared is not beside this clone")
    assert CONTRACT_PATH.read_bytes() == SHARED_CONTRACT_PATH.read_bytes()


def test_popovic_english_example_matches_published_chrf_plus_plus_document_score():
    """chrF++.py reports 54.9482 (c6+w2, beta 2, per-order F averaging) for its English example files."""
    from support import ROOT

    data = ROOT / "tests" / "data" / "popovic"
    hypotheses = (data / "example.hyp.en").read_text(encoding="utf-8").splitlines()
    references = (data / "example.ref.en").read_text(encoding="utf-8").splitlines()
    output = chrf_core.score(
        {"hypotheses": hypotheses, "references": references, "word_order": 2, "averaging": "per_order_f"}
    )
    assert output["score"].startswith("54.9482")


def test_the_layers_constants_are_the_contracts():
    assert CONTRACT["version"] == chrf_core.contract.VERSION and CONTRACT["id"] == chrf_core.contract.TOOL
    assert CONTRACT["execute_url"] == chrf_core.contract.EXECUTE_PATH
    assert CONTRACT["limits"]["max_segments"] == chrf_core.MAX_SEGMENTS
    assert CONTRACT["limits"]["max_text_bytes"] == chrf_core.MAX_TEXT_BYTES
    properties = CONTRACT["input_schema"]["properties"]
    assert tuple(properties) == chrf_core.contract.REQUEST_KEYS
    assert list(chrf_core.contract.AVERAGINGS) == properties["averaging"]["enum"]
    from chrf_core.contract import INTEGER_RANGES

    for key, (low, high) in INTEGER_RANGES.items():
        assert (properties[key]["minimum"], properties[key]["maximum"]) == (low, high)
    assert chrf_core.score({"hypotheses": ["a"], "references": ["a"]})["char_order"] == chrf_core.CHRF().char_order
