# Two commands do all set-up on a fresh machine with Python 3.11:
#   make reproduce   executes every notebook with papermill into reports/
#   make test        runs ruff and the test suite
# and `make lab` opens the notebooks in JupyterLab (kernel "python3" of .venv).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# the package and what the notebooks need; the tests add their tools, lm-eval and dask
# (40 s less set-up for `make reproduce`, which needs none of them)
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: test reproduce quick lab bench lint clean

# constraints.txt: the exact versions the committed reports were made with
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test,dask]"
	touch $@

test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

reproduce: $(STAMP)
	$(BIN)/tailoredbench reproduce

quick: $(STAMP)
	$(BIN)/tailoredbench reproduce --quick

$(VENV)/.lab: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[lab]"
	touch $@

lab: $(VENV)/.lab
	$(BIN)/jupyter lab notebooks/

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
