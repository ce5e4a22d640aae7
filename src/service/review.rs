//! Review actions on one memory: confirm or reject a pending candidate,
//! restore, supersede with a corrected statement, and the lineage and
//! pending lists a reviewer reads.

use uuid::Uuid;

use super::remember::Remembered;
use super::Engine;
use crate::domain::{Actor, Memory, NewMemory, Status};
use crate::error::Result;
use crate::store::{AuditAction, ListQuery};

impl Engine {
    /// Confirms a pending candidate: it becomes active and searchable.
    /// `Conflict` if it is not pending.
    pub async fn confirm(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        self.transition(
            actor,
            id,
            &[Status::Pending],
            Status::Active,
            AuditAction::Confirm,
            true,
        )
        .await
    }

    /// Rejects a pending candidate: soft-deleted (restorable until purged by
    /// `lifecycle.deleted_retention_days`). `Conflict` if it is not pending.
    pub async fn reject(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        self.transition(
            actor,
            id,
            &[Status::Pending],
            Status::Deleted,
            AuditAction::Reject,
            true,
        )
        .await
    }

    /// Brings back a deleted, archived or expired memory as active, until the
    /// TTL sweep purges it. An expiry already past is cleared (restoring is
    /// an explicit wish to keep it). A superseded memory is history: restore
    /// its successor's predecessor by superseding again instead.
    pub async fn restore(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        self.transition(
            actor,
            id,
            &[Status::Deleted, Status::Archived, Status::Expired],
            Status::Active,
            AuditAction::Restore,
            true,
        )
        .await
    }

    /// Replaces a memory's statement with a corrected one: a new memory (same
    /// owner, tier, kind, thread, importance, metadata and source) linked to
    /// the old, which becomes `superseded` and leaves retrieval. Both stay in
    /// the store; [`Engine::lineage`] and `history` show them.
    pub async fn supersede(
        &self,
        actor: &Actor,
        id: Uuid,
        text: impl Into<String>,
    ) -> Result<Remembered> {
        let old = self.get(actor, id).await?;
        let new = NewMemory {
            tier: Some(old.tier),
            user_id: old.user_id.clone(),
            thread_id: old.thread_id.clone(),
            kind: Some(old.kind),
            text: text.into(),
            importance: Some(old.importance),
            confidence: Some(old.confidence),
            source: old.source.clone(),
            metadata: old.metadata.clone(),
            supersedes: Some(id),
            ..Default::default()
        };
        let mut out = self.remember(actor, vec![new], true).await?;
        Ok(out.remove(0))
    }

    /// Every version of a fact, oldest first: follows `supersedes` back and
    /// `superseded_by` forward from `id`.
    pub async fn lineage(&self, actor: &Actor, id: Uuid) -> Result<Vec<Memory>> {
        let start = self.get(actor, id).await?;
        let mut before = Vec::new();
        let mut cursor = start.supersedes;
        while let Some(p) = cursor {
            match self.store().get(p).await? {
                Some(m) if actor.can_read(&m) && before.len() < 1000 => {
                    cursor = m.supersedes;
                    before.push(m);
                }
                _ => break,
            }
        }
        before.reverse();
        let mut cursor = start.superseded_by;
        before.push(start);
        while let Some(n) = cursor {
            match self.store().get(n).await? {
                Some(m) if actor.can_read(&m) && before.len() < 2000 => {
                    cursor = m.superseded_by;
                    before.push(m);
                }
                _ => break,
            }
        }
        Ok(before)
    }

    /// Pending candidates awaiting review, in id (creation) order.
    pub async fn pending(
        &self,
        actor: &Actor,
        user_id: Option<&str>,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<Memory>> {
        self.list(
            actor,
            ListQuery {
                user_id: user_id.map(str::to_string),
                status: Some(Status::Pending),
                after,
                limit,
                ..Default::default()
            },
        )
        .await
    }
}
