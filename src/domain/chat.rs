//! Chat messages, as agents send them and as prompts are assembled from.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A chat message, as agents send them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// Turns at the end of a thread's history that a prompt always includes whole.
pub const ALWAYS_KEPT_TURNS: usize = 3;
