//! The repair loop: heals the lexical and vector indexes from the store while
//! the service runs, so an index write that failed after its store commit is
//! repaired within seconds, not at the next start.
//!
//! **What it reads.** The store's change feed (`index_changes`, filled by
//! triggers in the same transaction as every memory change and every erasure
//! receipt; see `cluster.rs`), from a cursor that starts at the feed head
//! when the loop starts (the start-up reconcile covers what came before).
//! It never prunes the feed.
//!
//! **What it writes, by id and version.** For each memory the feed names, it
//! reads the store row, then the version each index holds
//! (`LexicalIndex::versions`, `VectorIndex::versions`, lookups by id):
//! - the store indexes the memory and an index holds an *older* version or
//!   none: upsert it (the vector from the embedding cache; embedded only if
//!   the cache lost it). A newer version in the index means the store read
//!   is already stale (writers commit the store first): left alone.
//! - the store does not index it (deleted, expired, purged, erased) and an
//!   index holds it: delete it, but only after asking the store again, after
//!   the index was read ([`Engine::still_unindexed`], the check `reconcile`
//!   uses), so a point another node wrote meanwhile for a restored memory is
//!   not removed. A change that slips between that check and the delete has
//!   its own, later feed entry, which the loop applies next: it converges.
//! - memories of a user whose erasure is pending are skipped (the erasure
//!   removes them), and an erasure entry is applied where it falls in the
//!   feed: any document or point of the erased owner still in an index (a
//!   write that raced the erasure) is deleted, and the lexical index purged.
//!
//! **Settling.** A run applies the feed only up to the head the *previous*
//! run saw, so a write's own index update (milliseconds after its commit)
//! has normally landed before the loop looks at it; the lexical index is
//! committed before its versions are read. Repair latency is therefore one
//! to two intervals (`indexing.repair_interval_secs`, 1 s by default).
//!
//! **Several nodes.** Every node runs the loop. Lexical indexes are per node,
//! so each repairs its own; the vector collection may be shared (Qdrant
//! server): a node repairs only mismatches, so the others find nothing to do.
//!
//! **Status.** [`RepairStatus`] (held by the engine) says how far the loop
//! is: feed positions not yet applied, how long the oldest of them has
//! waited, and the last failure; `/readyz` and `/metrics` report it without
//! any store or index work of their own.
//!
//! **Write responses.** A write whose store commit succeeded but whose index
//! update failed still succeeds: the failure is noted in a task-local
//! ([`track`], [`note_index_failure`]) and the HTTP layer adds
//! `x-mnemo-indexed: false` to the response; the loop indexes it.
//!
//! Threading: one tokio task per engine; index work in `spawn_blocking`.

use std::cell::Cell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::{Memory, Owner};
use crate::error::{Error, Result};
use crate::service::{blocking, lexical_doc, vector_point, Engine};
use crate::store::{ChangeKind, ThreadRef};

/// Feed entries read per store round trip.
const BATCH: usize = 1000;
/// Most (position, first seen) marks kept to date the oldest unapplied change.
const MAX_MARKS: usize = 4096;

tokio::task_local! {
    static INDEX_PENDING: Cell<bool>;
}

/// Runs `f` and says whether any index update inside it failed after its
/// store commit (see [`note_index_failure`]).
pub async fn track<F: Future>(f: F) -> (F::Output, bool) {
    INDEX_PENDING
        .scope(Cell::new(false), async move {
            let out = f.await;
            (out, INDEX_PENDING.with(Cell::get))
        })
        .await
}

/// Records, for the enclosing [`track`] (the HTTP request), that a committed
/// write is not indexed yet. A no-op outside one.
pub fn note_index_failure() {
    let _ = INDEX_PENDING.try_with(|c| c.set(true));
}

impl Engine {
    /// A committed write's index update failed: noted for the response
    /// ([`note_index_failure`]) and counted, so that a clean close of a
    /// command without a repair loop does not vouch for the indexes
    /// (`mnemo ingest`, `clean_shutdown.rs`).
    pub(crate) fn index_write_failed(&self) {
        note_index_failure();
        self.repair_status()
            .failed_index_writes
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// How far the repair loop is. Updated by the loop, read by `/readyz` and
/// `/metrics`; all reads are atomics or a short mutex, never store work.
#[derive(Default)]
pub struct RepairStatus {
    running: AtomicBool,
    /// A loop was started in this process (so `applied` means something).
    started: AtomicBool,
    /// Where the next loop starts instead of the feed head: the position a
    /// clean shutdown recorded (`clean_shutdown.rs`), plus one; 0 for none.
    start_from: AtomicI64,
    /// Feed position applied up to.
    applied: AtomicI64,
    /// Feed head at the last run.
    head: AtomicI64,
    runs: AtomicU64,
    failures: AtomicU64,
    lexical_repaired: AtomicU64,
    vector_repaired: AtomicU64,
    /// Committed writes whose index update failed in this process
    /// ([`Engine::index_write_failed`]).
    failed_index_writes: AtomicU64,
    state: Mutex<StatusState>,
}

#[derive(Default)]
struct StatusState {
    /// (head position, when first seen), oldest first: the oldest change not
    /// yet applied was first seen at the first mark past `applied`.
    marks: VecDeque<(i64, Instant)>,
    last_failure: Option<(DateTime<Utc>, String)>,
    last_run: Option<DateTime<Utc>>,
}

/// What `/readyz` reports of the indexes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct IndexLag {
    /// Whether the repair loop runs in this process.
    pub repairing: bool,
    /// Change-feed positions not yet checked against the indexes.
    pub changes: i64,
    /// How long the oldest of them has waited, in seconds (0 when none).
    pub seconds: f64,
    /// The last failed repair run's error, if any run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure_at: Option<DateTime<Utc>>,
}

/// Counters for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RepairCounters {
    pub runs: u64,
    pub failures: u64,
    pub lexical_repaired: u64,
    pub vector_repaired: u64,
}

impl RepairStatus {
    pub fn lag(&self) -> IndexLag {
        let applied = self.applied.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Relaxed);
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let seconds = state
            .marks
            .iter()
            .find(|(h, _)| *h > applied)
            .map_or(0.0, |(_, t)| t.elapsed().as_secs_f64());
        IndexLag {
            repairing: self.running.load(Ordering::Relaxed),
            changes: (head - applied).max(0),
            seconds,
            last_failure: state.last_failure.as_ref().map(|(_, m)| m.clone()),
            last_failure_at: state.last_failure.as_ref().map(|(t, _)| *t),
        }
    }

    pub fn counters(&self) -> RepairCounters {
        RepairCounters {
            runs: self.runs.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            lexical_repaired: self.lexical_repaired.load(Ordering::Relaxed),
            vector_repaired: self.vector_repaired.load(Ordering::Relaxed),
        }
    }

    /// The next loop starts at `position` (a clean shutdown's) instead of
    /// the feed head, applying every change after it.
    pub(crate) fn start_from(&self, position: i64) {
        self.start_from
            .store(position.saturating_add(1), Ordering::Relaxed);
    }

    /// Committed writes of this process whose index update failed (each
    /// left for a repair loop or the next start's reconcile).
    pub fn failed_index_writes(&self) -> u64 {
        self.failed_index_writes.load(Ordering::Relaxed)
    }

    /// The feed position up to which a loop of this process has checked the
    /// indexes against the store; `None` when no loop ran.
    pub(crate) fn consistent_up_to(&self) -> Option<i64> {
        self.started
            .load(Ordering::Relaxed)
            .then(|| self.applied.load(Ordering::Relaxed))
    }

    fn saw_head(&self, head: i64) {
        self.head.store(head, Ordering::Relaxed);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.marks.back().is_none_or(|(h, _)| *h < head) && state.marks.len() < MAX_MARKS {
            state.marks.push_back((head, Instant::now()));
        }
    }

    fn applied_up_to(&self, position: i64) {
        self.applied.store(position, Ordering::Relaxed);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // Keep the first mark past `position`: it dates what is still waiting.
        while state.marks.len() > 1 && state.marks[1].0 <= position {
            state.marks.pop_front();
        }
        if state.marks.front().is_some_and(|(h, _)| *h <= position) {
            state.marks.pop_front();
        }
    }

    fn finished(&self, at: DateTime<Utc>, result: &Result<RepairStats>) {
        self.runs.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.last_run = Some(at);
        match result {
            Ok(s) => {
                self.lexical_repaired
                    .fetch_add(s.lexical_repaired() as u64, Ordering::Relaxed);
                self.vector_repaired
                    .fetch_add(s.vector_repaired() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                state.last_failure = Some((at, e.to_string()));
            }
        }
    }
}

/// What one [`Repairer::run_once`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RepairStats {
    /// Feed entries read.
    pub changes: usize,
    /// Distinct memories checked against both indexes.
    pub checked: usize,
    pub lexical_upserted: usize,
    pub lexical_removed: usize,
    pub vector_upserted: usize,
    pub vector_removed: usize,
    /// Erasure entries that still found the owner in an index.
    pub erasures_reapplied: usize,
    /// Memories skipped because their user's erasure is pending.
    pub skipped_erasing: usize,
    /// The feed position applied up to.
    pub position: i64,
}

impl RepairStats {
    pub fn lexical_repaired(&self) -> usize {
        self.lexical_upserted + self.lexical_removed
    }
    pub fn vector_repaired(&self) -> usize {
        self.vector_upserted + self.vector_removed
    }
}

/// The repair job: one per engine (see the module docs).
pub struct Repairer {
    engine: Engine,
    /// Feed position applied up to.
    cursor: i64,
    /// The head the previous run saw: this run applies up to it.
    settled: i64,
}

impl Repairer {
    /// Starts at the store's current feed head (what came before is the
    /// start-up reconcile's), or at the position a clean shutdown recorded
    /// when the start skipped the reconcile ([`RepairStatus::start_from`]).
    pub async fn new(engine: Engine) -> Result<Self> {
        let head = engine.store().change_feed_head().await?;
        let status = engine.repair_status();
        let start = match status.start_from.swap(0, Ordering::Relaxed) - 1 {
            p if (0..=head).contains(&p) => p,
            _ => head,
        };
        status.applied_up_to(start);
        status.saw_head(head);
        status.started.store(true, Ordering::Relaxed);
        Ok(Repairer {
            engine,
            cursor: start,
            settled: head,
        })
    }

    /// The feed position applied up to.
    pub fn position(&self) -> i64 {
        self.cursor
    }

    /// One pass: applies the feed from the cursor up to the head the previous
    /// pass saw, then remembers the current head for the next pass.
    pub async fn run_once(&mut self) -> Result<RepairStats> {
        let status = self.engine.repair_status().clone();
        let head = self.engine.store().change_feed_head().await?;
        status.saw_head(head);
        let target = self.settled.min(head);
        let result = self.apply_up_to(target).await;
        let now = self.engine.clock().now();
        status.finished(now, &result);
        let mut stats = result?;
        self.settled = head;
        stats.position = self.cursor;
        Ok(stats)
    }

    /// Applies every feed entry up to `target` now (tests, and catching up
    /// without the settling delay).
    pub async fn catch_up(&mut self) -> Result<RepairStats> {
        let head = self.engine.store().change_feed_head().await?;
        self.engine.repair_status().saw_head(head);
        self.settled = head;
        self.run_once().await
    }

    async fn apply_up_to(&mut self, target: i64) -> Result<RepairStats> {
        let mut stats = RepairStats::default();
        while self.cursor < target {
            let mut changes = self
                .engine
                .store()
                .index_changes(self.cursor, BATCH)
                .await?;
            let full = changes.len() == BATCH;
            changes.retain(|c| c.position <= target);
            let Some(last) = changes.last().map(|c| c.position) else {
                break;
            };
            stats.changes += changes.len();
            let mut run: Vec<Uuid> = Vec::new();
            for change in &changes {
                match &change.kind {
                    ChangeKind::Memory(id) => run.push(*id),
                    ChangeKind::Erasure(owner) => {
                        self.engine
                            .repair_memories(std::mem::take(&mut run), &mut stats)
                            .await?;
                        if self.engine.reapply_erasure(owner).await? {
                            stats.erasures_reapplied += 1;
                        }
                    }
                }
            }
            self.engine.repair_memories(run, &mut stats).await?;
            self.cursor = last;
            self.engine.repair_status().applied_up_to(last);
            if !full {
                break;
            }
        }
        if self.cursor < target {
            // Positions that never committed (a rolled-back sequence value).
            self.cursor = target;
            self.engine.repair_status().applied_up_to(target);
        }
        Ok(stats)
    }

    /// Runs [`run_once`](Self::run_once) every `interval` until aborted;
    /// failures are recorded in the status, logged, and retried next tick
    /// from the same cursor.
    pub fn spawn(mut self, interval: Duration) -> tokio::task::JoinHandle<()> {
        let status = self.engine.repair_status().clone();
        status.running.store(true, Ordering::Relaxed);
        tokio::spawn(async move {
            let _running = RunningFlag(status);
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match self.run_once().await {
                    Ok(s) if s.lexical_repaired() + s.vector_repaired() > 0 => tracing::warn!(
                        lexical_upserted = s.lexical_upserted,
                        lexical_removed = s.lexical_removed,
                        vector_upserted = s.vector_upserted,
                        vector_removed = s.vector_removed,
                        erasures_reapplied = s.erasures_reapplied,
                        position = s.position,
                        "repaired the indexes from the store"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "index repair failed; retrying"),
                }
            }
        })
    }
}

/// Clears `running` when the loop's task ends (aborted or panicked).
struct RunningFlag(std::sync::Arc<RepairStatus>);

impl Drop for RunningFlag {
    fn drop(&mut self) {
        self.0.running.store(false, Ordering::Relaxed);
    }
}

/// The repair loop as a background task on the node's runner
/// (`runner.rs`), at `indexing.repair_interval_secs`. It deletes only index
/// entries the store no longer indexes (re-read from the store first).
pub struct RepairTask {
    repairer: Repairer,
    every: Duration,
    _running: RunningFlag,
}

impl RepairTask {
    pub async fn new(engine: &Engine) -> Result<Self> {
        let every = Duration::from_secs(engine.policy().indexing.repair_interval_secs.max(1));
        let status = engine.repair_status().clone();
        let repairer = Repairer::new(engine.clone()).await?;
        status.running.store(true, Ordering::Relaxed);
        Ok(RepairTask {
            repairer,
            every,
            _running: RunningFlag(status),
        })
    }
}

#[async_trait::async_trait]
impl crate::runner::PeriodicTask for RepairTask {
    fn name(&self) -> &'static str {
        "index-repair"
    }

    fn interval(&self) -> Duration {
        self.every
    }

    async fn run_once(&mut self) -> Result<()> {
        let s = self.repairer.run_once().await?;
        if s.lexical_repaired() + s.vector_repaired() > 0 {
            tracing::warn!(
                lexical_upserted = s.lexical_upserted,
                lexical_removed = s.lexical_removed,
                vector_upserted = s.vector_upserted,
                vector_removed = s.vector_removed,
                erasures_reapplied = s.erasures_reapplied,
                position = s.position,
                "repaired the indexes from the store"
            );
        }
        Ok(())
    }
}

impl Engine {
    /// Indexes memories whose store write has committed, embedding those
    /// without a vector (`vectors` covers the first memories, in order).
    /// Never fails: an embedding or index failure is logged and noted for
    /// the response ([`note_index_failure`]); the repair loop indexes them.
    pub(crate) async fn index_committed(
        &self,
        memories: &[Memory],
        mut vectors: Vec<Vec<f32>>,
        from_thread: Option<ThreadRef<'_>>,
        refresh: bool,
    ) {
        let rest = &memories[vectors.len().min(memories.len())..];
        if !rest.is_empty() {
            match self.embed_passages_from(rest, from_thread).await {
                Ok(v) => vectors.extend(v),
                Err(e) => {
                    tracing::error!(error = %e, count = rest.len(),
                        "embedding after commit failed; the repair loop will index them");
                    self.index_write_failed();
                }
            }
        }
        let n = vectors.len();
        self.index(&memories[..n], vectors, refresh).await;
    }

    /// Checks `ids` against both indexes and repairs what differs from the
    /// store (see the module docs).
    async fn repair_memories(&self, mut ids: Vec<Uuid>, stats: &mut RepairStats) -> Result<()> {
        let mut seen = HashSet::new();
        ids.retain(|id| seen.insert(*id));
        if ids.is_empty() {
            return Ok(());
        }
        stats.checked += ids.len();
        let found = self.store().get_many(&ids).await?;
        let lexical = self.lexical().clone();
        let vectors = self.vectors().clone();
        let probe = ids.clone();
        let (lex_have, vec_have) = blocking(move || {
            lexical.commit()?;
            Ok((lexical.versions(&probe)?, vectors.versions(&probe)?))
        })
        .await?;
        let erasing: HashSet<(String, String)> = self
            .store()
            .pending_erasures()
            .await?
            .into_iter()
            .map(|(t, u, _)| (t, u))
            .collect();
        let stale =
            |have: &HashMap<Uuid, i64>, m: &Memory| have.get(&m.id).is_none_or(|v| *v < m.version);
        let mut lex_up: Vec<&Memory> = Vec::new();
        let mut vec_up: Vec<Memory> = Vec::new();
        let mut gone: Vec<Uuid> = Vec::new();
        for id in &ids {
            match found.get(id) {
                Some(m) if m.status.is_indexed() => {
                    let erased = m
                        .user_id
                        .as_ref()
                        .is_some_and(|u| erasing.contains(&(m.tenant_id.clone(), u.clone())));
                    if erased {
                        stats.skipped_erasing += 1;
                        continue;
                    }
                    if stale(&lex_have, m) {
                        lex_up.push(m);
                    }
                    if stale(&vec_have, m) {
                        vec_up.push(m.clone());
                    }
                }
                _ if lex_have.contains_key(id) || vec_have.contains_key(id) => gone.push(*id),
                _ => {}
            }
        }
        // Delete only what the store still does not index, asked after the
        // indexes were read (another node may have restored and indexed it).
        let gone: HashSet<Uuid> = self.still_unindexed(gone).await?.into_iter().collect();
        let lex_gone: Vec<Uuid> = gone
            .iter()
            .filter(|id| lex_have.contains_key(id))
            .copied()
            .collect();
        let vec_gone: Vec<Uuid> = gone
            .iter()
            .filter(|id| vec_have.contains_key(id))
            .copied()
            .collect();
        let vecs = if vec_up.is_empty() {
            Vec::new()
        } else {
            self.embed_passages(&vec_up).await?
        };
        let docs: Vec<_> = lex_up.iter().map(|m| lexical_doc(m)).collect();
        let points: Vec<_> = vec_up
            .iter()
            .zip(vecs)
            .map(|(m, v)| vector_point(m, v))
            .collect();
        stats.lexical_upserted += docs.len();
        stats.lexical_removed += lex_gone.len();
        stats.vector_upserted += points.len();
        stats.vector_removed += vec_gone.len();
        if docs.is_empty() && points.is_empty() && lex_gone.is_empty() && vec_gone.is_empty() {
            return Ok(());
        }
        let lexical = self.lexical().clone();
        let vectors = self.vectors().clone();
        blocking(move || {
            lexical.delete(&lex_gone)?;
            vectors.delete(&vec_gone)?;
            lexical.upsert(docs)?;
            vectors.upsert(points)?;
            lexical.commit()
        })
        .await
    }

    /// Deletes whatever both indexes still hold of an erased owner (a write
    /// that raced the erasure); `true` if there was anything. Counting is
    /// cheap (a term / keyword count), so an erasure that left nothing costs
    /// two counts.
    async fn reapply_erasure(&self, owner_key: &str) -> Result<bool> {
        let owner = Owner::from_key(owner_key)
            .ok_or_else(|| Error::internal("malformed owner key in the change feed"))?;
        let lexical = self.lexical().clone();
        let vectors = self.vectors().clone();
        blocking(move || {
            let (l, v) = (lexical.count_owner(&owner)?, vectors.count_owner(&owner)?);
            if l > 0 {
                lexical.delete_owner(&owner)?;
                lexical.purge()?;
            }
            if v > 0 {
                vectors.delete_owner(&owner)?;
                vectors.flush()?;
            }
            if l + v > 0 {
                // Counts only: the owner key identifies a user.
                tracing::warn!(
                    lexical_docs = l,
                    vector_points = v,
                    "removed an erased owner's entries left in the indexes"
                );
            }
            Ok(l + v > 0)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_dates_the_oldest_unapplied_change() {
        let s = RepairStatus::default();
        s.applied_up_to(10);
        s.saw_head(10);
        assert_eq!(s.lag().changes, 0);
        assert_eq!(s.lag().seconds, 0.0);
        s.saw_head(15);
        std::thread::sleep(Duration::from_millis(20));
        s.saw_head(20);
        let lag = s.lag();
        assert_eq!(lag.changes, 10);
        assert!(lag.seconds >= 0.02, "{lag:?}");
        // Applying up to 15 leaves the mark of 20, which is younger.
        s.applied_up_to(15);
        let later = s.lag();
        assert_eq!(later.changes, 5);
        assert!(later.seconds < lag.seconds + 0.001, "{later:?} vs {lag:?}");
        s.applied_up_to(20);
        assert_eq!(s.lag().changes, 0);
        assert_eq!(s.lag().seconds, 0.0);
    }

    #[tokio::test]
    async fn failures_are_noted_only_inside_a_tracked_request() {
        note_index_failure(); // outside: a no-op, no panic
        let ((), pending) = track(async { note_index_failure() }).await;
        assert!(pending);
        let ((), pending) = track(async {}).await;
        assert!(!pending);
    }
}
