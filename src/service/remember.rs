//! Remembering: what a write does when the fact is already known (reinforce,
//! promote a pending candidate) and when it corrects an earlier memory
//! (supersede). Same path for every entry point: `add` calls
//! [`Engine::remember`]; the reviewer's actions are in `review.rs`. The
//! rules themselves are pure, in
//! [`crate::domain::lifecycle`].
//!
//! Every change is one store transaction with its audit events, then the
//! indexes follow (as for every write; `reconcile` repairs a crash between).

use std::collections::HashMap;

use serde::Serialize;
use uuid::Uuid;

use crate::domain::lifecycle::{correction_cue, corrects, same_fact};
use crate::domain::scope::{IndexFilter, ScopeClause};
use crate::domain::Actor;
use crate::domain::{Memory, NewMemory, Status, Tier};
use crate::error::{Error, Result};
use crate::service::Engine;
use crate::store::{text_hash, AuditAction, AuditEvent, ThreadRef};

/// What a write did with one item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Stored as a new memory.
    Created,
    /// The same fact was already stored: that memory was reinforced and is
    /// returned instead of a copy.
    Reinforced,
    /// The same fact was a pending candidate: it is now active (and
    /// reinforced) and is returned instead of a copy.
    Promoted,
    /// Stored as a new memory that supersedes `old` (explicit `supersedes`
    /// or a detected correction); `old` is now `superseded`.
    Superseded { old: Uuid },
}

/// One item's result: the memory to show for it, and what happened.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Remembered {
    pub memory: Memory,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Neighbours examined per new long-term memory.
const NEIGHBOURS: usize = 5;

/// The changes a write batch accumulates before its one transaction.
#[derive(Default)]
struct Batch {
    inserts: Vec<(Memory, Vec<f32>)>,
    /// Changed stored memories by id: (new state, version read).
    changed: HashMap<Uuid, (Memory, i64)>,
    order: Vec<Uuid>,
    events: Vec<AuditEvent>,
}

impl Batch {
    /// The current state of a stored memory: changed in this batch or as read.
    fn current(&self, m: &Memory) -> Memory {
        self.changed
            .get(&m.id)
            .map_or_else(|| m.clone(), |(c, _)| c.clone())
    }

    fn change(&mut self, old: &Memory, mut new: Memory) {
        new.version = old.version + 1;
        match self.changed.get_mut(&old.id) {
            Some((c, _)) => *c = new,
            None => {
                self.order.push(old.id);
                self.changed.insert(old.id, (new, old.version));
            }
        }
    }
}

impl Engine {
    /// Writes memories through the lifecycle rules and says what happened to
    /// each (one [`Remembered`] per item, in order). [`Engine::add`] is this
    /// without the outcomes.
    ///
    /// For a new long-term memory of a user (working and reference memory
    /// are stored as they come):
    /// - `supersedes: Some(id)`: the new memory replaces `id` (which becomes
    ///   `superseded`, linked both ways); the new one is active whatever its
    ///   confidence — naming what it replaces is a confirmation.
    /// - an explicit correction (a cue such as "actually…", "不对，是…") of a
    ///   similar active memory of the same kind and subject supersedes it
    ///   (policy `lifecycle.detect_corrections`, `correction_*`); a pending
    ///   (low-confidence) correction supersedes nothing;
    /// - the same fact as a stored active or pending memory of the same kind
    ///   (policy `lifecycle.reinforce_*`) reinforces that memory — mention
    ///   count and `last_seen_at` in its metadata, importance nudged up — and
    ///   promotes it to active if it was pending. Nothing new is stored.
    ///
    /// Items are compared with stored memories, not with each other.
    pub async fn remember(
        &self,
        actor: &Actor,
        items: Vec<NewMemory>,
        refresh: bool,
    ) -> Result<Vec<Remembered>> {
        self.remember_from(actor, items, refresh, None).await
    }

    /// [`Engine::remember`] for memories extracted from a stored thread:
    /// they are written only while the thread exists, in the same
    /// transaction (`NotFound` otherwise). The user may be erased while the
    /// extractor runs, and nothing derived from their messages may land
    /// after "forget all my data".
    pub(crate) async fn remember_from_thread(
        &self,
        actor: &Actor,
        thread_id: Uuid,
        items: Vec<NewMemory>,
    ) -> Result<Vec<Remembered>> {
        let thread = ThreadRef {
            tenant_id: &actor.tenant_id,
            id: thread_id,
        };
        self.remember_from(actor, items, false, Some(thread)).await
    }

    async fn remember_from(
        &self,
        actor: &Actor,
        items: Vec<NewMemory>,
        refresh: bool,
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<Vec<Remembered>> {
        let policy = self.policy().clone();
        if items.is_empty() {
            return Err(Error::invalid(
                "memories",
                "at least one memory is required",
            ));
        }
        if items.len() > policy.limits.max_batch {
            return Err(Error::TooLarge {
                field: "memories",
                message: format!(
                    "{} memories in one request; the limit is {} (policy limits.max_batch)",
                    items.len(),
                    policy.limits.max_batch
                ),
            });
        }
        let now = self.clock().now();
        let memories = items
            .into_iter()
            .map(|n| self.prepare(actor, n, now))
            .collect::<Result<Vec<_>>>()?;
        self.check_memory_quotas(&memories).await?;
        let vectors = self.embed_passages_from(&memories, from_thread).await?;
        let lc = &policy.lifecycle;

        // Stored memories each item may concern: the one it names, or its
        // nearest neighbours of the same owner (vector index, plus exact
        // text matches in case the index lags).
        let eligible: Vec<bool> = memories
            .iter()
            .map(|m| {
                m.supersedes.is_none()
                    && m.tier == Tier::LongTerm
                    && m.user_id.is_some()
                    && (lc.reinforce_duplicates || lc.detect_corrections)
            })
            .collect();
        let queries: Vec<(usize, Vec<f32>, IndexFilter)> = memories
            .iter()
            .zip(&vectors)
            .enumerate()
            .filter(|(i, _)| eligible[*i])
            .map(|(i, (m, v))| {
                let filter = IndexFilter {
                    clauses: vec![ScopeClause {
                        owner: m.owner(),
                        tier: Tier::LongTerm,
                        thread_id: None,
                    }],
                    statuses: vec![Status::Active, Status::Pending],
                    kinds: Some(vec![m.kind]),
                };
                (i, v.clone(), filter)
            })
            .collect();
        let mut neighbours: HashMap<usize, Vec<(Uuid, f32)>> = if queries.is_empty() {
            HashMap::new()
        } else {
            let index = self.vectors().clone();
            tokio::task::spawn_blocking(move || -> Result<_> {
                queries
                    .into_iter()
                    .map(|(i, v, f)| Ok((i, index.search(&v, &f, NEIGHBOURS)?)))
                    .collect()
            })
            .await
            .map_err(|e| Error::internal(format!("neighbour search failed: {e}")))??
        };
        for (i, m) in memories.iter().enumerate() {
            if eligible[i] {
                let same = self
                    .store()
                    .find_by_text_hash(&m.tenant_id, m.user_id.as_deref(), &text_hash(&m.text))
                    .await?;
                let list = neighbours.entry(i).or_default();
                for s in same {
                    list.retain(|(id, _)| *id != s.id);
                    list.insert(0, (s.id, 1.0));
                }
            }
        }
        let mut wanted: Vec<Uuid> = neighbours
            .values()
            .flatten()
            .map(|(id, _)| *id)
            .chain(memories.iter().filter_map(|m| m.supersedes))
            .collect();
        wanted.sort();
        wanted.dedup();
        let stored = self.store().get_many(&wanted).await?;

        let mut batch = Batch::default();
        let mut results: Vec<(Outcome, Uuid)> = Vec::with_capacity(memories.len());
        for (i, (mut m, v)) in memories.into_iter().zip(vectors).enumerate() {
            if let Some(old_id) = m.supersedes {
                let old = stored
                    .get(&old_id)
                    .filter(|o| actor.can_read(o))
                    .ok_or_else(|| Error::not_found(format!("memory {old_id}")))?;
                let old = batch.current(old);
                if !actor.can_write(&old) {
                    return Err(Error::Forbidden(
                        "only admin keys may change reference memory".into(),
                    ));
                }
                if !matches!(old.status, Status::Active | Status::Pending) {
                    return Err(Error::Conflict(format!(
                        "memory {old_id} is {}; only an active or pending memory can be superseded",
                        old.status
                    )));
                }
                if old.tenant_id != m.tenant_id || old.user_id != m.user_id {
                    return Err(Error::invalid(
                        "supersedes",
                        "a memory can only supersede a memory of the same owner",
                    ));
                }
                m.status = Status::Active;
                self.supersede_into(&mut batch, &old, &mut m, actor, now, None);
                results.push((Outcome::Superseded { old: old_id }, m.id));
                batch.inserts.push((m, v));
                continue;
            }
            let mut near: Vec<(Memory, f32)> = neighbours
                .remove(&i)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(id, sim)| stored.get(&id).map(|s| (batch.current(s), sim)))
                .filter(|(s, _)| {
                    s.tenant_id == m.tenant_id
                        && s.user_id == m.user_id
                        && s.tier == Tier::LongTerm
                        && s.kind == m.kind
                        && matches!(s.status, Status::Active | Status::Pending)
                        && s.expires_at.is_none_or(|e| e > now)
                })
                .collect();
            near.sort_by(|a, b| b.1.total_cmp(&a.1));

            let is_fact =
                |s: &Memory, sim: f32| same_fact(sim, &m.text, &s.text, policy.match_rule());
            if lc.detect_corrections && m.status == Status::Active {
                if let Some(cue) = correction_cue(&m.text) {
                    let target = near.iter().find(|(s, sim)| {
                        corrects(*sim, &m.text, &s.text, policy.correction_rule())
                            && !is_fact(s, *sim)
                    });
                    if let Some((old, _)) = target {
                        let old = old.clone();
                        self.supersede_into(&mut batch, &old, &mut m, actor, now, Some(cue));
                        results.push((Outcome::Superseded { old: old.id }, m.id));
                        batch.inserts.push((m, v));
                        continue;
                    }
                }
            }
            if lc.reinforce_duplicates {
                // Prefer an active memory to a pending one, then similarity.
                let same = near
                    .iter()
                    .filter(|(s, sim)| is_fact(s, *sim))
                    .min_by_key(|(s, _)| s.status != Status::Active);
                if let Some((existing, sim)) = same {
                    let promote = existing.status == Status::Pending;
                    self.reinforce_into(&mut batch, existing, &m, *sim, actor, now);
                    let outcome = if promote {
                        Outcome::Promoted
                    } else {
                        Outcome::Reinforced
                    };
                    results.push((outcome, existing.id));
                    continue;
                }
            }
            let mut e = AuditEvent::for_memory(&m, AuditAction::Create, &actor.id, now);
            e.after_text = Some(m.text.clone());
            batch.events.push(e);
            results.push((Outcome::Created, m.id));
            batch.inserts.push((m, v));
        }

        let changes: Vec<(Memory, i64)> = batch
            .order
            .iter()
            .map(|id| batch.changed[id].clone())
            .collect();
        let (inserts, vecs): (Vec<Memory>, Vec<Vec<f32>>) = batch.inserts.into_iter().unzip();
        self.store()
            .write(&inserts, &changes, &batch.events, from_thread)
            .await?;
        let changed: Vec<Memory> = changes.into_iter().map(|(m, _)| m).collect();
        let all: Vec<Memory> = inserts.into_iter().chain(changed).collect();
        // Committed: from here on nothing fails the write (repair.rs).
        self.index_committed(&all, vecs, from_thread, refresh).await;
        let by_id: HashMap<Uuid, &Memory> = all.iter().map(|m| (m.id, m)).collect();
        Ok(results
            .into_iter()
            .map(|(outcome, id)| Remembered {
                memory: by_id[&id].clone(),
                outcome,
            })
            .collect())
    }

    /// Links `new` as the successor of `old` and marks `old` superseded.
    fn supersede_into(
        &self,
        batch: &mut Batch,
        old: &Memory,
        new: &mut Memory,
        actor: &Actor,
        now: chrono::DateTime<chrono::Utc>,
        cue: Option<&str>,
    ) {
        new.supersedes = Some(old.id);
        let mut replaced = old.clone();
        replaced.status = Status::Superseded;
        replaced.superseded_by = Some(new.id);
        replaced.updated_at = now;
        let mut e = AuditEvent::for_memory(old, AuditAction::Supersede, &actor.id, now);
        e.before_text = Some(old.text.clone());
        e.after_text = Some(new.text.clone());
        e.details = serde_json::json!({
            "from": old.status, "to": Status::Superseded,
            "superseded_by": new.id, "detected_cue": cue,
        });
        batch.events.push(e);
        let mut c = AuditEvent::for_memory(new, AuditAction::Create, &actor.id, now);
        c.after_text = Some(new.text.clone());
        c.details = serde_json::json!({ "supersedes": old.id, "detected_cue": cue });
        batch.events.push(c);
        batch.change(old, replaced);
    }

    /// Reinforces `existing` with a new observation of the same fact.
    fn reinforce_into(
        &self,
        batch: &mut Batch,
        existing: &Memory,
        observed: &Memory,
        similarity: f32,
        actor: &Actor,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        let step = self.policy().lifecycle.reinforce_importance_step;
        let mut r = existing.clone();
        let mentions = existing
            .metadata
            .get("mention_count")
            .and_then(|v| v.as_u64())
            .unwrap_or(1)
            + 1;
        r.metadata.insert("mention_count".into(), mentions.into());
        r.metadata
            .insert("last_seen_at".into(), now.to_rfc3339().into());
        r.importance = (existing.importance + step).min(1.0);
        r.confidence = existing.confidence.max(observed.confidence);
        r.updated_at = now;
        let promote = existing.status == Status::Pending;
        if promote {
            r.status = Status::Active;
        }
        let mut e = AuditEvent::for_memory(existing, AuditAction::Reinforce, &actor.id, now);
        e.after_text = Some(observed.text.clone());
        e.details = serde_json::json!({
            "mention_count": mentions,
            "similarity": similarity,
            "importance": { "from": existing.importance, "to": r.importance },
        });
        batch.events.push(e);
        if promote {
            let mut c = AuditEvent::for_memory(existing, AuditAction::Confirm, &actor.id, now);
            c.details = serde_json::json!({
                "from": Status::Pending, "to": Status::Active, "reason": "repeated",
            });
            batch.events.push(c);
        }
        batch.change(existing, r);
    }
}
