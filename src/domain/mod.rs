//! The domain core: memories, scopes, ranking and retention decisions as plain
//! types and pure functions. Nothing here does I/O, spawns tasks or knows about
//! SQL, tantivy or Qdrant; it is what the unit and property tests hit hardest.

pub mod actor;
pub mod chat;
pub mod chunk;
pub mod context;
pub mod lifecycle;
pub mod memory;
pub mod ranking;
pub mod scope;
pub mod thread;
pub mod tokens;

pub use actor::Actor;
pub use memory::{Kind, Memory, MemoryPatch, NewMemory, Source, Status, Tier};
pub use ranking::{FusionMethod, Hit, ScoreBreakdown};
pub use scope::{Owner, Scope, TenantId};
