# The project's manual: `make help` lists every target. Every target that needs the toolchain
# depends on a stamp file, so a fresh clone sets itself up and a second run is quick.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CDK := node_modules/.bin/cdk
PY_STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# checkov pins boto3, packaging and networkx below this project's pins: a virtualenv of its own
# (requirements-checkov.txt), built by the first `make lint`.
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
# MiniStack, the LocalStack-compatible engine `make e2e-localstack` runs on (no token, no Docker),
# pins botocore and graphql-core below this project's pins: a virtualenv of its own too
# (requirements-ministack.txt), built by the first `make test`, `make ministack` or `make e2e-localstack`.
MINISTACK_VENV := .venv-ministack
MINISTACK_STAMP := $(MINISTACK_VENV)/.installed
# The documentation site's generator (Material for MkDocs, requirements-docs.txt): a virtualenv of
# its own too, so its pins never move the project's; built by the first `make docs` or `make lint`.
DOCS_VENV := .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.installed
# mermaid.js for the site's diagrams, from the npm registry's package of this exact version (Material
# would fetch it from a CDN when a page is viewed): the site then draws them offline too.
MERMAID_VERSION := 11.12.2
MERMAID_JS := $(DOCS_VENV)/share/mermaid-$(MERMAID_VERSION).min.js
STAGE ?= dev
# The entity an operator tool acts on: ID=<id>, as in every service the template makes; ORDER= is the
# sample's word for the same.
ID ?= $(ORDER)
# Where `make deploy` / `make destroy` go: always named, never guessed (STAGE=local or
# local-express: the local cloud).
TARGET ?= $(if $(filter local local-express,$(STAGE)),local,)

# Keep every cache inside the project (jsii unpacks ~185 MB on first import; the CDK CLI caches
# notices); `make clean` removes them with the rest.
export JSII_RUNTIME_PACKAGE_CACHE_ROOT := $(CURDIR)/.cache/jsii
export CDK_HOME := $(CURDIR)/.cache/cdk
export CDK_DISABLE_VERSION_CHECK := 1
export AWS_EC2_METADATA_DISABLED := true
# jsii supports Node 22 and 24; on an end-of-life Node it prints a banner on every import. The
# synthesized templates are the same, so acknowledge the running major version instead of
# printing that wall in every test.
NODE_MAJOR := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := $(NODE_MAJOR)
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
# Every recipe's import path, set here once (tests/unit/test_makefile.py checks each entry point
# imports with it): the Lambda asset root (`orders`), the project root (`infra`, `proof`, `bench`,
# `scale`), the library's source (lib/reliability/src) and the lab's (lab/src: `ops`, `chaos`,
# ...), as pytest and mypy have them (pyproject.toml). The venv also installs the library and the
# lab (requirements-dev.txt, editable); their sources on the path too mean a second checkout
# sharing that venv still runs its own copy. Relative to the recipe's directory, so a copy of the
# project imports its own code; a PYTHONPATH from outside is replaced.
export PYTHONPATH := functions:.:lib/reliability/src:lab/src

.PHONY: help install synth nag lint format test test-unit test-integration test-infra test-e2e ministack e2e-localstack bench mutation \
        demo summary deploy destroy layer local local-up local-down invoke seed invariants redrive-dlq redrive-workflow chaos constraints clean \
        story idem-show idem-forget fence-show fence-reset browser openapi fuzz scale scale-sheet rerun new-service load \
        docs docs-serve acceptance

help: ## List every target with what it does
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(PY_STAMP): requirements.txt requirements-layer.txt requirements-dev.txt constraints.txt lib/reliability/pyproject.toml lab/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	@touch $@

$(CHECKOV_STAMP): requirements-checkov.txt constraints-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-checkov.txt -c constraints-checkov.txt
	@touch $@

$(MINISTACK_STAMP): requirements-ministack.txt constraints-ministack.txt
	$(PYTHON) -m venv $(MINISTACK_VENV)
	$(MINISTACK_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-ministack.txt -c constraints-ministack.txt
	@touch $@

$(DOCS_STAMP): requirements-docs.txt constraints-docs.txt
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-docs.txt -c constraints-docs.txt
	@touch $@

$(MERMAID_JS): | $(DOCS_STAMP)
	rm -rf $(DOCS_VENV)/share/npm-pack && mkdir -p $(DOCS_VENV)/share/npm-pack
	cd $(DOCS_VENV)/share/npm-pack && npm pack --silent mermaid@$(MERMAID_VERSION) >/dev/null \
	  && tar -xzf mermaid-$(MERMAID_VERSION).tgz package/dist/mermaid.min.js
	mv $(DOCS_VENV)/share/npm-pack/package/dist/mermaid.min.js $@ && rm -rf $(DOCS_VENV)/share/npm-pack

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(PY_STAMP) $(NODE_STAMP) ## Create .venv and node_modules with the pinned toolchain

synth: install ## Synthesize both stacks of STAGE=dev|prod|local|dev-express|local-express into cdk.out/; fails on any unacknowledged cdk-nag finding
	rm -rf cdk.out
	$(CDK) synth --quiet -c stage=$(STAGE)
	@ls cdk.out/*.template.json

deploy: synth ## Deploy STAGE with the pinned CDK CLI to TARGET=local|localstack|aws (printed first; bootstraps if needed)
	@test -n "$(TARGET)" || { echo "usage: make deploy STAGE=dev|prod|local TARGET=local|localstack|aws"; exit 2; }
	$(PY) -m ops.deploy deploy --stage $(STAGE) --target $(TARGET) --app cdk.out

destroy: synth ## Remove STAGE's stacks from TARGET with `cdk destroy` (the CDK bootstrap stack stays)
	@test -n "$(TARGET)" || { echo "usage: make destroy STAGE=dev|prod|local TARGET=local|localstack|aws"; exit 2; }
	$(PY) -m ops.deploy destroy --stage $(STAGE) --target $(TARGET) --app cdk.out

nag: synth ## Synthesize, then list every acknowledged cdk-nag finding with the construct and reason
	@$(PY) -m ops.summary --acknowledgments cdk.out

demo: install ## The service offline: local cloud up, orders, retries, duplicates, a crash, a redrive; report + invariants; WORKFLOW=express on Express (.localcloud-express)
	$(PY) -m ops.demo $(if $(WORKFLOW),--workflow $(WORKFLOW))

summary: synth ## Synthesize and print the stack summary (resources per type, outputs, cdk-nag result)
	$(PY) -m ops.summary cdk.out

lint: install $(CHECKOV_STAMP) docs ## ruff (lint + format check), mypy, the import layers (import-linter), the GitHub Actions workflows against their schema, checkov on every stage's templates, the docs site in strict mode
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m ops.layers
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(VENV)/bin/python -m ops.security_scan

docs: $(DOCS_STAMP) $(MERMAID_JS) ## Build the documentation site offline in strict mode (any warning fails) into .cache/site/
	NO_MKDOCS_2_WARNING=1 MERMAID_JS=$(MERMAID_JS) $(DOCS_VENV)/bin/mkdocs build --strict

docs-serve: $(DOCS_STAMP) $(MERMAID_JS) ## Serve the documentation site on http://127.0.0.1:8000 with live reload; DOCS_ADDR=127.0.0.1:8001
	NO_MKDOCS_2_WARNING=1 MERMAID_JS=$(MERMAID_JS) $(DOCS_VENV)/bin/mkdocs serve --strict --dev-addr $(or $(DOCS_ADDR),127.0.0.1:8000)

format: install ## Apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: install $(CHECKOV_STAMP) $(MINISTACK_STAMP) ## The whole suite: unit, integration, infrastructure, end to end on a local cloud, chaos subset (one worker per core)
	$(PY) -m pytest -n auto --dist loadgroup

acceptance: install ## A new service proven as a user would: the wallet transfer written into a generated copy, its checks, then the lab in it (make chaos, demo, story, redrive-dlq); a copy that installs its own toolchain; minutes (CI)
	RETRYSAFE_ACCEPTANCE=1 $(PY) -m pytest -p no:xdist -rs tests/template/test_wallet.py tests/template/test_own_install.py

test-unit: install ## Unit tests only (fast, no synthesis), the reliability library's runtime half included
	$(PY) -m pytest tests/unit lib/reliability/tests --ignore=lib/reliability/tests/cdk

test-integration: install ## The whole chain in-process on moto
	$(PY) -m pytest tests/integration

test-infra: install $(CHECKOV_STAMP) ## Template assertions, cdk-nag, checkov and cfn-lint; the library's CDK half
	$(PY) -m pytest tests/infra lib/reliability/tests/cdk

test-e2e: install ## End to end over HTTP and AWS APIs: a local cloud of its own, or RETRYSAFE_E2E_TARGET=outputs|aws|localstack
	$(PY) -m pytest tests/e2e

ministack: install $(MINISTACK_STAMP) ## Run MiniStack, patched where it differs from AWS (lab/src/localstack_engine/), on 127.0.0.1:4566 in the foreground (Ctrl-C stops it)
	$(PY) -m localstack_engine.process

e2e-localstack: install $(MINISTACK_STAMP) ## The LocalStack path on MiniStack: engine up, layer, deploy STAGE=dev TARGET=localstack, seed, the e2e tier, destroy, engine down (3-5 min)
	$(PY) -m localstack_engine.walk

bench: install ## Count AWS calls per step and per order through the handlers on moto, time each handler's cold invocation (import + first invocation, clients included) against a bare Powertools handler, price whole orders with and without the layer; writes bench/results/
	$(PY) -m bench.roundtrips
	$(PY) bench/coldstart.py
	$(PY) bench/cost.py

layer: install ## Build the Powertools layer zip for an emulator (.cache/layer/); TARGET=localstack also publishes it there and prints its ARN; LAYER_ARGS="--python 3.11 --arch x86_64"
	@$(PY) -m ops.layer $(if $(filter localstack,$(TARGET)),--publish) $(LAYER_ARGS)

openapi: install ## Write the API's OpenAPI description (functions/orders/openapi.json) from the route list and the contract models
	$(PY) -m orders.openapi

fuzz: install ## Hostile requests, then schemathesis (every phase, schemathesis.toml) over HTTP against a local cloud (running, or started and stopped); FUZZ_ARGS="--requests 5000 --seed 11 --schemathesis-examples 500"; writes results/ops/{fuzz,schemathesis}.{json,md}
	$(PY) -m ops.fuzz $(FUZZ_ARGS)

load: install ## Orders/s and POST, GET, end-to-end latency from 16 clients, 5 rounds of 1,000 orders on one local cloud (running, or started and stopped); LOAD_ARGS="--clients 16 --entities 1000 --rounds 5"; writes results/ops/load.{json,md}
	$(PY) -m ops.load $(LOAD_ARGS)

scale: install ## Burst (10,000 orders/min) and 1 h soak with faults in the scale model, planned and mutant; writes scale/results/report.{json,md}
	$(PY) -m scale run $(SCALE_ARGS)

scale-sheet: install ## Write docs/scale.md: which quota binds first at 10..10,000 orders/s, what to raise, cost per hour
	$(PY) -m scale sheet $(SCALE_ARGS)

# mutmut runs the library's tests once per mutant: MUTATION_CHILDREN at a time (one by default, the
# machine is shared); a mutant name glob (MUTANTS="reliability.keys*") narrows the run. mutmut does
# not mutate module-level constants: the constant mutants (lib/reliability/tests/constant_mutants.py)
# run after it; CONSTANT_MUTANTS="name ..." narrows them, CONSTANT_MUTANTS=none skips them.
MUTATION_CHILDREN ?= 1
mutation: install ## Mutation-test the reliability library with its own tests (mutmut, lib/reliability, and the constant mutants); writes lib/reliability/results/; MUTANTS="reliability.keys*"
	cd lib/reliability && nice -n 10 $(CURDIR)/$(VENV)/bin/mutmut run --max-children $(MUTATION_CHILDREN) $(MUTANTS)
	cd lib/reliability && $(CURDIR)/$(VENV)/bin/mutmut results --all true > mutants/results.txt
	$(PY) lib/reliability/scripts/mutation_report.py "make mutation$(if $(MUTANTS), MUTANTS=$(MUTANTS))"
	$(if $(filter none,$(CONSTANT_MUTANTS)),,nice -n 10 $(PY) lib/reliability/scripts/constant_mutants.py $(CONSTANT_MUTANTS))

chaos: install ## Crash points, error responses, lost answers, time travel, random schedules, interleavings, the control, the mutants' catch rates; writes results/chaos/ (WORKFLOW=express: an Express stage, results/chaos/express/)
	$(PY) -m chaos $(if $(WORKFLOW),--workflow $(WORKFLOW)) $(CHAOS_ARGS); first=$$?; \
	$(PY) -m chaos.mutation $(if $(WORKFLOW),--workflow $(WORKFLOW)) $(MUTATION_ARGS) && exit $$first

local: install ## Run the local cloud in the foreground with a live function log (Ctrl-C stops it); LOCALCLOUD_PORT=4599
	$(PY) -m localcloud run $(LOCALCLOUD_ARGS)

local-up: install ## Start the local cloud and `cdk deploy` the local stage into it; returns once it serves
	$(PY) -m localcloud up $(LOCALCLOUD_ARGS)

local-down: install ## Stop the local cloud and every Lambda worker process it started
	$(PY) -m localcloud down

invariants: install ## Check the invariants on the target's stores (local cloud, or AWS_PROFILE/AWS_ENDPOINT_URL); exit 1 on a violation
	$(PY) -m ops.invariants

seed: install ## Load the catalog (sku-1..sku-20) into the target's inventory table (local cloud, or AWS_PROFILE/AWS_ENDPOINT_URL)
	$(PY) -m ops.seed

invoke: install ## Send a sample event to its function: make invoke EVENT=events/worker/<file>.json [FN=worker]
	@test -n "$(EVENT)" || { echo "usage: make invoke EVENT=events/<function>/<file>.json [FN=<function>]"; ls events; exit 2; }
	$(PY) -m ops.invoke $(EVENT) $(if $(FN),--function $(FN))

story: install ## One order's story: make story ORDER=<id> | KEY=<Idempotency-Key> [CALLER=<arn>] [FORMAT=text|json|html|png|terminal-png]
	@test -n "$(ID)$(KEY)" || { echo "usage: make story ORDER=<order id> | KEY=<Idempotency-Key> [FORMAT=text|json|html|png|terminal-png]"; exit 2; }
	$(PY) -m ops.story $(ID) $(if $(KEY),--key '$(KEY)') $(if $(CALLER),--caller '$(CALLER)') --format $(or $(FORMAT),text)

idem-show: install ## Print the idempotency record of a caller's key: make idem-show KEY=<Idempotency-Key> [CALLER=<arn>]
	@test -n "$(KEY)" || { echo "usage: make idem-show KEY=<Idempotency-Key>"; exit 2; }
	$(PY) -m ops.idem show --key '$(KEY)' $(if $(CALLER),--caller '$(CALLER)')

idem-forget: install ## Delete one idempotency record after confirming (refused while live): make idem-forget KEY=... [CALLER=...] [YES=1]
	@test -n "$(KEY)" || { echo "usage: make idem-forget KEY=<Idempotency-Key> [YES=1]"; exit 2; }
	$(PY) -m ops.idem forget --key '$(KEY)' $(if $(CALLER),--caller '$(CALLER)') $(if $(YES),--yes)

fence-show: install ## Print a step fence: make fence-show ORDER=<id> STEP=<StepName> [RUN=1]
	@test -n "$(ID)" -a -n "$(STEP)" || { echo "usage: make fence-show ORDER=<order id> STEP=<StepName> [RUN=1]"; exit 2; }
	$(PY) -m ops.idem fence-show --id $(ID) --step $(STEP) --run $(or $(RUN),1)

fence-reset: install ## Delete a step fence after confirming (refused while live): make fence-reset ORDER=... STEP=... [YES=1]
	@test -n "$(ID)" -a -n "$(STEP)" || { echo "usage: make fence-reset ORDER=<order id> STEP=<StepName> [RUN=1] [YES=1]"; exit 2; }
	$(PY) -m ops.idem fence-reset --id $(ID) --step $(STEP) --run $(or $(RUN),1) $(if $(YES),--yes)

browser: ## Install headless Chromium (Debian apt-get; needs root) for the story page's browser test and screenshots
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@chromium --version

redrive-dlq: install ## Move a DLQ back to its source queue: make redrive-dlq QUEUE=orders|<consumer>
	$(PY) -m ops.redrive dlq $(or $(QUEUE),orders)

redrive-workflow: install ## Redrive failed workflow executions (all, or EXECUTION_ARN=...); RESTART=1 starts them again from the first state, same token; Express: ORDER=<id> runs its run again, same token
	$(PY) -m ops.redrive workflow $(if $(EXECUTION_ARN),--execution-arn $(EXECUTION_ARN)) $(if $(ID),--id $(ID)) $(if $(RESTART),--restart)

rerun: install ## Start run N+1 of an order whose run N ended FAILED (guarded on the order): make rerun ORDER=o-...
	@test -n "$(ID)" || { echo "usage: make rerun ORDER=<order id>" >&2; exit 2; }
	$(PY) -m ops.rerun $(ID)

# The template (copier.yml, template/) from this checkout, its working tree included, offline. Until the
# reliability library and the lab are published, the copy's requirements reach them in this checkout
# (lib/reliability, lab).
NEW_SERVICE_DEST = $(or $(DEST),../$(NAME))
new-service: install ## A new service from the template (copier), git init'ed: make new-service NAME=payments-api [ENTITY=booking] [ID_PREFIX=b-] [DEST=../payments-api]
	@test -n "$(NAME)" || { echo "usage: make new-service NAME=<service name> [ENTITY=<entity>] [ID_PREFIX=<prefix->] [DEST=<directory>]" >&2; exit 2; }
	@test -z "$$(git status --porcelain -- copier.yml template)" \
	  || echo "note: uncommitted template changes are in the copy; 'copier update' needs them committed" >&2
	$(VENV)/bin/copier copy --vcs-ref HEAD --defaults --quiet \
	  --data service_name=$(NAME) $(if $(ENTITY),--data entity_name=$(ENTITY)) \
	  $(if $(ID_PREFIX),--data entity_id_prefix=$(ID_PREFIX)) \
	  --data "reliability_requirement=retrysafe-reliability[cdk] @ file://$(CURDIR)/lib/reliability" \
	  --data "lab_requirement=retrysafe-lab @ file://$(CURDIR)/lab" \
	  $(CURDIR) $(NEW_SERVICE_DEST)
	cd $(NEW_SERVICE_DEST) && git init --quiet && git add --all
	@echo "$(NEW_SERVICE_DEST): commit it, then 'copier update' there brings later template changes in"

constraints: ## Re-pin transitive dependencies after editing requirements*.txt
	rm -rf $(VENV) && $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	{ echo "# Exact versions of every transitive dependency, applied with pip's -c when the venv is built."; \
	  echo "# Regenerate with 'make constraints' after changing requirements*.txt."; \
	  $(VENV)/bin/pip freeze --exclude-editable; } > constraints.txt
	@touch $(PY_STAMP)
	rm -rf $(CHECKOV_VENV) && $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet -r requirements-checkov.txt
	{ echo "# Exact versions of checkov's transitive dependencies, applied with pip's -c when .venv-checkov is built."; \
	  echo "# Regenerate with 'make constraints' after changing requirements-checkov.txt."; \
	  $(CHECKOV_VENV)/bin/pip freeze --exclude-editable; } > constraints-checkov.txt
	@touch $(CHECKOV_STAMP)
	rm -rf $(MINISTACK_VENV) && $(PYTHON) -m venv $(MINISTACK_VENV)
	$(MINISTACK_VENV)/bin/pip install --quiet -r requirements-ministack.txt
	{ echo "# Exact versions of MiniStack's transitive dependencies, applied with pip's -c when .venv-ministack is built."; \
	  echo "# Regenerate with 'make constraints' after changing requirements-ministack.txt."; \
	  $(MINISTACK_VENV)/bin/pip freeze --exclude-editable; } > constraints-ministack.txt
	@touch $(MINISTACK_STAMP)
	rm -rf $(DOCS_VENV) && $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install --quiet -r requirements-docs.txt
	{ echo "# Exact versions of the docs site's transitive dependencies, applied with pip's -c when .venv-docs is built."; \
	  echo "# Regenerate with 'make constraints' after changing requirements-docs.txt."; \
	  $(DOCS_VENV)/bin/pip freeze --exclude-editable; } > constraints-docs.txt
	@touch $(DOCS_STAMP)

clean: ## Remove build output, caches, the venv and node_modules
	rm -rf cdk.out .cache .localcloud .localcloud-express .pytest_cache .mypy_cache .ruff_cache .hypothesis $(VENV) $(CHECKOV_VENV) $(MINISTACK_VENV) $(DOCS_VENV) node_modules
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
