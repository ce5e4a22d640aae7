//! Mnemo: a memory service for AI agents.
//!
//! Memories live in three tiers (working, long-term, reference), in a SQL store
//! that is the source of truth, with two derived search indexes (tantivy BM25
//! and a Qdrant vector index) fused at query time and weighted by time decay
//! and importance. See `ARCHITECTURE.md` for a walk through the modules.
//!
//! Remember, then recall (the hashing embedder keeps this example free of
//! model assets; the service uses the ONNX embedder from `mnemo setup`):
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use mnemo::clock::SystemClock;
//! use mnemo::domain::{NewMemory, Scope};
//! use mnemo::embed::hashing::HashingEmbedder;
//! use mnemo::service::{Actor, SearchRequest};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let (engine, _) = mnemo::open::open_with(
//!     dir.path(),
//!     Default::default(),
//!     Arc::new(HashingEmbedder::new(64)),
//!     Arc::new(SystemClock),
//!     false,
//! )
//! .await
//! .unwrap();
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

pub mod access;
pub mod agent;
pub mod api;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod context;
pub mod document;
pub mod domain;
pub mod embed;
pub mod erasure;
pub mod erasure_feed;
pub mod erasure_scan;
pub mod error;
pub mod eval;
pub mod export;
pub mod ingest;
pub mod jobs;
pub mod keys;
pub mod lexical;
pub mod lifecycle;
pub mod llm;
pub mod mcp;
pub mod migrate;
pub mod open;
pub mod policy;
pub mod quota;
pub mod repair;
pub mod service;
pub mod service_lifecycle;
pub mod store;
pub mod vector;

pub use error::{Error, ErrorCode, Result};
pub use service::{Actor, Engine};
