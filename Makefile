# Two commands do all set-up on a fresh machine with Python 3.11:
#   make reproduce   executes every notebook with papermill into reports/
#   make test        runs ruff and the test suite
# and `make lab` opens the notebooks in JupyterLab (kernel "python3" of .venv).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# the package and what the notebooks need; the tests add their tools, lm-eval and dask
# (10 s less set-up for `make reproduce`, which needs none of them)
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# uv installs (pip installs uv): it fetches, unpacks and compiles to bytecode in parallel, the
# set-up of `make reproduce` 21 s instead of 45 s. Compiled, as pip does: where
# PYTHONDONTWRITEBYTECODE is set, every kernel and worker would otherwise compile its imports.
# uv reads no pip.conf: an index or proxy goes in UV_INDEX_URL or HTTPS_PROXY.
UV_VERSION := 0.13.9
INSTALL := $(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode

.PHONY: test reproduce quick lab bench lint clean

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

test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

reproduce: $(STAMP)
	$(BIN)/tailoredbench reproduce

quick: $(STAMP)
	$(BIN)/tailoredbench reproduce --quick

$(VENV)/.lab: $(STAMP)
	$(INSTALL) -c constraints.txt -e ".[lab]"
	touch $@

# the kernels round as `make reproduce`'s do (tailoredbench/environment.py says why)
PINS := from tailoredbench.environment import reproducible_numerics as r; print(*(f"{k}={v}" for k, v in r().items()))
lab: $(VENV)/.lab
	env $$($(BIN)/python -c '$(PINS)') $(BIN)/jupyter lab notebooks/

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
