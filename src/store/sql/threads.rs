//! Threads of the agent loop ([`ThreadStore`]): messages, tool payloads, the
//! per-thread turn lease, extraction claims and compaction. Compiled once per
//! dialect `D` (see `sql/mod.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row as _};
use uuid::Uuid;

use super::rows::{guard_users, row_to_message, row_to_thread};
use super::D;
use crate::domain::thread::{
    ExtractionState, Message, MessageRole, NewMessage, Payload, Summary, Thread,
};
use crate::error::{Error, Result};
use crate::store::sql::{
    conflict_if_duplicate, json_text, ms, parse_uuid, GuardAt, SqlStore, MESSAGE_COLUMNS,
    THREAD_COLUMNS,
};
use crate::store::ThreadStore;

#[async_trait]
impl ThreadStore for SqlStore<D> {
    async fn insert_thread(&self, t: &Thread) -> Result<()> {
        // The same erasure guard as memory writes, inside the insert's
        // transaction: a thread is either created before an erasure (and
        // erased with the user) or refused with 409, on every node.
        let mut tx = self.pool.begin().await?;
        let user = [(t.tenant_id.as_str(), t.user_id.as_str())];
        guard_users(&mut tx, &user, GuardAt::BeforeWrites).await?;
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
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict_if_duplicate(e, || format!("thread {}", t.id)))?;
        guard_users(&mut tx, &user, GuardAt::AfterWrites).await?;
        tx.commit().await?;
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
        // The erasure guard, as for threads and memories: a message (and
        // its payload) appended while the user's erasure runs is refused
        // with 409, never left behind the erasure's deletes.
        let mut tx = self.pool.begin().await?;
        let user = [(m.tenant_id.as_str(), m.user_id.as_str())];
        guard_users(&mut tx, &user, GuardAt::BeforeWrites).await?;
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
        guard_users(&mut tx, &user, GuardAt::AfterWrites).await?;
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
            let mut qb: QueryBuilder<D> = QueryBuilder::new(if done {
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
}
