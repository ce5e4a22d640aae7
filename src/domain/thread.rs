//! Threads of the agent loop as plain types: a thread's pinned goal, its
//! summary (the compacted past: text, open to-dos, commitments) and its
//! messages, each with the state of its extraction. No I/O here.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// What the compacted part of a thread said.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct Summary {
    pub text: String,
    /// Things still to do, as said in the conversation.
    pub open_todos: Vec<String>,
    /// Explicit promises ("I will…", "我会…").
    pub commitments: Vec<String>,
}

impl Summary {
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.open_todos.is_empty() && self.commitments.is_empty()
    }

    /// The summary as prompt text (empty when there is nothing to say).
    pub fn render(&self) -> String {
        let mut out = self.text.trim().to_string();
        for (title, items) in [
            ("Open to-dos:", &self.open_todos),
            ("Commitments:", &self.commitments),
        ] {
            if !items.is_empty() {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(title);
                for i in items {
                    out.push_str("\n- ");
                    out.push_str(i);
                }
            }
        }
        out
    }
}

/// A conversation of one user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Thread {
    pub id: Uuid,
    pub tenant_id: String,
    pub user_id: String,
    /// Pinned: always in the prompt, never compacted.
    pub goal: Option<String>,
    pub summary: Summary,
    /// The summary covers the messages up to this seq (0 = none).
    pub summary_upto_seq: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_activity_at: DateTime<Utc>,
    pub last_compacted_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    User,
    Assistant,
    Tool,
}

impl MessageRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
            MessageRole::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [MessageRole::User, MessageRole::Assistant, MessageRole::Tool]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// Where a message is in extraction. Only user messages are extracted; the
/// others are `skipped` from the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtractionState {
    Pending,
    /// Claimed by an extraction run (until its lease expires).
    Running,
    Done,
    Skipped,
}

impl ExtractionState {
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractionState::Pending => "pending",
            ExtractionState::Running => "running",
            ExtractionState::Done => "done",
            ExtractionState::Skipped => "skipped",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        use ExtractionState::*;
        [Pending, Running, Done, Skipped]
            .into_iter()
            .find(|r| r.as_str() == s)
    }

    /// Extraction will never read this message again: compaction may take it.
    pub fn is_complete(self) -> bool {
        matches!(self, ExtractionState::Done | ExtractionState::Skipped)
    }
}

/// A tool result as it enters the history: status, a one-line summary and
/// key fields, with a pointer to the full payload (stored apart).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolSummary {
    pub name: String,
    pub status: String,
    pub summary: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub key_fields: serde_json::Map<String, serde_json::Value>,
    /// Id of the full payload (`GET /v1/threads/{id}/payloads/{payload_id}`).
    pub payload_id: Option<Uuid>,
}

impl ToolSummary {
    /// The compact line the history (and so the prompt) carries.
    pub fn render(&self) -> String {
        let mut out = format!("[tool {} · {}] {}", self.name, self.status, self.summary);
        if !self.key_fields.is_empty() {
            let fields: Vec<String> = self
                .key_fields
                .iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect();
            out.push_str(&format!(" ({})", fields.join(", ")));
        }
        if let Some(id) = self.payload_id {
            out.push_str(&format!(" [full payload: {id}]"));
        }
        out
    }
}

/// A stored message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Message {
    /// Store-wide sequence number: the order of messages in a thread.
    pub seq: i64,
    pub thread_id: Uuid,
    #[serde(skip)]
    pub tenant_id: String,
    #[serde(skip)]
    pub user_id: String,
    pub role: MessageRole,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolSummary>,
    pub created_at: DateTime<Utc>,
    pub extraction_state: ExtractionState,
    pub compacted: bool,
}

/// A message to store (the store assigns the seq).
#[derive(Clone, Debug, PartialEq)]
pub struct NewMessage {
    pub thread_id: Uuid,
    pub tenant_id: String,
    pub user_id: String,
    pub role: MessageRole,
    pub content: String,
    pub tool: Option<ToolSummary>,
    pub created_at: DateTime<Utc>,
}

/// A tool result's full payload, stored apart from the history.
#[derive(Clone, Debug, PartialEq)]
pub struct Payload {
    pub id: Uuid,
    pub payload: serde_json::Value,
}
