# From a fresh clone: `make run` sets up and runs the main job, `make test` sets up and runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
MBRS_VENV := .venv-mbrs
SAM := $(SAM_VENV)/bin/sam
ARM64_PYTHON := .cache/arm64-python
# sam build runs the python3.13 builder, which needs python3.13 on PATH; pyenv keeps one here. Its headers are
# the ones the arm64 kernel is compiled against (pinned, so the layer is byte-identical from build to build).
PY313_DIR := $(shell d=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.13*/bin 2>/dev/null | tail -n 1); \
	[ -n "$$d" ] && echo "$$d" || dirname "$$(command -v python3.13 2>/dev/null || echo /nonexistent/python3.13)")
KERNEL_SOURCES := $(wildcard layers/chrf_core/native/*.c layers/chrf_core/native/*.h)
HOST_KERNEL := layers/chrf_core/chrf_core/_kernel.abi3.so
export AWS_DEFAULT_REGION ?= us-east-1
export AWS_REGION ?= $(AWS_DEFAULT_REGION)
export SAM_CLI_TELEMETRY := 0

.PHONY: setup setup-dev setup-sam setup-mbrs kernel run test lint build arm64-python dist wheelhouse sam-local bench bench-counts sanitize clean

# What running needs: the runtime dependencies and the command line (with the host's native kernel).
setup: $(VENV)/.installed kernel
$(VENV)/.installed: requirements.txt pyproject.toml setup.py
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt -e .
	touch $@

# The native kernel, rebuilt in place whenever its source changes (optional: without a compiler, Python counts).
kernel: $(VENV)/.installed
	@if [ ! -f $(HOST_KERNEL) ] || [ -n "$$(find $(KERNEL_SOURCES) -newer $(HOST_KERNEL))" ]; then \
		$(BIN)/python setup.py -q build_ext --inplace 2>&1 | grep -v -e '^running' -e '^copying' || true; fi

# mbrs (the MBR toolkit; PyTorch's CPU build, about 1.6 GB) in its own environment, for the tests of the chrf_core
# metric backend through mbrs-decode. A failed install is reported and leaves no environment: its tests then say so.
setup-mbrs: $(MBRS_VENV)/.installed
$(MBRS_VENV)/.installed: requirements-mbrs.txt
	@rm -rf $(MBRS_VENV) && $(PYTHON) -m venv $(MBRS_VENV) && \
	$(MBRS_VENV)/bin/pip install -q -r requirements-mbrs.txt 2>&1 | grep -v -e 'is ignored: it is neither' >&2; \
	if $(MBRS_VENV)/bin/python -c 'import mbrs.metrics' 2>/dev/null; then touch $@; else \
		echo "make setup-mbrs: mbrs did not install (see above); its tests will say so" >&2; rm -rf $(MBRS_VENV); fi

# What testing needs on top: test tools, linters, sacreBLEU for the comparisons.
setup-dev: $(VENV)/.installed-dev
$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

setup-sam: $(SAM_VENV)/.installed
$(SAM_VENV)/.installed: requirements-sam.txt
	$(PYTHON) -m venv --clear $(SAM_VENV)
	$(SAM_VENV)/bin/pip install -q --upgrade pip
	$(SAM_VENV)/bin/pip install -q -r requirements-sam.txt
	touch $@

# The main job, no AWS account and no Docker: explain a real chrF++ score, then run the Lambda handler on every
# sample event the way `sam local invoke -e events/X.json` would, printing each response.
run: setup
	@echo "== chrf-components score (real MT output, English, chrF++) =="
	$(BIN)/chrf-components score tests/data/popovic/example.hyp.en tests/data/popovic/example.ref.en --word-order 2
	@for event in $$(ls events/*.json | grep -v '\.expected\.json$$'); do \
		echo; echo "== chrf-components invoke $$event =="; \
		$(BIN)/chrf-components invoke $$event 2>/dev/null || exit 1; \
	done

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

build: setup setup-sam
	@[ -x "$(PY313_DIR)/python3.13" ] || { echo "sam build needs python3.13 on PATH (pyenv install 3.13)"; exit 1; }
	PATH="$(PY313_DIR):$$PATH" ZIG="$(abspath $(SAM_VENV))/bin/python -m ziglang" \
		PYTHON_INCLUDE="$$($(PY313_DIR)/python3.13 layers/chrf_core/native/python_include.py .cache/python-include)" \
		$(SAM) build --template-file template.yaml

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
	$(BIN)/python -m build -q --no-isolation --sdist --outdir $(DIST) . >"$$log" 2>&1 || { cat "$$log"; exit 1; }; \
	mkdir "$$work/source"; tar -xzf $(DIST)/*.tar.gz -C "$$work/source"; \
	for arch in $(WHEEL_ARCHITECTURES); do \
		cc="$(abspath $(SAM_VENV))/bin/python -m ziglang cc -target $$arch-linux-gnu.2.17"; \
		(cd "$$work"/source/* && rm -rf build && CC="$$cc" LDSHARED="$$cc -shared -s -Wl,--build-id=none" CFLAGS="-g0" \
			CHRF_REQUIRE_NATIVE=1 $(abspath $(BIN))/python -m build -q --no-isolation --wheel \
			--outdir $(abspath $(DIST)) -C--build-option=--plat-name=manylinux_2_17_$$arch . >"$$log" 2>&1) \
			|| { cat "$$log"; echo "make dist: the $$arch wheel did not build (its log is above)"; exit 1; }; \
	done
	$(BIN)/twine check --strict $(DIST)/*
	@for wheel in $(DIST)/*.whl; do $(BIN)/auditwheel show $$wheel | tr '\n' ' ' | sed 's/  */ /g'; echo; done
	@sha256sum $(DIST)/*

# What the tests install the distributions with, offline: NumPy (for this Python and the arm64 Python 3.13 under
# qemu), and setuptools to build the sdist.
wheelhouse: setup
	$(BIN)/pip download -q --only-binary=:all: -d $(WHEELHOUSE) numpy==2.4.6 setuptools==80.9.0
	$(BIN)/pip download -q --only-binary=:all: --platform manylinux_2_28_aarch64 --python-version 3.13 \
		--implementation cp -d $(WHEELHOUSE) numpy==2.4.6

# The real SAM CLI's local commands on this template (tests/sam_local/): every sample event through `sam local
# invoke`, then one warm start-lambda and start-api against `serve`. Needs a container engine (one running, or
# Debian's docker.io to start as root) and mmdebstrap to build the python3.13 image offline; says so and skips
# otherwise (fails under CHRF_REQUIRE_TOOLS=1). Leaves no daemon or container running.
sam-local: setup-dev build
	CHRF_SAM_LOCAL=1 $(BIN)/python -m pytest tests/sam_local

# What the library's own tests need is the layer, NumPy, pytest, hypothesis and sacreBLEU: tests/unit runs with
# everything else missing (tests/without/sitecustomize.py hides it from imports).
WITHOUT_SERVICE := aws_lambda_powertools,yaml,boto3,botocore,waitress,moto,requests,schemathesis,anyio,$\
	chrf_components_cli,chrf_components_local
UNIT_ALONE := PYTHONPATH=tests/without CHRF_WITHOUT=$(WITHOUT_SERVICE) $(BIN)/python -m pytest -p no:schemathesis \
	-p no:anyio tests/unit

# Everything, under both counting kernels: the suite with the native kernel (which must load), then the layer,
# handler and pipeline tests again with the pure-Python kernel (the layer's tests in the library's own environment).
test: lint build arm64-python dist wheelhouse setup-mbrs
	CHRF_REQUIRE_BUILD=1 $(BIN)/python -m pytest
	$(MAKE) --no-print-directory sam-local
	CHRF_CORE_NATIVE=0 $(UNIT_ALONE)
	CHRF_CORE_NATIVE=0 $(BIN)/python -m pytest tests/handler tests/pipeline

bench: setup-dev
	$(BIN)/python tests/benchmark.py

# The worst-case table's deterministic column (valgrind's counts, independent of the machine's load; ~15 min).
bench-counts: setup-dev
	$(BIN)/python tests/worst_case_counts.py native 5
	$(BIN)/python tests/worst_case_counts.py python 2

# The native kernel under AddressSanitizer and UndefinedBehaviorSanitizer, then ThreadSanitizer (after changing native/).
sanitize: setup-dev
	@rm -rf .cache/sanitize && mkdir -p .cache/sanitize/chrf_core && cp layers/chrf_core/chrf_core/*.py .cache/sanitize/chrf_core/
	gcc -std=c99 -O1 -ffp-contract=off -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fPIC -shared -pthread -DPy_LIMITED_API=0x030B0000 -I"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		$(filter %.c,$(KERNEL_SOURCES)) -o .cache/sanitize/chrf_core/_kernel.abi3.so
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0:max_malloc_fill_size=1073741824 \
		$(BIN)/python tests/native/sanitize.py .cache/sanitize
	@rm -rf .cache/sanitize-threads && mkdir -p .cache/sanitize-threads/chrf_core && cp layers/chrf_core/chrf_core/*.py .cache/sanitize-threads/chrf_core/
	gcc -std=c99 -O1 -ffp-contract=off -g -fno-omit-frame-pointer -fsanitize=thread -fPIC -shared -pthread -DPy_LIMITED_API=0x030B0000 \
		-I"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		$(filter %.c,$(KERNEL_SOURCES)) -o .cache/sanitize-threads/chrf_core/_kernel.abi3.so
	LD_PRELOAD="$$(gcc -print-file-name=libtsan.so)" $(BIN)/python tests/native/sanitize_threads.py .cache/sanitize-threads

clean:
	rm -rf $(VENV) $(SAM_VENV) $(MBRS_VENV) .aws-sam .cache .pytest_cache .ruff_cache .mypy_cache .hypothesis build $(DIST) $(HOST_KERNEL)
