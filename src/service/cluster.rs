//! Clustered mode: several stateless `mnemo serve` nodes in front of one
//! store and one Qdrant collection. The vectors are shared (Qdrant); the
//! lexical index is not: every node keeps its own tantivy index, derived from
//! the store like everything else, and this module keeps it current.
//!
//! **Design.** The store has a change feed (`index_changes`, written by
//! triggers in the same transaction as every audit event and every erasure
//! receipt, so no write path can forget it). Each node:
//! 1. at start reads the feed head, *then* reconciles its indexes with the
//!    store (so a change committed during the reconcile is applied again
//!    afterwards, never missed) and purges if the reconcile removed anything
//!    (a node that was down during an erasure loses the erased text there);
//! 2. runs a [`LexicalFollower`]: every interval it reads the changes after
//!    its cursor, re-reads the changed memories from the store and upserts or
//!    deletes their documents (the store is the truth, so applying a change
//!    twice, or out of date, converges), applies erasures (delete the owner's
//!    documents, then purge, so the text is physically gone), commits, and
//!    records its cursor and a heartbeat in the `nodes` table.
//!
//! A node also indexes its own writes directly (read-your-writes on the node
//! that took the request); the feed brings them to the others within one
//! interval, and re-applies them harmlessly on the writer.
//!
//! **Ordering.** Changes are applied in feed order, erasures included, so an
//! owner erased and then given a new memory ends with that memory indexed.
//! The store contract says a change is never skipped: SQLite serializes its
//! writers, so positions commit in order; a PostgreSQL store must not return
//! a row past one whose transaction may still commit below it (see the
//! `index_changes` contract in [`crate::store`]).
//!
//! **Erasure across nodes.** `verify_erasure` asks the store which live nodes
//! (heartbeat within [`NODE_LIVENESS`]) have not applied the erasure's feed
//! entry yet; until none has, the verification says `erased: false` and
//! names them. A node that is down is not waited for: it cannot serve, and
//! its start-up reconcile and purge remove the erased text before it does.
//!
//! **Threading.** The follower is a task on the async runtime; index work
//! runs in `spawn_blocking`. One follower per node.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::Serialize;
use uuid::Uuid;

use crate::domain::Owner;
use crate::error::{Error, Result};
use crate::service::{blocking, lexical_doc, Engine};
use crate::store::{ChangeKind, IndexChange};

/// A node whose last heartbeat is older than this is considered gone.
pub const NODE_LIVENESS: Duration = Duration::from_secs(30);
/// How often a node polls the feed (and heartbeats) by default.
pub const FOLLOW_INTERVAL: Duration = Duration::from_secs(1);
/// Changes read per store round trip.
const BATCH: usize = 1000;

/// The feed position this process's follower has applied (-1: no follower);
/// `/metrics` reports the index lag from it. One follower per node.
static APPLIED: AtomicI64 = AtomicI64::new(-1);

/// The feed position the follower of this process has applied and committed,
/// when one runs (clustered mode).
pub fn applied_position() -> Option<i64> {
    Some(APPLIED.load(Ordering::Relaxed)).filter(|p| *p >= 0)
}

/// What one [`LexicalFollower::step`] applied.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FollowStats {
    pub changes: usize,
    pub upserted: usize,
    pub removed: usize,
    pub erasures: usize,
    /// The feed position the node has applied up to.
    pub position: i64,
}

/// Keeps this node's lexical index in line with the store's change feed.
pub struct LexicalFollower {
    engine: Engine,
    node_id: String,
    position: i64,
}

impl LexicalFollower {
    /// Registers the node as having applied the feed up to `position` (the
    /// head read *before* the start-up reconcile).
    pub async fn register(engine: Engine, node_id: String, position: i64) -> Result<Self> {
        crate::domain::validate::validate_id("node_id", &node_id)?;
        let now = engine.clock().now();
        engine
            .store()
            .node_heartbeat(&node_id, position, now)
            .await?;
        APPLIED.store(position, Ordering::Relaxed);
        Ok(LexicalFollower {
            engine,
            node_id,
            position,
        })
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn position(&self) -> i64 {
        self.position
    }

    /// Applies every change after the cursor, commits, then records the new
    /// cursor (only once the documents are committed) and a heartbeat.
    pub async fn step(&mut self) -> Result<FollowStats> {
        let mut stats = FollowStats::default();
        loop {
            let changes = self
                .engine
                .store()
                .index_changes(self.position, BATCH)
                .await?;
            let Some(last) = changes.last().map(|c| c.position) else {
                break;
            };
            stats.changes += changes.len();
            self.apply(&changes, &mut stats).await?;
            self.position = last;
            if changes.len() < BATCH {
                break;
            }
        }
        if stats.changes > 0 {
            let lexical = self.engine.lexical().clone();
            blocking(move || lexical.commit()).await?;
        }
        stats.position = self.position;
        APPLIED.store(self.position, Ordering::Relaxed);
        let now = self.engine.clock().now();
        self.engine
            .store()
            .node_heartbeat(&self.node_id, self.position, now)
            .await?;
        Ok(stats)
    }

    /// Applies changes in feed order: runs of memory changes in one batch,
    /// each erasure where it falls.
    async fn apply(&self, changes: &[IndexChange], stats: &mut FollowStats) -> Result<()> {
        let mut run: Vec<Uuid> = Vec::new();
        for change in changes {
            match &change.kind {
                ChangeKind::Memory(id) => run.push(*id),
                ChangeKind::Erasure(owner) => {
                    self.apply_memories(std::mem::take(&mut run), stats).await?;
                    self.apply_erasure(owner).await?;
                    stats.erasures += 1;
                }
            }
        }
        self.apply_memories(run, stats).await
    }

    async fn apply_memories(&self, mut ids: Vec<Uuid>, stats: &mut FollowStats) -> Result<()> {
        let mut seen = HashSet::new();
        ids.retain(|id| seen.insert(*id));
        if ids.is_empty() {
            return Ok(());
        }
        let found = self.engine.store().get_many(&ids).await?;
        let mut docs = Vec::new();
        let mut removed = Vec::new();
        for id in ids {
            match found.get(&id) {
                Some(m) if m.status.is_indexed() => docs.push(lexical_doc(m)),
                // Deleted, expired, purged or erased: not in the index.
                _ => removed.push(id),
            }
        }
        stats.upserted += docs.len();
        stats.removed += removed.len();
        let lexical = self.engine.lexical().clone();
        blocking(move || {
            lexical.delete(&removed)?;
            lexical.upsert(docs)
        })
        .await
    }

    async fn apply_erasure(&self, owner_key: &str) -> Result<()> {
        let owner = Owner::from_key(owner_key)
            .ok_or_else(|| Error::internal("malformed owner key in the change feed"))?;
        let lexical = self.engine.lexical().clone();
        let n = blocking(move || {
            let n = lexical.delete_owner(&owner)?;
            lexical.purge()?;
            Ok(n)
        })
        .await?;
        // Counts only: never the owner key (it identifies a user).
        tracing::info!(lexical_docs = n, "applied an erasure from the change feed");
        Ok(())
    }
}

/// Runs [`LexicalFollower::step`] every [`FOLLOW_INTERVAL`]; failures are
/// logged and retried at the next tick. It deletes the lexical documents of
/// memories the store no longer indexes and of erased owners, as the feed
/// orders: the store is the truth, the index only follows it.
#[async_trait::async_trait]
impl crate::runner::PeriodicTask for LexicalFollower {
    fn name(&self) -> &'static str {
        "lexical-follower"
    }

    fn interval(&self) -> Duration {
        FOLLOW_INTERVAL
    }

    async fn run_once(&mut self) -> Result<()> {
        let s = self.step().await?;
        if s.changes > 0 {
            tracing::debug!(
                changes = s.changes,
                upserted = s.upserted,
                removed = s.removed,
                erasures = s.erasures,
                position = s.position,
                "followed the change feed"
            );
        }
        Ok(())
    }
}

/// A node id for this process when none is configured: the host name (when
/// known) and a random suffix, so a restarted node registers afresh.
pub fn default_node_id() -> String {
    let suffix = Uuid::new_v4().simple().to_string();
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty() && h.len() <= 64)
        .map(|h| {
            h.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        });
    match host {
        Some(h) => format!("{h}-{}", &suffix[..8]),
        None => format!("node-{}", &suffix[..12]),
    }
}

#[cfg(test)]
mod tests {
    // The follower and the change feed are tested on both stores in the
    // store contract suite (`tests/integration/store_contract.rs`).
    use super::*;
    use crate::store::user_hash;

    #[test]
    fn the_feed_trigger_derives_the_owner_key_the_indexes_use() {
        // Both migrations' 0007_cluster.sql write 'u' || substr(user_hash, 1, 32)
        // (the store contract suite checks the real triggers).
        for (tenant, user) in [("default", "alice"), ("acme", "李雷"), ("t", "")] {
            let key = format!("u{}", &user_hash(tenant, user)[..32]);
            assert_eq!(key, Owner::user(tenant, user).as_str());
            assert_eq!(Owner::from_key(&key), Some(Owner::user(tenant, user)));
        }
        assert!(Owner::from_key(Owner::reference("default").as_str()).is_some());
        for bad in [
            "",
            "u",
            "x0123456789abcdef0123456789abcdef",
            "uABCDEF",
            "u0123",
        ] {
            assert!(Owner::from_key(bad).is_none(), "{bad}");
        }
    }
}
