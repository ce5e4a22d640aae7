//! Lifecycle jobs: the TTL sweep ([`ttl::TtlSweep`]) and the weekly cleanup
//! ([`cleanup::WeeklyCleanup`]). Each is a struct with `run_once() -> Stats`;
//! `mnemo jobs run NAME [--dry-run]` runs one on demand and [`LifecycleJobs`]
//! runs both inside `mnemo serve`.
//!
//! Shared guarantees:
//! - **Never twice at once.** A run holds a lease row in the store (holder +
//!   expiry, renewed after every batch); a second runner gets `Conflict`
//!   ("already running"). A crashed runner's lease expires after
//!   `jobs.lease_secs`.
//! - **Idempotent and resumable.** Memories are selected by state and time
//!   only, and each batch is one store transaction, so a crashed run's
//!   finished batches stay done and the next run does the rest.
//! - **Batches** of `jobs.batch_size`, paged by id: memory use is flat
//!   whatever the store holds.
//! - **Dry run** reads the same batches and reports what would change without
//!   taking the lease or writing anything.
//! - Time is the engine's [`crate::clock::Clock`]; tests run a simulated
//!   month in milliseconds with a manual clock.
//!
//! Threading: jobs are async and call the engine like any entry point; the
//! scheduler is one tokio task.

pub mod cleanup;
pub mod ttl;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::{Memory, Status};
use crate::error::{Error, Result};
use crate::service::Engine;
use crate::store::{AuditAction, AuditEvent};

/// The actor recorded in the audit events jobs write.
pub const SYSTEM_ACTOR: &str = "system";

/// The jobs, by the names the CLI and logs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobName {
    TtlSweep,
    WeeklyCleanup,
}

impl JobName {
    pub const ALL: [JobName; 2] = [JobName::TtlSweep, JobName::WeeklyCleanup];

    pub fn as_str(self) -> &'static str {
        match self {
            JobName::TtlSweep => "ttl-sweep",
            JobName::WeeklyCleanup => "weekly-cleanup",
        }
    }
}

impl fmt::Display for JobName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        JobName::ALL
            .into_iter()
            .find(|j| j.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "job",
                    format!("unknown job `{s}` (expected ttl-sweep or weekly-cleanup)"),
                )
            })
    }
}

/// One change a run made (or, dry, would make).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub id: Uuid,
    pub action: &'static str,
    pub detail: String,
}

/// Most changes a dry run lists one by one (counts are always complete).
pub const MAX_LISTED_CHANGES: usize = 1000;

/// What a run did: counters per action (the metrics the API exports), and in
/// a dry run the changes themselves.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    pub job: &'static str,
    pub dry_run: bool,
    pub scanned: u64,
    /// Action → memories (e.g. `expire`, `archive`, `delete`, `purge`,
    /// `reweight`, `cool`); a dry run counts what it would do.
    pub counts: BTreeMap<&'static str, u64>,
    /// Memories skipped because they changed while the job ran (next run).
    pub conflicts: u64,
    pub elapsed_ms: u64,
    /// Dry run only, at most [`MAX_LISTED_CHANGES`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
}

impl Stats {
    fn new(job: JobName, dry_run: bool) -> Self {
        Stats {
            job: job.as_str(),
            dry_run,
            ..Default::default()
        }
    }

    pub fn count(&self, action: &str) -> u64 {
        self.counts.get(action).copied().unwrap_or(0)
    }

    fn add(&mut self, action: &'static str, n: u64) {
        *self.counts.entry(action).or_default() += n;
    }

    fn note(&mut self, id: Uuid, action: &'static str, detail: String) {
        if self.dry_run && self.changes.len() < MAX_LISTED_CHANGES {
            self.changes.push(Change { id, action, detail });
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}: scanned {}",
            self.job,
            if self.dry_run { " (dry run)" } else { "" },
            self.scanned
        )?;
        for (action, n) in &self.counts {
            write!(f, ", {action} {n}")?;
        }
        write!(
            f,
            ", conflicts {} in {} ms",
            self.conflicts, self.elapsed_ms
        )
    }
}

/// Runs of each job in this process, by outcome (`/metrics` exports them as
/// `mnemo_job_runs_total`). Process-wide, like the scheduler that makes them.
pub mod runs {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::JobName;
    use crate::error::{Error, Result};

    /// How a run ended: `completed`, `conflict` (another runner held the
    /// lease) or `failed`.
    pub const OUTCOMES: [&str; 3] = ["completed", "conflict", "failed"];

    static COUNTS: [[AtomicU64; OUTCOMES.len()]; JobName::ALL.len()] =
        [const { [const { AtomicU64::new(0) }; OUTCOMES.len()] }; JobName::ALL.len()];

    pub(super) fn record<T>(job: JobName, result: &Result<T>) {
        let outcome = match result {
            Ok(_) => 0,
            Err(Error::Conflict(_)) => 1,
            Err(_) => 2,
        };
        COUNTS[job as usize][outcome].fetch_add(1, Ordering::Relaxed);
    }

    /// (job, outcome, runs) for every job and outcome, zeros included.
    pub fn snapshot() -> Vec<(&'static str, &'static str, u64)> {
        let mut out = Vec::with_capacity(JobName::ALL.len() * OUTCOMES.len());
        for job in JobName::ALL {
            for (i, outcome) in OUTCOMES.iter().enumerate() {
                out.push((
                    job.as_str(),
                    *outcome,
                    COUNTS[job as usize][i].load(Ordering::Relaxed),
                ));
            }
        }
        out
    }
}

/// A held job lease; renew after each batch, release at the end.
pub(crate) struct Lease {
    engine: Engine,
    job: JobName,
    holder: String,
}

impl Lease {
    /// Takes the job's lease or fails with `Conflict` ("already running").
    pub(crate) async fn acquire(engine: &Engine, job: JobName) -> Result<Lease> {
        let lease = Lease {
            engine: engine.clone(),
            job,
            holder: format!("{}-{}", std::process::id(), Uuid::now_v7()),
        };
        if !lease.renew_inner().await? {
            let state = engine.job_store().job_state(job.as_str()).await?;
            return Err(Error::Conflict(format!(
                "job {job} is already running (holder {}, lease until {})",
                state
                    .as_ref()
                    .and_then(|s| s.holder.clone())
                    .unwrap_or_default(),
                state
                    .and_then(|s| s.lease_expires_at)
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_default()
            )));
        }
        Ok(lease)
    }

    async fn renew_inner(&self) -> Result<bool> {
        let now = self.engine.clock().now();
        let until = now + chrono::Duration::seconds(self.engine.policy().jobs.lease_secs as i64);
        self.engine
            .job_store()
            .acquire_lease(self.job.as_str(), &self.holder, now, until)
            .await
    }

    /// Extends the lease; `Conflict` if it was lost (expired and taken).
    pub(crate) async fn renew(&self) -> Result<()> {
        if self.renew_inner().await? {
            Ok(())
        } else {
            Err(Error::Conflict(format!(
                "job {} lost its lease; another runner took over",
                self.job
            )))
        }
    }

    pub(crate) async fn release(self, completed: Option<&Stats>) -> Result<()> {
        let done = completed.map(|s| {
            (
                self.engine.clock().now(),
                serde_json::to_value(s).unwrap_or_default(),
            )
        });
        self.engine
            .job_store()
            .release_lease(self.job.as_str(), &self.holder, done)
            .await
    }
}

/// Runs `body` under the job's lease (none in a dry run), releasing it
/// whatever happens and recording a completed run.
pub(crate) async fn with_lease<F>(
    engine: &Engine,
    job: JobName,
    dry_run: bool,
    body: F,
) -> Result<Stats>
where
    F: AsyncFnOnce(Option<&Lease>) -> Result<Stats>,
{
    let started = std::time::Instant::now();
    let lease = if dry_run {
        None
    } else {
        Some(Lease::acquire(engine, job).await?)
    };
    let result = body(lease.as_ref()).await;
    let result = result.map(|mut s| {
        s.elapsed_ms = started.elapsed().as_millis() as u64;
        s
    });
    if let Some(lease) = lease {
        lease.release(result.as_ref().ok()).await?;
    }
    if !dry_run {
        runs::record(job, &result);
    }
    if let Ok(s) = &result {
        tracing::info!(job = %job, dry_run, summary = %s, "job finished");
    }
    result
}

/// Moves memories to `to` as the system actor, one transaction per call,
/// and takes them out of the indexes. A memory changed meanwhile (version
/// conflict) is skipped and left for the next run. Returns (moved, skipped).
pub(crate) async fn move_status(
    engine: &Engine,
    memories: &[Memory],
    to: Status,
    action: AuditAction,
    reason: &str,
) -> Result<(u64, u64)> {
    if memories.is_empty() {
        return Ok((0, 0));
    }
    let now = engine.clock().now();
    let change = |m: &Memory| {
        let mut new = m.clone();
        new.status = to;
        new.updated_at = now;
        new.version = m.version + 1;
        let mut e = AuditEvent::for_memory(m, action, SYSTEM_ACTOR, now);
        e.details = serde_json::json!({"from": m.status, "to": to, "reason": reason});
        ((new, m.version), e)
    };
    let (changes, events): (Vec<_>, Vec<_>) = memories.iter().map(change).unzip();
    let (moved, skipped, ids) = match engine.store().update(&changes, &events).await {
        Ok(()) => (
            memories.len() as u64,
            0,
            memories.iter().map(|m| m.id).collect(),
        ),
        Err(Error::Conflict(_)) => {
            // Someone changed one of them: go one by one, skip the changed.
            let (mut moved, mut skipped, mut ids) = (0, 0, Vec::new());
            for m in memories {
                let (c, e) = change(m);
                match engine.store().update(&[c], &[e]).await {
                    Ok(()) => {
                        moved += 1;
                        ids.push(m.id);
                    }
                    Err(Error::Conflict(_)) => skipped += 1,
                    Err(e) => return Err(e),
                }
            }
            (moved, skipped, ids)
        }
        Err(e) => return Err(e),
    };
    if !to.is_indexed() {
        engine.unindex(ids, false).await;
    }
    Ok((moved, skipped))
}

/// Runs a job once by name (the CLI's `mnemo jobs run`).
pub async fn run(engine: &Engine, job: JobName, dry_run: bool) -> Result<Stats> {
    match job {
        JobName::TtlSweep => ttl::TtlSweep::new(engine.clone(), dry_run).run_once().await,
        JobName::WeeklyCleanup => {
            cleanup::WeeklyCleanup::new(engine.clone(), dry_run)
                .run_once()
                .await
        }
    }
}

/// Whether the weekly cleanup is due: `cleanup.interval_days` after its last
/// completed run (by the engine's clock, so restarts do not reset the week).
///
/// A cleanup that never completed is first due one interval after the first
/// time this asks: the call records that time in the store
/// ([`JobStore::schedule_first_run`]), so a deployment's first start does not
/// run a scan of every memory and a file purge beside its first searches (at
/// 1M memories 15-20 s, and the first start after a bulk load is when a new
/// deployment is tried). `mnemo jobs run weekly-cleanup` runs it any time.
/// Once the recorded time has passed, a run that fails is retried at every
/// tick until one completes.
///
/// [`JobStore::schedule_first_run`]: crate::store::JobStore::schedule_first_run
pub async fn cleanup_due(engine: &Engine, now: DateTime<Utc>) -> Result<bool> {
    let every = chrono::Duration::days(engine.policy().cleanup.interval_days as i64);
    let job = JobName::WeeklyCleanup.as_str();
    let state = engine.job_store().job_state(job).await?;
    if let Some(last) = state.as_ref().and_then(|s| s.last_completed_at) {
        return Ok(now - last >= every);
    }
    let first = match state.and_then(|s| s.first_due_at) {
        Some(first) => first,
        None => {
            engine
                .job_store()
                .schedule_first_run(job, now + every)
                .await?
        }
    };
    Ok(now >= first)
}

/// The lifecycle jobs on a timer: the TTL sweep every
/// `lifecycle.sweep_interval_secs`, then the weekly cleanup when
/// `cleanup.interval_days` have passed since its last completed run (or,
/// before any, since the timer first ran: [`cleanup_due`]). What
/// each deletes, and why that is safe, is in `ttl.rs` and `cleanup.rs`.
/// Another node holding a job's lease is not a failure (logged at debug).
pub struct LifecycleJobs {
    engine: Engine,
}

impl LifecycleJobs {
    pub fn new(engine: Engine) -> Self {
        LifecycleJobs { engine }
    }
}

#[async_trait::async_trait]
impl crate::runner::PeriodicTask for LifecycleJobs {
    fn name(&self) -> &'static str {
        "lifecycle-jobs"
    }

    fn interval(&self) -> Duration {
        Duration::from_secs(self.engine.policy().lifecycle.sweep_interval_secs.max(1))
    }

    async fn run_once(&mut self) -> Result<()> {
        let engine = &self.engine;
        let sweep = report(
            run(engine, JobName::TtlSweep, false).await,
            JobName::TtlSweep,
        );
        let cleanup = match cleanup_due(engine, engine.clock().now()).await {
            Ok(true) => report(
                run(engine, JobName::WeeklyCleanup, false).await,
                JobName::WeeklyCleanup,
            ),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        sweep.and(cleanup)
    }
}

/// A run's outcome for the runner: another runner's lease is not a failure.
fn report(result: Result<Stats>, job: JobName) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(Error::Conflict(msg)) => {
            tracing::debug!(job = %job, "{msg}");
            Ok(())
        }
        Err(e) => {
            tracing::error!(job = %job, error = %e, "job failed; the next tick retries");
            Err(e)
        }
    }
}
