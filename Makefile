# The README's two commands: `make serve` and `make test`. Both set up .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: serve test lint bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.serve-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,reproducers]'
	touch $@ $(VENV)/.serve-installed

serve: $(VENV)/.serve-installed
	$(BIN)/errkb serve

test: $(VENV)/.test-installed lint
	$(BIN)/pytest

lint: $(VENV)/.test-installed
	$(BIN)/ruff check app tests bench migrations reproducers

bench: $(VENV)/.test-installed
	$(BIN)/python bench/bench_api.py
