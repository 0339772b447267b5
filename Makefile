# The README's commands. Each target installs what it needs first.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

# uv installs the versions pinned in uv.lock (every package, with its hashes), so every machine runs the
# same ones; uv itself comes from PyPI through the venv's pip, so python3 is all a fresh clone needs.
UV_VERSION ?= 0.13.9
UV      = $(BIN)/uv
# uv installs into the venv above (not a .venv of its own choosing) and leaves the pip and uv in it alone;
# it compiles the packages' bytecode as pip does (else the first start of the web server and workers
# compiles it, one module at a time: 80 s more to the first page on a busy machine).
UV_SYNC = UV_PROJECT_ENVIRONMENT=$(abspath $(VENV)) $(UV) sync --locked --inexact --compile-bytecode

.PHONY: install lock browser test run docs bench lint check-cli clean

install: $(STAMP)

$(UV):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet 'uv==$(UV_VERSION)'

# The locked dependencies, then the project itself in editable mode. --locked refuses a uv.lock that no
# longer matches pyproject.toml (uv says so): run `make lock` after changing the dependencies there.
$(STAMP): uv.lock pyproject.toml | $(UV)
	$(UV_SYNC) --extra web --extra dev --extra docs \
	  || { echo "make install: failed (above). If uv says uv.lock needs updating: make lock, then commit uv.lock" >&2; exit 1; }
	touch $(STAMP)

# Re-resolve uv.lock after a change to pyproject.toml's dependencies, keeping every pin that still fits;
# `make lock UPGRADE=1` moves every package to its newest allowed version. Commit uv.lock.
lock: | $(UV)
	$(UV) lock $(if $(UPGRADE),--upgrade)

# The browser test drives Debian's chromium package (no browser download step); we are root on CI.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	  || echo "warning: could not install Debian's chromium; the browser test will be skipped (fails under CI=true)"

# Two processes (pytest-xdist): the dashboard's tests in one, one after another as ever, the library's and the
# documentation's beside them in the other (tests/conftest.py groups them). TEST_PROCESSES=0 runs all in one.
TEST_PROCESSES ?= 2
test: install browser
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_PROCESSES)),,-n $(TEST_PROCESSES) --dist loadgroup)

# The web platform on the embedded default (SQLite + filesystem broker under var/), or on
# DATABASE_URL / REDIS_URL when set: migrates, starts gunicorn and a Celery worker, Ctrl-C stops both.
# It asks for DEBUG (off by default everywhere else), which also creates the sign-in demo/demo;
# DEBUG=0 make run runs the production settings (then SECRET_KEY is required).
HOST ?= 127.0.0.1
PORT ?= 8000
run: install
	@test -f build/docs/index.html || $(MAKE) --no-print-directory docs DOCS_STRICT= \
	  || echo "warning: the documentation site did not build; /docs/ says how to build it (make docs)"
	DEBUG=$${DEBUG:-1} $(BIN)/python -m dashboard.launcher --host $(HOST) --port $(PORT)

# The documentation site (mkdocs.yml, docs/) into build/docs/, which the platform serves at /docs/. Offline:
# the CLI, library and REST references are generated from the code, the speed tables from bench/results.json.
# Warnings are errors (a broken link, a page left out of the navigation); make run builds it leniently.
DOCS_STRICT ?= --strict
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build $(DOCS_STRICT)
	@echo "built build/docs/ ($$(find build/docs -name '*.html' | wc -l) pages); make run serves it at /docs/"

# Prints the table and saves it as bench/results.json, which the documentation's speed tables are made from.
bench: install
	$(BIN)/simcore bench --save bench/results.json

lint: install
	$(BIN)/ruff check simcore dashboard tests docs
	$(BIN)/ruff format --check simcore dashboard tests docs
	$(BIN)/mypy simcore
	SECRET_KEY=lint-only-$$(printf 'x%.0s' $$(seq 50)) $(BIN)/mypy --config-file dashboard/mypy.ini dashboard

check-cli: install
	PATH=$(abspath $(BIN)):$$PATH ../shared/tools/check-cli-contract

clean:
	rm -rf $(VENV) .pytest_cache
