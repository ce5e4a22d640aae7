//! One line of an evaluation-set corpus (`corpus.jsonl`), as `mnemo ingest`
//! and `mnemo eval` read it, and the memory it describes.

use super::{NewMemory, Tier};
use crate::error::{Error, Result};

/// One line of an evaluation-set corpus.
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct CorpusLine {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default)]
    pub memory_type: Option<String>,
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub importance: Option<f32>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The conversation this document is a turn of (turns are ordered as
    /// the corpus lists them): retrieval may bring the turns beside a hit
    /// (`[retrieval.conversation]`).
    #[serde(default)]
    pub thread_id: Option<String>,
}

impl CorpusLine {
    /// The memory this line describes; `doc_id` and `meta` land in metadata.
    pub fn into_new_memory(self) -> Result<NewMemory> {
        let tier = match self.memory_type.as_deref() {
            None | Some("long_term") => Tier::LongTerm,
            Some("reference") => Tier::Reference,
            Some("working") => Tier::Working,
            Some(other) => {
                return Err(Error::invalid(
                    "memory_type",
                    format!("unknown memory_type `{other}`"),
                ))
            }
        };
        let mut metadata = serde_json::Map::new();
        metadata.insert("doc_id".into(), self.id.into());
        if !self.meta.is_empty() {
            metadata.insert("meta".into(), self.meta.into());
        }
        Ok(NewMemory {
            tier: Some(tier),
            user_id: if tier == Tier::Reference {
                None
            } else {
                self.user_id
            },
            kind: self.kind.as_deref().map(str::parse).transpose()?,
            text: self.text,
            importance: self.importance,
            created_at: self.created_at,
            expires_at: self.expires_at,
            thread_id: self.thread_id,
            metadata,
            ..Default::default()
        })
    }
}
