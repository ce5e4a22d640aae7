//! Integration tests, in one binary to save link time: a module per area.
//! Every test runs on the real store and indexes (SQLite, tantivy,
//! qdrant-edge) in temporary directories. The hashing embedder stands in only
//! where embeddings are not what is being tested; `real_embedder` uses the
//! ONNX model and fails loudly when its assets are missing.

mod common;

mod api;
mod crash;
mod engine;
mod eval;
mod forget;
mod isolation;
mod lifecycle;
mod mcp;
mod ranking;
mod real_embedder;
