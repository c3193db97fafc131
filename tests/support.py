"""Shared test material: the contract (the repo's copy of it) and text strategies over real Unicode."""

import json
import os
import pathlib

import pytest
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONTRACT_PATH = ROOT / "spec" / "chrf-components.json"
CONTRACT = json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))
SHARED_CONTRACT_PATH = ROOT.parent / "shared" / "spec" / "chrf-components.json"

# Every whitespace code point of the contract, and near misses that are not whitespace there.
CONTRACT_WHITESPACE = (
    [chr(c) for c in range(0x09, 0x0E)]
    + [chr(c) for c in range(0x1C, 0x20)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)
NEAR_MISS_WHITESPACE = ["\u200b", "\ufeff", "\u180e", "\u2060", "\u00ad"]
INTERESTING = (
    list("abcab")
    + ["é", "e\u0301", "\u0308", "\u0301", "😀", "👍🏽", "\U0001f1fa\U0001f1f8", "中", "文", "中文"]
    + ["ש", "ל", "ו", "ם", "م", "ر", "ح", "ب", "ا", "\u200f"]
    + list(".,()!?\"'-:;…") + ["«", "»", "。", "،", "...", "(hi)"]
    + ["İ", "Σ", "σ", "ς", "ß", "ẞ", "I", "i", "A", "ΑΣ"]
)
SEGMENT_TEXT = st.one_of(
    st.lists(st.sampled_from(INTERESTING + CONTRACT_WHITESPACE + NEAR_MISS_WHITESPACE), max_size=14).map("".join),
    st.lists(st.sampled_from(["the", "cat", "sat", "(hi)", "...", "a", "mat.", "Σ", "ß", " ", " ", "\u3000"]),
             max_size=10).map("".join),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
)


@st.composite
def settings_strategy(draw):
    char_order = draw(st.integers(0, 10))
    word_order = draw(st.integers(1 if char_order == 0 else 0, 4))
    return {
        "char_order": char_order,
        "word_order": word_order,
        "beta": draw(st.integers(1, 16)),
        "lowercase": draw(st.booleans()),
        "include_whitespace": draw(st.booleans()),
        "averaging": draw(st.sampled_from(["precision_recall", "per_order_f"])),
    }


@st.composite
def requests_strategy(draw, max_segments=6):
    """Valid contract requests; settings keys are sometimes left out so defaults are exercised."""
    pairs = draw(st.lists(st.tuples(SEGMENT_TEXT, SEGMENT_TEXT), min_size=1, max_size=max_segments))
    settings = draw(settings_strategy())
    kept = draw(st.sets(st.sampled_from(sorted(settings))))
    request = {"hypotheses": [h for h, _ in pairs], "references": [r for _, r in pairs]}
    request.update({key: settings[key] for key in kept})
    if "char_order" in request and "word_order" not in request and request["char_order"] == 0:
        request["word_order"] = settings["word_order"]
    return request


def native_kernel_or_skip():
    """Skip a test of the native kernel where it does not run: the run that switches it off (CHRF_CORE_NATIVE=0,
    where the test does not belong), or a machine where it did not build (a skip CI turns into a failure)."""
    import chrf_core

    if os.environ.get("CHRF_CORE_NATIVE") == "0":
        pytest.skip("not in this run: the native kernel is switched off (CHRF_CORE_NATIVE=0)")
    if "native" not in chrf_core.kernel.KERNELS:
        pytest.skip(f"the native kernel is not built: {chrf_core.kernel.KERNEL_ERROR}")


def sam_cli_environment(folder):
    """Environment variables for the SAM CLI in tests: no telemetry, and its settings in ``folder`` with a version
    check recorded as just made, so that it does not ask PyPI for a newer version (tests reach only 127.0.0.1)."""
    import time

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metadata.json").write_text(json.dumps({"lastVersionCheck": time.time()}), encoding="utf-8")
    return {"SAM_CLI_TELEMETRY": "0", "__SAM_CLI_APP_DIR": str(folder)}


def project_copy(target):
    """The project's tracked files (what a fresh clone holds), and its .venv-sam as make setup-sam made it."""
    import shutil
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    (target / ".venv-sam").symlink_to(ROOT / ".venv-sam")


FUNCTIONS_WHEELHOUSE = ROOT / ".cache" / "wheelhouse-functions"  # make wheelhouse: what sam build installs, offline


def sam_build_environment(home):
    """What `sam build` as a user types it needs here: this .venv/bin first on PATH (where make setup-sam puts
    `sam`), pip's index replaced by the wheelhouse make wheelhouse filled (the same packages, no network), and
    the SAM CLI's settings in ``home`` (no version check against PyPI)."""
    import sys

    bin_folder = pathlib.Path(sys.executable).parent
    return {"HOME": str(home), "PATH": f"{bin_folder}{os.pathsep}/usr/bin{os.pathsep}/bin", "LANG": "C.UTF-8",
            "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(FUNCTIONS_WHEELHOUSE), **sam_cli_environment(home / "sam")}


def documented_block(page, marker):
    """The commands of the ```sh block that follows ``marker`` in a documentation page (comments and blank lines
    left out): what a test runs where the page says it does."""
    import re

    text = (ROOT / page).read_text(encoding="utf-8")
    found = re.search(re.escape(marker) + r"\s*\n```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert found, f"{page}: no ```sh block after {marker!r}"
    return [line.split("  #", 1)[0].strip() for line in found.group(1).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def contract_part(document):
    """Of a JSON document the command line prints (a report with what the command adds: signature, files, ...),
    the contract's output object alone, in its key order."""
    keys = CONTRACT["output_schema"]["properties"]
    return {key: value for key, value in document.items() if key in keys}


def finished_execution(stepfunctions, arn, seconds=60):
    """A Step Functions execution described once it is no longer RUNNING (polled; failing past `seconds`)."""
    import time

    deadline = time.monotonic() + seconds
    while (described := stepfunctions.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, described
        time.sleep(0.05)
    return described
