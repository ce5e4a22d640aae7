//! What the lifecycle jobs select and write, and their leases
//! ([`JobStore`]). Compiled once per dialect `D` (see `sql/mod.rs`).
//!
//! A lease is one atomic upsert in `job_leases`, taken only if free, expired
//! or already held by the caller, so with several nodes a job runs on one
//! node at a time.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{QueryBuilder, Row as _};
use uuid::Uuid;

use super::rows::row_to_memory;
use super::D;
use crate::domain::lifecycle::SweepStep;
use crate::domain::Memory;
use crate::error::Result;
use crate::store::sql::{from_ms, ms, SqlStore, COLUMNS};
use crate::store::{CleanupRow, HeatUpdate, JobState, JobStore};

#[async_trait]
impl JobStore for SqlStore<D> {
    async fn due_for_sweep(
        &self,
        step: SweepStep,
        cutoff: DateTime<Utc>,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<Memory>> {
        let condition = match step {
            SweepStep::Expire => "status IN ('active', 'pending') AND expires_at <= $1",
            SweepStep::ExpirePending => "status = 'pending' AND created_at <= $1",
            SweepStep::Archive => "status = 'expired' AND updated_at <= $1",
            SweepStep::Delete => "status = 'archived' AND updated_at <= $1",
            SweepStep::Purge => "status = 'deleted' AND updated_at <= $1",
        };
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories WHERE {condition} AND id > $2 ORDER BY id LIMIT $3"
        ))
        .bind(ms(cutoff))
        .bind(after.map(|u| u.to_string()).unwrap_or_default())
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(row_to_memory)
        .collect()
    }

    async fn purge(&self, ids: &[Uuid]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut tx = self.pool.begin().await?;
        let mut purged = 0;
        for chunk in ids.chunks(500) {
            let list = |qb: &mut QueryBuilder<D>| {
                let mut sep = qb.separated(", ");
                for id in chunk {
                    sep.push_bind(id.to_string());
                }
            };
            // The cached vector of a purged memory's text goes too, unless
            // another memory of the same owner still has that text.
            let mut qb: QueryBuilder<D> = QueryBuilder::new(
                "DELETE FROM embedding_cache WHERE (tenant_id, user_id, text_sha256) IN ( \
                 SELECT m.tenant_id, coalesce(m.user_id, ''), m.text_sha256 FROM memories m \
                 WHERE m.status = 'deleted' AND m.id IN (",
            );
            list(&mut qb);
            qb.push(
                ") AND NOT EXISTS (SELECT 1 FROM memories o WHERE o.tenant_id = m.tenant_id \
                 AND o.user_id IS NOT DISTINCT FROM m.user_id AND o.text_sha256 = m.text_sha256 \
                 AND NOT (o.status = 'deleted' AND o.id IN (",
            );
            list(&mut qb);
            qb.push("))))");
            qb.build().execute(&mut *tx).await?;
            let mut qb: QueryBuilder<D> = QueryBuilder::new(
                "UPDATE audit_events SET before_text = NULL, after_text = NULL WHERE memory_id IN \
                 (SELECT id FROM memories WHERE status = 'deleted' AND id IN (",
            );
            list(&mut qb);
            qb.push("))");
            qb.build().execute(&mut *tx).await?;
            let mut qb: QueryBuilder<D> =
                QueryBuilder::new("DELETE FROM memories WHERE status = 'deleted' AND id IN (");
            list(&mut qb);
            qb.push(")");
            purged += qb.build().execute(&mut *tx).await?.rows_affected();
        }
        tx.commit().await?;
        Ok(purged)
    }

    async fn scan_for_cleanup(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<CleanupRow>> {
        sqlx::query(&format!(
            "SELECT {COLUMNS}, base_importance, cooled_at FROM memories \
             WHERE status = 'active' AND tier = 'long_term' AND id > $1 ORDER BY id LIMIT $2"
        ))
        .bind(after.map(|u| u.to_string()).unwrap_or_default())
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| {
            let memory = row_to_memory(row)?;
            let base: Option<f64> = row.try_get("base_importance")?;
            Ok(CleanupRow {
                base_importance: base.map_or(memory.importance, |b| b as f32),
                cooled_at: row.try_get::<Option<i64>, _>("cooled_at")?.map(from_ms),
                memory,
            })
        })
        .collect()
    }

    async fn write_heat(&self, updates: &[HeatUpdate]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        for u in updates {
            sqlx::query(
                "UPDATE memories SET importance = $1, base_importance = $2, \
                 access_count = COALESCE($3, access_count), \
                 cooled_at = CASE WHEN $3 IS NULL THEN cooled_at ELSE $4 END WHERE id = $5",
            )
            .bind(u.importance as f64)
            .bind(u.base_importance as f64)
            .bind(u.access_count.map(|c| c as i64))
            .bind(ms(u.cooled_at))
            .bind(u.id.to_string())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn acquire_lease(
        &self,
        job: &str,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO job_leases (name, holder, lease_expires_at, acquired_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
                 lease_expires_at = excluded.lease_expires_at, \
                 acquired_at = CASE WHEN job_leases.holder IS NOT DISTINCT FROM excluded.holder \
                     THEN job_leases.acquired_at ELSE excluded.acquired_at END \
             WHERE job_leases.holder IS NULL OR job_leases.holder = excluded.holder \
                 OR job_leases.lease_expires_at <= excluded.acquired_at",
        )
        .bind(job)
        .bind(holder)
        .bind(ms(until))
        .bind(ms(now))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_lease(
        &self,
        job: &str,
        holder: &str,
        completed: Option<(DateTime<Utc>, serde_json::Value)>,
    ) -> Result<()> {
        let (at, stats) = completed.unzip();
        sqlx::query(
            "UPDATE job_leases SET holder = NULL, lease_expires_at = NULL, \
             last_completed_at = COALESCE($1, last_completed_at), \
             last_stats = COALESCE($2, last_stats) WHERE name = $3 AND holder = $4",
        )
        .bind(at.map(ms))
        .bind(stats.map(Json))
        .bind(job)
        .bind(holder)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn job_state(&self, job: &str) -> Result<Option<JobState>> {
        let row = sqlx::query(
            "SELECT holder, lease_expires_at, last_completed_at, last_stats, first_due_at \
             FROM job_leases WHERE name = $1",
        )
        .bind(job)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            let stats: Option<Json<serde_json::Value>> = r.try_get(3)?;
            Ok(JobState {
                holder: r.try_get(0)?,
                lease_expires_at: r.try_get::<Option<i64>, _>(1)?.map(from_ms),
                last_completed_at: r.try_get::<Option<i64>, _>(2)?.map(from_ms),
                last_stats: stats.map(|Json(s)| s),
                first_due_at: r.try_get::<Option<i64>, _>(4)?.map(from_ms),
            })
        })
        .transpose()
    }

    async fn schedule_first_run(&self, job: &str, due: DateTime<Utc>) -> Result<DateTime<Utc>> {
        let recorded: i64 = sqlx::query_scalar(
            "INSERT INTO job_leases (name, first_due_at) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET \
                 first_due_at = COALESCE(job_leases.first_due_at, excluded.first_due_at) \
             RETURNING first_due_at",
        )
        .bind(job)
        .bind(ms(due))
        .fetch_one(&self.pool)
        .await?;
        Ok(from_ms(recorded))
    }
}
