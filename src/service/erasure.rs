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
//!    - the vector index deletes the owner's points, flushes, and purges:
//!      the embedded engine rebuilds its shard into a fresh directory without
//!      them and swaps it in (qdrant-edge 0.7.2 keeps deleted points' vectors
//!      in its WAL and segment files otherwise; see `vector/edge/rebuild.rs`).
//!      Payloads never held the user id or raw thread ids (hashed owner key,
//!      keyed thread hashes);
//!    - the store deletes the user's rows in bounded batches — memories in
//!      every status (pending candidates included), audit events with their
//!      before/after text, their embedding-cache entries, threads
//!      with their messages and tool payloads — with `secure_delete` zeroing
//!      the deleted cells (and the user's API keys, so none authenticates
//!      and no key row keeps the user id);
//! 3. right after its own deletes, while the indexes still purge, the store
//!    purges its files ([`crate::store::ErasureStore::purge_erased`]):
//!    SQLite zeroes the free space of every page in short batches and
//!    checkpoints the WAL (stale copies of moved cells survive
//!    `secure_delete`, see `store/sql/sqlite_scrub.rs`), PostgreSQL
//!    `VACUUM`s the touched tables (see `store/sql/postgres.rs` for what that
//!    does and does not remove). Skipped only when this run deleted nothing,
//!    is not resuming an interrupted run, and the user was erased before (a
//!    repeated erasure costs nothing); a crash before it finishes leaves the
//!    intent, and the resumed run purges;
//! 4. replace the intent with a content-free tombstone (hashed user id,
//!    counts, actor, time), and checkpoint (SQLite); the sweep scrubs the
//!    hash from it after [`ERASURE_TOMBSTONE_RETENTION`] (see [`ErasureSweep`]).
//!
//! **A durable job, not a request.** Steps 2 to 4 run in a task of their own
//! ([`Engine::start_erasure`]), tracked by the engine's [`ErasureJobs`]: a
//! client that disconnects, or the request timeout, drops only its wait, never
//! the erasure. A second request for the same user while one runs joins it
//! (same receipt); shutdown waits for running erasures
//! ([`Engine::wait_erasures`]). An intent whose task died with its node (or
//! failed) is resumed by the periodic sweep ([`ErasureSweep`],
//! every [`ERASURE_SWEEP_INTERVAL`]) once two consecutive sweeps have seen it
//! pending and not running here, and at every start. Several nodes may resume
//! the same intent at once: harmless, every step is idempotent.
//!
//! **Nothing starts behind an intent.** Writes of the user's memories and
//! cached vectors check the intent inside their own transaction (the store).
//! Thread creation checks it under [`ErasureJobs`]' gate, which
//! [`Engine::start_erasure`] holds exclusively while it records the intent, so
//! a thread is either created before the intent (and erased with the user) or
//! refused with 409.
//!
//! In clustered mode the other nodes' lexical indexes follow the store's
//! change feed (see [`crate::service::cluster`]): the erasure receipt of step 3 is the
//! feed entry that makes each of them delete and purge the user's documents,
//! and verification waits for every live node to have applied it.
//!
//! Unlike every other delete in Mnemo this one is not soft: it cannot be
//! undone, which is the point.
//!
//! Threading: the erasure task runs on the tokio runtime and moves index work
//! to `spawn_blocking`; the registry is a short `parking_lot` mutex never held
//! across an `.await`.

pub mod feed;
pub mod scan;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::{watch, RwLock, RwLockReadGuard};
use utoipa::ToSchema;

use crate::domain::validate::validate_existing_id;
use crate::domain::Actor;
use crate::domain::Owner;
use crate::error::{Error, Result};
use crate::service::Engine;

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
    /// API keys bound to the user, deleted (none authenticates any more; no
    /// key row keeps the user id).
    #[serde(default)]
    pub api_keys: u64,
}

/// Returned by a completed erasure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErasureReceipt {
    pub user_id: String,
    pub erased: ErasedCounts,
    pub completed_at: DateTime<Utc>,
}

/// Where a user's erasure stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErasureStatus {
    /// An erasure is recorded and not finished (running, waiting for the
    /// sweep to resume it, or still being applied by a live node).
    InProgress,
    /// Nothing of the user is left anywhere (`erased: true`).
    Erased,
    /// No erasure is in progress and the stores hold data of the user.
    NotErased,
}

/// What every store still holds of a user: all zero after an erasure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErasureVerification {
    pub user_id: String,
    /// `in_progress` until the erasure has finished on every live node, then
    /// `erased`; `not_erased` when no erasure runs and data is present.
    pub status: ErasureStatus,
    pub memories: u64,
    pub audit_events: u64,
    /// Threads, and their messages with tool payloads.
    pub threads: u64,
    pub messages: u64,
    pub lexical_docs: u64,
    pub vectors: u64,
    /// API key rows bound to the user (revoked ones included).
    #[serde(default)]
    pub api_keys: u64,
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
    /// When the last erasure of this user completed, if any; kept for
    /// [`ERASURE_TOMBSTONE_RETENTION`], then scrubbed from the tombstone.
    pub last_erasure_at: Option<DateTime<Utc>>,
    /// `GET …/erasure?files=true` (admin, embedded deployment): what the
    /// data directory's files hold of the user (`clean: true` when none
    /// holds the raw id, nor an index file the owner key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<crate::service::erasure::scan::ResidueReport>,
}

/// How often [`ErasureSweep`] looks for intents to resume.
/// An intent is resumed once two consecutive sweeps found it pending and not
/// running on this node, so it is at least this old.
pub const ERASURE_SWEEP_INTERVAL: Duration = Duration::from_secs(5);

/// How long an erasure's tombstone keeps the hashed user id (so that
/// verification can say when the user was erased). After it, and once the
/// erasure's change-feed entry is pruned (every live node applied it), the
/// sweep scrubs the hash: a store file no longer confirms that a guessed user
/// id was ever erased. See docs/design/erasure.md, "Tombstones".
pub const ERASURE_TOMBSTONE_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// How often the sweep scrubs expired tombstones.
const TOMBSTONE_SCRUB_EVERY: Duration = Duration::from_secs(15 * 60);

/// A finished erasure task: the receipt, or why it failed (logged in full by
/// the task; the intent stays and the sweep retries it).
type Outcome = std::result::Result<ErasureReceipt, ()>;

/// (tenant, user): one erasure per user runs on a node at a time.
type UserKey = (String, String);

/// The erasures running on this node, keyed by (tenant, user). Owned by the
/// engine; cheap to share.
#[derive(Default)]
pub struct ErasureJobs {
    running: Mutex<HashMap<UserKey, watch::Receiver<Option<Outcome>>>>,
    /// Intents the previous sweep found pending and not running here.
    seen: Mutex<HashSet<UserKey>>,
    /// Shared by writes that check for an intent before they commit (thread
    /// creation); exclusive while an intent is being recorded.
    gate: RwLock<()>,
}

impl ErasureJobs {
    /// How many erasures run on this node.
    pub fn running(&self) -> usize {
        self.running.lock().len()
    }

    fn is_running(&self, key: &(String, String)) -> bool {
        self.running.lock().contains_key(key)
    }
}

/// Removes a finished (or panicked) erasure from the registry.
struct Deregister {
    jobs: Arc<ErasureJobs>,
    key: (String, String),
}

impl Drop for Deregister {
    fn drop(&mut self) {
        self.jobs.running.lock().remove(&self.key);
    }
}

/// A running (or finished) erasure to wait for. Dropping it does not stop
/// the erasure.
#[must_use = "an erasure runs without its handle; wait() to get the receipt"]
pub struct ErasureJob {
    user_id: String,
    done: watch::Receiver<Option<Outcome>>,
}

impl ErasureJob {
    /// The erased user.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// Waits for the receipt, at most `limit` (`None`: until done).
    /// `Ok(None)`: still running after `limit`.
    pub async fn wait(mut self, limit: Option<Duration>) -> Result<Option<ErasureReceipt>> {
        let finished = self.done.wait_for(|o| o.is_some());
        let outcome = match limit {
            None => finished.await.map(|o| o.clone()),
            Some(d) => match tokio::time::timeout(d, finished).await {
                Err(_) => return Ok(None),
                Ok(r) => r.map(|o| o.clone()),
            },
        };
        match outcome {
            Ok(Some(Ok(receipt))) => Ok(Some(receipt)),
            // The task logged the cause; the intent stays recorded.
            Ok(Some(Err(()))) | Ok(None) | Err(_) => Err(Error::Unavailable(
                "the erasure hit an error and stays recorded: it is retried automatically \
                 (GET /v1/users/{user_id}/erasure shows its progress)"
                    .into(),
            )),
        }
    }
}

impl Engine {
    /// Erases every trace of a user of the actor's tenant and waits for the
    /// receipt. A user key may erase only itself; agent and admin keys any
    /// user of their tenant. The erasure runs in a task of its own: dropping
    /// this future does not interrupt it (see [`Engine::start_erasure`]).
    pub async fn forget_user(&self, actor: &Actor, user_id: &str) -> Result<ErasureReceipt> {
        let job = self.start_erasure(actor, user_id).await?;
        job.wait(None)
            .await?
            .ok_or_else(|| Error::internal("an erasure ended without a receipt"))
    }

    /// Records the intent to erase a user and hands the erasure to a tracked
    /// task, or joins the one already running for that user. Returns once the
    /// intent is committed; from then on the erasure completes whatever
    /// happens to the caller (and across a crash, at the next start or sweep).
    pub async fn start_erasure(&self, actor: &Actor, user_id: &str) -> Result<ErasureJob> {
        // The id rule from before ids were restricted to a character set: a user
        // stored under an id refused today can still be erased.
        validate_existing_id("user_id", user_id)?;
        let user = actor
            .user_for(Some(user_id))?
            .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
        let key = (actor.tenant_id.clone(), user.clone());
        if let Some(done) = self.erasure_jobs().running.lock().get(&key).cloned() {
            return Ok(ErasureJob {
                user_id: user,
                done,
            });
        }
        // Recorded and handed over in a task of its own: a caller dropped
        // after the intent committed but before the spawn (a client that
        // disconnects at once drops the request's future) would otherwise
        // leave the erasure to the sweep, seconds later.
        let engine = self.clone();
        let actor_id = actor.id.clone();
        tokio::spawn(async move { engine.record_erasure(key, actor_id).await })
            .await
            .map_err(|e| Error::internal(format!("erasure task failed: {e}")))?
    }

    /// [`Engine::start_erasure`]'s commit of the intent, then the spawn.
    async fn record_erasure(&self, key: UserKey, actor_id: String) -> Result<ErasureJob> {
        let resumed = {
            // Exclusive: no thread creation is between its check and its
            // insert while the intent commits.
            let _gate = self.erasure_jobs().gate.write().await;
            // An intent already recorded and not running here is a run that
            // died (with its node, or on an error): this one resumes it.
            let resumed = self.intent_pending(&key).await?;
            let now = self.clock().now();
            self.store()
                .begin_erasure(&key.0, &key.1, &actor_id, now)
                .await?;
            resumed
        };
        Ok(self.spawn_erasure(key, actor_id, resumed))
    }

    /// Whether the store holds an erasure intent for (tenant, user).
    async fn intent_pending(&self, key: &UserKey) -> Result<bool> {
        Ok(self
            .store()
            .pending_erasures()
            .await?
            .iter()
            .any(|(t, u, _)| *t == key.0 && *u == key.1))
    }

    /// Runs the erasure of a recorded intent in its own task, unless one is
    /// already running for that user (then joins it). `resumed`: the intent
    /// was recorded by an earlier run that did not complete, which may have
    /// deleted rows and died before purging the files.
    fn spawn_erasure(&self, key: (String, String), actor: String, resumed: bool) -> ErasureJob {
        let jobs = self.erasure_jobs_arc();
        let mut running = jobs.running.lock();
        if let Some(done) = running.get(&key).cloned() {
            return ErasureJob {
                user_id: key.1,
                done,
            };
        }
        let (tx, rx) = watch::channel(None);
        running.insert(key.clone(), rx.clone());
        drop(running);
        let engine = self.clone();
        let deregister = Deregister {
            jobs: jobs.clone(),
            key: key.clone(),
        };
        let user_id = key.1.clone();
        tokio::spawn(async move {
            let _deregister = deregister;
            let (tenant, user) = &key;
            let outcome = engine.complete_erasure(tenant, user, &actor, resumed).await;
            let outcome = outcome.map_err(|e| {
                // Never the user id: the error names stores, not people.
                tracing::error!(error = %e, "erasure failed; the intent stays and the sweep retries it");
            });
            tx.send_replace(Some(outcome));
        });
        ErasureJob { user_id, done: rx }
    }

    /// Waits until no erasure runs on this node (shutdown, tests).
    pub async fn wait_erasures(&self) {
        while self.erasure_jobs().running() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Refuses with 409 while the user has an erasure recorded; the guard
    /// keeps a new intent from being recorded until it is dropped. Hold it
    /// across the insert of anything the erasure must not miss (a thread).
    pub async fn refuse_while_erasing(
        &self,
        tenant_id: &str,
        user_id: &str,
    ) -> Result<RwLockReadGuard<'_, ()>> {
        let gate = self.erasure_jobs().gate.read().await;
        let key = (tenant_id.to_string(), user_id.to_string());
        let erasing = self.erasure_jobs().is_running(&key) || self.intent_pending(&key).await?;
        if erasing {
            return Err(Error::Conflict(
                "this user's data is being erased; retry when the erasure has completed".into(),
            ));
        }
        Ok(gate)
    }

    async fn complete_erasure(
        &self,
        tenant_id: &str,
        user_id: &str,
        actor: &str,
        resumed: bool,
    ) -> Result<ErasureReceipt> {
        let owner = Owner::user(tenant_id, user_id);
        let started = std::time::Instant::now();
        // The three stores are independent and every step is idempotent and
        // keyed by the user (not by ids read from another store), so they run
        // at once: the erasure takes as long as the slowest, not the sum.
        let lexical = self.lexical().clone();
        let o = owner.clone();
        let lexical_step = timed_step(move || {
            let n = lexical.delete_owner(&o)?;
            lexical.purge()?;
            Ok(n)
        });
        let vectors = self.vectors().clone();
        let vector_step = timed_step(move || {
            let n = vectors.delete_owner(&owner)?;
            vectors.flush()?;
            // Deleted points stay in the engine's files until this rebuild.
            // Resumed: the dead run may have left points the index no longer
            // counts (so `delete_owner` found none) in its files; rebuild
            // whatever the count (seen in the kill -9 test).
            if resumed {
                vectors.purge_unconditionally()?;
            } else {
                vectors.purge_deleted()?;
            }
            Ok(n)
        });
        // The store's purge (step 3) follows its own deletes, alongside the
        // index purges rather than after them: it only needs the rows gone.
        let store_step = async {
            let t = std::time::Instant::now();
            let rows = self.store().erase_user(tenant_id, user_id).await?;
            let store_ms = t.elapsed().as_millis();
            // Step 3, before the intent goes: a crash until the purge has
            // finished resumes the erasure, and the resumed run purges.
            let t = std::time::Instant::now();
            let purge = rows != crate::store::ErasedRows::default()
                || resumed
                || self
                    .store()
                    .last_erasure(tenant_id, user_id)
                    .await?
                    .is_none();
            if purge {
                self.store().purge_erased().await?;
            }
            Ok::<_, Error>((rows, store_ms, purge, t.elapsed().as_millis()))
        };
        let (lexical_step, vector_step, store_step) =
            tokio::join!(lexical_step, vector_step, store_step);
        let (
            (lexical_docs, lexical_ms),
            (vector_points, vector_ms),
            (rows, store_ms, purge, purge_ms),
        ) = (lexical_step?, vector_step?, store_step?);
        let erased = ErasedCounts {
            memories: rows.memories,
            candidates: rows.candidates,
            threads: rows.threads,
            messages: rows.messages,
            audit_events: rows.audit_events,
            lexical_docs: lexical_docs as u64,
            vectors: vector_points as u64,
            cached_embeddings: rows.cached_embeddings,
            api_keys: rows.api_keys,
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
            purge,
            purge_ms,
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
async fn timed_step(
    step: impl FnOnce() -> Result<usize> + Send + 'static,
) -> Result<(usize, u128)> {
    super::blocking(move || {
        let t = std::time::Instant::now();
        step().map(|n| (n, t.elapsed().as_millis()))
    })
    .await
}

impl Engine {
    /// Counts what every store holds of a user.
    pub async fn verify_erasure(
        &self,
        actor: &Actor,
        user_id: &str,
    ) -> Result<ErasureVerification> {
        validate_existing_id("user_id", user_id)?;
        let user = actor
            .user_for(Some(user_id))?
            .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
        let footprint = self.store().user_footprint(&actor.tenant_id, &user).await?;
        let owner = Owner::user(&actor.tenant_id, &user);
        let lexical = self.lexical().clone();
        let vectors = self.vectors().clone();
        let (lexical_docs, vector_points) = super::blocking(move || {
            lexical.commit()?;
            Ok((lexical.count_owner(&owner)?, vectors.count_owner(&owner)?))
        })
        .await?;
        let last_erasure_at = self.store().last_erasure(&actor.tenant_id, &user).await?;
        let live_since = self.clock().now()
            - chrono::Duration::from_std(crate::service::cluster::NODE_LIVENESS)
                .map_err(Error::internal)?;
        let nodes = self
            .store()
            .erasure_progress(Owner::user(&actor.tenant_id, &user).as_str(), live_since)
            .await?;
        let erased = footprint.memories == 0
            && footprint.audit_events == 0
            && footprint.threads == 0
            && footprint.messages == 0
            && footprint.api_keys == 0
            && lexical_docs == 0
            && vector_points == 0
            && footprint.pending_erasures == 0
            && nodes.behind.is_empty();
        let running = self
            .erasure_jobs()
            .is_running(&(actor.tenant_id.clone(), user.clone()));
        let status = if erased {
            ErasureStatus::Erased
        } else if running || footprint.pending_erasures > 0 || !nodes.behind.is_empty() {
            ErasureStatus::InProgress
        } else {
            ErasureStatus::NotErased
        };
        Ok(ErasureVerification {
            status,
            user_id: user,
            memories: footprint.memories,
            audit_events: footprint.audit_events,
            threads: footprint.threads,
            messages: footprint.messages,
            lexical_docs: lexical_docs as u64,
            vectors: vector_points as u64,
            api_keys: footprint.api_keys,
            pending_erasure: footprint.pending_erasures > 0,
            live_nodes: nodes.live_nodes,
            nodes_behind: nodes.behind,
            erased,
            last_erasure_at,
            files: None,
        })
    }

    /// Completes erasures a crash interrupted; run at every start. Waits for
    /// each (joining any already running here).
    pub async fn resume_erasures(&self) -> Result<usize> {
        let pending = self.store().pending_erasures().await?;
        for (tenant, user, actor) in &pending {
            self.spawn_erasure((tenant.clone(), user.clone()), actor.clone(), true)
                .wait(None)
                .await?;
        }
        if !pending.is_empty() {
            tracing::warn!(count = pending.len(), "resumed interrupted erasures");
        }
        Ok(pending.len())
    }

    /// One pass of the erasure sweep: starts (without waiting) every intent
    /// that the previous pass also found pending and that is not running on
    /// this node — an erasure whose node died, or that failed. Returns how
    /// many it started.
    pub async fn sweep_erasures(&self) -> Result<usize> {
        let pending = self.store().pending_erasures().await?;
        let jobs = self.erasure_jobs();
        let mut idle = HashSet::new();
        let mut due = Vec::new();
        {
            let mut seen = jobs.seen.lock();
            for (tenant, user, actor) in pending {
                let key = (tenant, user);
                if jobs.is_running(&key) {
                    continue;
                }
                if seen.contains(&key) {
                    due.push((key, actor));
                } else {
                    idle.insert(key);
                }
            }
            *seen = idle;
        }
        let started = due.len();
        for (key, actor) in due {
            // Not awaited: the task is tracked, and shutdown waits for it.
            let _job = self.spawn_erasure(key, actor, true);
        }
        if started > 0 {
            tracing::warn!(count = started, "erasure sweep resumed stalled erasures");
        }
        Ok(started)
    }
}

/// Resumes erasures whose task died with another node, or failed: runs
/// [`Engine::sweep_erasures`] every [`ERASURE_SWEEP_INTERVAL`]. What it
/// deletes is what the recorded intent already promised to delete; every
/// step is idempotent, so two nodes resuming the same intent is harmless.
/// Each pass then prunes the change feed (`erasure/feed.rs`: entries every
/// live node has applied, after a grace period), and every
/// `TOMBSTONE_SCRUB_EVERY` scrubs the hashed user id from tombstones older
/// than [`ERASURE_TOMBSTONE_RETENTION`] whose feed entry is gone (nothing
/// reads it any more but verification's `last_erasure_at`).
pub struct ErasureSweep {
    engine: Engine,
    every: Duration,
    feed: crate::service::erasure::feed::FeedPruner,
    scrubbed_at: Option<std::time::Instant>,
}

impl ErasureSweep {
    pub fn new(engine: Engine) -> Self {
        Self::every(engine, ERASURE_SWEEP_INTERVAL)
    }

    /// A sweep at another interval (tests).
    pub fn every(engine: Engine, every: Duration) -> Self {
        ErasureSweep {
            engine,
            every,
            feed: feed::FeedPruner::new(feed::FEED_PRUNE_GRACE),
            scrubbed_at: None,
        }
    }
}

impl ErasureSweep {
    async fn scrub_tombstones(&mut self) -> Result<u64> {
        if self
            .scrubbed_at
            .is_some_and(|at| at.elapsed() < TOMBSTONE_SCRUB_EVERY)
        {
            return Ok(0);
        }
        let before = self.engine.clock().now()
            - chrono::Duration::from_std(ERASURE_TOMBSTONE_RETENTION).map_err(Error::internal)?;
        let n = self.engine.store().scrub_erasure_tombstones(before).await?;
        self.scrubbed_at = Some(std::time::Instant::now());
        if n > 0 {
            tracing::info!(tombstones = n, "erasure tombstones scrubbed");
        }
        Ok(n)
    }
}

#[async_trait::async_trait]
impl crate::runner::PeriodicTask for ErasureSweep {
    fn name(&self) -> &'static str {
        "erasure-sweep"
    }

    fn interval(&self) -> Duration {
        self.every
    }

    async fn run_once(&mut self) -> Result<()> {
        let swept = self.engine.sweep_erasures().await;
        let pruned = self
            .feed
            .run_once(self.engine.store().as_ref(), self.engine.clock().now())
            .await;
        let scrubbed = self.scrub_tombstones().await;
        swept.and(pruned).and(scrubbed).map(|_| ())
    }
}
