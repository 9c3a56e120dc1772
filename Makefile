# Two commands do all set-up on a fresh machine with Python 3.11:
#   make reproduce   executes every notebook with papermill into reports/
#   make test        lint, format check, type check and the whole test suite
# `make check` is the quick tier for development (tests marked slow skipped);
# `make lab` opens the project in JupyterLab (kernel "python3" of .venv); `make site` writes
# site/, a static HTML site of the executed reports (open site/index.html).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# the package and what the notebooks need; the tests add their tools, lm-eval and dask
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# uv installs (pip installs uv) in parallel; bytecode compiled up front so that every kernel and
# worker does not compile its imports. uv reads no pip.conf: an index or proxy goes in UV_INDEX_URL.
UV_VERSION := 0.13.9
INSTALL := $(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode

.PHONY: test check reproduce quick lab site bench lint clean

# constraints.txt: the exact versions the committed reports were made with (and a changed
# Makefile installs again: a venv made before uv was the installer gets it)
$(STAMP): pyproject.toml constraints.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(INSTALL) -c constraints.txt -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(INSTALL) -c constraints.txt -e ".[test,dask]"
	touch $@

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# every core, at most four: each worker runs notebooks, kernels and subprocesses of its own
PYTEST := $(BIN)/python -m pytest --numprocesses auto --maxprocesses 4

test: lint
	$(PYTEST)

check: lint
	$(PYTEST) -m "not slow" -q

reproduce: $(STAMP)
	$(BIN)/tailoredbench reproduce

quick: $(STAMP)
	$(BIN)/tailoredbench reproduce --quick

$(VENV)/.lab: $(STAMP)
	$(INSTALL) -c constraints.txt -e ".[lab]"
	touch $@

# the kernels round as `make reproduce`'s do (tailoredbench/environment.py says why)
PINS := from tailoredbench.environment import reproducible_numerics as r; print(*(f"{k}={v}" for k, v in r().items()))
# from the project's root, so that notebooks/ and reports/ are both in reach; Jupyter refuses root
# (the user in many containers) unless told
lab: $(VENV)/.lab
	env $$($(BIN)/python -c '$(PINS)') $(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root)

$(VENV)/.site: $(STAMP)
	$(INSTALL) -c constraints.txt -e ".[site]"
	touch $@

site: $(VENV)/.site
	$(BIN)/python -m tailoredbench.site

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
