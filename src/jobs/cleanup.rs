//! The weekly cleanup of long-term memory (`cleanup.interval_days`).
//!
//! What it changes, and why each is safe:
//! - **Importance** of every active long-term memory is recomputed from its
//!   base importance (the writer's, or as reinforcement raised it), its access
//!   heat and its age ([`crate::domain::lifecycle::recomputed_importance`]). Not a
//!   content change: no version bump, no audit event (like access counts).
//!   Idempotent: the result depends on the base, never on the last result.
//! - **Heat cooling**: a memory not accessed for `cleanup.heat_half_life_days`
//!   has its access count written back decayed (it is measured from then on,
//!   never decayed twice).
//! - **Soft delete** of memories whose recomputed importance is below
//!   `cleanup.min_importance` *and* that were not accessed for
//!   `cleanup.unaccessed_days`. Audited, restorable with `Engine::restore`
//!   until the TTL sweep purges it after `lifecycle.deleted_retention_days`,
//!   the same path as any delete. Both conditions must hold: an old memory
//!   that is still read is never deleted.
//!
//! - **The store's files** are purged at the end, as an erasure purges them:
//!   on SQLite every byte no row uses is zeroed page by page
//!   (`store/sql/sqlite_scrub.rs`), on PostgreSQL the tables are
//!   `VACUUM`ed. `secure_delete` zeroes a purged row where it lies, but
//!   copies a b-tree rebalance left elsewhere stay until a purge: with this
//!   one, no longer than a week after the TTL sweep purged the memory.
//!
//! Never touched: reference memory (shared knowledge, curated by admins),
//! working memory (the TTL governs it), and any memory that is not active.

use crate::domain::lifecycle::cleanup_decision;
use crate::domain::Status;
use crate::error::Result;
use crate::jobs::ttl::preview;
use crate::jobs::{move_status, with_lease, JobName, Stats};
use crate::service::Engine;
use crate::store::{AuditAction, HeatUpdate};

pub struct WeeklyCleanup {
    engine: Engine,
    dry_run: bool,
}

impl WeeklyCleanup {
    pub fn new(engine: Engine, dry_run: bool) -> Self {
        WeeklyCleanup { engine, dry_run }
    }

    /// How often it is due.
    pub fn interval(&self) -> chrono::Duration {
        chrono::Duration::days(self.engine.policy().cleanup.interval_days as i64)
    }

    pub async fn run_once(&self) -> Result<Stats> {
        let engine = &self.engine;
        with_lease(
            engine,
            JobName::WeeklyCleanup,
            self.dry_run,
            async |lease| {
                let mut stats = Stats::new(JobName::WeeklyCleanup, self.dry_run);
                let cl = &engine.policy().cleanup;
                let rule = cl.importance_rule();
                let batch = engine.policy().jobs.batch_size;
                let now = engine.clock().now();
                let mut after = None;
                loop {
                    let rows = engine.job_store().scan_for_cleanup(after, batch).await?;
                    let Some(last) = rows.last() else { break };
                    after = Some(last.memory.id);
                    stats.scanned += rows.len() as u64;
                    let mut heat = Vec::new();
                    let mut doomed = Vec::new();
                    for row in rows {
                        let m = &row.memory;
                        let d = cleanup_decision(
                            row.base_importance,
                            m.access_count,
                            m.created_at,
                            m.last_accessed_at,
                            row.cooled_at,
                            now,
                            rule,
                            cl.min_importance,
                            cl.unaccessed_days,
                        );
                        if d.delete {
                            stats.note(
                                m.id,
                                "delete",
                                format!(
                                    "importance {:.3} → {:.3}, idle since {}: {}",
                                    m.importance,
                                    d.importance,
                                    m.last_accessed_at.unwrap_or(m.created_at).date_naive(),
                                    preview(&m.text)
                                ),
                            );
                            doomed.push(row.memory);
                            continue;
                        }
                        let reweight = (d.importance - m.importance).abs() > 1e-4;
                        if reweight {
                            stats.add("reweight", 1);
                            stats.note(
                                m.id,
                                "reweight",
                                format!(
                                    "importance {:.3} → {:.3}: {}",
                                    m.importance,
                                    d.importance,
                                    preview(&m.text)
                                ),
                            );
                        }
                        if let Some(c) = d.cooled_access_count {
                            stats.add("cool", 1);
                            stats.note(
                                m.id,
                                "cool",
                                format!("access count {} → {c}", m.access_count),
                            );
                        }
                        if reweight || d.cooled_access_count.is_some() {
                            heat.push(HeatUpdate {
                                id: m.id,
                                importance: d.importance,
                                base_importance: row.base_importance,
                                access_count: d.cooled_access_count,
                                cooled_at: now,
                            });
                        }
                    }
                    if self.dry_run {
                        stats.add("delete", doomed.len() as u64);
                        continue;
                    }
                    engine.job_store().write_heat(&heat).await?;
                    let (moved, skipped) = move_status(
                        engine,
                        &doomed,
                        Status::Deleted,
                        AuditAction::Delete,
                        "cleanup",
                    )
                    .await?;
                    stats.add("delete", moved);
                    stats.conflicts += skipped;
                    if let Some(lease) = lease {
                        lease.renew().await?;
                    }
                }
                if !self.dry_run {
                    engine.commit().await?;
                    // The store's file purge, the same an erasure ends with:
                    // what the week's physical deletes (the TTL sweep's
                    // purges) left as stale copies in free space goes.
                    if let Some(lease) = lease {
                        lease.renew().await?;
                    }
                    engine.store().purge_erased().await?;
                }
                Ok(stats)
            },
        )
        .await
    }
}
