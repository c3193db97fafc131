"""The distributions `make dist` builds, installed as a researcher installs them: into fresh virtual environments
whose PATH holds no compiler, from the local wheelhouse only (`make wheelhouse`; no network).

* the x86_64 wheel loads its native kernel, and its command line and Python API give the host's numbers;
* the aarch64 wheel, installed by pip for that platform, loads its native kernel in Debian's arm64 Python 3.13
  under qemu (as tests/template/test_arm64_layer.py runs the Lambda layer) and gives the same numbers (its
  double-double products use the fused multiply-add that x86_64's baseline lacks: the same bits, checked here);
* the sdist, with no compiler to build the kernel, installs, says once that it counts in Python, and gives the same
  numbers.

With CHRF_REQUIRE_BUILD=1 (make test) a missing distribution fails the test; with CHRF_REQUIRE_TOOLS=1 (CI) so does
a missing qemu or arm64 Python.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import chrf_core
import pytest
from payloads import real_pairs
from support import ROOT, contract_part

DIST = ROOT / "dist"
WHEELHOUSE = ROOT / ".cache" / "wheelhouse"
ARM64_PYTHON = ROOT / ".cache" / "arm64-python"
REQUIRE_BUILD = os.environ.get("CHRF_REQUIRE_BUILD") == "1"
REQUIRE_TOOLS = os.environ.get("CHRF_REQUIRE_TOOLS") == "1"

SCRIPT = """
import json, platform, sys
sys.path[:0] = sys.argv[2:]
import chrf_core
hypotheses, references = json.load(open(sys.argv[1], encoding="utf-8"))
print(json.dumps({
    "machine": platform.machine(), "kernel": chrf_core.KERNEL, "module": chrf_core.__file__,
    "report": chrf_core.CHRF(word_order=2).corpus_score(hypotheses, references).to_dict(),
    "segments": [str(score) for score in
                 chrf_core.CHRF(lowercase=True).segment_scores(hypotheses, references, exact=True)],
    "pairwise": chrf_core.CHRF(char_order=4, word_order=1).pairwise(hypotheses[:12], references[:12]).tolist(),
    "samples": chrf_core.CHRF(word_order=2).pairwise(hypotheses[:40], hypotheses[:40]).tolist(),
    "aggregate": chrf_core.CHRF().aggregate(hypotheses, references).tolist(),
}))
"""


def distribution(pattern):
    found = sorted(DIST.glob(pattern))
    if not found or not WHEELHOUSE.is_dir():
        (pytest.fail if REQUIRE_BUILD else pytest.skip)(f"{DIST / pattern} and {WHEELHOUSE} (make dist wheelhouse)")
    return found[-1]


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    pairs = real_pairs()
    path = tmp_path_factory.mktemp("texts") / "texts.json"
    path.write_text(json.dumps([[h for h, _ in pairs], [r for _, r in pairs]]), encoding="utf-8")
    return path


def expected(texts):
    hypotheses, references = json.loads(texts.read_text(encoding="utf-8"))
    return {
        "report": chrf_core.CHRF(word_order=2).corpus_score(hypotheses, references).to_dict(),
        "segments": [str(score) for score in
                     chrf_core.CHRF(lowercase=True).segment_scores(hypotheses, references, exact=True)],
        "pairwise": chrf_core.CHRF(char_order=4, word_order=1).pairwise(hypotheses[:12], references[:12]).tolist(),
        "samples": chrf_core.CHRF(word_order=2).pairwise(hypotheses[:40], hypotheses[:40]).tolist(),
        "aggregate": chrf_core.CHRF().aggregate(hypotheses, references).tolist(),
    }


def fresh_environment(folder):
    """A new virtual environment, and the environment variables of a shell whose PATH has no compiler on it."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True, timeout=300)
    variables = {"PATH": str(folder / "bin"), "HOME": str(folder), "LANG": "C.UTF-8", "PIP_NO_INPUT": "1",
                 "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for compiler in ("cc", "gcc", "clang", "zig"):
        assert shutil.which(compiler, path=variables["PATH"]) is None
    return folder / "bin", variables


def install_fresh_and_run(tmp_path, texts, pattern):
    """The distribution installed by pip into a fresh environment, then the script run there."""
    target = distribution(pattern)
    bin_folder, variables = fresh_environment(tmp_path / "venv")
    installed = subprocess.run([str(bin_folder / "python"), "-m", "pip", "install", "--no-index", "--find-links",
                                str(WHEELHOUSE), str(target)], capture_output=True, text=True, env=variables,
                               timeout=600)
    assert installed.returncode == 0, installed.stderr
    return bin_folder, variables, run_script(bin_folder / "python", texts, tmp_path, variables)


def run_script(python, texts, folder, variables, *prefix_and_paths):
    script = folder / "script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    prefix, paths = (prefix_and_paths[0], prefix_and_paths[1:]) if prefix_and_paths else ([], ())
    return subprocess.run([*prefix, str(python), "-I", str(script), str(texts), *map(str, paths)],
                          capture_output=True, text=True, env=variables, timeout=900, cwd=folder)


def test_the_wheels_need_numpy_alone_and_offer_each_engine_as_an_extra():
    import email
    import zipfile

    for wheel in [distribution("*manylinux_2_17_x86_64.whl"), distribution("*manylinux_2_17_aarch64.whl")]:
        with zipfile.ZipFile(wheel) as archive:
            metadata = email.message_from_bytes(archive.read(next(name for name in archive.namelist()
                                                                  if name.endswith(".dist-info/METADATA"))))
            modules = {name.removeprefix("chrf_core/") for name in archive.namelist() if name.startswith("chrf_core/")}
        requires = metadata.get_all("Requires-Dist")
        assert [line for line in requires if "extra ==" not in line] == ["numpy>=1.24"]
        assert set(metadata.get_all("Provides-Extra")) == {"aws", "arrow", "ray", "spark", "dask", "torch"}
        extras = {extra: sorted(line.split(";")[0].strip() for line in requires if f'extra == "{extra}"' in line)
                  for extra in ("arrow", "ray", "spark", "dask", "torch")}
        assert extras == {"arrow": ["pyarrow>=14"], "ray": ["pyarrow>=14", "ray[data]>=2.44"],
                          "spark": ["pyarrow>=14", "pyspark>=4.1"], "dask": ["dask[dataframe]>=2025.1", "pyarrow>=14"],
                          "torch": ["torchmetrics>=1.0"]}
        assert {f"engines/{name}.py" for name in ("arrow", "ray", "spark", "dask", "torchmetrics", "mbrs",
                                                  "statistics", "relay")} <= modules  # the engines' wing, in the wheel


def test_the_x86_64_wheel_installs_without_a_compiler_and_counts_natively(tmp_path, texts):
    bin_folder, variables, completed = install_fresh_and_run(tmp_path, texts, "*-cp311-abi3-manylinux_2_17_x86_64.whl")
    assert completed.returncode == 0 and completed.stderr == "", completed.stderr
    result = json.loads(completed.stdout)
    assert result.pop("kernel") == "native" and result.pop("module").startswith(str(tmp_path / "venv"))
    assert result.pop("machine") == "x86_64" and result == expected(texts)

    hypotheses, references = json.loads(texts.read_text(encoding="utf-8"))
    (tmp_path / "hyp").write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    (tmp_path / "ref").write_text("\n".join(references) + "\n", encoding="utf-8")
    score = subprocess.run([str(bin_folder / "chrf-components"), "score", "hyp", "ref", "--word-order", "2", "--json"],
                           capture_output=True, text=True, env=variables, cwd=tmp_path, timeout=120)
    assert score.returncode == 0 and contract_part(json.loads(score.stdout)) == expected(texts)["report"], score.stderr
    serve = subprocess.run([str(bin_folder / "chrf-components"), "serve"], capture_output=True, text=True,
                           env=variables, cwd=tmp_path, timeout=120)
    assert serve.returncode == 2 and serve.stdout == ""
    assert serve.stderr.count("\n") == 1 and "pip install 'chrf-components[aws]'" in serve.stderr


def test_the_x86_64_wheel_with_aws_serves_the_service_and_your_own_machines_from_an_empty_folder(tmp_path):
    """`pip install 'chrf-components[aws]'` carries what serve, invoke and pipeline run --local run: the template,
    the functions and the state machine (on 652250a each stopped at "no template.yaml")."""
    import boto3
    from processes import serving_process

    target = distribution("*-cp311-abi3-manylinux_2_17_x86_64.whl")
    bin_folder, variables = fresh_environment(tmp_path / "venv")
    installed = subprocess.run([str(bin_folder / "python"), "-m", "pip", "install", "--find-links", str(WHEELHOUSE),
                                f"{target}[aws]"], capture_output=True, text=True, env=variables, timeout=900)
    assert installed.returncode == 0, installed.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "request.json").write_text(json.dumps({"hypotheses": ["aa"], "references": ["ab"], "beta": 3}))
    invoked = subprocess.run([str(bin_folder / "chrf-components"), "invoke", "request.json"], capture_output=True,
                             text=True, env=variables, cwd=empty, timeout=120)
    assert invoked.returncode == 0 and json.loads(invoked.stdout)["score"] == "25.000000", invoked.stderr
    definition = (ROOT / "examples/evaluation-pipeline/evaluation.asl.json").read_text(encoding="utf-8")
    with serving_process(tmp_path / "serve.log", cwd=empty, env=variables, python=bin_folder / "python") as (_, port):
        sfn = boto3.session.Session(aws_access_key_id="any", aws_secret_access_key="any", region_name="us-east-1") \
            .client("stepfunctions", endpoint_url=f"http://127.0.0.1:{port}")
        assert [machine["name"] for machine in sfn.list_state_machines()["stateMachines"]] == \
            ["local-corpus-pipeline"]
        arn = sfn.create_state_machine(name="own", definition=definition,
                                       roleArn="arn:aws:iam::123456789012:role/local")["stateMachineArn"]
        started = sfn.start_execution(stateMachineArn=arn, input=json.dumps(
            {"systems": {"baseline": ["the cat"], "candidate": ["a cat"]}, "references": ["the cat"],
             "word_order": 2}))
        deadline = time.monotonic() + 120
        while (described := sfn.describe_execution(executionArn=started["executionArn"]))["status"] == "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert described["status"] == "SUCCEEDED", described
        assert json.loads(described["output"])["best"] == "baseline"
    assert not list(empty.glob("*.yaml"))  # nothing written into the folder it ran in


def test_the_aarch64_wheel_loads_its_native_kernel_in_an_arm64_python_under_qemu(tmp_path, texts):
    wheel = distribution("*-cp311-abi3-manylinux_2_17_aarch64.whl")
    qemu, python = shutil.which("qemu-aarch64-static"), ARM64_PYTHON / "usr" / "bin" / "python3.13"
    if not qemu or not python.exists():
        (pytest.fail if REQUIRE_TOOLS else pytest.skip)("qemu-aarch64-static and an arm64 Python (make arm64-python)")
    target = tmp_path / "site-packages"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(WHEELHOUSE), "--only-binary=:all:",
         "--platform", "manylinux_2_17_aarch64", "--platform", "manylinux_2_28_aarch64", "--python-version", "3.13",
         "--implementation", "cp", "--target", str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    completed = run_script(python, texts, tmp_path, {"LANG": "C.UTF-8"},
                           [qemu, "-cpu", "neoverse-n1", "-L", str(ARM64_PYTHON)], target)
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result.pop("kernel") == "native" and result.pop("module").startswith(str(target))
    assert result.pop("machine") == "aarch64" and result == expected(texts)


def test_the_sdist_without_a_compiler_installs_and_says_once_that_it_counts_in_python(tmp_path, texts):
    _, _, completed = install_fresh_and_run(tmp_path, texts, "*.tar.gz")
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.splitlines() == [
        "chrf_core: native kernel not used, counting in Python: not built (no _kernel extension beside chrf_core)"]
    result = json.loads(completed.stdout)
    assert result.pop("kernel") == "python" and result.pop("module").startswith(str(tmp_path / "venv"))
    result.pop("machine")
    assert result == expected(texts)


def test_building_again_gives_the_same_bytes(tmp_path):
    """make dist again, into another folder (the wheel compiled in another temporary folder): the sdist and the
    x86_64 wheel are byte-identical to those make test built."""
    import hashlib
    import tarfile

    sdist, wheel = distribution("*.tar.gz"), distribution("*-cp311-abi3-manylinux_2_17_x86_64.whl")
    commit_time = subprocess.run(["git", "log", "-1", "--format=%ct"], capture_output=True, text=True, cwd=ROOT)
    with tarfile.open(sdist) as archive:
        if commit_time.returncode or archive.getmembers()[0].mtime != int(commit_time.stdout):
            (pytest.fail if REQUIRE_BUILD else pytest.skip)("dist/ is not from this commit (make dist)")
    again = tmp_path / "dist"
    built = subprocess.run(["make", "-s", "dist", f"DIST={again}", "WHEEL_ARCHITECTURES=x86_64"], cwd=ROOT,
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-2000:]
    for original in (sdist, wheel):
        digests = {hashlib.sha256(path.read_bytes()).hexdigest() for path in (original, again / original.name)}
        assert len(digests) == 1, original.name
