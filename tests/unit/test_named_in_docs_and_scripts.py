"""Every ``chrf_core.NAME`` (or ``chrf_core.module.NAME``) that the README, docs/, .ci/run, the Makefile and the
suite's scripts write out exists: a renamed or removed name cannot linger where it is only read when something
fails (.ci/run named ``chrf_core.KERNEL_ERROR``, which chrf_core does not export)."""

import importlib
import re

import chrf_core
import pytest
from support import ROOT, native_kernel_or_skip

WHERE = ["README.md", ".ci/run", "Makefile", *[f"docs/{path.name}" for path in sorted((ROOT / "docs").glob("*.md"))],
         "bench/benchmark.py", "bench/worst_case_counts.py", "tests/native/sanitize.py"]
DOTTED = re.compile(r"\bchrf_core((?:\.[A-Za-z_][A-Za-z_0-9]*)+)")


def named():
    found = set()
    for relative in WHERE:
        for match in DOTTED.finditer((ROOT / relative).read_text(encoding="utf-8")):
            found.add((relative, "chrf_core" + match.group(1)))
    return sorted(found)


def resolves(dotted):
    """Whether ``dotted`` names something: attributes from chrf_core down, importing submodules as needed."""
    value, path = chrf_core, "chrf_core"
    for part in dotted.split(".")[1:]:
        path += "." + part
        if hasattr(value, part):
            value = getattr(value, part)
            continue
        try:
            value = importlib.import_module(path)
        except ModuleNotFoundError as error:  # the module is there if what is missing is its engine (torch)
            return bool(error.name) and not (error.name == path or error.name.startswith("chrf_core"))
        except ImportError:
            return False
    return True


def test_the_scan_finds_the_names_it_is_meant_to_check():
    names = {name for _, name in named()}
    assert {"chrf_core.CHRF", "chrf_core.KERNEL", "chrf_core.kernel.KERNEL_ERROR"} <= names
    assert not resolves("chrf_core.KERNEL_ERROR_THAT_IS_NOT_THERE")
    assert not resolves("chrf_core.no_such_module.NAME")


@pytest.mark.parametrize(("where", "name"), named())
def test_a_name_written_out_exists(where, name):
    if name.startswith("chrf_core.kernel.NATIVE."):
        native_kernel_or_skip()
    assert resolves(name), f"{where} names {name}, which does not exist"
