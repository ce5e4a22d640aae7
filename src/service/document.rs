//! Reference documents: replacing and deleting a document's chunks.
//!
//! A document is a set of reference memories (chunks) linked by
//! `source.document_id`. Re-ingesting a document id **replaces** it in one
//! store transaction ([`crate::store::Memories::write`]): the new chunks are
//! inserted and every live (active or pending) chunk of the old version is
//! soft-deleted, with their audit events, all or nothing. The old chunks are
//! read in id pages with a cursor, however many rows the document has
//! accumulated (earlier versions' deleted chunks included), so none is left
//! active. A concurrent change to an old chunk fails the whole replace with
//! `Conflict` (the optimistic version check), and nothing is written.
//!
//! Everything is validated and embedded before the transaction; the indexes
//! follow after the commit (failures there are the repair loop's, see
//! `repair.rs`).

use uuid::Uuid;

use crate::domain::Actor;
use crate::domain::{Memory, NewMemory, Status, Tier};
use crate::error::Result;
use crate::service::Engine;
use crate::store::{AuditAction, AuditEvent, ListQuery};

/// Chunks read per page while collecting a document's live chunks.
const PAGE: usize = 500;

impl Engine {
    /// Every live (indexed-status) chunk of a reference document of the
    /// actor's tenant, paged by id with a cursor.
    pub(crate) async fn live_document_chunks(
        &self,
        actor: &Actor,
        document_id: &str,
    ) -> Result<Vec<Memory>> {
        let mut live = Vec::new();
        let mut after: Option<Uuid> = None;
        loop {
            let page = self
                .store()
                .list(&ListQuery {
                    tenant_id: actor.tenant_id.clone(),
                    tier: Some(Tier::Reference),
                    document_id: Some(document_id.to_string()),
                    after,
                    limit: PAGE,
                    ..Default::default()
                })
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.id);
            let full = page.len() == PAGE;
            live.extend(page.into_iter().filter(|m| m.status.is_indexed()));
            if !full {
                break;
            }
        }
        Ok(live)
    }

    /// Replaces a document's chunks with `items` in one store transaction;
    /// returns the new chunks and how many old ones were soft-deleted.
    pub(crate) async fn replace_document(
        &self,
        actor: &Actor,
        document_id: &str,
        items: Vec<NewMemory>,
    ) -> Result<(Vec<Memory>, usize)> {
        let now = self.clock().now();
        let new: Vec<Memory> = items
            .into_iter()
            .map(|item| self.prepare(actor, item, now))
            .collect::<Result<_>>()?;
        let vectors = self.embed_passages(&new).await?;
        let old = self.live_document_chunks(actor, document_id).await?;
        let mut events = Vec::with_capacity(new.len() + old.len());
        for m in &new {
            let mut e = AuditEvent::for_memory(m, AuditAction::Create, &actor.id, now);
            e.after_text = Some(m.text.clone());
            events.push(e);
        }
        let changes: Vec<(Memory, i64)> = old
            .iter()
            .map(|o| {
                let mut m = o.clone();
                m.status = Status::Deleted;
                m.updated_at = now;
                m.version = o.version + 1;
                let mut e = AuditEvent::for_memory(&m, AuditAction::Delete, &actor.id, now);
                e.details = serde_json::json!({"from": o.status, "to": Status::Deleted,
                                               "replaced_by_document_version": true});
                events.push(e);
                (m, o.version)
            })
            .collect();
        self.store().write(&new, &changes, &events, None).await?;
        // Committed: the indexes follow (the repair loop heals failures).
        self.unindex(old.iter().map(|m| m.id).collect(), false)
            .await;
        self.index(&new, vectors, true).await;
        Ok((new, old.len()))
    }
}
