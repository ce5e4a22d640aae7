//! PostgreSQL backend of the store, for running several nodes on one
//! database. The SQL follows `sqlite.rs` statement for statement (same
//! columns, epoch-ms BIGINT times, TEXT ids) so that a trait method ports from
//! one to the other quickly; the differences are PostgreSQL spellings
//! (`IS NOT DISTINCT FROM`, `LEAST`/`GREATEST`, `ON CONFLICT DO UPDATE`) and
//! JSONB columns. Migrations come from `migrations/postgres`.
//!
//! Several nodes: every write is a transaction, optimistic versions make
//! concurrent updates from different nodes fail with `Conflict` instead of
//! losing one, and job leases are a single atomic upsert, so a job runs on one
//! node at a time. An erasure intent is a row every node sees.
//!
//! Erasure and dead tuples: a `DELETE` in PostgreSQL leaves the old row
//! versions in the table's pages until `VACUUM` removes them. After an
//! erasure this store runs a plain `VACUUM` of the tables it touched
//! (`memories`, `audit_events`, `embedding_cache`, `erasure_intents`): the
//! dead rows and their index entries go, and their space is reusable. It
//! takes no exclusive lock (reads and writes go on) and skips pages that hold
//! no dead rows. What it does not do is overwrite the bytes: until PostgreSQL
//! reuses the space, and in WAL segments not yet recycled and in backups,
//! the erased text may remain on disk. `VACUUM FULL` (rewrites the tables
//! under an exclusive lock) would be needed for more, which is too costly to
//! run per erasure; encrypt the database's disk if that matters.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Postgres, QueryBuilder, Row};
use uuid::Uuid;

use super::sqlite::{
    conflict_if_duplicate, from_ms, json_text, ms, parse_uuid, row_to_message, row_to_thread,
    COLUMNS, MESSAGE_COLUMNS, THREAD_COLUMNS,
};
use super::tables::{ColumnType, Table, Value};
use super::{
    decode_vector, encode_vector, text_hash, user_hash, ApiKey, AuditAction, AuditEvent,
    CacheOwner, ChangeKind, CleanupRow, ErasedRows, ErasureProgress, HeatUpdate, IndexChange,
    JobState, ListQuery, MemoryStore, Role, StoreStats, ThreadRef, UserFootprint,
};
use crate::domain::thread::{
    ExtractionState, Message, MessageRole, NewMessage, Payload, Summary, Thread,
};
use crate::domain::{Memory, Source, Status, Tier};
use crate::error::{Error, Result};
use crate::lifecycle::SweepStep;

#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
}

/// Connections per node when `--db-pool-size` is not given.
pub const DEFAULT_POOL_SIZE: u32 = 10;

impl PgStore {
    /// Connects to a `postgres://` URL and applies migrations.
    pub async fn open(url: &str, pool_size: u32) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)?;
        Self::connect_with(options, pool_size).await
    }

    /// Connects with explicit options (tests set a `search_path` here to give
    /// each test its own schema) and applies migrations.
    pub async fn connect_with(options: PgConnectOptions, pool_size: u32) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(pool_size.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/postgres").run(&pool).await?;
        Ok(PgStore { pool })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Removes the dead row versions an erasure left (see the module doc).
    /// The rows are already deleted and committed: a failure here is logged,
    /// not returned, and autovacuum gets to them later.
    async fn vacuum(&self, tables: &str) {
        if let Err(e) = sqlx::raw_sql(&format!("VACUUM {tables}"))
            .execute(&self.pool)
            .await
        {
            tracing::warn!(error = %e, tables, "VACUUM after erasure failed");
        }
    }
}

fn row_to_memory(row: &PgRow) -> Result<Memory> {
    let tier: String = row.try_get("tier")?;
    let kind: String = row.try_get("kind")?;
    let status: String = row.try_get("status")?;
    let source: serde_json::Value = row.try_get("source")?;
    let metadata: serde_json::Value = row.try_get("metadata")?;
    let opt_uuid = |col: &str| -> Result<Option<Uuid>> {
        let v: Option<String> = row.try_get(col)?;
        v.as_deref().map(parse_uuid).transpose()
    };
    Ok(Memory {
        id: parse_uuid(&row.try_get::<String, _>("id")?)?,
        tenant_id: row.try_get("tenant_id")?,
        tier: Tier::from_str(&tier).map_err(Error::internal)?,
        user_id: row.try_get("user_id")?,
        thread_id: row.try_get("thread_id")?,
        kind: kind.parse().map_err(Error::internal)?,
        text: row.try_get("text")?,
        importance: row.try_get::<f64, _>("importance")? as f32,
        confidence: row.try_get::<f64, _>("confidence")? as f32,
        status: status.parse().map_err(Error::internal)?,
        created_at: from_ms(row.try_get("created_at")?),
        updated_at: from_ms(row.try_get("updated_at")?),
        last_accessed_at: row
            .try_get::<Option<i64>, _>("last_accessed_at")?
            .map(from_ms),
        access_count: row.try_get::<i64, _>("access_count")? as u64,
        expires_at: row.try_get::<Option<i64>, _>("expires_at")?.map(from_ms),
        source: serde_json::from_value::<Source>(source).map_err(Error::internal)?,
        metadata: serde_json::from_value(metadata).map_err(Error::internal)?,
        embedding_model: row.try_get("embedding_model")?,
        version: row.try_get("version")?,
        supersedes: opt_uuid("supersedes")?,
        superseded_by: opt_uuid("superseded_by")?,
    })
}

fn row_to_event(row: &PgRow) -> Result<AuditEvent> {
    let action: String = row.try_get("action")?;
    let details: serde_json::Value = row.try_get("details")?;
    Ok(AuditEvent {
        memory_id: parse_uuid(&row.try_get::<String, _>("memory_id")?)?,
        tenant_id: row.try_get("tenant_id")?,
        user_id: row.try_get("user_id")?,
        action: AuditAction::parse(&action)
            .ok_or_else(|| Error::internal(format!("unknown audit action `{action}`")))?,
        actor: row.try_get("actor")?,
        at: from_ms(row.try_get("at")?),
        before_text: row.try_get("before_text")?,
        after_text: row.try_get("after_text")?,
        details,
    })
}

fn row_to_api_key(row: &PgRow) -> Result<ApiKey> {
    let role: String = row.try_get("role")?;
    Ok(ApiKey {
        id: row.try_get("id")?,
        tenant_id: row.try_get("tenant_id")?,
        user_id: row.try_get("user_id")?,
        role: Role::parse(&role)
            .ok_or_else(|| Error::internal(format!("unknown key role `{role}`")))?,
        secret_sha256: row.try_get("secret_sha256")?,
        created_at: from_ms(row.try_get("created_at")?),
        revoked_at: row.try_get::<Option<i64>, _>("revoked_at")?.map(from_ms),
    })
}

async fn insert_events(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    events: &[AuditEvent],
) -> Result<()> {
    for e in events {
        sqlx::query(
            "INSERT INTO audit_events (memory_id, tenant_id, user_id, action, actor, at, before_text, after_text, details) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(e.memory_id.to_string())
        .bind(&e.tenant_id)
        .bind(&e.user_id)
        .bind(e.action.as_str())
        .bind(&e.actor)
        .bind(ms(e.at))
        .bind(&e.before_text)
        .bind(&e.after_text)
        .bind(&e.details)
        .execute(&mut **tx)
        .await
        .map_err(|e| refuse_nul(e).unwrap_or_else(Error::Store))?;
    }
    Ok(())
}

/// The advisory-lock key of a user: inserts hold it shared, an erasure
/// exclusively, so an erasure waits for the inserts already past their check.
const USER_LOCK_KEY: &str = "hashtextextended($1 || chr(31) || $2, 0)";

/// Takes the user's erasure lock shared, then answers `Conflict` when the
/// user has an erasure in progress. Call it before the transaction's writes.
async fn refuse_if_erasing(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    tenant_id: &str,
    user_id: &str,
) -> Result<()> {
    sqlx::query(&format!(
        "SELECT pg_advisory_xact_lock_shared({USER_LOCK_KEY})"
    ))
    .bind(tenant_id)
    .bind(user_id)
    .execute(&mut **tx)
    .await?;
    let erasing: Option<i32> = sqlx::query_scalar(super::ERASING)
        .bind(tenant_id)
        .bind(user_id)
        .fetch_optional(&mut **tx)
        .await?;
    erasing.map_or(Ok(()), |_| Err(super::erasing_conflict()))
}

/// `NotFound` when the thread is gone (erased, or never there).
async fn refuse_if_thread_gone(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    thread: ThreadRef<'_>,
) -> Result<()> {
    let exists: Option<i32> = sqlx::query_scalar(super::THREAD_EXISTS)
        .bind(thread.tenant_id)
        .bind(thread.id.to_string())
        .fetch_optional(&mut **tx)
        .await?;
    exists.map_or(Err(super::thread_gone(thread)), |_| Ok(()))
}

async fn insert_memories(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    memories: &[Memory],
) -> Result<()> {
    // Nothing new may land for a user being erased (see sqlite.rs). Unlike
    // SQLite, PostgreSQL lets writers run side by side: the shared lock makes
    // the erasure's delete wait for any insert that checked before the
    // intent was committed, so that insert's rows are deleted too.
    let mut owners: Vec<(&str, &str)> = memories
        .iter()
        .filter_map(|m| Some((m.tenant_id.as_str(), m.user_id.as_deref()?)))
        .collect();
    owners.sort_unstable();
    owners.dedup();
    for (tenant, user) in owners {
        refuse_if_erasing(tx, tenant, user).await?;
    }
    for m in memories {
        sqlx::query(&format!(
                "INSERT INTO memories ({COLUMNS}, text_sha256) VALUES \
                 ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)"
            ))
            .bind(m.id.to_string())
            .bind(&m.tenant_id)
            .bind(m.tier.as_str())
            .bind(&m.user_id)
            .bind(&m.thread_id)
            .bind(m.kind.as_str())
            .bind(&m.text)
            .bind(m.importance as f64)
            .bind(m.confidence as f64)
            .bind(m.status.as_str())
            .bind(ms(m.created_at))
            .bind(ms(m.updated_at))
            .bind(m.last_accessed_at.map(ms))
            .bind(m.access_count as i64)
            .bind(m.expires_at.map(ms))
            .bind(json_value(&m.source)?)
            .bind(json_value(&m.metadata)?)
            .bind(&m.embedding_model)
            .bind(m.version)
            .bind(m.supersedes.map(|u| u.to_string()))
            .bind(m.superseded_by.map(|u| u.to_string()))
            .bind(text_hash(&m.text))
            .execute(&mut **tx)
            .await
            .map_err(|e| refuse_nul(e).unwrap_or_else(|e| conflict_if_duplicate(e, || format!("memory {}", m.id))))?;
    }
    Ok(())
}

/// Optimistic updates: each row must still have the expected version. A
/// changed importance moves the cleanup's base importance by the same delta.
async fn update_memories(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    changes: &[(Memory, i64)],
) -> Result<()> {
    for (m, expected) in changes {
        let done = sqlx::query(
                "UPDATE memories SET thread_id = $1, kind = $2, text = $3, text_sha256 = $4, importance = $5, \
                 confidence = $6, status = $7, updated_at = $8, last_accessed_at = $9, access_count = $10, \
                 expires_at = $11, source = $12, metadata = $13, embedding_model = $14, version = $15, \
                 supersedes = $16, superseded_by = $17, \
                 base_importance = CASE WHEN importance = $5 THEN base_importance \
                     ELSE LEAST(GREATEST(COALESCE(base_importance, importance) + ($5 - importance), 0.0), 2.0) END \
                 WHERE id = $18 AND version = $19",
            )
            .bind(&m.thread_id)
            .bind(m.kind.as_str())
            .bind(&m.text)
            .bind(text_hash(&m.text))
            .bind(m.importance as f64)
            .bind(m.confidence as f64)
            .bind(m.status.as_str())
            .bind(ms(m.updated_at))
            .bind(m.last_accessed_at.map(ms))
            .bind(m.access_count as i64)
            .bind(m.expires_at.map(ms))
            .bind(json_value(&m.source)?)
            .bind(json_value(&m.metadata)?)
            .bind(&m.embedding_model)
            .bind(expected + 1)
            .bind(m.supersedes.map(|u| u.to_string()))
            .bind(m.superseded_by.map(|u| u.to_string()))
            .bind(m.id.to_string())
            .bind(expected)
            .execute(&mut **tx)
            .await
            .map_err(|e| refuse_nul(e).unwrap_or_else(Error::Store))?;
        if done.rows_affected() != 1 {
            return Err(Error::Conflict(format!(
                "memory {} changed concurrently (expected version {expected}); read it again",
                m.id
            )));
        }
    }
    Ok(())
}

/// PostgreSQL cannot store U+0000 in text or in a JSONB string (SQLite
/// can). Memory text is validated against it at the edge; a `\u0000` left in
/// metadata or details is the caller's error, not the store's.
fn refuse_nul(e: sqlx::Error) -> std::result::Result<Error, sqlx::Error> {
    match &e {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("22P05") => Ok(Error::Invalid {
            field: "metadata",
            message: "PostgreSQL cannot store the character U+0000 (\\u0000) in a JSON string"
                .into(),
        }),
        _ => Err(e),
    }
}

fn json_value<T: serde::Serialize>(v: &T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(Error::internal)
}

#[async_trait]
impl MemoryStore for PgStore {
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
        let mut out = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut qb: QueryBuilder<Postgres> =
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

    async fn update(&self, changes: &[(Memory, i64)], events: &[AuditEvent]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        update_memories(&mut tx, changes).await?;
        insert_events(&mut tx, events).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn list(&self, q: &ListQuery) -> Result<Vec<Memory>> {
        let mut qb: QueryBuilder<Postgres> =
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
            qb.push(" AND source->>'document_id' = ")
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
        let mut qb: QueryBuilder<Postgres> = QueryBuilder::new(
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
            "SELECT {COLUMNS} FROM memories WHERE tenant_id = $1 AND user_id IS NOT DISTINCT FROM $2 AND text_sha256 = $3 \
             AND status IN ('active', 'pending') ORDER BY id"
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

    async fn stats(&self) -> Result<StoreStats> {
        let rows = sqlx::query("SELECT tier, status, COUNT(*) FROM memories GROUP BY tier, status ORDER BY tier, status")
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

    async fn cached_embeddings(
        &self,
        owner: &CacheOwner,
        model_id: &str,
        hashes: &[String],
    ) -> Result<HashMap<String, Vec<f32>>> {
        let mut out = HashMap::new();
        for chunk in hashes.chunks(500) {
            let mut qb: QueryBuilder<Postgres> = QueryBuilder::new(
                "SELECT text_sha256, vector FROM embedding_cache WHERE tenant_id = ",
            );
            qb.push_bind(owner.tenant_id.clone())
                .push(" AND user_id = ")
                .push_bind(owner.user_key().to_string())
                .push(" AND model_id = ")
                .push_bind(model_id.to_string())
                .push(" AND text_sha256 IN (");
            let mut sep = qb.separated(", ");
            for h in chunk {
                sep.push_bind(h.clone());
            }
            qb.push(")");
            for row in qb.build().fetch_all(&self.pool).await? {
                let hash: String = row.try_get(0)?;
                let blob: Vec<u8> = row.try_get(1)?;
                out.insert(hash, decode_vector(&blob)?);
            }
        }
        Ok(out)
    }

    async fn cache_embeddings(
        &self,
        owner: &CacheOwner,
        model_id: &str,
        entries: &[(String, Vec<f32>)],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        // A user's vectors are theirs as much as their texts: none may land
        // behind an erasure.
        if let Some(user) = &owner.user_id {
            refuse_if_erasing(&mut tx, &owner.tenant_id, user).await?;
        }
        if let Some(thread) = from_thread {
            refuse_if_thread_gone(&mut tx, thread).await?;
        }
        for (hash, vector) in entries {
            sqlx::query(
                "INSERT INTO embedding_cache (tenant_id, user_id, model_id, text_sha256, vector) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (tenant_id, user_id, model_id, text_sha256) DO UPDATE SET vector = excluded.vector",
            )
            .bind(&owner.tenant_id)
            .bind(owner.user_key())
            .bind(model_id)
            .bind(hash)
            .bind(encode_vector(vector))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn insert_api_key(&self, key: &ApiKey) -> Result<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, tenant_id, user_id, role, secret_sha256, created_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&key.id)
        .bind(&key.tenant_id)
        .bind(&key.user_id)
        .bind(key.role.as_str())
        .bind(&key.secret_sha256)
        .bind(ms(key.created_at))
        .bind(key.revoked_at.map(ms))
        .execute(&self.pool)
        .await
        .map_err(|e| conflict_if_duplicate(e, || format!("API key {}", key.id)))?;
        Ok(())
    }

    async fn api_key_by_hash(&self, secret_sha256: &str) -> Result<Option<ApiKey>> {
        sqlx::query("SELECT * FROM api_keys WHERE secret_sha256 = $1")
            .bind(secret_sha256)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(row_to_api_key)
            .transpose()
    }

    async fn list_api_keys(&self) -> Result<Vec<ApiKey>> {
        sqlx::query("SELECT * FROM api_keys ORDER BY created_at, id")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(row_to_api_key)
            .collect()
    }

    async fn revoke_api_key(&self, id: &str, at: DateTime<Utc>) -> Result<bool> {
        let done =
            sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
                .bind(ms(at))
                .bind(id)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn count_active_api_keys(&self) -> Result<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NULL")
            .fetch_one(&self.pool)
            .await?;
        Ok(n as u64)
    }

    async fn close(&self) -> Result<()> {
        // Nothing buffered here: PostgreSQL owns its WAL.
        self.pool.close().await;
        Ok(())
    }

    // ----- lifecycle ----------------------------------------------------

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
        // Checked after `insert_memories` took the user's erasure lock
        // shared: an erasure that deleted the thread has committed by now, or
        // waits for this transaction and deletes its rows.
        if let Some(thread) = from_thread {
            refuse_if_thread_gone(&mut tx, thread).await?;
        }
        tx.commit().await?;
        Ok(())
    }

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
            let list = |qb: &mut QueryBuilder<Postgres>| {
                let mut sep = qb.separated(", ");
                for id in chunk {
                    sep.push_bind(id.to_string());
                }
            };
            // The cached vector of a purged memory's text goes too, unless
            // another memory of the same owner still has that text.
            let mut qb: QueryBuilder<Postgres> = QueryBuilder::new(
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
            let mut qb: QueryBuilder<Postgres> = QueryBuilder::new(
                "UPDATE audit_events SET before_text = NULL, after_text = NULL WHERE memory_id IN \
                 (SELECT id FROM memories WHERE status = 'deleted' AND id IN (",
            );
            list(&mut qb);
            qb.push("))");
            qb.build().execute(&mut *tx).await?;
            let mut qb: QueryBuilder<Postgres> =
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
        .bind(stats)
        .bind(job)
        .bind(holder)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn job_state(&self, job: &str) -> Result<Option<JobState>> {
        let row = sqlx::query(
            "SELECT holder, lease_expires_at, last_completed_at, last_stats FROM job_leases WHERE name = $1",
        )
        .bind(job)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(JobState {
                holder: r.try_get(0)?,
                lease_expires_at: r.try_get::<Option<i64>, _>(1)?.map(from_ms),
                last_completed_at: r.try_get::<Option<i64>, _>(2)?.map(from_ms),
                last_stats: r.try_get(3)?,
            })
        })
        .transpose()
    }

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
        sqlx::query(&format!("SELECT pg_advisory_xact_lock({USER_LOCK_KEY})"))
            .bind(tenant_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        // The cache is kept per owner: the user's entries are one key range.
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
        let memories = sqlx::query("DELETE FROM memories WHERE tenant_id = $1 AND user_id = $2")
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
        self.vacuum("memories, audit_events, embedding_cache, message_payloads, messages, threads")
            .await;
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
        .bind(counts)
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
        // The intent held the user id in clear.
        self.vacuum("erasure_intents").await;
        Ok(())
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

    // ----- threads (the agent loop) -------------------------------------

    async fn insert_thread(&self, t: &Thread) -> Result<()> {
        sqlx::query(
            "INSERT INTO threads (id, tenant_id, user_id, goal, summary, summary_upto_seq, \
             created_at, updated_at, last_activity_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(t.id.to_string())
        .bind(&t.tenant_id)
        .bind(&t.user_id)
        .bind(&t.goal)
        .bind(json_text(&t.summary)?)
        .bind(t.summary_upto_seq)
        .bind(ms(t.created_at))
        .bind(ms(t.updated_at))
        .bind(ms(t.last_activity_at))
        .execute(&self.pool)
        .await
        .map_err(|e| conflict_if_duplicate(e, || format!("thread {}", t.id)))?;
        Ok(())
    }

    async fn get_thread(&self, tenant_id: &str, id: Uuid) -> Result<Option<Thread>> {
        sqlx::query(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE tenant_id = $1 AND id = $2"
        ))
        .bind(tenant_id)
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(row_to_thread)
        .transpose()
    }

    async fn append_message(&self, m: &NewMessage, payload: Option<&Payload>) -> Result<Message> {
        let mut tx = self.pool.begin().await?;
        let touched =
            sqlx::query("UPDATE threads SET last_activity_at = $1, updated_at = $1 WHERE id = $2")
                .bind(ms(m.created_at))
                .bind(m.thread_id.to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if touched != 1 {
            return Err(Error::not_found(format!("thread {}", m.thread_id)));
        }
        if let Some(p) = payload {
            sqlx::query(
                "INSERT INTO message_payloads (id, thread_id, tenant_id, user_id, payload, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(p.id.to_string())
            .bind(m.thread_id.to_string())
            .bind(&m.tenant_id)
            .bind(&m.user_id)
            .bind(p.payload.to_string())
            .bind(ms(m.created_at))
            .execute(&mut *tx)
            .await?;
        }
        let state = if m.role == MessageRole::User {
            ExtractionState::Pending
        } else {
            ExtractionState::Skipped
        };
        let row = sqlx::query(&format!(
            "INSERT INTO messages (thread_id, tenant_id, user_id, role, content, tool, created_at, \
             extraction_state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {MESSAGE_COLUMNS}"
        ))
        .bind(m.thread_id.to_string())
        .bind(&m.tenant_id)
        .bind(&m.user_id)
        .bind(m.role.as_str())
        .bind(&m.content)
        .bind(m.tool.as_ref().map(json_text).transpose()?)
        .bind(ms(m.created_at))
        .bind(state.as_str())
        .fetch_one(&mut *tx)
        .await?;
        let message = row_to_message(&row)?;
        tx.commit().await?;
        Ok(message)
    }

    async fn thread_messages(
        &self,
        thread_id: Uuid,
        uncompacted_only: bool,
    ) -> Result<Vec<Message>> {
        let filter = if uncompacted_only {
            " AND compacted = 0"
        } else {
            ""
        };
        sqlx::query(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE thread_id = $1{filter} ORDER BY seq"
        ))
        .bind(thread_id.to_string())
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(row_to_message)
        .collect()
    }

    async fn get_payload(&self, thread_id: Uuid, id: Uuid) -> Result<Option<serde_json::Value>> {
        let text: Option<String> = sqlx::query_scalar(
            "SELECT payload FROM message_payloads WHERE thread_id = $1 AND id = $2",
        )
        .bind(thread_id.to_string())
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await?;
        text.map(|t| serde_json::from_str(&t).map_err(Error::internal))
            .transpose()
    }

    async fn acquire_turn(
        &self,
        thread_id: Uuid,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE threads SET turn_holder = $1, turn_until = $2 \
             WHERE id = $3 AND (turn_holder IS NULL OR turn_until <= $4)",
        )
        .bind(holder)
        .bind(ms(until))
        .bind(thread_id.to_string())
        .bind(ms(now))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_turn(&self, thread_id: Uuid, holder: &str) -> Result<()> {
        sqlx::query(
            "UPDATE threads SET turn_holder = NULL, turn_until = NULL WHERE id = $1 AND turn_holder = $2",
        )
        .bind(thread_id.to_string())
        .bind(holder)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn claim_extraction(
        &self,
        thread_id: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Message>> {
        let mut claimed = sqlx::query(&format!(
            "UPDATE messages SET extraction_state = 'running', extraction_until = $1 \
             WHERE thread_id = $2 AND (extraction_state = 'pending' \
                 OR (extraction_state = 'running' AND extraction_until <= $3)) \
             RETURNING {MESSAGE_COLUMNS}"
        ))
        .bind(ms(until))
        .bind(thread_id.to_string())
        .bind(ms(now))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(row_to_message)
        .collect::<Result<Vec<_>>>()?;
        claimed.sort_by_key(|m| m.seq);
        Ok(claimed)
    }

    async fn finish_extraction(&self, seqs: &[i64], done: bool) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        for chunk in seqs.chunks(500) {
            let mut qb: QueryBuilder<Postgres> = QueryBuilder::new(if done {
                "UPDATE messages SET extraction_state = 'done', extraction_until = NULL WHERE seq IN ("
            } else {
                "UPDATE messages SET extraction_state = 'pending', extraction_until = NULL WHERE seq IN ("
            });
            let mut sep = qb.separated(", ");
            for seq in chunk {
                sep.push_bind(*seq);
            }
            qb.push(") AND extraction_state = 'running'");
            qb.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn compact_thread(
        &self,
        thread_id: Uuid,
        from_seq: i64,
        upto_seq: i64,
        summary: &Summary,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        let id = thread_id.to_string();
        // The write first: it takes the write lock (SQLite) or the row lock
        // (PostgreSQL), so two compactions of a thread serialise here.
        let mut tx = self.pool.begin().await?;
        let moved = sqlx::query(
            "UPDATE threads SET summary = $1, summary_upto_seq = $2, last_compacted_at = $3, \
             updated_at = $3 WHERE id = $4 AND summary_upto_seq = $5",
        )
        .bind(json_text(summary)?)
        .bind(upto_seq)
        .bind(ms(at))
        .bind(&id)
        .bind(from_seq)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if moved != 1 {
            return Ok(false);
        }
        let blocked: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM messages WHERE thread_id = $1 AND seq > $2 AND seq <= $3 \
             AND (compacted <> 0 OR extraction_state NOT IN ('done', 'skipped'))",
        )
        .bind(&id)
        .bind(from_seq)
        .bind(upto_seq)
        .fetch_one(&mut *tx)
        .await?;
        if blocked > 0 {
            return Ok(false);
        }
        sqlx::query(
            "UPDATE messages SET compacted = 1 WHERE thread_id = $1 AND seq > $2 AND seq <= $3",
        )
        .bind(&id)
        .bind(from_seq)
        .bind(upto_seq)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn idle_threads(
        &self,
        idle_before: DateTime<Utc>,
        cooled_before: DateTime<Utc>,
        keep: usize,
        limit: usize,
    ) -> Result<Vec<(String, Uuid)>> {
        sqlx::query(
            "SELECT t.tenant_id, t.id FROM threads t WHERE t.last_activity_at <= $1 \
             AND (t.last_compacted_at IS NULL OR t.last_compacted_at <= $2) \
             AND (SELECT COUNT(*) FROM messages m WHERE m.thread_id = t.id AND m.compacted = 0) > $3 \
             ORDER BY t.last_activity_at LIMIT $4",
        )
        .bind(ms(idle_before))
        .bind(ms(cooled_before))
        .bind(keep as i64)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, parse_uuid(&r.try_get::<String, _>(1)?)?)))
        .collect()
    }

    // ----- clustered mode: the change feed and its followers -------------

    async fn change_feed_head(&self) -> Result<i64> {
        let head: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM index_changes")
            .fetch_one(&self.pool)
            .await?;
        Ok(head.unwrap_or(0))
    }

    async fn index_changes(&self, after: i64, limit: usize) -> Result<Vec<IndexChange>> {
        // Positions commit in order: the feed triggers serialise on an
        // advisory lock (migrations/postgres/0007_cluster.sql).
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

    async fn erasure_progress(
        &self,
        owner_key: &str,
        live_since: DateTime<Utc>,
    ) -> Result<ErasureProgress> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT node_id, CASE WHEN applied_seq < COALESCE( \
                 (SELECT MAX(seq) FROM index_changes WHERE owner_key = $1), 0) THEN 1 ELSE 0 END \
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
                .filter(|(_, behind)| *behind != 0)
                .map(|(node, _)| node)
                .collect(),
        })
    }

    // ----- copying between backends -------------------------------------

    async fn export_rows(
        &self,
        table: &Table,
        after: Option<&[Value]>,
        limit: usize,
    ) -> Result<Vec<Vec<Value>>> {
        let sql = table.select_sql("::text", after.is_some(), limit);
        let mut query = sqlx::query(&sql);
        for (v, t) in after.unwrap_or_default().iter().zip(table.key_types()) {
            query = bind_value(query, v, t);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                table
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, (_, t))| {
                        Ok(match t {
                            ColumnType::Text | ColumnType::Json => {
                                row.try_get::<Option<String>, _>(i)?.map(Value::Text)
                            }
                            ColumnType::Int => row.try_get::<Option<i64>, _>(i)?.map(Value::Int),
                            ColumnType::Real => row.try_get::<Option<f64>, _>(i)?.map(Value::Real),
                            ColumnType::Bytes => {
                                row.try_get::<Option<Vec<u8>>, _>(i)?.map(Value::Bytes)
                            }
                        }
                        .unwrap_or(Value::Null))
                    })
                    .collect()
            })
            .collect()
    }

    async fn import_rows(&self, table: &Table, rows: &[Vec<Value>]) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let mut tx = self.pool.begin().await?;
        let mut inserted = 0;
        // One multi-row INSERT per chunk, within PostgreSQL's 65535 parameters.
        for chunk in rows.chunks(60_000 / table.columns.len()) {
            let mut qb: QueryBuilder<Postgres> = QueryBuilder::new(format!(
                "INSERT INTO {} ({}) ",
                table.name,
                table.column_names()
            ));
            qb.push("VALUES ");
            for (r, row) in chunk.iter().enumerate() {
                qb.push(if r == 0 { "(" } else { ", (" });
                for (c, (v, (_, t))) in row.iter().zip(table.columns).enumerate() {
                    if c > 0 {
                        qb.push(", ");
                    }
                    push_value(&mut qb, v, *t);
                }
                qb.push(")");
            }
            qb.push(" ON CONFLICT DO NOTHING");
            inserted += qb.build().execute(&mut *tx).await?.rows_affected();
        }
        if table.generated_key {
            // Later inserts must not reuse an imported key.
            let key = table.key[0];
            sqlx::query(&format!(
                "SELECT setval(pg_get_serial_sequence('{0}', '{key}'), \
                 GREATEST((SELECT MAX({key}) FROM {0}), 1))",
                table.name
            ))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(inserted)
    }

    async fn count_rows(&self, table: &Table) -> Result<u64> {
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {}", table.name))
            .fetch_one(&self.pool)
            .await?;
        Ok(n as u64)
    }
}

type PgQuery<'q> = sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>;

/// Binds a copied cell; a NULL is bound with its column's type.
fn bind_value<'q>(query: PgQuery<'q>, v: &Value, t: ColumnType) -> PgQuery<'q> {
    match (v, t) {
        (Value::Text(s), _) => query.bind(s.clone()),
        (Value::Int(n), _) => query.bind(*n),
        (Value::Real(x), _) => query.bind(*x),
        (Value::Bytes(b), _) => query.bind(b.clone()),
        (Value::Null, ColumnType::Int) => query.bind(None::<i64>),
        (Value::Null, ColumnType::Real) => query.bind(None::<f64>),
        (Value::Null, ColumnType::Bytes) => query.bind(None::<Vec<u8>>),
        (Value::Null, _) => query.bind(None::<String>),
    }
}

/// Pushes a copied cell as a bound parameter; JSON travels as text and is
/// cast back to JSONB.
fn push_value(qb: &mut QueryBuilder<'_, Postgres>, v: &Value, t: ColumnType) {
    match (v, t) {
        (Value::Text(s), ColumnType::Json) => {
            qb.push("CAST(").push_bind(s.clone()).push(" AS JSONB)");
        }
        (Value::Text(s), _) => {
            qb.push_bind(s.clone());
        }
        (Value::Int(n), _) => {
            qb.push_bind(*n);
        }
        (Value::Real(x), _) => {
            qb.push_bind(*x);
        }
        (Value::Bytes(b), _) => {
            qb.push_bind(b.clone());
        }
        (Value::Null, ColumnType::Int) => {
            qb.push_bind(None::<i64>);
        }
        (Value::Null, ColumnType::Real) => {
            qb.push_bind(None::<f64>);
        }
        (Value::Null, ColumnType::Bytes) => {
            qb.push_bind(None::<Vec<u8>>);
        }
        (Value::Null, ColumnType::Json) => {
            qb.push_bind(None::<serde_json::Value>);
        }
        (Value::Null, ColumnType::Text) => {
            qb.push_bind(None::<String>);
        }
    }
}
