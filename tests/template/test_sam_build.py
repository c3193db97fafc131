"""`sam validate --lint` and `sam build` as a SAM user types them, exactly as docs/deploy-and-pipelines.md shows them:
from a copy of the project folder, with .venv/bin first on PATH (the `sam` make setup-sam puts there) and nothing
else set up by hand. pip's index is replaced by the wheelhouse make wheelhouse filled (the same packages, no network:
tests reach only 127.0.0.1); the SAM CLI is told not to ask PyPI for a newer version of itself."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, documented_block, sam_cli_environment

BIN = Path(sys.executable).parent
WHEELHOUSE = ROOT / ".cache" / "wheelhouse-functions"
MARKER = ("<!-- not run by the suite: it needs the SAM CLI (make setup-sam); tests/template/test_sam_build.py runs "
          "it -->")
REQUIRE = os.environ.get("CHRF_REQUIRE_BUILD") == "1"


def project_copy(target):
    """The project's tracked files (what a fresh clone holds), and its .venv-sam as make setup-sam made it."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    (target / ".venv-sam").symlink_to(ROOT / ".venv-sam")


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
    environment = {"HOME": str(tmp_path), "PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin", "LANG": "C.UTF-8",
                   "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE), **sam_cli_environment(tmp_path / "sam")}
    for command in commands:
        if not command.startswith("sam "):
            continue  # the set-up: make setup-sam and . .venv/bin/activate, which this environment stands for
        done = subprocess.run(command, shell=True, cwd=project, env=environment, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"$ {command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    built = project / ".aws-sam" / "build"
    kernel = (built / "ChrfCoreLayer" / "python" / "chrf_core" / "_kernel.abi3.so").read_bytes()
    assert kernel[:4] == b"\x7fELF" and int.from_bytes(kernel[18:20], "little") == 183  # EM_AARCH64
    for function in ("ChrfComponentsFunction", "ScoreBatchFunction", "MergeReportFunction"):
        assert (built / function / "aws_lambda_powertools").is_dir() and (built / function / "app.py").is_file()
    same_build = ROOT / ".aws-sam" / "build" / "ChrfCoreLayer" / "python" / "chrf_core" / "_kernel.abi3.so"
    if same_build.exists():  # make build is this same command in the project folder: the same bytes
        assert same_build.read_bytes() == kernel
