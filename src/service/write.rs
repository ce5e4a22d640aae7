//! Writes: validating a new memory into its stored form, adding (through
//! the lifecycle rules of `remember.rs`), changing, moving between statuses
//! (one `transition`), soft-deleting. Validate everything → embed → one
//! store transaction with audit events → index.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Engine;
use crate::domain::validate::{validate_id, validate_metadata, validate_text, validate_unit};
use crate::domain::{Actor, Kind, Memory, MemoryPatch, NewMemory, Status, Tier};
use crate::error::{Error, Result};
use crate::store::{AuditAction, AuditEvent};

impl Engine {
    /// Validates a new memory into its stored form (without embedding).
    pub(crate) fn prepare(
        &self,
        actor: &Actor,
        new: NewMemory,
        now: DateTime<Utc>,
    ) -> Result<Memory> {
        let policy = &self.0.policy;
        let tier = new.tier.unwrap_or(Tier::LongTerm);
        validate_text(&new.text, policy.limits())?;
        validate_metadata(&new.metadata, policy.limits())?;
        let user_id = match tier {
            Tier::Reference => {
                if new.user_id.is_some() {
                    return Err(Error::invalid(
                        "user_id",
                        "reference memory is shared and has no user_id",
                    ));
                }
                if !actor.admin {
                    return Err(Error::Forbidden(
                        "only admin keys may write reference memory".into(),
                    ));
                }
                None
            }
            _ => {
                let user = actor.user_for(new.user_id.as_deref())?.ok_or_else(|| {
                    Error::invalid("user_id", format!("user_id is required for {tier} memory"))
                })?;
                validate_id("user_id", &user)?;
                Some(user)
            }
        };
        if tier == Tier::Working && new.thread_id.is_none() {
            return Err(Error::invalid(
                "thread_id",
                "working memory belongs to a thread: thread_id is required",
            ));
        }
        if let Some(t) = &new.thread_id {
            validate_id("thread_id", t)?;
        }
        let importance = new.importance.unwrap_or(policy.defaults.importance);
        validate_unit("importance", importance)?;
        let confidence = new.confidence.unwrap_or(policy.defaults.confidence);
        validate_unit("confidence", confidence)?;
        let status = if confidence < policy.lifecycle.pending_below_confidence {
            Status::Pending
        } else {
            Status::Active
        };
        let created_at = new.created_at.unwrap_or(now);
        let expires_at = new.expires_at.or_else(|| {
            (tier == Tier::Working && policy.lifecycle.working_ttl_days > 0).then(|| {
                created_at + chrono::Duration::days(policy.lifecycle.working_ttl_days as i64)
            })
        });
        let kind = new.kind.unwrap_or(match tier {
            Tier::Working => Kind::Message,
            Tier::LongTerm => Kind::Fact,
            Tier::Reference => Kind::Document,
        });
        Ok(Memory {
            id: uuid_at(created_at),
            tenant_id: actor.tenant_id.clone(),
            tier,
            user_id,
            thread_id: new.thread_id,
            kind,
            text: new.text,
            importance,
            confidence,
            status,
            created_at,
            updated_at: now,
            last_accessed_at: None,
            access_count: 0,
            expires_at,
            source: new.source,
            metadata: new.metadata,
            embedding_model: Some(self.0.embedder.model_id().to_string()),
            version: 1,
            supersedes: new.supersedes,
            superseded_by: None,
        })
    }

    /// Adds memories: all are validated before anything is written, then they
    /// are stored in one transaction and indexed. `refresh` makes them
    /// searchable before this returns.
    ///
    /// Long-term memories go through the lifecycle rules first (see
    /// [`Engine::remember`], which says what happened to each item): one that
    /// states the same fact as a stored memory of the same user *reinforces*
    /// it, and the stored memory is returned in its place (same id, no copy);
    /// an explicit correction supersedes the memory it corrects. One memory
    /// is returned per item, in order.
    pub async fn add(
        &self,
        actor: &Actor,
        items: Vec<NewMemory>,
        refresh: bool,
    ) -> Result<Vec<Memory>> {
        Ok(self
            .remember(actor, items, refresh)
            .await?
            .into_iter()
            .map(|r| r.memory)
            .collect())
    }

    /// Reads a memory the actor may change: reference memory is admin-only.
    pub async fn get_writable(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        let m = self.get(actor, id).await?;
        if !actor.can_write(&m) {
            return Err(Error::Forbidden(
                "only admin keys may change reference memory".into(),
            ));
        }
        Ok(m)
    }

    /// Changes a memory's text, importance, metadata or expiry. A text change
    /// re-embeds and re-indexes it.
    pub async fn update(
        &self,
        actor: &Actor,
        id: Uuid,
        patch: MemoryPatch,
        refresh: bool,
    ) -> Result<Memory> {
        let old = self.get_writable(actor, id).await?;
        if let Some(t) = &patch.text {
            validate_text(t, self.0.policy.limits())?;
        }
        if let Some(i) = patch.importance {
            validate_unit("importance", i)?;
        }
        if let Some(md) = &patch.metadata {
            validate_metadata(md, self.0.policy.limits())?;
        }
        let now = self.0.clock.now();
        let mut new = old.clone();
        if let Some(t) = patch.text {
            new.text = t;
        }
        if let Some(i) = patch.importance {
            new.importance = i;
        }
        if let Some(md) = patch.metadata {
            new.metadata = md;
        }
        if let Some(e) = patch.expires_at {
            new.expires_at = e;
        }
        new.updated_at = now;
        new.version = old.version + 1;
        let text_changed = new.text != old.text;
        let vectors = self.embed_passages(std::slice::from_ref(&new)).await?;
        let mut event = AuditEvent::for_memory(&new, AuditAction::Update, &actor.id, now);
        if text_changed {
            event.before_text = Some(old.text.clone());
            event.after_text = Some(new.text.clone());
        }
        self.0
            .store
            .update(&[(new.clone(), old.version)], &[event])
            .await?;
        self.index(std::slice::from_ref(&new), vectors, refresh)
            .await;
        Ok(new)
    }

    /// Moves one memory to `to`, audited, and brings the indexes in line: soft
    /// delete, restore, confirm, reject. `from` lists the statuses the move
    /// applies to (`Conflict` otherwise); empty means any. Restoring clears an
    /// expiry already past (restoring is an explicit wish to keep it).
    pub(crate) async fn transition(
        &self,
        actor: &Actor,
        id: Uuid,
        from: &[Status],
        to: Status,
        action: AuditAction,
        refresh: bool,
    ) -> Result<Memory> {
        let old = self.get_writable(actor, id).await?;
        if !from.is_empty() && !from.contains(&old.status) {
            return Err(Error::Conflict(format!(
                "memory {id} is {}; {} applies to {} memories",
                old.status,
                action.as_str(),
                from.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )));
        }
        let now = self.0.clock.now();
        let mut new = old.clone();
        new.status = to;
        new.updated_at = now;
        new.version = old.version + 1;
        if action == AuditAction::Restore && new.expires_at.is_some_and(|e| e <= now) {
            new.expires_at = None;
        }
        let mut event = AuditEvent::for_memory(&new, action, &actor.id, now);
        event.details = serde_json::json!({"from": old.status, "to": to});
        self.0
            .store
            .update(&[(new.clone(), old.version)], &[event])
            .await?;
        if to.is_indexed() {
            // Committed: from here on nothing fails the move (repair.rs).
            self.index_committed(std::slice::from_ref(&new), vec![], None, refresh)
                .await;
        } else {
            self.unindex(vec![id], refresh).await;
        }
        Ok(new)
    }

    /// Soft-deletes a memory: kept in the store with its history, gone from
    /// retrieval, restorable.
    pub async fn delete(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        self.transition(actor, id, &[], Status::Deleted, AuditAction::Delete, true)
            .await
    }
}

/// A UUID v7 whose timestamp is the memory's creation time (back-dated
/// imports keep their order). Memories created in the same millisecond get
/// increasing ids in the order they are prepared, so id order is creation
/// order within a conversation whose turns share a timestamp (a bulk import
/// of a session): [`crate::store::Memories::turns_beside`] relies on it.
fn uuid_at(t: DateTime<Utc>) -> Uuid {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    /// The last id handed out per millisecond, for the milliseconds seen
    /// lately (bulk writers interleave a few; cleared when it grows).
    static LAST: OnceLock<Mutex<HashMap<u64, u128>>> = OnceLock::new();
    const RECENT: usize = 4096;
    /// The 62 random bits below the variant (RFC 9562 `rand_b`).
    const RAND_B: u128 = (1 << 62) - 1;

    let ms = t.timestamp_millis().max(0) as u64;
    let mut last = LAST
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(prev) = last.get_mut(&ms) {
        // rand_b + 1 keeps the timestamp, version and variant bits; a fresh
        // id starts with rand_b's top bit clear, so it cannot run out.
        if *prev & RAND_B < RAND_B {
            *prev += 1;
            return Uuid::from_u128(*prev);
        }
    }
    if last.len() >= RECENT {
        last.clear();
    }
    let ts =
        uuid::Timestamp::from_unix(uuid::NoContext, ms / 1000, ((ms % 1000) * 1_000_000) as u32);
    let id = Uuid::new_v7(ts).as_u128() & !(1 << 61);
    last.insert(ms, id);
    Uuid::from_u128(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ids_of_one_millisecond_follow_the_order_they_were_made_in() {
        let a = Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap();
        let b = a + chrono::Duration::days(30);
        // Two writers interleaving two timestamps (a bulk import's prefetch
        // and its write): each timestamp's ids still increase.
        let (mut at_a, mut at_b) = (vec![], vec![]);
        for _ in 0..1000 {
            at_a.push(uuid_at(a));
            at_b.push(uuid_at(b));
        }
        for ids in [&at_a, &at_b] {
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids out of order");
            assert!(ids.iter().all(|id| id.get_version_num() == 7));
            assert!(ids
                .iter()
                .all(|id| id.get_variant() == uuid::Variant::RFC4122));
        }
        let ms = |id: &Uuid| id.get_timestamp().unwrap().to_unix();
        assert_eq!(ms(&at_a[999]), (a.timestamp() as u64, 0));
        assert_eq!(ms(&at_b[0]), (b.timestamp() as u64, 0));
        assert!(at_a[999] < at_b[0], "an earlier creation time sorts first");
    }
}
