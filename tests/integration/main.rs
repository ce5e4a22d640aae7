//! Integration tests, in one binary to save link time: a module per area.
//! Every test runs on the real store and indexes (SQLite, tantivy,
//! qdrant-edge) in temporary directories; the store contract suite and the
//! `postgres_engine`, `migrate` and isolation tests also run on PostgreSQL
//! (`MNEMO_TEST_DATABASE_URL`, a schema per test: see `backends.rs`). The hashing embedder stands in only
//! where embeddings are not what is being tested; `real_embedder` uses the
//! ONNX model and fails loudly when its assets are missing.

mod backends;
mod common;

mod api;
mod crash;
mod documents;
mod engine;
mod eval;
mod export;
mod forget;
mod ingest;
mod inspect;
mod isolation;
mod kill9;
mod kill9_cleanup;
mod kill9_writes;
mod lifecycle;
mod limits;
mod llm;
mod mcp;
mod metrics;
mod migrate;
mod openapi;
mod over_http;
mod postgres_engine;
mod progress;
mod qdrant_cluster;
mod qdrant_serve;
mod quota;
mod ranking;
mod real_embedder;
mod repair;
mod scan_locks;
mod schema_upgrade;
mod sqlite_upkeep;
mod store_contract;
mod threads;
