//! Clustered mode ([`ChangeFeed`]): the change feed every node's lexical
//! index follows, and the node registry. Compiled once per dialect `D` (see
//! `sql/mod.rs`).
//!
//! `index_changes` is filled by triggers on `audit_events` (every memory
//! change writes one in its transaction) and `erasure_receipts` (an erasure,
//! with the hashed owner key). Positions commit in order on both dialects,
//! so reading `seq > cursor` never skips a change: SQLite has one writer at
//! a time, and PostgreSQL's triggers serialise on an advisory lock
//! (`migrations/postgres/0007_cluster.sql`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::Row as _;

use super::D;
use crate::error::{Error, Result};
use crate::store::sql::{ms, parse_uuid, SqlStore};
use crate::store::{ChangeFeed, ChangeKind, ErasureProgress, IndexChange};

#[async_trait]
impl ChangeFeed for SqlStore<D> {
    async fn change_feed_head(&self) -> Result<i64> {
        let head: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM index_changes")
            .fetch_one(&self.pool)
            .await?;
        Ok(head.unwrap_or(0))
    }

    async fn index_changes(&self, after: i64, limit: usize) -> Result<Vec<IndexChange>> {
        let rows = sqlx::query(
            "SELECT seq, memory_id, owner_key FROM index_changes WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(after)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let position: i64 = row.try_get("seq")?;
                let memory: Option<String> = row.try_get("memory_id")?;
                let owner: Option<String> = row.try_get("owner_key")?;
                let kind = match (memory, owner) {
                    (Some(id), _) => ChangeKind::Memory(parse_uuid(&id)?),
                    (None, Some(owner)) => ChangeKind::Erasure(owner),
                    (None, None) => {
                        return Err(Error::internal(format!("empty change feed row {position}")))
                    }
                };
                Ok(IndexChange { position, kind })
            })
            .collect()
    }

    async fn node_heartbeat(&self, node_id: &str, applied: i64, at: DateTime<Utc>) -> Result<()> {
        sqlx::query(
            "INSERT INTO nodes (node_id, applied_seq, started_at, heartbeat_at) VALUES ($1, $2, $3, $3) \
             ON CONFLICT (node_id) DO UPDATE SET applied_seq = excluded.applied_seq, heartbeat_at = excluded.heartbeat_at",
        )
        .bind(node_id)
        .bind(applied)
        .bind(ms(at))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn remove_node(&self, node_id: &str) -> Result<()> {
        sqlx::query("DELETE FROM nodes WHERE node_id = $1")
            .bind(node_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn prune_index_changes(&self, up_to: i64, live_since: DateTime<Utc>) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM index_changes WHERE seq <= $1 AND seq <= \
                 COALESCE((SELECT MIN(applied_seq) FROM nodes WHERE heartbeat_at >= $2), $1)",
        )
        .bind(up_to)
        .bind(ms(live_since))
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(done)
    }

    async fn erasure_progress(
        &self,
        owner_key: &str,
        live_since: DateTime<Utc>,
    ) -> Result<ErasureProgress> {
        // (node, applied position, the owner's latest erasure position): both
        // positions are BIGINT on each dialect, compared here.
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT node_id, applied_seq, \
                 COALESCE((SELECT MAX(seq) FROM index_changes WHERE owner_key = $1), 0) \
             FROM nodes WHERE heartbeat_at >= $2 ORDER BY node_id",
        )
        .bind(owner_key)
        .bind(ms(live_since))
        .fetch_all(&self.pool)
        .await?;
        Ok(ErasureProgress {
            live_nodes: rows.len() as u64,
            behind: rows
                .into_iter()
                .filter(|(_, applied, erased_at)| applied < erased_at)
                .map(|(node, _, _)| node)
                .collect(),
        })
    }
}
