# The README's commands. Each target installs what it needs first.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: install test run bench lint check-cli clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[web,dev]'
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/simcore bench

lint: install
	$(BIN)/ruff check simcore dashboard tests
	$(BIN)/mypy simcore

check-cli: install
	PATH=$(abspath $(BIN)):$$PATH ../shared/tools/check-cli-contract

clean:
	rm -rf $(VENV) .pytest_cache
