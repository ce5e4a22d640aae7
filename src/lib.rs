//! Mnemo: a memory service for AI agents.
//!
//! Memories live in three tiers (working, long-term, reference), in a SQL store
//! that is the source of truth, with two derived search indexes (tantivy BM25
//! and a Qdrant vector index) fused at query time and weighted by time decay
//! and importance. See `ARCHITECTURE.md` for a walk through the modules.

pub mod clock;
pub mod domain;
pub mod embed;
pub mod error;
pub mod lexical;
pub mod vector;

pub use error::{Error, ErrorCode, Result};
pub mod policy;
pub mod service;
pub mod store;

pub use service::{Actor, Engine};
pub mod cli;
pub mod context;
pub mod erasure;
pub mod jobs;
pub mod lifecycle;
pub mod open;
pub mod service_lifecycle;
