//! "Forget all my data" ([`ErasureStore`]): the intent, the deletion of every
//! row of the user, the content-free tombstone. Compiled once per dialect `D`
//! (see `sql/mod.rs`).
//!
//! While the intent exists, writes of the user's data are refused
//! (`rows::guard_users`). Every delete is one key range of the user's own
//! rows (the embedding cache is kept per owner). After the deletion the
//! dialect makes sure nothing of the rows is left in the files
//! ([`Dialect::purge_erased`], before the intent goes;
//! [`Dialect::after_complete_erasure`], after).

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
        // Waits for every write of the user already past its erasure check
        // (PostgreSQL: the advisory lock; SQLite: the write lock), so that
        // the key reads below see their rows.
        let mut tx = self.pool.begin().await?;
        D::lock_user_exclusive(&mut tx, tenant_id, user_id).await?;
        tx.commit().await?;
        let u = (tenant_id, user_id);
        // First the user's API keys: from here on none authenticates.
        let api_keys = super::keys::erase_user_keys(&self.pool, tenant_id, user_id).await?;
        // The cache's key is (tenant, user, model, text hash): one model at a
        // time, so each batch deletes by whole keys.
        let models: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT model_id FROM embedding_cache WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(tenant_id)
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        let mut cached = 0;
        for model in &models {
            cached += self
                .erase_keys::<String>(
                    u,
                    "embedding_cache",
                    "text_sha256",
                    Some(("model_id", model)),
                )
                .await?;
        }
        let audit = self
            .erase_keys::<i64>(u, "audit_events", "seq", None)
            .await?;
        let candidates: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM memories WHERE tenant_id = $1 AND user_id = $2 AND status = 'pending'",
        )
        .bind(tenant_id)
        .bind(user_id)
        .fetch_one(&self.pool)
        .await?;
        let memories = self.erase_keys::<String>(u, "memories", "id", None).await?;
        let payloads = self
            .erase_keys::<String>(u, "message_payloads", "id", None)
            .await?;
        let messages = self.erase_keys::<i64>(u, "messages", "seq", None).await?;
        let threads = self.erase_keys::<String>(u, "threads", "id", None).await?;
        let rows = ErasedRows {
            memories,
            candidates: candidates as u64,
            audit_events: audit,
            cached_embeddings: cached,
            threads,
            messages: payloads + messages,
            api_keys,
        };
        Ok(rows)
    }

    async fn purge_erased(&self) -> Result<()> {
        let ran = self
            .purges
            .run(|| D::purge_erased(&self.pool, &self.upkeep))
            .await?;
        if !ran {
            tracing::debug!("purge served by one that started after this erasure's deletes");
        }
        Ok(())
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
        D::after_complete_erasure(&self.pool, &self.upkeep).await
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
            api_keys: super::keys::count_user_keys(&self.pool, tenant_id, user_id).await?,
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

    async fn scrub_erasure_tombstones(&self, completed_before: DateTime<Utc>) -> Result<u64> {
        // The feed entry carries the owner key, the hash's first 32 digits
        // (the trigger of `0007_cluster.sql`); while it exists a node may
        // still be applying the erasure, and verification reports it.
        let done = sqlx::query(
            "UPDATE erasure_receipts SET user_hash = '' WHERE user_hash <> '' AND completed_at < $1 \
             AND NOT EXISTS (SELECT 1 FROM index_changes \
                 WHERE owner_key = 'u' || substr(erasure_receipts.user_hash, 1, 32))",
        )
        .bind(ms(completed_before))
        .execute(&self.pool)
        .await?
        .rows_affected();
        // The cleanup of a completed erasure: SQLite checkpoints, so the old
        // page (secure_delete zeroes the freed cell) leaves the files too.
        // PostgreSQL keeps the old tuple until the next (auto)vacuum of
        // erasure_receipts.
        if done > 0 {
            D::after_complete_erasure(&self.pool, &self.upkeep).await?;
        }
        Ok(done)
    }
}

/// Keys read per round before their batches are deleted.
const KEYS_PER_ROUND: i64 = 10_000;

impl SqlStore<D> {
    /// Deletes every row of the user from `table`: reads up to
    /// [`KEYS_PER_ROUND`] of its keys (`key`, a column of type `K`), then
    /// deletes them by key in batches of [`Dialect::ERASE_BATCH`], each batch its own
    /// transaction under the user's exclusive erasure lock; until a read
    /// finds none. By key, not by a `LIMIT` subquery: a subquery would walk
    /// the dead index entries of every earlier batch again (PostgreSQL keeps
    /// them until VACUUM), quadratic in the user's rows. Safe across
    /// transactions: the intent, recorded before, refuses every new row of
    /// the user. Returns the rows deleted.
    async fn erase_keys<K>(
        &self,
        (tenant_id, user_id): (&str, &str),
        table: &str,
        key: &str,
        also: Option<(&str, &str)>,
    ) -> Result<u64>
    where
        K: for<'r> sqlx::Decode<'r, D>
            + for<'q> sqlx::Encode<'q, D>
            + sqlx::Type<D>
            + Send
            + Sync
            + Unpin
            + Clone
            + 'static,
    {
        let select = match also {
            None => format!("SELECT {key} FROM {table} WHERE tenant_id = $1 AND user_id = $2 LIMIT $3"),
            Some((column, _)) => format!(
                "SELECT {key} FROM {table} WHERE tenant_id = $1 AND user_id = $2 AND {column} = $3 LIMIT $4"
            ),
        };
        let mut total = 0;
        loop {
            let mut read = sqlx::query_scalar(&select).bind(tenant_id).bind(user_id);
            if let Some((_, value)) = also {
                read = read.bind(value);
            }
            let keys: Vec<K> = read.bind(KEYS_PER_ROUND).fetch_all(&self.pool).await?;
            if keys.is_empty() {
                return Ok(total);
            }
            for batch in keys.chunks(D::ERASE_BATCH) {
                let held = std::time::Instant::now();
                let mut tx = self.pool.begin().await?;
                D::lock_user_exclusive(&mut tx, tenant_id, user_id).await?;
                // By primary key alone (ids and sequence numbers are never
                // reused), so the planner uses the key's index, not the
                // owner's range; the cache's key is the whole
                // (tenant, user, model, text hash).
                let mut qb: sqlx::QueryBuilder<D> =
                    sqlx::QueryBuilder::new(format!("DELETE FROM {table} WHERE "));
                if let Some((column, value)) = also {
                    qb.push("tenant_id = ")
                        .push_bind(tenant_id)
                        .push(" AND user_id = ")
                        .push_bind(user_id)
                        .push(format!(" AND {column} = "))
                        .push_bind(value)
                        .push(" AND ");
                }
                qb.push(format!("{key} IN ("));
                let mut list = qb.separated(", ");
                for k in batch {
                    list.push_bind(k.clone());
                }
                qb.push(")");
                total += qb.build().execute(&mut *tx).await?.rows_affected();
                tx.commit().await?;
                let pause = D::erase_pause(held.elapsed());
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
}
