//! "Forget all my data": erase every trace of one user from every store, and
//! prove it.
//!
//! Order of work, each step idempotent and keyed by the user (never by ids
//! read from another store), so that a crash anywhere resumes cleanly:
//! 1. record the intent in the store (from here on the erasure completes even
//!    across a crash, see [`Engine::resume_erasures`]);
//! 2. at once, since they are independent:
//!    - the lexical index deletes the owner's documents and purges: tantivy
//!      rewrites the segments that held them and deletes the old files, so the
//!      deleted text is physically gone;
//!    - the vector index deletes the owner's points and flushes. Known gap:
//!      qdrant-edge 0.7.2 keeps deleted points' vectors (no text, no user id:
//!      the payload holds only a hashed owner key) in its write-ahead log and
//!      segment files until the index is rebuilt (`mnemo reindex`);
//!    - the store deletes the user's rows in one transaction — memories in
//!      every status (pending candidates included), audit events with their
//!      before/after text, their embedding-cache entries, threads
//!      with their messages and tool payloads — with `secure_delete` zeroing
//!      the freed pages, then checkpoints the WAL (SQLite), or `VACUUM`s the
//!      touched tables (PostgreSQL, see `store/postgres.rs` for what that does
//!      and does not remove);
//! 3. replace the intent with a content-free tombstone (hashed user id,
//!    counts, actor, time).
//!
//! In clustered mode the other nodes' lexical indexes follow the store's
//! change feed (see [`crate::cluster`]): the erasure receipt of step 4 is the
//! feed entry that makes each of them delete and purge the user's documents,
//! and verification waits for every live node to have applied it.
//!
//! Unlike every other delete in Mnemo this one is not soft: it cannot be
//! undone, which is the point.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::memory::validate_id;
use crate::domain::Owner;
use crate::error::{Error, Result};
use crate::service::{Actor, Engine};

/// What an erasure removed, store by store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErasedCounts {
    pub memories: u64,
    pub candidates: u64,
    pub threads: u64,
    pub messages: u64,
    pub audit_events: u64,
    pub lexical_docs: u64,
    pub vectors: u64,
    pub cached_embeddings: u64,
}

/// Returned by a completed erasure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErasureReceipt {
    pub user_id: String,
    pub erased: ErasedCounts,
    pub completed_at: DateTime<Utc>,
}

/// What every store still holds of a user: all zero after an erasure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErasureVerification {
    pub user_id: String,
    pub memories: u64,
    pub audit_events: u64,
    /// Threads, and their messages with tool payloads.
    pub threads: u64,
    pub messages: u64,
    pub lexical_docs: u64,
    pub vectors: u64,
    pub pending_erasure: bool,
    /// Clustered mode: the nodes following the store's change feed that are
    /// alive (0 on a single node, which has no followers).
    pub live_nodes: u64,
    /// Live nodes that have not yet applied the user's latest erasure to
    /// their own lexical index.
    pub nodes_behind: Vec<String>,
    /// True when every count is zero, no erasure is in progress and every
    /// live node has applied the erasure.
    pub erased: bool,
    /// When the last erasure of this user completed, if any.
    pub last_erasure_at: Option<DateTime<Utc>>,
}

impl Engine {
    /// Erases every trace of a user of the actor's tenant. A user key may
    /// erase only itself; agent and admin keys any user of their tenant.
    pub async fn forget_user(&self, actor: &Actor, user_id: &str) -> Result<ErasureReceipt> {
        validate_id("user_id", user_id)?;
        let user = actor
            .user_for(Some(user_id))?
            .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
        let now = self.clock().now();
        self.store()
            .begin_erasure(&actor.tenant_id, &user, &actor.id, now)
            .await?;
        self.complete_erasure(&actor.tenant_id, &user, &actor.id)
            .await
    }

    async fn complete_erasure(
        &self,
        tenant_id: &str,
        user_id: &str,
        actor: &str,
    ) -> Result<ErasureReceipt> {
        let owner = Owner::user(tenant_id, user_id);
        let started = std::time::Instant::now();
        // The three stores are independent and every step is idempotent and
        // keyed by the user (not by ids read from another store), so they run
        // at once: the erasure takes as long as the slowest, not the sum.
        let lexical = self.lexical().clone();
        let o = owner.clone();
        let lexical_step = blocking(move || {
            let n = lexical.delete_owner(&o)?;
            lexical.purge()?;
            Ok(n)
        });
        let vectors = self.vectors().clone();
        let vector_step = blocking(move || {
            let n = vectors.delete_owner(&owner)?;
            vectors.flush()?;
            Ok(n)
        });
        let store_step = async {
            let t = std::time::Instant::now();
            let rows = self.store().erase_user(tenant_id, user_id).await?;
            Ok::<_, Error>((rows, t.elapsed().as_millis()))
        };
        let (lexical_step, vector_step, store_step) =
            tokio::join!(lexical_step, vector_step, store_step);
        let ((lexical_docs, lexical_ms), (vector_points, vector_ms), (rows, store_ms)) =
            (lexical_step?, vector_step?, store_step?);
        let erased = ErasedCounts {
            memories: rows.memories,
            candidates: rows.candidates,
            threads: rows.threads,
            messages: rows.messages,
            audit_events: rows.audit_events,
            lexical_docs: lexical_docs as u64,
            vectors: vector_points as u64,
            cached_embeddings: rows.cached_embeddings,
        };
        let completed_at = self.clock().now();
        let counts = serde_json::to_value(&erased).map_err(Error::internal)?;
        self.store()
            .complete_erasure(tenant_id, user_id, &counts, actor, completed_at)
            .await?;
        // Counts and timings only: never the user id or any text in logs.
        tracing::info!(
            memories = erased.memories,
            lexical_docs,
            vector_points,
            lexical_ms,
            vector_ms,
            store_ms,
            total_ms = started.elapsed().as_millis(),
            "user erased"
        );
        Ok(ErasureReceipt {
            user_id: user_id.to_string(),
            erased,
            completed_at,
        })
    }
}

/// Runs one erasure step off the async runtime; returns its result and time.
async fn blocking(step: impl FnOnce() -> Result<usize> + Send + 'static) -> Result<(usize, u128)> {
    tokio::task::spawn_blocking(move || {
        let t = std::time::Instant::now();
        step().map(|n| (n, t.elapsed().as_millis()))
    })
    .await
    .map_err(|e| Error::internal(format!("erasure task failed: {e}")))?
}

impl Engine {
    /// Counts what every store holds of a user.
    pub async fn verify_erasure(
        &self,
        actor: &Actor,
        user_id: &str,
    ) -> Result<ErasureVerification> {
        validate_id("user_id", user_id)?;
        let user = actor
            .user_for(Some(user_id))?
            .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
        let footprint = self.store().user_footprint(&actor.tenant_id, &user).await?;
        let owner = Owner::user(&actor.tenant_id, &user);
        let lexical = self.lexical().clone();
        let vectors = self.vectors().clone();
        let (lexical_docs, vector_points) =
            tokio::task::spawn_blocking(move || -> Result<(usize, usize)> {
                lexical.commit()?;
                Ok((lexical.count_owner(&owner)?, vectors.count_owner(&owner)?))
            })
            .await
            .map_err(|e| Error::internal(format!("verification task failed: {e}")))??;
        let last_erasure_at = self.store().last_erasure(&actor.tenant_id, &user).await?;
        let live_since = self.clock().now()
            - chrono::Duration::from_std(crate::cluster::NODE_LIVENESS).map_err(Error::internal)?;
        let nodes = self
            .store()
            .erasure_progress(Owner::user(&actor.tenant_id, &user).as_str(), live_since)
            .await?;
        let erased = footprint.memories == 0
            && footprint.audit_events == 0
            && footprint.threads == 0
            && footprint.messages == 0
            && lexical_docs == 0
            && vector_points == 0
            && footprint.pending_erasures == 0
            && nodes.behind.is_empty();
        Ok(ErasureVerification {
            user_id: user,
            memories: footprint.memories,
            audit_events: footprint.audit_events,
            threads: footprint.threads,
            messages: footprint.messages,
            lexical_docs: lexical_docs as u64,
            vectors: vector_points as u64,
            pending_erasure: footprint.pending_erasures > 0,
            live_nodes: nodes.live_nodes,
            nodes_behind: nodes.behind,
            erased,
            last_erasure_at,
        })
    }

    /// Completes erasures a crash interrupted; run at every start.
    pub async fn resume_erasures(&self) -> Result<usize> {
        let pending = self.store().pending_erasures().await?;
        for (tenant, user, actor) in &pending {
            self.complete_erasure(tenant, user, actor).await?;
        }
        if !pending.is_empty() {
            tracing::warn!(count = pending.len(), "resumed interrupted erasures");
        }
        Ok(pending.len())
    }
}
