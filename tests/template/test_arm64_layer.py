"""The layer as Lambda runs it: the `sam build` artifact, imported by an arm64 Python 3.13 under qemu.

qemu-user-static (Debian) runs Debian's arm64 python3.13 (fetched by `make arm64-python` into .cache/), with
`-cpu neoverse-n1` (Graviton2). This proves the aarch64 kernel loads in the runtime's Python version and counts
exactly what the host counts on real data; it does not measure speed, and the glibc is Debian's, not Amazon
Linux's (the glibc symbol check in test_template.py covers that). When a tool is missing the test says which;
with CHRF_REQUIRE_TOOLS=1 (CI) a missing tool fails the test instead of skipping it.
"""

import json
import os
import shutil
import subprocess

import chrf_core
import pytest
from payloads import adversarial, near_limit
from support import ROOT

LAYER = ROOT / ".aws-sam" / "build" / "ChrfCoreLayer" / "python"
ARM64_PYTHON = ROOT / ".cache" / "arm64-python"
REQUIRE_TOOLS = os.environ.get("CHRF_REQUIRE_TOOLS") == "1"
REQUIRE_BUILD = os.environ.get("CHRF_REQUIRE_BUILD") == "1"
SETTINGS = [(6, 0), (6, 2), (10, 4)]

SCRIPT = """
import json, platform, sys
sys.path.insert(0, sys.argv[1])
import chrf_core
cases = json.load(open(sys.argv[2], encoding="utf-8"))
counts = [chrf_core.counts.count_segments(c["hypotheses"], c["references"],
                                          chrf_core.CHRF.of_settings(c["settings"])).orders for c in cases]
print(json.dumps({"machine": platform.machine(), "python": platform.python_version(), "kernel": chrf_core.KERNEL,
                  "error": chrf_core.kernel.KERNEL_ERROR, "counts": counts}))
"""


def missing(what):
    if REQUIRE_TOOLS:
        pytest.fail(f"missing: {what}")
    pytest.skip(f"missing: {what}")


def cases():
    out = []
    for kind in ("real", "high overlap"):
        hypotheses, references = near_limit(kind)
        out += [{"hypotheses": hypotheses, "references": references,
                 "settings": {"char_order": c, "word_order": w, "lowercase": kind == "real"}} for c, w in SETTINGS]
    worst = adversarial()["near-identical long texts (c10 w4)"]
    out.append({"hypotheses": worst["hypotheses"], "references": worst["references"],
                "settings": {"char_order": 10, "word_order": 4}})
    return out


def test_the_built_arm64_layer_loads_its_native_kernel_and_counts_like_the_host_under_qemu(tmp_path):
    if not (LAYER / "chrf_core" / "_kernel.abi3.so").exists():
        (pytest.fail if REQUIRE_BUILD else pytest.skip)("the sam build artifact of the layer (make build)")
    qemu = shutil.which("qemu-aarch64-static")
    if not qemu:
        missing("qemu-aarch64-static (Debian package qemu-user-static: apt-get install qemu-user-static)")
    python = ARM64_PYTHON / "usr" / "bin" / "python3.13"
    if not python.exists():
        missing(f"an arm64 Python 3.13 in {ARM64_PYTHON} (make arm64-python, which needs apt-get and network)")
    data = tmp_path / "cases.json"
    data.write_text(json.dumps(cases()), encoding="utf-8")
    script = tmp_path / "count.py"
    script.write_text(SCRIPT, encoding="utf-8")
    completed = subprocess.run(
        [qemu, "-cpu", "neoverse-n1", "-L", str(ARM64_PYTHON), str(python), "-I", "-B", str(script), str(LAYER),
         str(data)],
        capture_output=True, text=True, timeout=600, env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"},
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["machine"] == "aarch64" and result["python"].startswith("3.13")
    assert result["kernel"] == "native", result["error"]
    host = [[list(t) for t in chrf_core.counts.count_segments(c["hypotheses"], c["references"],
                                                         chrf_core.CHRF.of_settings(c["settings"])).orders]
            for c in cases()]
    assert result["counts"] == host
