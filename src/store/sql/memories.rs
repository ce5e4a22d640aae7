//! Memories and their audit events ([`Memories`]). Compiled once per
//! dialect `D` (see `sql/mod.rs`).

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row as _};
use uuid::Uuid;

use super::rows::{insert_events, insert_memories, refuse_if_thread_gone, row_to_event};
use super::rows::{row_to_memory, update_memories};
use super::D;
use crate::domain::{Memory, Status, Tier};
use crate::error::{Error, Result};
use crate::store::sql::{ms, parse_uuid, turns_beside_sql, Dialect, SqlStore, COLUMNS};
use crate::store::{AuditEvent, ListQuery, Memories, StoreStats, ThreadRef, TurnsBeside};

#[async_trait]
impl Memories for SqlStore<D> {
    async fn insert(&self, memories: &[Memory], events: &[AuditEvent]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        insert_memories(&mut tx, memories).await?;
        insert_events(&mut tx, events).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get(&self, id: Uuid) -> Result<Option<Memory>> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM memories WHERE id = $1"))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(row_to_memory).transpose()
    }

    async fn get_many(&self, ids: &[Uuid]) -> Result<HashMap<Uuid, Memory>> {
        if let Some(direct) = &self.direct {
            return direct.get_many(ids).await;
        }
        let mut out = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut qb: QueryBuilder<D> =
                QueryBuilder::new(format!("SELECT {COLUMNS} FROM memories WHERE id IN ("));
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(id.to_string());
            }
            qb.push(")");
            for row in qb.build().fetch_all(&self.pool).await? {
                let m = row_to_memory(&row)?;
                out.insert(m.id, m);
            }
        }
        Ok(out)
    }

    fn get_many_here(&self, ids: &[Uuid]) -> Option<Result<HashMap<Uuid, Memory>>> {
        self.direct.as_ref().map(|direct| direct.read_ids(ids))
    }

    async fn update(&self, changes: &[(Memory, i64)], events: &[AuditEvent]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        update_memories(&mut tx, changes).await?;
        insert_events(&mut tx, events).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn write(
        &self,
        inserts: &[Memory],
        changes: &[(Memory, i64)],
        events: &[AuditEvent],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        insert_memories(&mut tx, inserts).await?;
        update_memories(&mut tx, changes).await?;
        insert_events(&mut tx, events).await?;
        if let Some(thread) = from_thread {
            refuse_if_thread_gone(&mut tx, thread).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn list(&self, q: &ListQuery) -> Result<Vec<Memory>> {
        let mut qb: QueryBuilder<D> =
            QueryBuilder::new(format!("SELECT {COLUMNS} FROM memories WHERE tenant_id = "));
        qb.push_bind(q.tenant_id.clone());
        match (&q.user_id, q.tier) {
            (Some(u), _) => {
                qb.push(" AND user_id = ").push_bind(u.clone());
            }
            (None, Some(Tier::Reference)) => {
                qb.push(" AND user_id IS NULL");
            }
            (None, _) => {}
        }
        if let Some(t) = q.tier {
            qb.push(" AND tier = ").push_bind(t.as_str());
        }
        if let Some(s) = q.status {
            qb.push(" AND status = ").push_bind(s.as_str());
        }
        if let Some(t) = &q.thread_id {
            qb.push(" AND thread_id = ").push_bind(t.clone());
        }
        if let Some(k) = q.kind {
            qb.push(" AND kind = ").push_bind(k.as_str());
        }
        if let Some(d) = &q.document_id {
            qb.push(" AND ")
                .push(D::DOCUMENT_ID)
                .push(" = ")
                .push_bind(d.clone());
        }
        if let Some(after) = q.after {
            qb.push(" AND id > ").push_bind(after.to_string());
        }
        qb.push(" ORDER BY id LIMIT ").push_bind(q.limit as i64);
        qb.build()
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(row_to_memory)
            .collect()
    }

    async fn history(&self, memory_id: Uuid) -> Result<Vec<AuditEvent>> {
        sqlx::query("SELECT * FROM audit_events WHERE memory_id = $1 ORDER BY seq")
            .bind(memory_id.to_string())
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(row_to_event)
            .collect()
    }

    async fn indexed_versions(&self) -> Result<Vec<(Uuid, i64)>> {
        sqlx::query("SELECT id, version FROM memories WHERE status IN ('active', 'pending')")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| Ok((parse_uuid(&r.try_get::<String, _>(0)?)?, r.try_get(1)?)))
            .collect()
    }

    async fn scan_indexed(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<Memory>> {
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories WHERE status IN ('active', 'pending') AND id > $1 ORDER BY id LIMIT $2"
        ))
        .bind(after.map(|u| u.to_string()).unwrap_or_default())
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(row_to_memory)
        .collect()
    }

    async fn record_access(&self, ids: &[Uuid], at: DateTime<Utc>) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut qb: QueryBuilder<D> = QueryBuilder::new(
            "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ",
        );
        qb.push_bind(ms(at)).push(" WHERE id IN (");
        let mut sep = qb.separated(", ");
        for id in ids {
            sep.push_bind(id.to_string());
        }
        qb.push(")");
        qb.build().execute(&self.pool).await?;
        Ok(())
    }

    async fn find_by_text_hash(
        &self,
        tenant_id: &str,
        user_id: Option<&str>,
        text_sha256: &str,
    ) -> Result<Vec<Memory>> {
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories WHERE tenant_id = $1 AND user_id IS NOT DISTINCT FROM $2 \
             AND text_sha256 = $3 AND status IN ('active', 'pending') ORDER BY id"
        ))
        .bind(tenant_id)
        .bind(user_id)
        .bind(text_sha256)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(row_to_memory)
        .collect()
    }

    async fn count_user_memories(&self, tenant_id: &str, user_id: &str) -> Result<u64> {
        // The owner index (tenant_id, user_id, …) covers it.
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM memories WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(tenant_id)
        .bind(user_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(n as u64)
    }

    async fn turns_beside(&self, ids: &[Uuid]) -> Result<Vec<TurnsBeside>> {
        if let Some(direct) = &self.direct {
            return direct.turns_beside(ids).await;
        }
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut qb: QueryBuilder<D> = QueryBuilder::new(turns_beside_sql("IN ("));
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(id.to_string());
            }
            qb.push(")");
            for row in qb.build().fetch_all(&self.pool).await? {
                let side = |i: usize| -> Result<Option<Uuid>> {
                    row.try_get::<Option<String>, _>(i)?
                        .as_deref()
                        .map(parse_uuid)
                        .transpose()
                };
                out.push(TurnsBeside {
                    id: parse_uuid(&row.try_get::<String, _>(0)?)?,
                    before: side(1)?,
                    after: side(2)?,
                });
            }
        }
        Ok(out)
    }

    async fn turn_before(
        &self,
        tenant_id: &str,
        user_id: &str,
        thread_id: &str,
        before: Uuid,
    ) -> Result<Option<String>> {
        // One descent of the thread index (tenant_id, user_id, thread_id, id).
        Ok(sqlx::query_scalar(
            "SELECT text FROM memories WHERE tenant_id = $1 AND user_id = $2 \
             AND thread_id = $3 AND status = 'active' AND id < $4 ORDER BY id DESC LIMIT 1",
        )
        .bind(tenant_id)
        .bind(user_id)
        .bind(thread_id)
        .bind(before.to_string())
        .fetch_optional(&self.pool)
        .await?)
    }

    async fn stats(&self) -> Result<StoreStats> {
        let by_tier_status = self.count_by_tier_status().await?;
        let audit_events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit_events")
            .fetch_one(&self.pool)
            .await?;
        let cached: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM embedding_cache")
            .fetch_one(&self.pool)
            .await?;
        Ok(StoreStats {
            by_tier_status,
            audit_events: audit_events as u64,
            cached_embeddings: cached as u64,
        })
    }

    async fn count_by_tier_status(&self) -> Result<Vec<(Tier, Status, u64)>> {
        let rows = sqlx::query(
            "SELECT tier, status, COUNT(*) FROM memories GROUP BY tier, status ORDER BY tier, status",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut by_tier_status = Vec::with_capacity(rows.len());
        for r in rows {
            let tier: String = r.try_get(0)?;
            let status: String = r.try_get(1)?;
            let n: i64 = r.try_get(2)?;
            by_tier_status.push((
                tier.parse().map_err(Error::internal)?,
                status.parse::<Status>().map_err(Error::internal)?,
                n as u64,
            ));
        }
        Ok(by_tier_status)
    }
}
