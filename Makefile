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
# JAX's persistent compilation cache, shared by the book build, nbval, the tests
# and class mode: a fresh kernel reads compiled functions from disk instead of
# compiling them again. It lives in the user's cache directory, the folder that
# attnlib.configure_jax() selects by default ($ATTNLIB_JAX_CACHE, else
# $XDG_CACHE_HOME/attnlib/jax, else ~/.cache/attnlib/jax); delete it to clear it.
# Override with `make JAX_CACHE=DIR ...`; ATTNLIB_JAX_CACHE=off turns it off.
ATTNLIB_CACHE_SETTING := $(filter-out off,$(ATTNLIB_JAX_CACHE))
JAX_CACHE ?= $(if $(filter off,$(ATTNLIB_JAX_CACHE)),,$(or $(ATTNLIB_CACHE_SETTING),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/attnlib/jax))
ifneq ($(JAX_CACHE),)
export JAX_COMPILATION_CACHE_DIR := $(JAX_CACHE)
endif
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS := 0.2
# Chapters run with the kernel's inline backend (figures are part of the
# committed outputs); only the unit tests force Agg, below.
unexport MPLBACKEND

NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
LINT_PATHS := $(wildcard attnlib tests benchmarks book/data)

.PHONY: all book book-student pdf check-html check-pages test test-all test-quick execute lint lab venv clean distclean data

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

# Builds from the committed outputs, without executing a chapter: Jupyter Book
# reads a copy of _config.yml with execute_notebooks set to off (and the other
# overrides given), written by tools/book_config.py.
NOEXEC_CONFIG  := _build/config-noexec.yml
STUDENT_CONFIG := _build/config-student.yml

# The pages as a browser shows them: build from the committed outputs, open every
# page in headless Chromium (installed from Debian's packages when missing), wait
# for MathJax, fail on untypeset TeX, a broken image or link, or a console error.
# Screenshots of every page: _build/screenshots/. Uses chromium (or google-chrome)
# with its chromedriver. `make check-pages` checks the
# pages already in _build/html (e.g. right after `make book`) without rebuilding.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
check-html: $(STAMP)
	$(BIN)/python tools/book_config.py $(NOEXEC_CONFIG) execute.execute_notebooks=off
	$(BIN)/jupyter-book build . --config $(NOEXEC_CONFIG) --warningiserror --keep-going
	$(MAKE) check-pages

check-pages: $(STAMP)
	@{ command -v chromium && command -v chromedriver; } >/dev/null || command -v google-chrome >/dev/null || { \
	  $(SUDO) apt-get update && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends \
	    chromium chromium-driver; }
	$(BIN)/python tools/check_html.py _build/html --shots _build/screenshots

# The student edition: the same pages without the solutions of the problems
# (sphinx-exercise's hide_solutions), from the committed outputs.
book-student: $(STAMP)
	$(BIN)/python tools/book_config.py $(STUDENT_CONFIG) execute.execute_notebooks=off \
	  sphinx.config.hide_solutions=true
	$(BIN)/jupyter-book build . --config $(STUDENT_CONFIG) --path-output _build/student \
	  --warningiserror --keep-going
	@echo "Student edition written to _build/student/_build/html/index.html"

# The print edition: the whole book as one PDF, from the committed outputs, through
# Jupyter Book's LaTeX builder (sphinx-jupyterbook-latex: xelatex, the parts of _toc.yml).
# tools/book_latex_fixes.py drops the source of collapsed (hide-input) cells on paper;
# tools/latex/bbm.sty stands in for the one package of Jupyter Book's LaTeX class that
# Debian ships only in texlive-fonts-extra (500 MB). The index is sorted by makeindex
# (xindy is one more package).
# TeX is installed from Debian's packages when missing (about 300 MB; poppler-utils'
# pdftotext and pdfinfo for tests/test_pdf.py).
# Written to $(PDF_OUT)/_build/latex/book.pdf; `make pdf PDF_OUT=DIR` builds elsewhere.
PDF_OUT ?= _build/pdf
TEX_PACKAGES := latexmk texlive-xetex texlive-latex-recommended texlive-latex-extra \
	texlive-fonts-recommended fonts-freefont-otf poppler-utils
pdf: $(STAMP)
	@{ command -v latexmk && command -v xelatex && kpsewhich tabulary.sty && \
	   fc-list | grep -q FreeSerif && command -v pdftotext; } >/dev/null || { \
	  $(SUDO) apt-get update && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends \
	    $(TEX_PACKAGES); }
	$(BIN)/python tools/book_config.py $(PDF_OUT)/config-pdf.yml execute.execute_notebooks=off \
	  latex.latex_engine=xelatex sphinx.config.latex_use_xindy=false \
	  "sphinx.config.latex_additional_files=[tools/latex/bbm.sty]" \
	  sphinx.local_extensions.book_latex_fixes=tools/
	$(BIN)/jupyter-book build . --config $(PDF_OUT)/config-pdf.yml --builder pdflatex \
	  --path-output $(PDF_OUT) --warningiserror --keep-going
	@echo "PDF written to $(PDF_OUT)/_build/latex/book.pdf"

# The CI set: unit tests not marked slow, in one pytest process, then every chapter
# re-executed by nbval. One process holds every compiled program that JAX keeps:
# attnlib empties JAX's in-memory caches before the process's memory maps reach
# vm.max_map_count, where XLA crashes (attnlib/_compiled_programs.py; before that,
# the tests ran in batches of 8 files). A run whose tests are all deselected
# (pytest's exit status 5) counts as passed.
test: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest -m "not slow and not quick" tests; \
	  s=$$?; [ $$s -eq 5 ] && s=0; exit $$s
	$(nbval)

# Class mode: every chapter executed with ATTNLIB_QUICK=1 (small d, live
# simulations), each within its budget of one minute of kernel CPU time
# (tests/test_quick_mode.py; ATTNLIB_QUICK_BUDGET_S).
test-quick: $(STAMP)
	$(BIN)/python -m pytest -m quick tests -v -s

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
# Every script takes the same command line (--quick, --part, --serial, --workers,
# --address, --out, --no-cache); make_spectrum_minilm runs as a part of make_spectrum_data.
DATA_SWEEPS := erm amp spectrum scaling
DATA_OTHERS := multistart finite_size finite_size_checks interp_thresholds blocks mismatch spike_mass \
	gamp_iterates amp_finite_size scaling_trained scaling_best_lam bayes_data width_theory hardmax_theory \
	hardmax train_loss t3_gap replica seq2lab_fixed_points replicon paper_power_law paper_rates paper_figures \
	paper_variants paper_power_law_spectra paper_training ridgeless se_default
data: $(STAMP)
	cd book && for s in $(DATA_SWEEPS); do \
	  ../$(BIN)/python -m data.make_$${s}_data $(DATA_ARGS) || exit 1; done
	cd book && for s in $(DATA_OTHERS); do \
	  ../$(BIN)/python -m data.make_$$s $(DATA_ARGS) || exit 1; done

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
	rm -rf _build .pytest_cache .ruff_cache .jupyter_cache .jax_cache *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -print0 | xargs -0 rm -rf
	find . -path ./$(VENV) -prune -o -name .ipynb_checkpoints -type d -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV)
