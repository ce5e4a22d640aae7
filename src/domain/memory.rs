//! What a memory is: the stored form, a request to store one, and a change
//! to one. Its vocabulary is in `vocabulary.rs`, its checks in `validate.rs`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::owner::{Owner, DEFAULT_TENANT};
use super::vocabulary::{Kind, Status, Tier};

/// Where a memory came from: a thread and message, a document, an import.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Source {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_index: Option<u32>,
}

/// A stored memory. The SQL store holds the authoritative copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Memory {
    pub id: Uuid,
    pub tenant_id: String,
    pub tier: Tier,
    /// Absent for reference memory, required otherwise.
    pub user_id: Option<String>,
    /// Working memory belongs to a thread; other tiers may record one.
    pub thread_id: Option<String>,
    pub kind: Kind,
    pub text: String,
    pub importance: f32,
    pub confidence: f32,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub last_accessed_at: Option<DateTime<Utc>>,
    pub access_count: u64,
    pub expires_at: Option<DateTime<Utc>>,
    pub source: Source,
    #[schema(value_type = Object)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The model whose vector indexes this memory's text.
    pub embedding_model: Option<String>,
    /// Bumped by every change; the indexes record it to detect stale entries.
    pub version: i64,
    /// The memory this one replaced, for corrections.
    pub supersedes: Option<Uuid>,
    pub superseded_by: Option<Uuid>,
}

impl Memory {
    /// A minimal active memory with defaults everywhere else (importance 0.5,
    /// confidence 1, version 1), created and updated at `at`. For tests and
    /// tools that write to a store directly; the engine builds memories
    /// through validation instead.
    pub fn sample(tier: Tier, user_id: Option<&str>, text: &str, at: DateTime<Utc>) -> Self {
        Memory {
            id: Uuid::now_v7(),
            tenant_id: DEFAULT_TENANT.to_string(),
            tier,
            user_id: user_id.map(str::to_string),
            thread_id: None,
            kind: Kind::Fact,
            text: text.to_string(),
            importance: 0.5,
            confidence: 1.0,
            status: Status::Active,
            created_at: at,
            updated_at: at,
            last_accessed_at: None,
            access_count: 0,
            expires_at: None,
            source: Source::default(),
            metadata: Default::default(),
            embedding_model: None,
            version: 1,
            supersedes: None,
            superseded_by: None,
        }
    }

    pub fn owner(&self) -> Owner {
        Owner::of(&self.tenant_id, self.tier, self.user_id.as_deref())
    }
}

/// A request to store a memory, before validation.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NewMemory {
    pub tier: Option<Tier>,
    pub user_id: Option<String>,
    pub thread_id: Option<String>,
    pub kind: Option<Kind>,
    pub text: String,
    pub importance: Option<f32>,
    pub confidence: Option<f32>,
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub source: Source,
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// Back-date the memory (imports, evaluation sets). Defaults to now.
    pub created_at: Option<DateTime<Utc>>,
    pub supersedes: Option<Uuid>,
}

/// A change to a stored memory. `None` leaves a field as it is.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MemoryPatch {
    pub text: Option<String>,
    pub importance: Option<f32>,
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// `Some(None)` clears the expiry.
    #[serde(default, with = "double_option")]
    pub expires_at: Option<Option<DateTime<Utc>>>,
}

mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(
        v: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            None => s.serialize_none(),
            Some(inner) => inner.serialize(s),
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Ok(Some(Option::<T>::deserialize(d)?))
    }
}
