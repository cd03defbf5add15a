# The README's two commands: `make serve` and `make test`. Both set up .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LINTED := app tests bench migrations reproducers

.PHONY: serve test test-perf test-fast lint bench verify-generated

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.serve-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

# lint's tools (ruff, mypy, stubs, and what mypy reads of app/ besides the service's own packages:
# packaging, pytest) on their own: `make lint` passes on a fresh clone without the test extra; no torch.
$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.serve-installed

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,reproducers,dev]'
	touch $@ $(VENV)/.serve-installed $(VENV)/.dev-installed

serve: $(VENV)/.serve-installed
	$(BIN)/errkb serve

# The timing goals (marker perf) run apart, after the rest: a slow or busy machine fails them
# alone, and their failure is not mistaken for a broken feature. The rest runs on two workers,
# a test file each (its fixtures built once), so that one file's waits on pip, the package
# index and subprocesses overlap another's work.
test: $(VENV)/.test-installed lint
	$(BIN)/pytest -n 2 --dist loadfile --durations=40
	$(BIN)/pytest -m perf

test-perf: $(VENV)/.test-installed
	$(BIN)/pytest -m perf

# The tests that need no download, browser or GPU, on every core: the loop while developing.
test-fast: $(VENV)/.test-installed
	$(BIN)/pytest -m "not network and not gpu and not browser and not perf" -n auto -q

# ruff's formatting and rules over all the Python, then mypy over the package (pyproject.toml).
lint: $(VENV)/.dev-installed
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/mypy app

# Generate a reproducer for every draft the generator handles and run each on its release.
verify-generated: $(VENV)/.test-installed
	nice -n 10 $(BIN)/errkb verify --generated --workers 2

bench: $(VENV)/.test-installed
	$(BIN)/python bench/bench_api.py
