"""Each limit has one home, and whatever restates it elsewhere is checked against it here, so that the two cannot
drift: the C kernel's #defines against the Python limits they mirror, and spec/openapi.json against the contract
(schemas, examples, version, path and the limits its prose names). A change to either side alone fails here."""

import json
import re

from chrf_core import mbr, texts
from chrf_core.contract import INTEGER_RANGES
from support import CONTRACT, ROOT

NATIVE = ROOT / "layers" / "chrf_core" / "native"
OPENAPI = json.loads((ROOT / "spec" / "openapi.json").read_text(encoding="utf-8"))


def defined(header: str, name: str) -> int:
    """The value of `#define NAME value` in a native header (an integer literal, decimal or hex, u suffix allowed)."""
    found = re.search(rf"^#define {name} (0[xX][0-9a-fA-F]+|\d+)u?\b", (NATIVE / header).read_text(), re.MULTILINE)
    assert found, f"{header} defines no integer {name}"
    return int(found[1], 0)


def test_the_c_kernels_limits_are_the_python_limits_they_mirror():
    assert defined("kernel.h", "MAX_LENGTH") == texts.MAX_TEXT_LENGTH  # code points of one text
    assert defined("mbr.h", "MAX_THREADS") == mbr.MAX_THREADS
    assert defined("kernel.h", "MAX_ORDERS") == INTEGER_RANGES["char_order"][1] + INTEGER_RANGES["word_order"][1]


def test_the_openapi_document_restates_the_contract_and_nothing_else():
    operation = OPENAPI["paths"][CONTRACT["execute_url"]]["post"]
    assert list(OPENAPI["paths"]) == [CONTRACT["execute_url"]]
    assert OPENAPI["info"]["version"] == CONTRACT["version"]
    assert OPENAPI["components"]["schemas"]["Request"] == CONTRACT["input_schema"]
    assert OPENAPI["components"]["schemas"]["Output"] == CONTRACT["output_schema"]
    requests = operation["requestBody"]["content"]["application/json"]["examples"]
    answers = operation["responses"]["200"]["content"]["application/json"]["examples"]
    assert [example["value"] for example in requests.values()] == [example["input"] for example in CONTRACT["examples"]]
    assert [example["value"] for example in answers.values()] == [example["output"] for example in CONTRACT["examples"]]
    prose = operation["requestBody"]["description"]
    numbers = {int(number) for number in re.findall(r"\b\d{4,}\b", prose)}  # not the status codes
    assert numbers == {CONTRACT["limits"]["max_text_bytes"]}, "a limit the prose names is not the contract's"
