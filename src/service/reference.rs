//! Reference documents: cut into chunks, each chunk a reference memory
//! linked to its document; admin only.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Engine;
use crate::domain::validate::validate_id;
use crate::domain::{Actor, Kind, NewMemory, Tier};
use crate::error::{Error, Result};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DocumentInput {
    /// Stable id chosen by the caller; generated when absent.
    pub document_id: Option<String>,
    pub title: Option<String>,
    pub text: String,
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub importance: Option<f32>,
    pub created_at: Option<DateTime<Utc>>,
}

/// What ingesting a document did.
#[derive(Clone, Debug, Serialize)]
pub struct DocumentReceipt {
    pub document_id: String,
    pub chunk_ids: Vec<Uuid>,
    /// Chunks of an earlier version of the same document, now soft-deleted.
    pub replaced_chunks: usize,
}

impl Engine {
    /// Ingests a reference document: cut into chunks by the policy, each chunk
    /// a reference memory linked to the document. Re-ingesting a document id
    /// replaces its chunks (the old ones are soft-deleted). Admin only.
    pub async fn ingest_document(
        &self,
        actor: &Actor,
        doc: DocumentInput,
    ) -> Result<DocumentReceipt> {
        if !actor.admin {
            return Err(Error::Forbidden(
                "only admin keys may write reference memory".into(),
            ));
        }
        let document_id = doc
            .document_id
            .unwrap_or_else(|| Uuid::now_v7().to_string());
        validate_id("document_id", &document_id)?;
        if doc.text.trim().is_empty() {
            return Err(Error::invalid("text", "document text must not be empty"));
        }
        let policy = &self.0.policy.reference;
        let chunks =
            crate::domain::chunk::chunk(&doc.text, policy.chunk_chars, policy.chunk_overlap_chars);
        if chunks.len() > self.0.policy.limits.max_batch {
            return Err(Error::TooLarge {
                field: "text",
                message: format!(
                    "the document makes {} chunks; the limit is {} (policy limits.max_batch)",
                    chunks.len(),
                    self.0.policy.limits.max_batch
                ),
            });
        }
        let items = chunks
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                let mut metadata = doc.metadata.clone();
                if let Some(t) = &doc.title {
                    metadata.insert("title".into(), t.clone().into());
                }
                NewMemory {
                    tier: Some(Tier::Reference),
                    kind: Some(Kind::Document),
                    text,
                    importance: doc.importance,
                    created_at: doc.created_at,
                    source: crate::domain::Source {
                        document_id: Some(document_id.clone()),
                        chunk_index: Some(i as u32),
                        ..Default::default()
                    },
                    metadata,
                    ..Default::default()
                }
            })
            .collect();
        // One transaction: new chunks in, every live old chunk out (document.rs).
        let (added, replaced) = self.replace_document(actor, &document_id, items).await?;
        Ok(DocumentReceipt {
            document_id,
            chunk_ids: added.into_iter().map(|m| m.id).collect(),
            replaced_chunks: replaced,
        })
    }

    /// Soft-deletes every chunk of a reference document. Admin only.
    pub async fn delete_document(&self, actor: &Actor, document_id: &str) -> Result<usize> {
        if !actor.admin {
            return Err(Error::Forbidden(
                "only admin keys may write reference memory".into(),
            ));
        }
        match self.delete_document_chunks(actor, document_id).await? {
            0 => Err(Error::not_found(format!("document {document_id}"))),
            n => Ok(n),
        }
    }

    async fn delete_document_chunks(&self, actor: &Actor, document_id: &str) -> Result<usize> {
        // An empty replacement: every live chunk out, in one transaction.
        Ok(self.replace_document(actor, document_id, vec![]).await?.1)
    }
}
