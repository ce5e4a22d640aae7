//! "Forget all my data" ([`ErasureStore`]): the intent, the deletion of every
//! row of the user, the content-free tombstone. Compiled once per dialect `D`
//! (see `sql/mod.rs`).
//!
//! While the intent exists, writes of the user's data are refused
//! (`rows::guard_users`). Every delete is one key range of the user's own
//! rows (the embedding cache is kept per owner). After the deletion the
//! dialect makes sure nothing of the rows is left in the files
//! ([`Dialect::after_erase_user`], [`Dialect::after_complete_erasure`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::Row as _;

use super::D;
use crate::error::Result;
use crate::store::sql::{from_ms, ms, Dialect, SqlStore};
use crate::store::{user_hash, ErasedRows, ErasureStore, UserFootprint};

#[async_trait]
impl ErasureStore for SqlStore<D> {
    async fn begin_erasure(
        &self,
        tenant_id: &str,
        user_id: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO erasure_intents (tenant_id, user_id, actor, started_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant_id, user_id) DO NOTHING",
        )
        .bind(tenant_id)
        .bind(user_id)
        .bind(actor)
        .bind(ms(at))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn pending_erasures(&self) -> Result<Vec<(String, String, String)>> {
        sqlx::query("SELECT tenant_id, user_id, actor FROM erasure_intents ORDER BY started_at")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect()
    }

    async fn erase_user(&self, tenant_id: &str, user_id: &str) -> Result<ErasedRows> {
        let mut tx = self.pool.begin().await?;
        D::lock_user_exclusive(&mut tx, tenant_id, user_id).await?;
        let cached =
            sqlx::query("DELETE FROM embedding_cache WHERE tenant_id = $1 AND user_id = $2")
                .bind(tenant_id)
                .bind(user_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        let candidates: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM memories WHERE tenant_id = $1 AND user_id = $2 AND status = 'pending'",
        )
        .bind(tenant_id)
        .bind(user_id)
        .fetch_one(&mut *tx)
        .await?;
        let audit = sqlx::query("DELETE FROM audit_events WHERE tenant_id = $1 AND user_id = $2")
            .bind(tenant_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        let memories = sqlx::query(&format!(
            "DELETE FROM {} WHERE tenant_id = $1 AND user_id = $2",
            D::MEMORIES_BY_OWNER
        ))
        .bind(tenant_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let mut deleted = [0u64; 3];
        for (i, table) in ["message_payloads", "messages", "threads"]
            .iter()
            .enumerate()
        {
            deleted[i] = sqlx::query(&format!(
                "DELETE FROM {table} WHERE tenant_id = $1 AND user_id = $2"
            ))
            .bind(tenant_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        tx.commit().await?;
        D::after_erase_user(&self.pool).await;
        Ok(ErasedRows {
            memories,
            candidates: candidates as u64,
            audit_events: audit,
            cached_embeddings: cached,
            threads: deleted[2],
            messages: deleted[0] + deleted[1],
        })
    }

    async fn complete_erasure(
        &self,
        tenant_id: &str,
        user_id: &str,
        counts: &serde_json::Value,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO erasure_receipts (tenant_id, user_hash, counts, actor, completed_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(tenant_id)
        .bind(user_hash(tenant_id, user_id))
        .bind(Json(counts))
        .bind(actor)
        .bind(ms(at))
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM erasure_intents WHERE tenant_id = $1 AND user_id = $2")
            .bind(tenant_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        D::after_complete_erasure(&self.pool).await
    }

    async fn user_footprint(&self, tenant_id: &str, user_id: &str) -> Result<UserFootprint> {
        let count = |sql: &'static str| {
            sqlx::query_scalar::<_, i64>(sql)
                .bind(tenant_id)
                .bind(user_id)
                .fetch_one(&self.pool)
        };
        Ok(UserFootprint {
            memories: count("SELECT COUNT(*) FROM memories WHERE tenant_id = $1 AND user_id = $2")
                .await? as u64,
            audit_events: count(
                "SELECT COUNT(*) FROM audit_events WHERE tenant_id = $1 AND user_id = $2",
            )
            .await? as u64,
            threads: count("SELECT COUNT(*) FROM threads WHERE tenant_id = $1 AND user_id = $2")
                .await? as u64,
            messages: count(
                "SELECT (SELECT COUNT(*) FROM messages WHERE tenant_id = $1 AND user_id = $2) + \
                 (SELECT COUNT(*) FROM message_payloads WHERE tenant_id = $1 AND user_id = $2)",
            )
            .await? as u64,
            pending_erasures: count(
                "SELECT COUNT(*) FROM erasure_intents WHERE tenant_id = $1 AND user_id = $2",
            )
            .await? as u64,
        })
    }

    async fn last_erasure(&self, tenant_id: &str, user_id: &str) -> Result<Option<DateTime<Utc>>> {
        let at: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(completed_at) FROM erasure_receipts WHERE tenant_id = $1 AND user_hash = $2",
        )
        .bind(tenant_id)
        .bind(user_hash(tenant_id, user_id))
        .fetch_one(&self.pool)
        .await?;
        Ok(at.map(from_ms))
    }
}
