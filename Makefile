# From a fresh clone: `make run` sets up and runs the main job, `make test` sets up and runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam
# sam build runs the python3.13 builder, which needs python3.13 on PATH; pyenv keeps one here.
PY313_DIR := $(shell d=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.13*/bin 2>/dev/null | tail -n 1); \
	[ -n "$$d" ] && echo "$$d" || dirname "$$(command -v python3.13 2>/dev/null || echo /nonexistent/python3.13)")
export AWS_DEFAULT_REGION ?= us-east-1
export AWS_REGION ?= $(AWS_DEFAULT_REGION)
export SAM_CLI_TELEMETRY := 0

.PHONY: setup setup-sam run test unit lint build bench clean

setup: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt -e .
	touch $@

setup-sam: $(SAM_VENV)/.installed
$(SAM_VENV)/.installed: requirements-sam.txt
	$(PYTHON) -m venv $(SAM_VENV)
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

lint: setup
	$(BIN)/ruff check .

build: setup setup-sam
	@[ -x "$(PY313_DIR)/python3.13" ] || { echo "sam build needs python3.13 on PATH (pyenv install 3.13)"; exit 1; }
	PATH="$(PY313_DIR):$$PATH" $(SAM) build --template-file template.yaml

unit: setup
	$(BIN)/python -m pytest

# The suite checks the template three ways (cfn-lint, sam validate, the built artifact), so build first.
test: lint build
	CHRF_REQUIRE_BUILD=1 $(BIN)/python -m pytest

bench: setup
	$(BIN)/python tests/benchmark.py

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .ruff_cache .hypothesis
