//! The thin agent loop: prompt assembly from working memory (pinned goal,
//! summary, recent turns) and ranked long-term/reference memories within a
//! token budget. Threads, model calls, compaction and extraction build on it.

pub mod extract;
pub mod extract_model;
pub mod prompt;
