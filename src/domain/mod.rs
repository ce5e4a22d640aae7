//! The domain core: memories, scopes, ranking and retention decisions as plain
//! types and pure functions. Nothing here does I/O, spawns tasks or knows about
//! SQL, tantivy or Qdrant; it is what the unit and property tests hit hardest.

pub mod chunk;
pub mod memory;
pub mod ranking;
pub mod rerank;
pub mod scope;
pub mod thread;

pub use memory::{Kind, Memory, MemoryPatch, NewMemory, Source, Status, Tier};
pub use ranking::{FusionMethod, Hit, ScoreBreakdown};
pub use scope::{Owner, Scope, TenantId};
