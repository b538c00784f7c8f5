PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/kubesched: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# Runs the quickstart simulation on the embedded cluster.
demo: $(BIN)/kubesched
	$(BIN)/kubesched simulate examples/quickstart --seed 1

lint: $(BIN)/kubesched
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

typecheck: $(BIN)/kubesched
	$(BIN)/mypy src
	$(BIN)/mypy --strict bench

unit: $(BIN)/kubesched
	$(BIN)/pytest

test: lint typecheck unit

bench: $(BIN)/kubesched
	$(BIN)/kubesched bench basic

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
