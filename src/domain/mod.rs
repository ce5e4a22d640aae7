//! The domain core: memories, scopes, ranking and retention decisions as plain
//! types and pure functions. Nothing here does I/O, spawns tasks or knows about
//! SQL, tantivy or Qdrant; it is what the unit and property tests hit hardest.

pub mod actor;
pub mod chat;
pub mod chunk;
pub mod context;
pub mod corpus;
pub mod hit;
pub mod learned;
pub mod lifecycle;
pub mod memory;
pub mod owner;
pub mod perspective;
pub mod ranking;
pub mod rerank;
pub mod scope;
pub mod script;
pub mod temporal;
pub mod thread;
pub mod tokens;
pub mod turns;
pub mod validate;
pub mod vocabulary;

pub use actor::Actor;
pub use memory::{Memory, MemoryPatch, NewMemory, Source};
pub use owner::{Owner, TenantId};
pub use ranking::{FusionMethod, Hit, ScoreBreakdown};
pub use scope::Scope;
pub use vocabulary::{Kind, Status, Tier};
