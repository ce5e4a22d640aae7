//! The SQL store: one implementation of [`MemoryStore`] for SQLite and
//! PostgreSQL. The tables, columns and types are the same on both (epoch-ms
//! integer times, UUID v7 text ids, JSON as TEXT on SQLite and JSONB on
//! PostgreSQL, which `sqlx::types::Json` reads and writes alike), and so is
//! nearly every statement: SQLite 3.46 accepts `IS NOT DISTINCT FROM`,
//! `ON CONFLICT … DO UPDATE` and `RETURNING`. What really differs is in
//! [`Dialect`] (`dialect.rs`), implemented for [`sqlx::Sqlite`] in `sqlite.rs`
//! and for [`sqlx::Postgres`] in `postgres.rs`: locks and where the erasure
//! guard runs, VACUUM vs WAL checkpoint, an error code, bulk import, a few
//! spellings.
//!
//! The store's methods are written once, one file per concern:
//! - `memories.rs`: memories and audit events ([`Memories`](crate::store::Memories));
//! - `cache.rs`: the embedding cache; `keys.rs`: API keys;
//! - `jobs.rs`: what the lifecycle jobs select and write, and their leases;
//! - `erasure.rs`: "forget all my data"; `threads.rs`: the agent's threads;
//! - `feed.rs`: the change feed and node registry of clustered mode;
//! - `copy.rs`: rows of any table, for `mnemo migrate`;
//! - `rows.rs`: decoding rows, and the writes several methods share.
//!
//! Outside them: `decode.rs`, the one decoder of a memory row (for sqlx's
//! rows and for `sqlite_read.rs`, SQLite's direct reader of `get_many`).
//!
//! Each of those files is compiled once per dialect: `sqlite.rs` and
//! `postgres.rs` name their database `D` and include `methods.rs`, which
//! declares them (`#[path]`). So inside them `D` is a concrete sqlx database,
//! the code is plain sqlx, and `D::…` reaches the dialect. (A generic
//! `impl<D: Dialect>` would need sqlx's executor, argument and column-type
//! bounds restated on every impl and helper; this gives the same one text
//! without them.) A method added to a store trait is written in its concern
//! file and exists on both backends.

mod decode;
mod dialect;
pub mod postgres;
mod purge;
pub mod sqlite;
mod sqlite_file;
mod sqlite_read;
mod sqlite_scrub;

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use uuid::Uuid;

pub use dialect::{Dialect, GuardAt};

use super::{
    ChangeFeed, EmbeddingCache, ErasureStore, JobStore, KeyStore, Memories, MemoryStore, TableCopy,
    ThreadRef, ThreadStore, Upkeep, UpkeepStatus,
};
use crate::domain::Memory;
use crate::error::{Error, Result};

/// The store on dialect `D`: a connection pool of that database.
/// `SqliteStore` and `PgStore` name the two.
pub struct SqlStore<D: Dialect> {
    pool: sqlx::Pool<D>,
    /// Erasures finishing together share one purge (`purge.rs`).
    purges: Arc<purge::PurgeGate>,
    /// SQLite on a file: `get_many` reads through its own connections
    /// (`sqlite_read.rs`). `None` on PostgreSQL and in-memory SQLite.
    direct: Option<Arc<sqlite_read::DirectReader>>,
    /// What checkpoints and purges gave up on (`/readyz`, `/metrics`).
    upkeep: Arc<Upkeep>,
}

impl<D: Dialect> SqlStore<D> {
    fn new(pool: sqlx::Pool<D>) -> Self {
        SqlStore {
            pool,
            purges: Arc::default(),
            direct: None,
            upkeep: Arc::default(),
        }
    }

    pub fn pool(&self) -> &sqlx::Pool<D> {
        &self.pool
    }
}

impl<D: Dialect> Clone for SqlStore<D> {
    fn clone(&self) -> Self {
        SqlStore {
            pool: self.pool.clone(),
            purges: self.purges.clone(),
            direct: self.direct.clone(),
            upkeep: self.upkeep.clone(),
        }
    }
}

impl<D: Dialect> fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore")
            .field("dialect", &D::NAME)
            .field("pool", &self.pool)
            .finish()
    }
}

/// The whole store: the concern traits are implemented in the files named
/// in the module doc, for each dialect.
#[async_trait::async_trait]
impl<D: Dialect> MemoryStore for SqlStore<D>
where
    Self: Memories
        + EmbeddingCache
        + KeyStore
        + JobStore
        + ErasureStore
        + ThreadStore
        + ChangeFeed
        + TableCopy,
{
    async fn close(&self) -> Result<()> {
        if let Some(direct) = &self.direct {
            direct.close();
        }
        D::before_close(&self.pool, &self.upkeep).await?;
        self.pool.close().await;
        Ok(())
    }

    fn upkeep(&self) -> UpkeepStatus {
        self.upkeep.status()
    }
}

// ----- shared by every dialect: plain values, no database --------------

pub(crate) fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_ms(v: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(v).single().unwrap_or_default()
}

/// `(id, the turn before, the turn after)` of the memories whose id is
/// `m.id <ids>` (the caller completes the id list). Each side is one descent
/// of the thread index (tenant_id, user_id, thread_id, id).
pub(crate) fn turns_beside_sql(ids: &str) -> String {
    let side = |cmp: &str, order: &str| {
        format!(
            "(SELECT n.id FROM memories n WHERE n.tenant_id = m.tenant_id \
             AND n.user_id = m.user_id AND n.thread_id = m.thread_id AND n.status = 'active' \
             AND n.id {cmp} m.id ORDER BY n.id {order} LIMIT 1)"
        )
    };
    format!(
        "SELECT m.id, {}, {} FROM memories m \
         WHERE m.user_id IS NOT NULL AND m.thread_id IS NOT NULL AND m.id {ids}",
        side("<", "DESC"),
        side(">", "ASC"),
    )
}

fn parse_uuid(s: &str) -> Result<Uuid> {
    Uuid::parse_str(s).map_err(|e| Error::internal(format!("corrupt id `{s}` in store: {e}")))
}

/// JSON kept in a TEXT column on both dialects (thread summaries, tool
/// summaries, payloads).
fn json_text<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(Error::internal)
}

/// A unique-key violation means the row already exists: a `Conflict` for the
/// caller, not a store failure.
fn conflict_if_duplicate(e: sqlx::Error, what: impl FnOnce() -> String) -> Error {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Error::Conflict(format!("{} already exists", what()))
        }
        _ => Error::from(e),
    }
}

/// The (tenant, user) pairs whose data `memories` write, sorted, once each;
/// reference memory (no user) has none.
fn users_of(memories: &[Memory]) -> Vec<(&str, &str)> {
    let mut users: Vec<(&str, &str)> = memories
        .iter()
        .filter_map(|m| Some((m.tenant_id.as_str(), m.user_id.as_deref()?)))
        .collect();
    users.sort_unstable();
    users.dedup();
    users
}

const COLUMNS: &str =
    "id, tenant_id, tier, user_id, thread_id, kind, text, importance, confidence, status, \
    created_at, updated_at, last_accessed_at, access_count, expires_at, source, metadata, \
    embedding_model, version, supersedes, superseded_by";

const THREAD_COLUMNS: &str =
    "id, tenant_id, user_id, goal, summary, summary_upto_seq, created_at, \
    updated_at, last_activity_at, last_compacted_at";

const MESSAGE_COLUMNS: &str =
    "seq, thread_id, tenant_id, user_id, role, content, tool, created_at, extraction_state, compacted";

/// Whether a user has an erasure in progress: writes of the user's data
/// check it inside their transaction.
const ERASING: &str = "SELECT 1 FROM erasure_intents WHERE tenant_id = $1 AND user_id = $2";

/// Whether a thread exists.
const THREAD_EXISTS: &str = "SELECT 1 FROM threads WHERE tenant_id = $1 AND id = $2";

fn thread_gone(thread: ThreadRef<'_>) -> Error {
    Error::NotFound {
        what: format!("thread {}", thread.id),
    }
}

/// What a write of a user being erased gets: nothing may land behind an
/// erasure, which deletes by user.
fn erasing_conflict() -> Error {
    Error::Conflict("this user's data is being erased; retry when the erasure has completed".into())
}
