# Every target bootstraps the virtual environment it needs, so a fresh clone needs only `make run` or `make test`.
# What is installed comes from the lock files in requirements/ (exact versions, hashes checked), never from what a
# registry holds today: `make lock` refreshes them on purpose (CONTRIBUTING.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv installs the locks: 4 s for the test environment where pip took 50 s (a fresh clone, 2 CPUs). It is itself
# installed by the venv's own pip from its own lock, requirements/uv.txt, hashes checked.
UV := $(BIN)/uv
# Where the CPU build of torch lies (requirements/dev.in says why); uv does not read pip's config, so it is told.
TORCH_WHEELS ?= /opt/wheels
FIND_TORCH := $(if $(wildcard $(TORCH_WHEELS)),--find-links $(TORCH_WHEELS))
# Exact pins and hashes, nothing resolved at install time (--no-deps: the lock lists every dependency). Compiled to
# bytecode at install: where PYTHONDONTWRITEBYTECODE is set (as on our CI machines), or for a user who may not write
# the venv, every process would otherwise compile torch and textual again at each start (the lab's jobs: 30 s).
INSTALL_LOCKED := $(UV) pip install --quiet --python $(BIN)/python --require-hashes --no-deps --compile-bytecode \
	$(FIND_TORCH)
# gputui itself, editable, built by the locked hatchling (no isolated build env fetching whatever is newest).
INSTALL_SELF := $(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
LOCK := $(UV) pip compile --quiet --universal --python-version 3.10 --generate-hashes $(FIND_TORCH) \
	--custom-compile-command 'make lock'

.PHONY: run demo test lint format lock bench screenshots podresources docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(UV): requirements/uv.txt | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r requirements/uv.txt
	touch $@

$(VENV)/.installed: requirements/run.txt pyproject.toml | $(UV)
	$(INSTALL_LOCKED) -r requirements/run.txt
	$(INSTALL_SELF)
	touch $@

$(VENV)/.locked-dev: requirements/dev.txt | $(UV)
	$(INSTALL_LOCKED) -r requirements/dev.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.locked-dev pyproject.toml
	$(INSTALL_SELF)
	touch $(VENV)/.installed $@

run: $(VENV)/.installed  ## Start the monitor on the real driver, or on the labelled simulated machine if there is none.
	$(BIN)/gputui --fallback-demo

demo: $(VENV)/.installed  ## Start the monitor on the simulated machine (the `tour` scenario).
	$(BIN)/gputui --demo

# The unit tests run in TEST_WORKERS processes at once (pytest-xdist): two more than the CPUs, as a worker waiting
# on a subprocess, a server or a timer leaves its CPU to the others (on 2 CPUs: 2 workers 171 s, 3 135 s, 4 128 s,
# measured back to back). Then the lab (tests/lab: real jobs whose CPU and disk it measures) runs alone, on a
# machine as quiet as it needs. Both run whatever the first gave, so that the last line is always the lab's tally:
# how many of its cases ran and how many skipped.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))
PYTEST := $(BIN)/python -m pytest

test: $(VENV)/.installed-dev
	@status=0; \
	echo "$(PYTEST) -n $(TEST_WORKERS) --ignore=tests/lab"; \
	$(PYTEST) -n $(TEST_WORKERS) --ignore=tests/lab || status=$$?; \
	echo "$(PYTEST) tests/lab"; \
	$(PYTEST) tests/lab || status=$$?; \
	exit $$status

lint: $(VENV)/.installed-dev
	$(BIN)/ruff format --check gputui tests benchmarks scripts examples
	$(BIN)/ruff check gputui tests benchmarks scripts examples
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(VENV)/.installed-dev
	$(BIN)/ruff format gputui tests benchmarks scripts examples
	$(BIN)/ruff check --fix gputui tests benchmarks scripts examples

lock: $(UV)  ## Re-resolve requirements/*.txt from pyproject.toml and requirements/*.in.
	$(LOCK) requirements/uv.in -o requirements/uv.txt
	$(LOCK) pyproject.toml requirements/run.in -o requirements/run.txt
	$(LOCK) pyproject.toml requirements/dev.in --extra dev --extra report --extra export --extra k8s \
		-o requirements/dev.txt

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/run_all.py $(if $(BASE),--base $(BASE) --rounds $(or $(ROUNDS),3))

screenshots: $(VENV)/.installed-dev
	$(BIN)/python scripts/export_screenshots.py

docs: $(VENV)/.installed-dev  ## Write docs/reference/ (CLI, rules) from the code; tests/project/test_docs.py fails when stale.
	$(BIN)/python scripts/write_docs.py

podresources: $(VENV)/.installed-dev  ## Regenerate the kubelet pod-resources modules from the vendored proto.
	$(BIN)/python scripts/gen_podresources.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
