# From a fresh clone: `make run` sets up and runs the main job, `make test` sets up and runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
MBRS_VENV := .venv-mbrs
ENGINES_VENV := .venv-engines
SAM := $(SAM_VENV)/bin/sam
ARM64_PYTHON := .cache/arm64-python
# sam build runs the python3.13 builder, which needs python3.13 on PATH; pyenv keeps one here. Its headers are
# the ones the arm64 kernel is compiled against (pinned, so the layer is byte-identical from build to build).
PY313_DIR := $(shell d=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.13*/bin 2>/dev/null | tail -n 1); \
	[ -n "$$d" ] && echo "$$d" || dirname "$$(command -v python3.13 2>/dev/null || echo /nonexistent/python3.13)")
KERNEL_SOURCES := $(wildcard layers/chrf_core/native/*.c layers/chrf_core/native/*.h) layers/chrf_core/native/cflags
KERNEL_CFLAGS = $(shell grep -v '^\#' layers/chrf_core/native/cflags)  # the kernel's one list of compile flags
HOST_KERNEL := layers/chrf_core/chrf_core/_kernel.abi3.so
export AWS_DEFAULT_REGION ?= us-east-1
export AWS_REGION ?= $(AWS_DEFAULT_REGION)
export SAM_CLI_TELEMETRY := 0

.PHONY: setup setup-dev setup-sam setup-mbrs setup-engines setup-system kernel run test test-engines lint build arm64-python dist wheelhouse sam-local bench bench-counts sanitize clean

# What running needs: the runtime dependencies and the command line (with the host's native kernel).
setup: $(VENV)/.installed kernel
$(VENV)/.installed: requirements.txt pyproject.toml setup.py
	@echo "== make setup: .venv with the runtime dependencies and the command line (about half a minute) =="
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/pip install --progress-bar off --upgrade pip | grep -v '^Requirement already satisfied' || true
	$(BIN)/pip install --progress-bar off -r requirements.txt -e . | grep --line-buffered -e '^Collecting' \
		-e '^Installing collected' -e '^Successfully' || true
	@$(BIN)/python -c 'import chrf_components_cli, moto, waitress' && touch $@

# The native kernel, rebuilt in place whenever its source changes (optional: without a compiler, Python counts).
kernel: $(VENV)/.installed
	@if [ ! -f $(HOST_KERNEL) ] || [ -n "$$(find $(KERNEL_SOURCES) -newer $(HOST_KERNEL))" ]; then \
		echo "== make kernel: compiling the native kernel (C99) for this machine =="; \
		CHRF_WERROR=1 $(BIN)/python setup.py -q build_ext --inplace 2>&1 | grep -v -e '^running' -e '^copying' || true; fi

# mbrs (the MBR toolkit; PyTorch's CPU build, about 1.6 GB) in its own environment, for the tests of the chrf_core
# metric backend through mbrs-decode. A failed install is reported and leaves no environment: its tests then say so.
setup-mbrs: $(MBRS_VENV)/.installed
$(MBRS_VENV)/.installed: requirements-mbrs.txt
	@rm -rf $(MBRS_VENV) && $(PYTHON) -m venv $(MBRS_VENV) && \
	$(MBRS_VENV)/bin/pip install -q -r requirements-mbrs.txt 2>&1 | grep -v -e 'is ignored: it is neither' >&2; \
	if $(MBRS_VENV)/bin/python -c 'import mbrs.metrics' 2>/dev/null; then touch $@; else \
		echo "make setup-mbrs: mbrs did not install (see above); its tests will say so" >&2; rm -rf $(MBRS_VENV); fi

# The engines (Ray, Spark, Dask, PyTorch's CPU build with torchmetrics and Lightning; about 2 GB) in their own
# environment, for the tests of chrf_core.engines on the engines themselves, with this clone's layer on the path (a
# .pth file: the engines' own worker processes import it too). Spark needs Java 17 (java on PATH).
setup-engines: $(ENGINES_VENV)/.installed
$(ENGINES_VENV)/.installed: requirements-engines.txt
	@echo "== make setup-engines: Ray, Spark, Dask, PyTorch (CPU), torchmetrics and Lightning into .venv-engines (about 2 GB, a minute or two) =="
	@rm -rf $(ENGINES_VENV) && $(PYTHON) -m venv $(ENGINES_VENV) && \
	$(ENGINES_VENV)/bin/pip install -q -r requirements-engines.txt 2>&1 | grep -v -e 'is ignored: it is neither' >&2; \
	if $(ENGINES_VENV)/bin/python -c 'import ray.data, pyspark, dask.dataframe, distributed, torchmetrics, pytorch_lightning, matplotlib' 2>/dev/null; then \
		echo "$(abspath layers/chrf_core)" > "$$($(ENGINES_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/chrf_components_layer.pth" && touch $@; \
	else echo "make setup-engines: the engines did not install (see above); their tests will say so" >&2; rm -rf $(ENGINES_VENV); fi

# What testing needs on top: test tools, linters, sacreBLEU for the comparisons.
setup-dev: $(VENV)/.installed-dev
$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	@echo "== make setup-dev: test tools, linters, sacreBLEU, the AWS CLI into .venv (about a minute) =="
	$(BIN)/pip install --progress-bar off -r requirements-dev.txt | grep -e '^Collecting' -e '^Successfully' || true
	@$(BIN)/python -c 'import pytest, sacrebleu, moto' && touch $@

# The SAM CLI (and Zig, which cross-compiles the layer's kernel) in .venv-sam, and `sam` in .venv/bin: with .venv/bin
# on PATH (. .venv/bin/activate), `sam build`, `sam validate --lint` and `sam local ...` work as typed. That `sam`
# puts python3.13 on PATH (sam build's python3.13 builder needs it; pyenv's is found) and turns telemetry off unless
# SAM_CLI_TELEMETRY says otherwise.
setup-sam: $(SAM_VENV)/.installed $(BIN)/sam
$(SAM_VENV)/.installed: requirements-sam.txt
	@echo "== make setup-sam: the SAM CLI and Zig into .venv-sam (about a minute) =="
	$(PYTHON) -m venv --clear $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --progress-bar off --upgrade pip | grep -v '^Requirement already satisfied' || true
	$(SAM_VENV)/bin/pip install --progress-bar off -r requirements-sam.txt | grep -e '^Collecting' -e '^Successfully' || true
	@$(SAM_VENV)/bin/sam --version >/dev/null && touch $@
$(BIN)/sam: $(SAM_VENV)/.installed $(VENV)/.installed
	@{ echo '#!/bin/sh'; \
	   echo '# The SAM CLI of this project (.venv-sam, written by make setup-sam), with python3.13 on PATH for sam build.'; \
	   [ -x "$(PY313_DIR)/python3.13" ] && echo 'PATH="$(PY313_DIR):$$PATH"; export PATH'; \
	   echo 'SAM_CLI_TELEMETRY="$${SAM_CLI_TELEMETRY:-0}"; export SAM_CLI_TELEMETRY'; \
	   echo 'exec "$(abspath $(SAM))" "$$@"'; } > $@ && chmod +x $@
	@[ -x "$(PY313_DIR)/python3.13" ] || echo "make setup-sam: no python3.13 found: sam build's python3.13 builder needs one on PATH (pyenv install 3.13, or your distribution's python3.13)"

# The Debian packages the suite's tools need, installed when missing (as root, or with sudo -n): docker.io (a
# container engine for the real SAM CLI's local commands), mmdebstrap (the python3.13 Lambda image, built offline),
# qemu-user-static (the arm64 layer and wheel). Where they cannot be installed, one line names them and the command
# to install them; their tests then skip saying why (CHRF_REQUIRE_TOOLS=1 makes that a failure).
SYSTEM_PACKAGES := docker.io mmdebstrap qemu-user-static
setup-system:
	@command -v dpkg >/dev/null 2>&1 || { echo "make test: not Debian or Ubuntu: for every test, install a container engine, mmdebstrap and qemu-user-static yourself"; exit 0; }; \
	missing=$$(for package in $(SYSTEM_PACKAGES); do dpkg-query -W -f '$${Status}' $$package 2>/dev/null | grep -q 'ok installed' || printf '%s ' $$package; done); \
	[ -n "$$missing" ] || exit 0; \
	if [ "$$(id -u)" = 0 ]; then apt="apt-get"; elif sudo -n true 2>/dev/null; then apt="sudo -n apt-get"; else \
		echo "make test: missing Debian packages $${missing}(their tests will skip): sudo apt-get install $${missing% }"; exit 0; fi; \
	echo "== make test: installing the Debian packages $${missing}(about a minute) =="; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$apt install -y -q $$missing >/dev/null 2>&1 || { $$apt update -q >/dev/null && $$apt install -y -q $$missing >/dev/null; } \
		|| echo "make test: could not install $${missing}(their tests will skip)"

# The main job, no AWS account and no Docker: explain a real chrF++ score, then run the Lambda handler on every
# sample event the way `sam local invoke -e events/X.json` would, and check each response against its
# events/X.expected.json (one of them shown in full).
SAMPLE_EVENTS = $(filter-out %.expected.json,$(wildcard events/*.json))
run: setup
	@echo "== chrf-components score (real MT output, English, chrF++) =="
	$(BIN)/chrf-components score tests/data/popovic/example.hyp.en tests/data/popovic/example.ref.en --word-order 2
	@echo; echo "== chrf-components invoke -e events/X.json: the Lambda handler on every sample event, as sam local invoke runs it =="
	@answers=$$(mktemp -d) && trap 'rm -rf "$$answers"' EXIT && \
	for event in $(SAMPLE_EVENTS); do \
		$(BIN)/chrf-components invoke -e $$event > "$$answers/$$(basename $$event)" 2>/dev/null || exit 1; done && \
	$(BIN)/python -c "$$CHECK_ANSWERS" "$$answers" $(SAMPLE_EVENTS)

define CHECK_ANSWERS
import json, pathlib, sys
answers, events = pathlib.Path(sys.argv[1]), sys.argv[2:]
same = 0
for event in events:
    expected_path = event.removesuffix(".json") + ".expected.json"
    answer = json.loads((answers / pathlib.Path(event).name).read_text(encoding="utf-8"))
    if "errorType" in answer:  # a function error: its requestId and stackTrace vary per invocation
        answer = {key: answer[key] for key in ("errorType", "errorMessage")}
    matches = answer == json.loads(pathlib.Path(expected_path).read_text(encoding="utf-8"))
    same += matches
    body = json.loads(answer["body"]) if isinstance(answer.get("body"), str) else answer
    what = answer.get("errorType") or " ".join(filter(None, [f"HTTP {answer['statusCode']}" if "statusCode" in answer else "", f"score {body['score']}" if "score" in body else "", body.get("error", {}).get("code", "")]))
    print(f"  {event:<36} {what:<26} {'= ' if matches else 'DIFFERS from '}{expected_path}")
shown = "events/direct-invoke.json"
print(f"\n== the response to {shown} (a contract report: per-order counts, exact fractions) ==")
print(json.dumps(json.loads((answers / pathlib.Path(shown).name).read_text(encoding="utf-8")), indent=2, ensure_ascii=False))
print(f"\n{same}/{len(events)} sample events answered exactly as events/*.expected.json")
sys.exit(same != len(events))
endef
export CHECK_ANSWERS

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

# = sam build, as a SAM user types it (the `sam` make setup-sam puts in .venv/bin).
build: setup setup-sam
	$(BIN)/sam build --template-file template.yaml

# An arm64 Python 3.13 from Debian's packages, to import the built layer under qemu (see tests/arm64/).
arm64-python:
	@tests/arm64/fetch-python.sh $(ARM64_PYTHON) || echo "could not fetch an arm64 Python: the arm64 layer test will say so"

# The distributions, built from source: a reproducible sdist (see setup.py), then from its unpacked contents one abi3
# wheel per Linux architecture, the kernel cross-compiled by Zig for glibc 2.17 (manylinux2014) against the headers
# of .venv's Python (Debian's and Ubuntu's staged so that Zig can read them: native/python_include.py). Dated by the
# last commit, so the same commit gives the same bytes; a failed build shows its log. Then twine and auditwheel
# check them.
DIST := dist
WHEELHOUSE := .cache/wheelhouse
WHEEL_ARCHITECTURES := x86_64 aarch64
dist: setup-dev setup-sam
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; export SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 315532800); \
	work=$$(mktemp -d); trap 'rm -rf "$$work"' EXIT; log="$$work/build.log"; \
	echo "== make dist: the sdist =="; \
	$(BIN)/python -m build -q --no-isolation --sdist --outdir $(DIST) . >"$$log" 2>&1 || { cat "$$log"; exit 1; }; \
	mkdir "$$work/source"; tar -xzf $(DIST)/*.tar.gz -C "$$work/source"; \
	for arch in $(WHEEL_ARCHITECTURES); do \
		echo "== make dist: the $$arch wheel (the kernel cross-compiled by Zig; about 20 s) =="; \
		cc="$(abspath $(SAM_VENV))/bin/python -m ziglang cc -target $$arch-linux-gnu.2.17"; \
		(cd "$$work"/source/* && rm -rf build && CC="$$cc" LDSHARED="$$cc -shared -s -Wl,--build-id=none" CFLAGS="-g0" \
			CHRF_REQUIRE_NATIVE=1 CHRF_WERROR=1 $(abspath $(BIN))/python -m build -q --no-isolation --wheel \
			--outdir $(abspath $(DIST)) -C--build-option=--plat-name=manylinux_2_17_$$arch . >"$$log" 2>&1) \
			|| { cat "$$log"; echo "make dist: the $$arch wheel did not build (its log is above)"; exit 1; }; \
	done
	$(BIN)/twine check --strict $(DIST)/*
	@for wheel in $(DIST)/*.whl; do $(BIN)/auditwheel show $$wheel | tr '\n' ' ' | sed 's/  */ /g'; echo; done
	@sha256sum $(DIST)/*

# What the tests install offline: NumPy (for this Python and the arm64 Python 3.13 under qemu) and setuptools to
# build the sdist; and the functions' requirements as `sam build` installs them (python3.13, x86_64 and arm64), for
# the test that runs `sam build` as typed without the network (tests/template/test_sam_build.py).
FUNCTION_WHEELHOUSE := .cache/wheelhouse-functions
wheelhouse: setup
	$(BIN)/pip download -q --only-binary=:all: -d $(WHEELHOUSE) numpy==2.4.6 setuptools==80.9.0
	$(BIN)/pip download -q --only-binary=:all: --platform manylinux_2_28_aarch64 --python-version 3.13 \
		--implementation cp -d $(WHEELHOUSE) numpy==2.4.6
	@for platform in manylinux2014_x86_64 manylinux2014_aarch64; do \
		$(BIN)/pip download -q --only-binary=:all: --platform $$platform --python-version 3.13 --implementation cp \
			-d $(FUNCTION_WHEELHOUSE) -r functions/chrf_components/requirements.txt || exit 1; done

# The real SAM CLI's local commands on this template (tests/sam_local/): every sample event through `sam local
# invoke`, then one warm start-lambda and start-api against `serve`. Needs a container engine (one running, or
# Debian's docker.io to start as root) and mmdebstrap to build the python3.13 image offline; says so and skips
# otherwise (fails under CHRF_REQUIRE_TOOLS=1). Leaves no daemon or container running.
sam-local: setup-dev wheelhouse build
	CHRF_SAM_LOCAL=1 $(BIN)/python -m pytest tests/sam_local

# What the library's own tests need is the layer, NumPy, pytest, hypothesis and sacreBLEU: tests/unit runs with
# everything else missing (tests/without/sitecustomize.py hides it from imports).
WITHOUT_SERVICE := aws_lambda_powertools,yaml,boto3,botocore,waitress,moto,requests,schemathesis,anyio,$\
	chrf_components_cli,chrf_components_local
UNIT_ALONE := PYTHONPATH=tests/without CHRF_WITHOUT=$(WITHOUT_SERVICE) $(BIN)/python -m pytest -p no:schemathesis \
	-p no:anyio tests/unit

# Everything, under both counting kernels: the checks and builds, the suite with the native kernel (which must
# load), the engines, the real SAM CLI, then the layer, handler and pipeline tests again with the pure-Python kernel
# (the layer's tests in the library's own environment; the local pipeline's command-line runs, which count as the
# pipeline tests beside them do, only once). Every stage runs whatever another one did: a failing stage hides none,
# and the failed ones are named at the end (make test then fails).
test: setup-system setup-dev arm64-python wheelhouse setup-mbrs setup-engines
	@failed=(); \
	stage() { local name="$$1"; shift; echo "== make test: $$name =="; "$$@" || failed+=("$$name"); }; \
	stage "lint (ruff, mypy)" $(MAKE) --no-print-directory lint; \
	stage "sam build (make build)" $(MAKE) --no-print-directory build; \
	stage "the distributions (make dist)" $(MAKE) --no-print-directory dist; \
	stage "the suite, native kernel" env CHRF_REQUIRE_BUILD=1 $(BIN)/python -m pytest; \
	stage "the engines (make test-engines)" $(MAKE) --no-print-directory test-engines; \
	stage "the real SAM CLI (make sam-local)" $(MAKE) --no-print-directory sam-local; \
	stage "the library alone, pure-Python kernel" env CHRF_CORE_NATIVE=0 $(UNIT_ALONE); \
	stage "handler and pipeline, pure-Python kernel" env CHRF_CORE_NATIVE=0 $(BIN)/python -m pytest tests/handler \
		tests/pipeline --ignore=tests/pipeline/test_local_pipeline.py; \
	if [ $${#failed[@]} -gt 0 ]; then printf '== make test: FAILED: %s\n' "$${failed[@]}"; exit 1; fi; \
	echo "== make test: every stage passed =="

# The engines' tests (tests/engines) in .venv-engines: Ray (2 CPUs), Spark (local[2]), Dask, torchmetrics and a
# Lightning Trainer, each against one process's numbers; the docs' examples (docs/at-scale.md) among them. CHRF_ENGINES=1: an engine that
# does not import fails its tests instead of skipping them.
test-engines: setup-engines kernel
	@[ -x $(ENGINES_VENV)/bin/python ] || { echo "make test-engines: no .venv-engines (make setup-engines failed above)"; exit 1; }
	CHRF_ENGINES=1 $(ENGINES_VENV)/bin/python -m pytest -p no:cacheprovider tests/engines

bench: setup-dev
	$(BIN)/python bench/benchmark.py

# The worst-case table's deterministic column (valgrind's counts, independent of the machine's load; ~15 min).
bench-counts: setup-dev
	$(BIN)/python bench/worst_case_counts.py native 5
	$(BIN)/python bench/worst_case_counts.py python 2

# The native kernel under AddressSanitizer and UndefinedBehaviorSanitizer, then ThreadSanitizer (after changing native/).
sanitize: setup-dev
	@rm -rf .cache/sanitize && mkdir -p .cache/sanitize/chrf_core && cp layers/chrf_core/chrf_core/*.py .cache/sanitize/chrf_core/
	gcc $(KERNEL_CFLAGS) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fPIC -shared -I"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		$(filter %.c,$(KERNEL_SOURCES)) -o .cache/sanitize/chrf_core/_kernel.abi3.so
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0:max_malloc_fill_size=1073741824 \
		$(BIN)/python tests/native/sanitize.py .cache/sanitize
	@rm -rf .cache/sanitize-threads && mkdir -p .cache/sanitize-threads/chrf_core && cp layers/chrf_core/chrf_core/*.py .cache/sanitize-threads/chrf_core/
	gcc $(KERNEL_CFLAGS) -O1 -g -fno-omit-frame-pointer -fsanitize=thread -fPIC -shared \
		-I"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		$(filter %.c,$(KERNEL_SOURCES)) -o .cache/sanitize-threads/chrf_core/_kernel.abi3.so
	LD_PRELOAD="$$(gcc -print-file-name=libtsan.so)" $(BIN)/python tests/native/sanitize_threads.py .cache/sanitize-threads

clean:
	rm -rf $(VENV) $(SAM_VENV) $(MBRS_VENV) $(ENGINES_VENV) .aws-sam .cache .pytest_cache .ruff_cache .mypy_cache .hypothesis build $(DIST) $(HOST_KERNEL)
