# attnlib / the book: `make book` builds the book, `make test` runs the tests.
# Both create the virtual environment .venv on first use and reinstall the
# project into it only when pyproject.toml has changed. `make data` regenerates
# every file in book/data/ (hours on two cores; cached points are not recomputed).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# CPU JAX, reproducible: no accelerator discovery, no inherited XLA flags.
export JAX_PLATFORMS := cpu
unexport XLA_FLAGS
# Chapters run with the kernel's inline backend (figures are part of the
# committed outputs); only the unit tests force Agg, below.
unexport MPLBACKEND

NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
LINT_PATHS := $(wildcard attnlib tests benchmarks book/data)

.PHONY: all book test test-all execute lint lab venv clean distclean data

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --progress-bar off --upgrade pip
	$(BIN)/python -m pip install --progress-bar off -e ".[book,test]"
	touch $@

venv: $(STAMP)

# Executes every chapter (execute_notebooks: force) and writes _build/html;
# any Sphinx warning or execution error fails the build.
book: $(STAMP)
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "Book written to _build/html/index.html"

# The CI set: unit tests not marked slow, then every chapter re-executed by nbval.
test: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest -m "not slow" tests
	$(nbval)

# Everything, slow tests included.
test-all: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest tests
	$(nbval)

# nbval re-executes each chapter and compares with its committed outputs. No
# MPLBACKEND here: the kernel keeps the inline backend, so figures are displayed
# exactly as in the committed outputs. With no notebooks there is nothing to
# run (and pytest would exit 5 on an empty collection).
ifeq ($(NOTEBOOKS),)
nbval = @echo "No notebooks in book/: nothing for nbval to run."
else
nbval = $(BIN)/python -m pytest --nbval --nbval-current-env \
	  --nbval-sanitize-with book/sanitize.cfg --nbval-cell-timeout=600 $(NOTEBOOKS)
endif

# Regenerate every data file of the book: each book/data/make_*.py script runs its
# grids on an embedded local Dask cluster (attnlib.sweep), from book/. Points are
# cached (~/.cache/attnlib/sweep), so an interrupted run resumes where it stopped.
# Pass options to every script with DATA_ARGS, e.g. DATA_ARGS="--workers 2" or
# DATA_ARGS="--address tcp://host:8786".
DATA_SCRIPTS := erm amp spectrum scaling
data: $(STAMP)
	cd book && for s in $(DATA_SCRIPTS); do \
	  ../$(BIN)/python -m data.make_$${s}_data $(DATA_ARGS) || exit 1; done

# Re-run chapters in place (working directory book/), storing the outputs that
# nbval compares against. One chapter: make execute NB=book/01_model.ipynb
NB ?= $(NOTEBOOKS)
execute: $(STAMP)
	$(BIN)/jupyter execute --inplace --timeout=600 $(NB)

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)

# Run the chapters live in JupyterLab (installed into .venv on first use).
lab: $(STAMP)
	@test -x $(BIN)/jupyter-lab || $(BIN)/python -m pip install --progress-bar off -e ".[book,test,lab]"
	$(BIN)/jupyter lab book/

clean:
	rm -rf _build .pytest_cache .ruff_cache .jupyter_cache *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -print0 | xargs -0 rm -rf
	find . -path ./$(VENV) -prune -o -name .ipynb_checkpoints -type d -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV)
