//! PostgreSQL, for running several nodes on one database. Migrations come
//! from `migrations/postgres`.
//!
//! Several nodes: every write is a transaction, optimistic versions make
//! concurrent updates from different nodes fail with `Conflict` instead of
//! losing one, and job leases are a single atomic upsert, so a job runs on one
//! node at a time. An erasure intent is a row every node sees. Writers run
//! side by side, so a user's writes and the user's erasure meet on a per-user
//! advisory lock (`USER_LOCK_KEY`), and the change feed's triggers take one
//! lock so that feed positions commit in order
//! (`migrations/postgres/0007_cluster.sql`).
//!
//! Erasure and dead tuples: a `DELETE` in PostgreSQL leaves the old row
//! versions in the table's pages until `VACUUM` removes them. After an
//! erasure this store runs a plain `VACUUM` of the tables it touched
//! (`memories`, `audit_events`, `embedding_cache`, the thread tables, then
//! `erasure_intents`): the dead rows and their index entries go, and their
//! space is reusable. It takes no exclusive lock (reads and writes go on) and
//! skips pages that hold no dead rows. What it does not do is overwrite the
//! bytes: until PostgreSQL reuses the space, and in WAL segments not yet
//! recycled and in backups, the erased text may remain on disk. `VACUUM FULL`
//! (rewrites the tables under an exclusive lock) would be needed for more,
//! which is too costly to run per erasure; encrypt the database's disk if that
//! matters.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Pool, Postgres, QueryBuilder, Transaction};

use super::{Dialect, GuardAt, SqlStore};
use crate::error::{Error, Result};
use crate::store::tables::Table;
use crate::store::Upkeep;

pub type PgStore = SqlStore<Postgres>;

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
        Ok(SqlStore::new(pool))
    }
}

/// The advisory-lock key of a user: writes of the user's data hold it
/// shared, an erasure exclusively, so an erasure waits for the writes
/// already past their check.
const USER_LOCK_KEY: &str = "hashtextextended($1 || chr(31) || $2, 0)";

async fn lock_user(
    tx: &mut Transaction<'_, Postgres>,
    function: &str,
    tenant_id: &str,
    user_id: &str,
) -> Result<()> {
    sqlx::query(&format!("SELECT {function}({USER_LOCK_KEY})"))
        .bind(tenant_id)
        .bind(user_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Removes the dead row versions an erasure left (see the module doc).
/// The rows are already deleted and committed: a failure here is logged,
/// not returned, and autovacuum gets to them later.
async fn vacuum(pool: &Pool<Postgres>, tables: &str) {
    if let Err(e) = sqlx::raw_sql(&format!("VACUUM {tables}"))
        .execute(pool)
        .await
    {
        tracing::warn!(error = %e, tables, "VACUUM after erasure failed");
    }
}

impl Dialect for Postgres {
    const USER_GUARD: GuardAt = GuardAt::BeforeWrites;

    async fn lock_user_shared(
        tx: &mut Transaction<'_, Self>,
        tenant_id: &str,
        user_id: &str,
    ) -> Result<()> {
        lock_user(tx, "pg_advisory_xact_lock_shared", tenant_id, user_id).await
    }

    async fn lock_user_exclusive(
        tx: &mut Transaction<'_, Self>,
        tenant_id: &str,
        user_id: &str,
    ) -> Result<()> {
        lock_user(tx, "pg_advisory_xact_lock", tenant_id, user_id).await
    }

    async fn purge_erased(pool: &Pool<Self>, _: &Upkeep) -> Result<()> {
        vacuum(
            pool,
            "memories, audit_events, embedding_cache, message_payloads, messages, threads, api_keys",
        )
        .await;
        Ok(())
    }

    async fn after_complete_erasure(pool: &Pool<Self>, _: &Upkeep) -> Result<()> {
        vacuum(pool, "erasure_intents").await;
        Ok(())
    }

    async fn before_close(_pool: &Pool<Self>, _: &Upkeep) -> Result<()> {
        Ok(())
    }

    /// Memory text is validated against U+0000 at the edge; a `\u0000` left
    /// in metadata or details is the caller's error, not the store's.
    fn refused_value(e: sqlx::Error) -> std::result::Result<Error, sqlx::Error> {
        match &e {
            sqlx::Error::Database(db) if db.code().as_deref() == Some("22P05") => {
                Ok(Error::Invalid {
                    field: "metadata",
                    message:
                        "PostgreSQL cannot store the character U+0000 (\\u0000) in a JSON string"
                            .into(),
                })
            }
            _ => Err(e),
        }
    }

    // Within PostgreSQL's 65535 parameters per statement.
    const MAX_IMPORT_PARAMS: usize = 60_000;

    /// JSON travels as text and is cast back to JSONB.
    fn push_json_text(qb: &mut QueryBuilder<'_, Self>, text: String) {
        qb.push("CAST(").push_bind(text).push(" AS JSONB)");
    }

    async fn after_import(tx: &mut Transaction<'_, Self>, table: &Table) -> Result<()> {
        if table.generated_key {
            // Later inserts must not reuse an imported key.
            let key = table.key[0];
            sqlx::query(&format!(
                "SELECT setval(pg_get_serial_sequence('{0}', '{key}'), \
                 GREATEST((SELECT MAX({key}) FROM {0}), 1))",
                table.name
            ))
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    const LEAST: &'static str = "LEAST";
    const GREATEST: &'static str = "GREATEST";
    const DOCUMENT_ID: &'static str = "source->>'document_id'";
    const MEMORIES_BY_OWNER: &'static str = "memories";
    const ERASE_BATCH: usize = 5_000;
    const JSON_AS_TEXT: &'static str = "::text";

    fn erase_pause(_held: Duration) -> Duration {
        Duration::ZERO
    }
}

// The store's methods, compiled for PostgreSQL (see `sql/mod.rs`).
type D = Postgres;
#[path = "methods.rs"]
#[expect(
    clippy::duplicate_mod,
    reason = "the methods are compiled once per dialect (see sql/mod.rs)"
)]
mod methods;
