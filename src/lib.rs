//! Mnemo: a memory service for AI agents.
//!
//! Memories live in three tiers (working, long-term, reference), in a SQL store
//! that is the source of truth, with two derived search indexes (tantivy BM25
//! and a Qdrant vector index) fused at query time and weighted by time decay
//! and importance. See `ARCHITECTURE.md` and `docs/design/` for a walk through
//! the modules.
//!
//! Remember, then recall (the hashing embedder keeps this example free of
//! model assets; the service uses the ONNX embedder from `mnemo setup`):
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use mnemo::domain::{NewMemory, Scope};
//! use mnemo::embed::hashing::HashingEmbedder;
//! use mnemo::domain::Actor;
//! use mnemo::service::SearchRequest;
//! use mnemo::Engine;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let engine = Engine::builder(dir.path())
//!     .embedder(Arc::new(HashingEmbedder::new(64)))
//!     .build()
//!     .await
//!     .unwrap()
//!     .engine;
//!
//! let remember = NewMemory {
//!     user_id: Some("alice".into()),
//!     text: "Alice prefers green tea".into(),
//!     ..Default::default()
//! };
//! engine.add(&Actor::local("docs"), vec![remember], true).await.unwrap();
//!
//! let hits = engine
//!     .search(SearchRequest::new(Scope::user("alice"), "green tea"))
//!     .await
//!     .unwrap()
//!     .hits;
//! assert_eq!(hits[0].memory.text, "Alice prefers green tea");
//! // Another user sees nothing of Alice's.
//! let hits = engine
//!     .search(SearchRequest::new(Scope::user("bob"), "green tea"))
//!     .await
//!     .unwrap()
//!     .hits;
//! assert!(hits.is_empty());
//! # });
//! ```

pub mod agent;
pub mod api;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod embed;
pub mod error;
pub mod eval;
pub mod jobs;
pub mod lexical;
pub mod llm;
pub mod mcp;
pub mod migrate;
pub mod node;
pub mod policy;
pub mod runner;
pub mod service;
pub mod store;
pub mod vector;

pub use domain::Actor;
pub use error::{Error, ErrorCode, Result};
pub use service::Engine;
