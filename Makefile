# Every target bootstraps the virtual environment it needs, so a fresh clone needs only `make run` or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch: tests and CI run the probes on the CPU; a bare `torch` would pull a multi-GB CUDA build.
TORCH_CPU := torch==2.13.0

.PHONY: run demo test lint format bench screenshots podresources clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet $(TORCH_CPU)
	$(BIN)/pip install --quiet -e '.[dev,probes,report,export,k8s]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed  ## Start the monitor on the real driver, or on the labelled simulated machine if there is none.
	$(BIN)/gputui --fallback-demo

demo: $(VENV)/.installed  ## Start the monitor on the simulated machine (the `tour` scenario).
	$(BIN)/gputui --demo

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff format --check gputui tests benchmarks scripts examples
	$(BIN)/ruff check gputui tests benchmarks scripts examples
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(VENV)/.installed-dev
	$(BIN)/ruff format gputui tests benchmarks scripts examples
	$(BIN)/ruff check --fix gputui tests benchmarks scripts examples

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/run_all.py $(if $(BASE),--base $(BASE) --rounds $(or $(ROUNDS),3))

screenshots: $(VENV)/.installed-dev
	$(BIN)/python scripts/export_screenshots.py

podresources: $(VENV)/.installed-dev  ## Regenerate the kubelet pod-resources modules from the vendored proto.
	$(BIN)/python scripts/gen_podresources.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
