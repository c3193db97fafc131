"""template.yaml: what it declares, cfn-lint, the SAM translator (sam validate), and the built artifact itself."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from support import CONTRACT, ROOT

from chrf_components_local import template as sam_template

TEMPLATE = sam_template.load_template(ROOT / "template.yaml")
RESOURCES = TEMPLATE["Resources"]
BUILD_DIR = ROOT / ".aws-sam" / "build"
SAM = ROOT / ".venv-sam" / "bin" / "sam"
REQUIRED = os.environ.get("CHRF_REQUIRE_BUILD") == "1"  # set by `make test`, which builds first


def needs(path: pathlib.Path, what: str) -> None:
    if not path.exists():
        if REQUIRED:
            pytest.fail(f"{what} is missing: {path}")
        pytest.skip(f"{what} is missing (run `make test` or `make build`)")


def test_layer_is_built_by_its_makefile_for_python313_on_both_of_lambdas_architectures():
    layer = RESOURCES["ChrfCoreLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": "arm64"}
    content = ROOT / layer["Properties"]["ContentUri"]
    assert (content / "chrf_core" / "__init__.py").exists() and (content / "native" / "counting.c").exists()
    assert "build-ChrfCoreLayer:" in (content / "Makefile").read_text(encoding="utf-8")
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64", "x86_64"]
    assert layer["Properties"]["CompatibleRuntimes"] == [TEMPLATE["Globals"]["Function"]["Runtime"]]


def test_function_runs_python313_on_arm64_unless_the_architecture_parameter_says_x86_64():
    function = RESOURCES["ChrfComponentsFunction"]["Properties"]
    globals_function = TEMPLATE["Globals"]["Function"]
    assert globals_function["Runtime"] == "python3.13"
    assert globals_function["Architectures"] == [{"Ref": "Architecture"}]
    parameter = TEMPLATE["Parameters"]["Architecture"]
    assert parameter["Default"] == "arm64" and parameter["AllowedValues"] == ["arm64", "x86_64"]
    assert all("Architectures" not in resource["Properties"] for resource in RESOURCES.values()
               if resource["Type"] == "AWS::Serverless::Function")  # the Globals' one rule for every function
    assert globals_function["Layers"] == [{"Ref": "ChrfCoreLayer"}]
    assert function["Handler"] == "app.lambda_handler"
    route = function["Events"]["Execute"]["Properties"]
    assert route["Method"] == "POST" and route["Path"] == CONTRACT["execute_url"]
    assert route["ApiId"] == {"Ref": "HttpApi"}


def test_http_api_requires_iam_authorization_has_throttling_cors_and_access_logs():
    api = RESOURCES["HttpApi"]["Properties"]
    assert api["Auth"]["DefaultAuthorizer"] == "AWS_IAM" and api["Auth"]["EnableIamAuthorizer"] is True
    assert set(api["DefaultRouteSettings"]) == {"ThrottlingBurstLimit", "ThrottlingRateLimit"}
    assert "POST" in api["CorsConfiguration"]["AllowMethods"]
    assert api["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": "HttpApiAccessLogGroup.Arn"}
    json.loads(api["AccessLogSettings"]["Format"])  # the access log format is one JSON object


def test_every_log_group_has_retention_and_outputs_name_endpoint_function_and_layer():
    groups = [r for r in RESOURCES.values() if r["Type"] == "AWS::Logs::LogGroup"]
    assert groups and all("RetentionInDays" in g["Properties"] for g in groups)
    assert {"ExecuteUrl", "FunctionArn", "LayerArn"} <= set(TEMPLATE["Outputs"])
    assert CONTRACT["execute_url"] in TEMPLATE["Outputs"]["ExecuteUrl"]["Value"]["Fn::Sub"]


def test_handler_module_is_loaded_from_the_templates_code_uri_and_layer(handler):
    module = sys.modules[handler.__module__]
    import chrf_core

    code_dir, _, layer_dirs = sam_template.function_paths(TEMPLATE, "ChrfComponentsFunction", ROOT)
    assert code_dir in pathlib.Path(module.__file__).resolve().parents
    assert layer_dirs[0] in pathlib.Path(chrf_core.__file__).resolve().parents


def test_the_tests_load_every_function_from_its_code_uri_handler_and_layer_as_the_template_declares():
    import lambda_handlers

    assert set(lambda_handlers.HANDLERS) == set(sam_template.function_names(TEMPLATE))
    for name, handler_name in lambda_handlers.HANDLERS.items():
        code_dir, declared, layer_dirs = sam_template.function_paths(TEMPLATE, name, ROOT)
        assert (code_dir, declared, layer_dirs) == (lambda_handlers.CODE, handler_name, [lambda_handlers.LAYER])


def test_the_emulator_routes_exactly_the_templates_http_api_events():
    from chrf_components_local.http_api import Route, routes

    assert routes(TEMPLATE) == [Route("POST", CONTRACT["execute_url"], "ChrfComponentsFunction")]


def test_cfn_lint_reports_no_errors_or_warnings():
    from cfnlint.api import lint_all

    matches = lint_all((ROOT / "template.yaml").read_text(encoding="utf-8"))
    assert [str(m) for m in matches if m.rule.severity in ("error", "warning")] == []


def test_sam_validate_accepts_the_template_offline():
    needs(SAM, "the SAM CLI (.venv-sam)")
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}
    result = subprocess.run(
        [str(SAM), "validate", "--template-file", str(ROOT / "template.yaml"), "--region", "us-east-1"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr


def built_python() -> str:
    """The Lambda runtime's Python (3.13) when this machine has it, so the artifact is tried on its runtime."""
    pyenv_root = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv"))
    candidates = [str(p) for p in sorted(pyenv_root.glob("versions/3.13*/bin/python3.13"))]
    candidates += [shutil.which("python3.13") or ""]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return candidate
    return sys.executable


@pytest.mark.parametrize("event_name", ["http-v2-valid", "stepfunctions-task", "direct-invoke-invalid"])
def test_sam_build_artifact_imports_and_answers_like_the_source(event_name):
    function_dir, layer_dir = BUILD_DIR / "ChrfComponentsFunction", BUILD_DIR / "ChrfCoreLayer" / "python"
    needs(function_dir / "app.py", "the sam build artifact")
    assert (layer_dir / "chrf_core" / "__init__.py").exists(), "layer must land at /opt/python/chrf_core"
    event_path = ROOT / "events" / f"{event_name}.json"
    script = (
        "import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[2], sys.argv[3]]\n"
        "from chrf_components_local.answers import function_error\n"
        "from chrf_components_local.template import LambdaContext\n"
        "import app, chrf_core\n"
        "assert app.__file__.startswith(sys.argv[1]) and chrf_core.__file__.startswith(sys.argv[2])\n"
        "try:\n"
        "    result = app.lambda_handler(json.load(open(sys.argv[4], encoding='utf-8')), LambdaContext())\n"
        "except Exception as error:\n"
        "    result = function_error(type(error).__name__, str(error))\n"
        "print('RESULT ' + json.dumps(result))\n"
        "import platform; print('KERNEL', chrf_core.KERNEL, platform.machine(), sys.version_info[:2] == (3, 13))"
    )
    env = {"PATH": os.environ.get("PATH", ""), "POWERTOOLS_METRICS_DISABLED": "true", "AWS_REGION": "us-east-1"}
    completed = subprocess.run(
        [built_python(), "-I", "-B", "-c", script, str(function_dir), str(layer_dir), str(ROOT / "local"),
         str(event_path)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
    expected = json.loads((ROOT / "events" / f"{event_name}.expected.json").read_text(encoding="utf-8"))
    assert json.loads(line[len("RESULT ") :]) == expected
    kernel, machine, runtime_python = completed.stdout.splitlines()[-1].split()[1:]
    if machine == "x86_64" and runtime_python == "True":  # the layer's x86_64 kernel, as Architecture=x86_64 runs it
        assert kernel == "native"


@pytest.mark.parametrize(("logical_id", "module"), [("ScoreBatchFunction", "score_batch"),
                                                    ("MergeReportFunction", "merge_report")])
def test_sam_build_artifacts_of_the_pipeline_functions_import_their_handlers(logical_id, module):
    function_dir, layer_dir = BUILD_DIR / logical_id, BUILD_DIR / "ChrfCoreLayer" / "python"
    needs(function_dir / f"{module}.py", f"the sam build artifact of {logical_id}")
    assert RESOURCES[logical_id]["Properties"]["Handler"] == f"{module}.lambda_handler"
    # boto3 comes with the Lambda runtime, not the package: the merge function imports it only when it runs.
    script = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2], sys.argv[3]];"
        f"import {module}, score_batch;"
        "from chrf_components_local.template import LambdaContext;"
        f"assert callable({module}.lambda_handler) and {module}.__file__.startswith(sys.argv[1]);"
        "item = {'hypothesis': 'a', 'reference': 'a'};"
        "batch = {'BatchInput': {'settings': {}}, 'Items': [{'line': 0, 'item': item}]};"
        "print('RESULT', score_batch.lambda_handler(batch, LambdaContext())['counts']['orders'][0])"
    )
    env = {"PATH": os.environ.get("PATH", ""), "POWERTOOLS_METRICS_DISABLED": "true", "AWS_REGION": "us-east-1"}
    completed = subprocess.run(
        [built_python(), "-I", "-B", "-c", script, str(function_dir), str(layer_dir), str(ROOT / "local")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "RESULT [1, 1, 1]" in completed.stdout


# ---- the layer's native kernels, built for arm64 and x86_64 -----------------------------------------------------

LAYER_PACKAGE = BUILD_DIR / "ChrfCoreLayer" / "python" / "chrf_core"
LAYER_KERNEL = LAYER_PACKAGE / "_kernel.abi3.so"
# Each kernel's file name, and its ELF machine: python3.13 on x86_64 tries the tagged name before .abi3.so; on
# arm64 it never tries the x86_64 tag (tests/template/test_arm64_layer.py loads the layer there).
LAYER_KERNELS = {"_kernel.abi3.so": 183, "_kernel.cpython-313-x86_64-linux-gnu.so": 62}  # EM_AARCH64, EM_X86_64


def test_sam_build_puts_an_aarch64_and_an_x86_64_kernel_and_no_host_files_in_the_layer():
    needs(LAYER_KERNEL, "the sam build artifact of the layer")
    for name, machine in LAYER_KERNELS.items():
        data = (LAYER_PACKAGE / name).read_bytes()
        assert data[:4] == b"\x7fELF" and data[4] == 2, name  # 64-bit
        assert int.from_bytes(data[18:20], "little") == machine, name
    package = LAYER_PACKAGE
    assert sorted(p.name for p in package.iterdir() if p.suffix == ".so") == sorted(LAYER_KERNELS)
    assert not (package / "__pycache__").exists()
    assert {p.name for p in package.glob("*.py")} == {
        p.name for p in (ROOT / "layers" / "chrf_core" / "chrf_core").glob("*.py")}


@pytest.mark.parametrize("name", sorted(LAYER_KERNELS))
def test_the_layer_kernels_need_nothing_newer_than_the_runtimes_glibc_2_34(name):
    needs(LAYER_KERNEL, "the sam build artifact of the layer")
    versions = {tuple(int(part) for part in match.split(b".")) for match in __import__("re").findall(
        rb"GLIBC_([0-9]+\.[0-9]+(?:\.[0-9]+)?)", (LAYER_PACKAGE / name).read_bytes())}
    assert versions and max(versions) <= (2, 34), versions


def test_the_layer_build_is_byte_identical_from_build_to_build(tmp_path):
    needs(LAYER_KERNEL, "the sam build artifact of the layer")
    newest_source = max(path.stat().st_mtime for path in (ROOT / "layers" / "chrf_core" / "native").glob("*.[ch]"))
    if LAYER_KERNEL.stat().st_mtime < newest_source:
        (pytest.fail if REQUIRED else pytest.skip)("the built layer is older than native/: run make build")
    zig = ROOT / ".venv-sam" / "bin" / "python"
    needs(zig, "the build tools (.venv-sam, with ziglang)")
    include = subprocess.run([built_python(), str(ROOT / "layers" / "chrf_core" / "native" / "python_include.py"),
                              str(tmp_path / "include")], capture_output=True, text=True, check=True).stdout.strip()
    # Another folder, as sam build uses a fresh scratch folder each time.
    source = tmp_path / "copy"
    shutil.copytree(ROOT / "layers" / "chrf_core", source, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    env = {**os.environ, "ARTIFACTS_DIR": str(tmp_path / "out"), "ZIG": f"{zig} -m ziglang",
           "PYTHON_INCLUDE": include}
    completed = subprocess.run(["make", "-s", "-C", str(source), "build-ChrfCoreLayer"], env=env,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for name in LAYER_KERNELS:
        rebuilt = tmp_path / "out" / "python" / "chrf_core" / name
        assert rebuilt.read_bytes() == (LAYER_PACKAGE / name).read_bytes(), name
