"""`sam validate --lint` and `sam build` as a SAM user types them, exactly as docs/deploy-and-pipelines.md shows them:
from a copy of the project folder, with .venv/bin first on PATH (the `sam` make setup-sam puts there) and nothing
else set up by hand. pip's index is replaced by the wheelhouse make wheelhouse filled (the same packages, no network:
tests reach only 127.0.0.1); the SAM CLI is told not to ask PyPI for a newer version of itself."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import FUNCTIONS_WHEELHOUSE as WHEELHOUSE
from support import ROOT, documented_block, project_copy, sam_build_environment

BIN = Path(sys.executable).parent
MARKER = ("<!-- not run by the suite: it needs the SAM CLI (make setup-sam); tests/template/test_sam_build.py runs "
          "it -->")
REQUIRE = os.environ.get("CHRF_REQUIRE_BUILD") == "1"
LAYER_SOURCE = ROOT / "layers" / "chrf_core" / "chrf_core"
MAX_LAYER_LINES = 2800  # issue 64: the layer ships the contract's scorer, not the engines (3,802 lines before)
ENGINE_IMPORT = re.compile(r"^\s*(?:import|from)\s+(?:torch|torchmetrics|ray|pyspark|dask|pyarrow|pandas|mbrs)\b",
                           re.MULTILINE)


def test_sam_validate_and_sam_build_work_as_the_docs_show_them(tmp_path):
    missing = [what for what, there in (("the project's sam (make setup-sam)", (BIN / "sam").exists()),
                                        ("the functions' wheelhouse (make wheelhouse)", WHEELHOUSE.is_dir()))
               if not there]
    if missing:
        (pytest.fail if REQUIRE else pytest.skip)(f"sam build as typed: no {' and no '.join(missing)}")
    commands = documented_block("docs/deploy-and-pipelines.md", MARKER)
    assert [command for command in commands if command.startswith("sam ")] == ["sam validate --lint", "sam build"]
    project = tmp_path / "project"
    project_copy(project)
    environment = sam_build_environment(tmp_path)
    for command in commands:
        if not command.startswith("sam "):
            continue  # the set-up: make setup-sam and . .venv/bin/activate, which this environment stands for
        done = subprocess.run(command, shell=True, cwd=project, env=environment, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"$ {command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    built = project / ".aws-sam" / "build"
    layer = built / "ChrfCoreLayer" / "python" / "chrf_core"
    names = ("_kernel.abi3.so", "_kernel.cpython-313-x86_64-linux-gnu.so")
    kernels = {name: (layer / name).read_bytes() for name in names}
    assert [(data[:4], int.from_bytes(data[18:20], "little")) for data in kernels.values()] == [
        (b"\x7fELF", 183), (b"\x7fELF", 62)]  # EM_AARCH64, EM_X86_64: one layer for either Architecture
    shipped = sorted(layer.rglob("*.py"))  # the contract's scorer, and not the engines' wing
    assert {path.name for path in shipped} == {path.name for path in LAYER_SOURCE.glob("*.py")}
    assert not (layer / "engines").exists() and "engines" not in {path.parent.name for path in shipped}
    assert sum(len(path.read_text(encoding="utf-8").splitlines()) for path in shipped) <= MAX_LAYER_LINES
    assert [path.name for path in shipped if ENGINE_IMPORT.search(path.read_text(encoding="utf-8"))] == []
    for function in ("ChrfComponentsFunction", "ScoreBatchFunction", "MergeReportFunction"):
        assert (built / function / "aws_lambda_powertools").is_dir() and (built / function / "app.py").is_file()
    for name, data in kernels.items():
        same_build = ROOT / ".aws-sam" / "build" / "ChrfCoreLayer" / "python" / "chrf_core" / name
        if same_build.exists():  # make build is this same command in the project folder: the same bytes
            assert same_build.read_bytes() == data, name
