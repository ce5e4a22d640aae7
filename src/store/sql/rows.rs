//! Rows in and out: a row decoded into its domain type, and the writes that
//! several store methods share (memories, audit events, the erasure and
//! thread guards). Compiled once per dialect `D` (see `sql/mod.rs`).

use sqlx::types::Json;
use sqlx::{Database, Row as _, Transaction};

use super::D;
use crate::domain::thread::{ExtractionState, Message, MessageRole, Thread};
use crate::domain::Memory;
use crate::error::{Error, Result};
use crate::store::sql::decode::{self, Columns};
use crate::store::sql::{
    conflict_if_duplicate, erasing_conflict, from_ms, ms, parse_uuid, thread_gone, users_of,
    Dialect, GuardAt, COLUMNS, ERASING, THREAD_EXISTS,
};

use crate::store::{text_hash, ApiKey, AuditAction, AuditEvent, Role, ThreadRef};

pub(super) type Row = <D as Database>::Row;

/// A JSON column (TEXT on SQLite, JSONB on PostgreSQL) as a value of `T`.
fn json_column<T: serde::de::DeserializeOwned>(row: &Row, column: &str) -> Result<T> {
    let Json(value): Json<serde_json::Value> = row.try_get(column)?;
    serde_json::from_value(value).map_err(Error::internal)
}

pub(super) fn row_to_memory(row: &Row) -> Result<Memory> {
    decode::memory(&Cells(row))
}

/// This dialect's row as [`Columns`] (a wrapper: the trait cannot be
/// implemented for `<D as Database>::Row` on both dialects directly).
struct Cells<'r>(&'r Row);

impl Columns for Cells<'_> {
    fn text(&self, column: &str) -> Result<String> {
        Ok(self.0.try_get(column)?)
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>> {
        Ok(self.0.try_get(column)?)
    }
    fn int(&self, column: &str) -> Result<i64> {
        Ok(self.0.try_get(column)?)
    }
    fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        Ok(self.0.try_get(column)?)
    }
    fn real(&self, column: &str) -> Result<f64> {
        Ok(self.0.try_get(column)?)
    }
    fn json<T: serde::de::DeserializeOwned>(&self, column: &str) -> Result<T> {
        json_column(self.0, column)
    }
}

pub(super) fn row_to_event(row: &Row) -> Result<AuditEvent> {
    let action: String = row.try_get("action")?;
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
        details: json_column(row, "details")?,
    })
}

pub(super) fn row_to_api_key(row: &Row) -> Result<ApiKey> {
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

/// Threads and messages keep their JSON in TEXT on both dialects.
pub(super) fn row_to_thread(row: &Row) -> Result<Thread> {
    let summary: String = row.try_get("summary")?;
    Ok(Thread {
        id: parse_uuid(&row.try_get::<String, _>("id")?)?,
        tenant_id: row.try_get("tenant_id")?,
        user_id: row.try_get("user_id")?,
        goal: row.try_get("goal")?,
        summary: serde_json::from_str(&summary).map_err(Error::internal)?,
        summary_upto_seq: row.try_get("summary_upto_seq")?,
        created_at: from_ms(row.try_get("created_at")?),
        updated_at: from_ms(row.try_get("updated_at")?),
        last_activity_at: from_ms(row.try_get("last_activity_at")?),
        last_compacted_at: row
            .try_get::<Option<i64>, _>("last_compacted_at")?
            .map(from_ms),
    })
}

pub(super) fn row_to_message(row: &Row) -> Result<Message> {
    let role: String = row.try_get("role")?;
    let state: String = row.try_get("extraction_state")?;
    let tool: Option<String> = row.try_get("tool")?;
    Ok(Message {
        seq: row.try_get("seq")?,
        thread_id: parse_uuid(&row.try_get::<String, _>("thread_id")?)?,
        tenant_id: row.try_get("tenant_id")?,
        user_id: row.try_get("user_id")?,
        role: MessageRole::parse(&role)
            .ok_or_else(|| Error::internal(format!("unknown message role `{role}`")))?,
        content: row.try_get("content")?,
        tool: tool
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(Error::internal)?,
        created_at: from_ms(row.try_get("created_at")?),
        extraction_state: ExtractionState::parse(&state)
            .ok_or_else(|| Error::internal(format!("unknown extraction state `{state}`")))?,
        compacted: row.try_get::<i64, _>("compacted")? != 0,
    })
}

/// A failed write: the caller's error when the dialect says so, else the
/// store's.
fn write_error(e: sqlx::Error) -> Error {
    D::refused_value(e).unwrap_or_else(Error::from)
}

pub(super) async fn insert_events(
    tx: &mut Transaction<'_, D>,
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
        .bind(Json(&e.details))
        .execute(&mut **tx)
        .await
        .map_err(write_error)?;
    }
    Ok(())
}

/// The erasure guard of a write of these users' data, when `D` runs it at
/// this point of the transaction (see [`Dialect::USER_GUARD`]): a write calls
/// it both before and after its writes, and it runs once. `Conflict` when a
/// user has an erasure in progress.
pub(super) async fn guard_users(
    tx: &mut Transaction<'_, D>,
    users: &[(&str, &str)],
    at: GuardAt,
) -> Result<()> {
    if D::USER_GUARD != at {
        return Ok(());
    }
    for &(tenant_id, user_id) in users {
        D::lock_user_shared(tx, tenant_id, user_id).await?;
        let erasing = sqlx::query(ERASING)
            .bind(tenant_id)
            .bind(user_id)
            .fetch_optional(&mut **tx)
            .await?;
        if erasing.is_some() {
            return Err(erasing_conflict());
        }
    }
    Ok(())
}

/// `NotFound` when the thread is gone (erased, or never there). Checked
/// after a write's rows are written and its guard ran: an erasure that
/// deleted the thread has committed by then, or starts after this
/// transaction (SQLite's write lock) or waits for it (PostgreSQL's user
/// lock) and deletes its rows.
pub(super) async fn refuse_if_thread_gone(
    tx: &mut Transaction<'_, D>,
    thread: ThreadRef<'_>,
) -> Result<()> {
    let exists = sqlx::query(THREAD_EXISTS)
        .bind(thread.tenant_id)
        .bind(thread.id.to_string())
        .fetch_optional(&mut **tx)
        .await?;
    exists.map_or(Err(thread_gone(thread)), |_| Ok(()))
}

pub(super) async fn insert_memories(
    tx: &mut Transaction<'_, D>,
    memories: &[Memory],
) -> Result<()> {
    let users = users_of(memories);
    guard_users(tx, &users, GuardAt::BeforeWrites).await?;
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
            .bind(Json(&m.source))
            .bind(Json(&m.metadata))
            .bind(&m.embedding_model)
            .bind(m.version)
            .bind(m.supersedes.map(|u| u.to_string()))
            .bind(m.superseded_by.map(|u| u.to_string()))
            .bind(text_hash(&m.text))
            .execute(&mut **tx)
            .await
            .map_err(|e| D::refused_value(e).unwrap_or_else(|e| conflict_if_duplicate(e, || format!("memory {}", m.id))))?;
    }
    guard_users(tx, &users, GuardAt::AfterWrites).await
}

/// Optimistic updates: each row must still have the expected version. A
/// changed importance moves the cleanup's base importance by the same delta.
pub(super) async fn update_memories(
    tx: &mut Transaction<'_, D>,
    changes: &[(Memory, i64)],
) -> Result<()> {
    let (least, greatest) = (D::LEAST, D::GREATEST);
    let sql = format!(
        "UPDATE memories SET thread_id = $1, kind = $2, text = $3, text_sha256 = $4, importance = $5, \
         confidence = $6, status = $7, updated_at = $8, last_accessed_at = $9, access_count = $10, \
         expires_at = $11, source = $12, metadata = $13, embedding_model = $14, version = $15, \
         supersedes = $16, superseded_by = $17, \
         base_importance = CASE WHEN importance = $5 THEN base_importance \
             ELSE {least}({greatest}(COALESCE(base_importance, importance) + ($5 - importance), 0.0), 2.0) END \
         WHERE id = $18 AND version = $19"
    );
    for (m, expected) in changes {
        let done = sqlx::query(&sql)
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
            .bind(Json(&m.source))
            .bind(Json(&m.metadata))
            .bind(&m.embedding_model)
            .bind(expected + 1)
            .bind(m.supersedes.map(|u| u.to_string()))
            .bind(m.superseded_by.map(|u| u.to_string()))
            .bind(m.id.to_string())
            .bind(expected)
            .execute(&mut **tx)
            .await
            .map_err(write_error)?;
        if done.rows_affected() != 1 {
            return Err(Error::Conflict(format!(
                "memory {} changed concurrently (expected version {expected}); read it again",
                m.id
            )));
        }
    }
    Ok(())
}
