//! The TTL sweep: moves memories through the end of their life, one step per
//! run at most, each step selected by state and time only.
//!
//! What it changes, and why each is safe:
//! - `active`/`pending` past `expires_at` → `expired`. Retrieval already
//!   ignores them (search re-checks expiry against the store); this makes the
//!   state visible in listings and takes them out of the indexes.
//! - `pending` candidates created more than `lifecycle.pending_ttl_days` ago
//!   → `expired`: never confirmed nor repeated, so never trusted.
//! - `expired` for `lifecycle.expired_grace_days` → `archived`, and
//!   `archived` for `lifecycle.archived_grace_days` → soft-`deleted`. Status
//!   changes only: audited, restorable with `Engine::restore`.
//! - soft-`deleted` for `lifecycle.deleted_retention_days` → purged: the only
//!   physical deletion. Safe because the memory has been out of retrieval
//!   and restorable for the whole retention; the purge re-checks the status
//!   in the same transaction, so a memory restored meanwhile is kept. Its
//!   audit events stay, without their text.
//!
//! "Since" is the memory's `updated_at`, which every status change sets.

use chrono::Duration;

use crate::domain::lifecycle::SweepStep;
use crate::domain::Status;
use crate::error::Result;
use crate::jobs::{move_status, with_lease, JobName, Stats};
use crate::service::Engine;
use crate::store::AuditAction;

pub struct TtlSweep {
    engine: Engine,
    dry_run: bool,
}

impl TtlSweep {
    pub fn new(engine: Engine, dry_run: bool) -> Self {
        TtlSweep { engine, dry_run }
    }

    /// How often the server runs it.
    pub fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.engine.policy().lifecycle.sweep_interval_secs)
    }

    pub async fn run_once(&self) -> Result<Stats> {
        let engine = &self.engine;
        with_lease(engine, JobName::TtlSweep, self.dry_run, async |lease| {
            let mut stats = Stats::new(JobName::TtlSweep, self.dry_run);
            let lc = &engine.policy().lifecycle;
            let batch = engine.policy().jobs.batch_size;
            let now = engine.clock().now();
            let days = |d: u32| now - Duration::days(d as i64);
            for step in SweepStep::ORDER {
                let (cutoff, to, action) = match step {
                    SweepStep::Purge => (days(lc.deleted_retention_days), None, None),
                    SweepStep::Delete => (
                        days(lc.archived_grace_days),
                        Some(Status::Deleted),
                        Some(AuditAction::Delete),
                    ),
                    SweepStep::Archive => (
                        days(lc.expired_grace_days),
                        Some(Status::Archived),
                        Some(AuditAction::Archive),
                    ),
                    SweepStep::ExpirePending => (
                        days(lc.pending_ttl_days),
                        Some(Status::Expired),
                        Some(AuditAction::Expire),
                    ),
                    SweepStep::Expire => (now, Some(Status::Expired), Some(AuditAction::Expire)),
                };
                let mut after = None;
                loop {
                    let due = engine
                        .job_store()
                        .due_for_sweep(step, cutoff, after, batch)
                        .await?;
                    let Some(last) = due.last() else { break };
                    after = Some(last.id);
                    stats.scanned += due.len() as u64;
                    if self.dry_run {
                        for m in &due {
                            let to = to.map_or("purged".to_string(), |s| s.to_string());
                            stats.note(
                                m.id,
                                step.as_str(),
                                format!("{} → {to}: {}", m.status, preview(&m.text)),
                            );
                        }
                        stats.add(step.as_str(), due.len() as u64);
                        continue;
                    }
                    match (to, action) {
                        (Some(to), Some(action)) => {
                            let (moved, skipped) =
                                move_status(engine, &due, to, action, step.as_str()).await?;
                            stats.add(step.as_str(), moved);
                            stats.conflicts += skipped;
                        }
                        _ => {
                            let ids: Vec<_> = due.iter().map(|m| m.id).collect();
                            let purged = engine.job_store().purge(&ids).await?;
                            stats.add(step.as_str(), purged);
                            stats.conflicts += ids.len() as u64 - purged;
                        }
                    }
                    if let Some(lease) = lease {
                        lease.renew().await?;
                    }
                }
            }
            if !self.dry_run {
                engine.commit().await?;
            }
            Ok(stats)
        })
        .await
    }
}

/// The start of a text, for dry-run listings.
pub(crate) fn preview(text: &str) -> String {
    let mut p: String = text.chars().take(60).collect();
    if p.len() < text.len() {
        p.push('…');
    }
    p
}
