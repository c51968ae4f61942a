# The README's two commands: `make book` builds the book, `make test` runs every test.
# Both create the virtual environment (.venv) and install everything on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export ATTNLAB_THREADS := 1
export OMP_NUM_THREADS := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: book test test-other-cpu install check clean browser ray

install: $(STAMP)

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# Execute every chapter whose source, parameters or library code changed (2 workers, one torch
# thread each), then build the HTML with warnings as errors: _build/html/index.html.
book: $(STAMP)
	$(BIN)/attnlab book --jobs 2

# Unit tests, nbval over every executed notebook in book/ (2 workers, claims tables compared)
# and a strict book build (tests/test_book.py::test_strict_book_build). Results are recomputed in a
# fresh store.
test: $(STAMP) ray browser
	ATTNLAB_STORE=$$(mktemp -d) $(BIN)/python -m pytest -n 2 --dist loadfile --nbval-lax \
		--durations=15 lib tests book
	$(MAKE) --no-print-directory test-other-cpu

# The claims checks again, as on another CPU: torch on a lower instruction set and numpy's BLAS on an older
# kernel than those that executed the book (attnlab.notebooks.other_machine_env), with no re-execution of
# book/: every claims table must hold at its declared precision, every verdict the same. On a sample of the
# chapters (attnlab.notebooks.other_cpu_chapters: every paper's cheapest trained and exact chapter, then the
# cheapest within 150 s of chapter time), so that make test stays within 20 minutes; `make test-other-cpu
# ALL=1` checks every chapter.
test-other-cpu: $(STAMP)
	env $$($(BIN)/python -c "from attnlab.notebooks import other_machine_env as e; \
		print(' '.join(f'{k}={v}' for k, v in e().items()))") ATTNLAB_STORE=$$(mktemp -d) \
		$(BIN)/python -m pytest -n 2 --dist loadfile --nbval-lax -q $(if $(ALL),book,$$($(BIN)/python -c \
		"from attnlab.notebooks import other_cpu_chapters as c; print(' '.join(str(p) for p in c()))"))

# The optional Ray backend (tests/test_ray.py needs it): installed for the tests only, never for the book.
ray: $(VENV)/.ray-installed
$(VENV)/.ray-installed: $(STAMP) requirements-ray.txt
	$(BIN)/python -m pip install --quiet -r requirements-ray.txt
	touch $@

# The browser test (tests/test_browser.py) looks at the built book in Debian's headless Chromium.
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

check: $(STAMP)
	$(BIN)/attnlab check

clean:
	rm -rf _build runs results/ci results/medium
