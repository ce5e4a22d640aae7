//! Reads by id and lists, within what the actor may see.

use uuid::Uuid;

use super::Engine;
use crate::domain::validate::validate_id;
use crate::domain::{Actor, Memory, Tier};
use crate::error::{Error, Result};
use crate::store::{AuditEvent, ListQuery};

impl Engine {
    /// Reads one memory the actor may see.
    pub async fn get(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        match self.0.store.get(id).await? {
            Some(m) if actor.can_read(&m) => Ok(m),
            // Another tenant's or user's memory is indistinguishable from none.
            _ => Err(Error::not_found(format!("memory {id}"))),
        }
    }

    pub async fn list(&self, actor: &Actor, mut query: ListQuery) -> Result<Vec<Memory>> {
        query.tenant_id = actor.tenant_id.clone();
        if query.tier != Some(Tier::Reference) {
            query.user_id = actor.user_for(query.user_id.as_deref())?;
        }
        if let Some(u) = &query.user_id {
            validate_id("user_id", u)?;
        }
        self.0.store.list(&query).await
    }

    pub async fn history(&self, actor: &Actor, id: Uuid) -> Result<Vec<AuditEvent>> {
        self.get(actor, id).await?;
        self.0.store.history(id).await
    }
}

/// Cuts a listing fetched with `limit + 1` to `limit`; the cursor of the next
/// page when there was more (shared with MCP `list_pending`).
pub fn next_page(memories: &mut Vec<Memory>, limit: usize) -> Option<String> {
    if memories.len() > limit {
        memories.truncate(limit);
        memories.last().map(|m| m.id.to_string())
    } else {
        None
    }
}
