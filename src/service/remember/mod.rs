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

mod plan;

use crate::domain::scope::{IndexFilter, ScopeClause};
use crate::domain::Actor;
use crate::domain::{Memory, NewMemory, Status, Tier};
use crate::error::{Error, Result};
use crate::service::Engine;
use crate::store::{text_hash, ThreadRef};

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

/// A write batch's size: at least one item, at most `limits.max_batch`.
fn check_batch(items: &[NewMemory], policy: &crate::policy::Policy) -> Result<()> {
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
    Ok(())
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
        check_batch(&items, &policy)?;
        let now = self.clock().now();
        let memories = items
            .into_iter()
            .map(|n| self.prepare(actor, n, now))
            .collect::<Result<Vec<_>>>()?;
        self.check_memory_quotas(&memories).await?;
        let vectors = self.embed_passages_from(&memories, from_thread).await?;
        let rules = plan::Rules::of(&policy);
        let (neighbours, stored) = self.neighbours(&memories, &vectors, &rules).await?;
        let plan::Plan {
            batch,
            outcomes: results,
        } = plan::plan(memories, vectors, neighbours, &stored, &rules, actor, now)?;
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

    /// The stored memories each item may concern: per eligible item (a new
    /// long-term memory of a user, with a lifecycle rule on), its nearest
    /// neighbours of the same owner and kind (vector index, plus exact text
    /// matches in case the index lags), and every memory named there or by
    /// an item's `supersedes`, read from the store.
    async fn neighbours(
        &self,
        memories: &[Memory],
        vectors: &[Vec<f32>],
        rules: &plan::Rules,
    ) -> Result<(HashMap<usize, Vec<(Uuid, f32)>>, HashMap<Uuid, Memory>)> {
        let eligible = |m: &Memory| {
            m.supersedes.is_none()
                && m.tier == Tier::LongTerm
                && m.user_id.is_some()
                && (rules.reinforce_duplicates || rules.detect_corrections)
        };
        let queries: Vec<(usize, Vec<f32>, IndexFilter)> = memories
            .iter()
            .zip(vectors)
            .enumerate()
            .filter(|(_, (m, _))| eligible(m))
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
        for (i, m) in memories.iter().enumerate().filter(|(_, m)| eligible(m)) {
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
        let mut wanted: Vec<Uuid> = neighbours
            .values()
            .flatten()
            .map(|(id, _)| *id)
            .chain(memories.iter().filter_map(|m| m.supersedes))
            .collect();
        wanted.sort();
        wanted.dedup();
        let stored = self.store().get_many(&wanted).await?;
        Ok((neighbours, stored))
    }
}
