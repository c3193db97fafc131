"""docs/at-scale.md runs as written: every Python block, as its own program from the clone's folder with the engines'
Python, prints exactly the text block that follows it. The engines stay on this machine's loopback: Ray in its
single-machine mode (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0) and Spark with SPARK_LOCAL_IP, both documented there."""

import os
import re
import subprocess
import sys

import pytest
from conftest import need
from support import ROOT

PAGE = ROOT / "docs" / "at-scale.md"
EXAMPLE = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.DOTALL)
EXAMPLES = EXAMPLE.findall(PAGE.read_text(encoding="utf-8"))
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "SPARK_LOCAL_IP": "127.0.0.1"}


def test_the_page_has_an_example_with_its_output_per_engine_with_groups_errors_and_a_lightning_loop():
    code = "\n".join(program for program, _ in EXAMPLES)
    assert len(EXAMPLES) == 5 and PAGE.read_text(encoding="utf-8").count("```python") == 5
    for module in ("arrow", "ray", "spark", "dask", "torchmetrics"):
        assert f"from chrf_core.engines.{module} import" in code or \
            f"from chrf_core.engines import {module} as chrf_{module}" in code or \
            f"from chrf_core.engines import {module}\n" in code, module
    assert code.count("by=") >= 4 and "pl.Trainer(" in code and 'self.log("chrf", self.chrf' in code
    assert code.count("except ") >= 2  # a forged statistics row and a column of lists refused, as they print


@pytest.mark.parametrize(("program", "output"), EXAMPLES, ids=[f"example {k + 1}" for k in range(len(EXAMPLES))])
def test_each_example_prints_what_the_page_shows(program, output):
    need("pyarrow")
    result = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, **LOOPBACK})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == output


def test_the_readme_links_the_page():
    assert "(docs/at-scale.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
