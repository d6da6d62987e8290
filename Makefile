# The commands the README promises, each working on a fresh machine:
#   make book     set up (runtime + book extras), execute the chapters into _build/executed/ (only
#                 those whose notebook, or the package, changed since their last run there) and build
#                 the HTML book from those copies; book/*.ipynb are never written
#   make test     set up (everything), run the unit tests in random order, run every chapter through
#                 nbval (errors fail; checked cells compared with the committed outputs, trained
#                 numbers within their stated tolerances), build the HTML book with warnings as errors
#                 and check it in headless Chromium
#   make html     build the HTML book from the committed outputs, executing nothing
#   make student-html  the same without the solutions (for students), in _build/student-html/
#   make refresh  (maintainers) re-execute every chapter in place: the committed outputs
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

# The chapters, the results page (it reads the measurements the package ships) and the
# instructor's page (it reads the chapters: their words, their exercises).
CHAPTERS := $(sort $(wildcard book/[0-9][0-9]-*.ipynb)) book/measurements.ipynb book/teaching.ipynb
PACKAGE  := $(wildcard bertflow_mini/*.py bertflow_mini/*/*.py)
# Everything else the HTML book is built from, copied beside the executed chapters (not the
# generated editions in book/colab and book/student).
BOOK_FILES := _config.yml _toc.yml $(wildcard _static/*) \
	$(filter-out %.ipynb %.py book/colab book/student,$(wildcard book/*))
EXECUTED := $(BUILD)/executed
# The chapters' check, as CI runs it (book/conftest.py: tolerances, PYTHONHASHSEED=0 in the kernel).
# pytest-randomly must stay off: it would shuffle a chapter's cells. One chapter: NOTEBOOKS=book/04-….ipynb
NOTEBOOKS ?= book/
NBVAL = --nbval-lax -p no:randomly $(NOTEBOOKS)
# Chapters run side by side, each whole in its own kernel on one pytest-xdist worker (--dist
# loadfile keeps a notebook's cells together and in order), each kernel with one thread: two
# kernels of two threads each on two cores stall each other (torch's threads spin while they
# wait), which a newcomer's empty cache, where the chapters encode checkpoints themselves, showed:
# nbval took over 25 minutes instead of about 11. One thread moves printed numbers by float noise
# only (the one-thread row of `make test-portability`); the flow fits use one thread anyway.
WORKERS ?= 2
PARALLEL = -n $(WORKERS) --dist loadfile
# One thread per process: the unit tests' tensors are tiny, and the chapters' kernels are above;
# the training runs (pretraining, SimCSE) pin their own thread count whatever this says.
ONE_THREAD = OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

.PHONY: all install browser-deps cache book html student-html release editions student refresh test test-colab test-floors unit lint lock test-portability clean help
all: help
help:
	@echo "make book    - set up, execute the chapters into $(EXECUTED)/ (what changed), build the HTML book"
	@echo "make test    - set up and run every test (units, chapters through nbval, HTML build, browser check)"
	@echo "make html    - build the HTML book from the committed outputs (no execution)"
	@echo "make student-html - the HTML book without solutions, for students ($(STUDENT_HTML)/)"
	@echo "make release - the released weights, their checksums, the editions and the wheel ($(BUILD)/release)"
	@echo "make editions - write the Colab and student editions (book/colab, book/student) from the chapters"
	@echo "make student - write the student editions only (book/student: no solutions)"
	@echo "make refresh - (maintainers) re-execute the chapters in place, rewriting their committed outputs"
	@echo "make test-portability - the chapters' checks under other BLAS kernels and thread counts"
	@echo "make test-colab - every chapter as a Colab reader runs it (wheel, release; then bert-base's shape)"
	@echo "make test-floors - the unit tests and chapter 0 at the lowest versions pyproject.toml allows"

# The package's extras (`book` to build the book; for `make test` also `test` and `bench`), every
# package, transitive ones included, at its version in requirements.lock: the environment the
# committed outputs were made with.
define pip_install
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "$(PY) is Python $$($(PY) -c 'import platform; print(platform.python_version())'); the pinned numpy, scipy and pandas need >= 3.11:"; \
	  echo "  rm -rf $(VENV) && make $(MAKECMDGOALS) PYTHON=python3.11"; exit 1; }
	$(PY) -m pip install -q -c requirements.lock -r requirements.txt -e ".[$(1)]" -e tools
	touch $@
endef
install: $(VENV)/.installed-book
$(VENV)/.installed-book: requirements.txt requirements.lock pyproject.toml tools/pyproject.toml
	$(call pip_install,book)
ALL_EXTRAS := book,test,bench
$(VENV)/.installed-test: requirements.txt requirements.lock pyproject.toml tools/pyproject.toml
	$(call pip_install,$(ALL_EXTRAS))

# Re-resolve requirements.lock after changing a pin in requirements.txt or pyproject.toml: uv, for
# Python 3.11.7 and torch's CPU build (as the outputs were made; "+cpu" dropped so that pip elsewhere
# takes the platform's build of the same version).
lock: $(VENV)/.installed-test
	$(VENV)/bin/uv pip compile requirements.txt pyproject.toml --extra book --extra test --extra bench \
	  --python-version 3.11.7 --extra-index-url https://download.pytorch.org/whl/cpu \
	  --index-strategy unsafe-best-match --no-header -o requirements.lock
	sed -i 's/^torch==\(.*\)+cpu$$/torch==\1/' requirements.lock

# Debian's Chromium and ChromeDriver for the browser check (root can install them; others are told how).
browser-deps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "browser check needs: sudo apt-get install chromium chromium-driver"; fi; }

# Pretrain scratch-bert once (about 12 minutes on 2 cores; a no-op when the cache holds this recipe's
# checkpoints), then encode every dataset once with it and with the fine-tuned contrast (one forward
# pass serves every pooling), so no chapter pays for the encoding alone. About 70 s when warm.
cache: $(VENV)/.installed-book
	$(PY) -m bertflow_mini pretrain
	$(PY) -m bertflow_mini encode --model scratch-bert
	$(PY) -m bertflow_mini encode --model all-MiniLM-L6-v2
	$(PY) -m bertflow_mini simcse  # chapter 7: scratch-bert(@0)+simcse, seeds 0-2, trained once; all and their bases encoded

# make book fills the cache before executing a chapter, once per change of the package.
$(BUILD)/.cache-filled: $(PACKAGE) | $(VENV)/.installed-book
	$(MAKE) --no-print-directory cache
	@mkdir -p $(@D) && touch $@

# Each chapter top to bottom in a fresh kernel (started in book/), saved as a copy in the build
# directory; redone when the notebook, the package or the pins change.
$(EXECUTED)/book/%.ipynb: book/%.ipynb $(PACKAGE) requirements.txt $(BUILD)/.cache-filled
	$(PY) -m bookbuild.execute $< --output $@
# The instructor's page counts what the chapters beside it say: redone when one of them changes.
$(EXECUTED)/book/teaching.ipynb: $(wildcard book/[0-9][0-9]-*.ipynb)
$(EXECUTED)/%: %
	@mkdir -p $(@D)
	cp $< $@

book: $(addprefix $(EXECUTED)/,$(CHAPTERS) $(BOOK_FILES)) | $(VENV)/.installed-book
	$(VENV)/bin/jupyter-book build $(EXECUTED) --warningiserror --keep-going -q
	@echo "The book is at file://$(abspath $(EXECUTED))/_build/html/index.html"

html: $(VENV)/.installed-book
	$(VENV)/bin/jupyter-book build . --path-output $(BUILD) --warningiserror --keep-going -q
	@echo "The book (committed outputs) is at file://$(abspath $(BUILD))/_build/html/index.html"

# The same book for students: its sources copied into $(STUDENT_HTML) without the solutions (the
# student editions' rules: Solution dropdowns, the Exercises section's hidden cells) and without the
# teachers' page, each Colab button opening the student edition; built there from the committed
# outputs (bookbuild.editions.write_student_book).
STUDENT_HTML := $(BUILD)/student-html
student-html: $(VENV)/.installed-book
	$(PY) -m bookbuild.editions --student-book $(STUDENT_HTML)
	$(VENV)/bin/jupyter-book build $(STUDENT_HTML) --warningiserror --keep-going -q
	@echo "The student book is at file://$(abspath $(STUDENT_HTML))/_build/html/index.html"

# The Colab edition (no MyST, no outputs, the install pinned to v<version>) and the student edition
# (the same without solutions) of every chapter and the results page, generated from book/*.ipynb
# and committed where the README's Colab links point. Rerun after changing a chapter (a test fails
# while a committed edition is stale); the editions read the committed outputs' glued values.
# Everything a copy of the book publishes (bookbuild.publish): the released weights'
# archives with their checksums, the package's manifest of them, the editions and the wheel, into
# $(BUILD)/release; `make release REPOSITORY=https://github.com/<you>/<fork>` sets the one configured
# value first (README: "Publish your own copy").
release: $(VENV)/.installed-book cache
	$(PY) -m bookbuild.publish --out $(BUILD)/release $(if $(REPOSITORY),--repository $(REPOSITORY))
editions: $(VENV)/.installed-book
	$(PY) -m bookbuild.editions
student: $(VENV)/.installed-book
	$(PY) -m bookbuild.editions --edition student

# Rewrites book/*.ipynb (one chapter: make refresh CHAPTERS=book/04-representation-degeneration.ipynb),
# then prints, per chapter, every number that moved and every checked cell that no longer matches
# the outputs it replaced (a report: review it, and `git diff book/`, before committing).
refresh: $(VENV)/.installed-book cache
	@mkdir -p $(BUILD)/before-refresh && cp $(CHAPTERS) $(BUILD)/before-refresh/
	$(PY) -m bookbuild.execute $(CHAPTERS)
	@for nb in $(CHAPTERS); do \
	  $(PY) -m bookbuild.output_check $(BUILD)/before-refresh/$$(basename $$nb) $$nb || true; done

# pytest exits 5 when it collected no test (a wrong path, a -k filter that matches nothing): say so
# plainly and fail, since this suite always has tests. $(PYTEST_ARGS) goes to each pytest run.
define pytest
	$(PY) -m pytest $(1) -p no:cacheprovider $(PYTEST_ARGS) \
	  || { rc=$$?; [ $$rc -eq 5 ] && echo 'pytest collected no tests (exit 5): $(1)'; exit $$rc; }
endef

# The unit tests: every test but the HTML build, the chapters' runs, the Colab simulation and the
# checks that read the warm model cache. None needs the model cache (tests/conftest.py gives each
# an empty one of its own).
UNIT_MARKERS := not html and not notebook and not colab and not warm_cache

# The conventional checks, each a tool of its own: ruff (format and lint rules in pyproject.toml),
# vulture (dead code, counting what the chapters call: their code exported by nbconvert; what it
# cannot see is named in tests/vulture_whitelist.py), import-linter (the layers: pyproject.toml's
# contracts) and mypy (the type hints; run beside the others, a cold mypy takes over a minute).
LINTED := bertflow_mini tools tests benchmarks experiments
lint: $(VENV)/.installed-test
	@$(VENV)/bin/mypy & mypy=$$!; \
	  $(VENV)/bin/ruff format --check -q $(LINTED) book && $(VENV)/bin/ruff check -q $(LINTED) book; styled=$$?; \
	  rm -rf $(BUILD)/lint && mkdir -p $(BUILD)/lint && \
	  $(VENV)/bin/jupyter nbconvert --to script --log-level WARN --output-dir $(BUILD)/lint book/*.ipynb; \
	  $(VENV)/bin/vulture $(LINTED) $(BUILD)/lint --min-confidence 60 | grep -v '^$(BUILD)/lint/'; dead=$$?; \
	  $(VENV)/bin/lint-imports; imports=$$?; \
	  wait $$mypy; typed=$$?; \
	  [ $$styled -eq 0 ] && [ $$dead -ne 0 ] && [ $$imports -eq 0 ] && [ $$typed -eq 0 ]

# Lint and unit tests first (fast failures, before pretraining), then the cache, the chapters through
# nbval, then the HTML book built with warnings as errors and opened in headless Chromium (tests
# marked `html`). The Colab simulation (every chapter from a wheel, on the book's model and on
# bert-base's exact shape) runs under `make test-colab`: it takes longer than the rest of the suite.
test: lint $(VENV)/.installed-test browser-deps
	$(ONE_THREAD) $(call pytest,tests -m "$(UNIT_MARKERS)" -n $(WORKERS))
	$(MAKE) --no-print-directory cache
	$(ONE_THREAD) $(call pytest,tests -m "notebook or warm_cache" $(PARALLEL))
	$(ONE_THREAD) $(call pytest,$(NBVAL) $(PARALLEL))
	$(call pytest,tests -m html)

# Every chapter as a Colab reader runs it: the package installed from its wheel into a fresh
# virtualenv with a stand-in google.colab and an empty cache; on the book's model, its weights
# fetched from the release (packed from the cache, served from localhost); then switched to
# bert-base-uncased (it and the MultiBERTs names at their exact shapes, random weights, from
# $$BERTFLOW_MODELS; the first 20 pairs of every split). benchmarks/bench_colab.py times the first.
test-colab: $(VENV)/.installed-test cache
	$(call pytest,tests/test_colab_path.py -m colab -p no:randomly)

# The lowest versions pyproject.toml allows (uv's lowest-direct resolution of the runtime
# dependencies; the tools keep their exact pins), in a virtualenv of their own under $(BUILD)/floors:
# the unit tests, then chapter 0 executed there (run to the end, not compared: other versions
# print other digits). Not part of `make test`: the floors' torch is a CUDA build of several GB.
FLOORS := $(BUILD)/floors
test-floors: $(VENV)/.installed-test cache
	$(VENV)/bin/uv pip compile pyproject.toml --extra book --extra test --resolution lowest-direct \
	  --python-version 3.11 --no-header -q -o $(FLOORS).lock
	test -x $(FLOORS)/bin/python || $(PYTHON) -m venv $(FLOORS)
	$(VENV)/bin/uv pip install -q --python $(FLOORS)/bin/python -r $(FLOORS).lock
	PYTHONPATH=$(abspath .):$(abspath tools) $(FLOORS)/bin/python -m pytest tests -m "$(UNIT_MARKERS)" -p no:cacheprovider $(PYTEST_ARGS)
	@mkdir -p $(FLOORS)/executed
	PYTHONPATH=$(abspath .):$(abspath tools) $(FLOORS)/bin/python -m bookbuild.execute \
	  book/00-the-puzzle.ipynb --output $(FLOORS)/executed/00-the-puzzle.ipynb

# The chapters' nbval check under perturbations that change floating point the way another CPU
# does, each against the same warm cache and each required to pass: 1 thread instead of 2
# (OpenBLAS splits its sums by thread; torch's thread count follows OMP_NUM_THREADS; `make test`
# itself now runs the chapters with one thread, so this row is its nbval stage run alone); OpenBLAS's
# kernels for older CPUs (numpy and scipy use OpenBLAS; Zen and Haswell give this CPU's own
# results, SkylakeX needs AVX-512); MKL's AVX2 code path (torch's matrix products use MKL: an
# AVX-512 Xeon and an AMD EPYC take different ones); and all at once with MKL's compatible code
# path and torch's own kernels without AVX2 (layer norm, softmax). Each run takes as long as the
# chapters and ends with how far the numbers moved, as a share of their tolerance.
# One perturbation, one chapter: make test-portability PERTURBATIONS=MKL_CBWR=AVX2 NOTEBOOKS=book/04-….ipynb
#
# REPRETRAIN=1: the book's model itself pretrained anew under each perturbation, as a newcomer's
# fresh clone on another CPU family does (pretraining is not bitwise equal across CPUs, so every
# trained number downstream moves). Each perturbation gets a cache of its own
# ($(BUILD)/portability/<perturbation>/cache): `make cache` under it (pretraining, encodings,
# SimCSE), then every chapter executed into .../executed/ and compared with its committed outputs,
# failing on any mismatch and on any checked number past half its tolerance; numbers that moved
# in unchecked cells are listed for the prose review. About 45 minutes per perturbation on two
# cores (the compatible/default one longer: its kernels are slower); a second run reuses its cache.
THREADS = OMP_NUM_THREADS=$(1),MKL_NUM_THREADS=$(1),OPENBLAS_NUM_THREADS=$(1)
ifeq ($(REPRETRAIN),)
PERTURBATIONS ?= $(call THREADS,1) OPENBLAS_CORETYPE=Sandybridge MKL_CBWR=AVX2 \
	$(call THREADS,1),OPENBLAS_CORETYPE=Prescott,MKL_CBWR=COMPATIBLE,ATEN_CPU_CAPABILITY=default
test-portability: $(VENV)/.installed-test cache
	@failed=""; for p in $(PERTURBATIONS); do \
	  echo "== $$p" | tr , ' '; \
	  env $$(echo $$p | tr , ' ') $(PY) -m pytest $(NBVAL) -q -p no:cacheprovider $(PYTEST_ARGS) \
	    || failed="$$failed $$p"; \
	done; [ -z "$$failed" ] || { echo "failed under:$$failed" | tr , ' '; exit 1; }
else
PERTURBATIONS ?= ATEN_CPU_CAPABILITY=avx2,MKL_CBWR=AVX2 $(call THREADS,1) \
	ATEN_CPU_CAPABILITY=default,MKL_CBWR=COMPATIBLE
test-portability: $(VENV)/.installed-test
	@failed=""; for p in $(PERTURBATIONS); do \
	  dir=$(BUILD)/portability/$$(echo $$p | tr ',=' '+-'); \
	  echo "== re-pretrained under $$p ($$dir)" | tr , ' '; \
	  env $$(echo $$p | tr , ' ') BERTFLOW_CACHE=$(abspath .)/$$dir/cache $(MAKE) --no-print-directory cache \
	    || { failed="$$failed $$p"; continue; }; \
	  for nb in $(CHAPTERS); do \
	    out=$$dir/executed/$$(basename $$nb); \
	    env $$(echo $$p | tr , ' ') BERTFLOW_CACHE=$(abspath .)/$$dir/cache \
	      $(PY) -m bookbuild.execute $$nb --output $$out || { failed="$$failed $$p:$$nb"; continue; }; \
	    $(PY) -m bookbuild.output_check $$nb $$out --max-share 0.5 --unchecked \
	      > $$out.report || failed="$$failed $$p:$$nb"; \
	    grep -v '^UNCHECKED' $$out.report; \
	  done; \
	done; [ -z "$$failed" ] || { echo "failed under:$$failed" | tr , ' '; exit 1; }
endif

unit: $(VENV)/.installed-test
	$(ONE_THREAD) $(call pytest,tests -m "$(UNIT_MARKERS)" -n $(WORKERS))

clean:
	rm -rf $(BUILD) .pytest_cache
