# The two commands the README promises, each working on a fresh machine:
#   make book   set up, execute every chapter, build the HTML book
#   make test   set up, run the unit tests, re-execute every chapter and compare its checked cells
#               with the committed outputs (numbers within stated tolerances), build the book with
#               warnings as errors and check it in headless Chromium
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
BUILD  ?= _build

# The local mirror beside the checkout (../shared), when there is one; otherwise the code falls
# back to the hub and the official download URLs. Explicit settings in the environment win.
SHARED := $(abspath $(wildcard ../shared))
ifneq ($(SHARED),)
export BERTFLOW_DATA   ?= $(SHARED)/data
export BERTFLOW_MODELS ?= $(SHARED)/models
endif
export PYTHONHASHSEED   = 0
export TOKENIZERS_PARALLELISM = false

CHAPTERS := $(sort $(wildcard book/[0-9][0-9]-*.ipynb))

.PHONY: all install browser-deps cache book execute html test unit test-portability clean help
all: help
help:
	@echo "make book   - set up, execute the chapters, build the HTML book"
	@echo "make test   - set up and run every test (units, chapters re-executed and compared, HTML build, browser check)"
	@echo "make test-portability - the chapters' checks under other BLAS kernels and thread counts"

install: $(VENV)/.installed
$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# Debian's Chromium and ChromeDriver for the browser check (root can install them; others are told how).
browser-deps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "browser check needs: sudo apt-get install chromium chromium-driver"; fi; }

# Pretrain scratch-bert once (about 12 minutes on 2 cores; a no-op when the cache holds this recipe's
# checkpoints), then encode every dataset once with it and with the fine-tuned contrast (one forward
# pass serves every pooling), so no chapter pays for the encoding alone.
cache: install
	$(PY) -m bertflow_mini pretrain
	$(PY) -m bertflow_mini encode --model scratch-bert
	$(PY) -m bertflow_mini encode --model all-MiniLM-L6-v2
	$(PY) -m bertflow_mini simcse  # chapter 7: scratch-bert(@0)+simcse trained once; both and their bases encoded

# Run every chapter top to bottom in a fresh kernel, saving the outputs into the notebook.
execute: install cache
	$(PY) -m bertflow_mini.execute $(CHAPTERS)

html: install
	$(VENV)/bin/jupyter-book build . --path-output $(BUILD) --warningiserror --keep-going -q

book: execute html
	@echo "The book is at file://$(abspath $(BUILD))/_build/html/index.html"

# pytest exits 5 when it collected no test (a wrong path, a -k filter that matches nothing): say so
# plainly and fail, since this suite always has tests.
test: install browser-deps cache
	$(PY) -m pytest tests -p no:cacheprovider $(PYTEST_ARGS) \
	  || { rc=$$?; [ $$rc -eq 5 ] && echo "pytest collected no tests (exit 5)"; exit $$rc; }

# The chapters' checks (tests/test_notebooks.py) under perturbations that change floating point the
# way another CPU does, each against the same warm cache and each required to pass: 1 thread
# instead of 2 (OpenBLAS splits its sums by thread; torch's thread count follows OMP_NUM_THREADS);
# OpenBLAS's kernels for older CPUs (numpy and scipy use OpenBLAS; Zen and Haswell give this CPU's
# own results, SkylakeX needs AVX-512); and all at once with MKL's compatible code path (torch's
# matrix products use MKL) and torch's own kernels without AVX2 (layer norm, softmax). Each run
# takes as long as the chapters; fresh runs are kept in $(BUILD)/portability/ for
# `python -m bertflow_mini.output_check book/X.ipynb $(BUILD)/portability/RUN/X.ipynb`.
# One perturbation: make test-portability PERTURBATIONS=MKL_CBWR=COMPATIBLE
THREADS = OMP_NUM_THREADS=$(1),MKL_NUM_THREADS=$(1),OPENBLAS_NUM_THREADS=$(1)
PERTURBATIONS ?= $(call THREADS,1) OPENBLAS_CORETYPE=Sandybridge \
	$(call THREADS,1),OPENBLAS_CORETYPE=Prescott,MKL_CBWR=COMPATIBLE,ATEN_CPU_CAPABILITY=default
test-portability: install cache
	@failed=""; for p in $(PERTURBATIONS); do \
	  echo "== $$p" | tr , ' '; \
	  env $$(echo $$p | tr , ' ') BERTFLOW_FRESH_NOTEBOOKS=$(BUILD)/portability/$$(echo $$p | tr =, -+) \
	    $(PY) -m pytest tests/test_notebooks.py -m notebook -q -s -p no:cacheprovider $(PYTEST_ARGS) \
	    || failed="$$failed $$p"; \
	done; [ -z "$$failed" ] || { echo "failed under:$$failed" | tr , ' '; exit 1; }

unit: install
	$(PY) -m pytest tests -m "not browser and not notebook" $(PYTEST_ARGS)

clean:
	rm -rf $(BUILD) .pytest_cache
