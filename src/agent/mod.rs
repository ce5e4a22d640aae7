//! The thin agent loop: threads with working memory (pinned goal, summary,
//! recent turns), prompt assembly within a token budget, turns with a chat
//! model, compaction and extraction of long-term memories.
//!
//! - [`prompt`]: pure assembly of a prompt and its token breakdown;
//! - [`extract`]: extractors of candidate memories from a user's message;
//! - [`compaction`]: when to compact (pure) and summarizers;
//! - [`threads`]: the use cases on the engine ([`threads::Agent`]).

pub mod compaction;
pub mod extract;
pub mod extract_model;
pub mod prompt;
pub mod threads;

pub use threads::Agent;
