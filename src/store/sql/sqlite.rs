//! SQLite: one file in the data directory, WAL mode, migrations from
//! `migrations/sqlite` applied at open. One writer at a time: that
//! serialises the change feed and the erasure guard.
//!
//! Deleted bytes: `secure_delete` is on, so a deleted row's cell and freed
//! pages are zeroed where they lie. That is not enough for an erasure: when
//! a b-tree page is rebalanced (inserts split pages, deletes merge them),
//! SQLite rebuilds it and leaves the bytes of the cells it moved to a sibling
//! in the page's unallocated space, so an earlier copy of a row can outlive
//! the row's deletion, in the file and in every WAL frame of that page (seen
//! in the kill -9 test: an erased memory's text and user id in a page of
//! other users' memories). The erasure therefore purges the files
//! ([`Dialect::purge_erased`]): the free space of every page is set to zero
//! through the `sqlite_dbpage` table in short write transactions
//! (`sqlite_scrub.rs`; a `VACUUM`, which holds the write lock for a rewrite
//! of the whole file, only where that module cannot vouch for a page), then
//! a `TRUNCATE` checkpoint copies the result into the file and empties the
//! WAL, before the intent is replaced by the tombstone. See
//! docs/design/erasure.md and docs/decisions/0017-page-scrub.md for figures.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Pool, QueryBuilder, Sqlite, Transaction};

use super::{Dialect, GuardAt, SqlStore};
use crate::error::{Error, Result};
use crate::store::tables::Table;
use crate::store::Upkeep;

pub type SqliteStore = SqlStore<Sqlite>;

/// For reading a database's files beside SQLite without dropping its locks
/// (the erasure's file scan): see `sqlite_file.rs`.
pub(crate) use super::sqlite_file::{kept_file, read_kept};

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies migrations.
    pub async fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT)
            .pragma("secure_delete", "ON")
            // 16 MiB of page cache per connection (SQLite's default is 2 MB)
            // and reads through mmap: bulk deletes (forget-all, purges) were
            // spending as much time re-reading evicted pages as deleting.
            .pragma("cache_size", "-16384")
            .pragma("mmap_size", "268435456")
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;
        // Said at start, not at the first erasure: without `sqlite_dbpage`
        // every erasure's purge falls back to a VACUUM (`sqlite_scrub.rs`).
        if sqlx::query("SELECT 1 FROM sqlite_dbpage WHERE pgno = 1")
            .fetch_optional(&pool)
            .await
            .is_err()
        {
            tracing::warn!(
                "this SQLite has no sqlite_dbpage table (built outside the repository, \
                 whose .cargo/config.toml enables it): every erasure will VACUUM the whole \
                 database, and other writes will wait for it"
            );
        }
        // A process killed after an erasure committed but before its
        // checkpoint leaves the erased rows' old pages in the database file
        // and WAL: nobody reads them, but they are on disk until copied over.
        // (Killed before the purge completed, the intent is still there and
        // the resumed erasure purges again.)
        let mut store = SqlStore::new(pool);
        checkpoint_or_warn(&store.pool, &store.upkeep).await?;
        store.direct = Some(super::sqlite_read::DirectReader::open(path)?);
        Ok(store)
    }

    /// An in-memory database (tests).
    pub async fn in_memory() -> Result<Self> {
        let options =
            SqliteConnectOptions::from_str("sqlite::memory:")?.pragma("secure_delete", "ON");
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;
        Ok(SqlStore::new(pool))
    }
}

/// How long a checkpoint keeps retrying its `TRUNCATE` before it settles
/// for what a `PASSIVE` one copied.
pub const CHECKPOINT_BUDGET: Duration = Duration::from_secs(5);

/// How long one `TRUNCATE` attempt may wait (SQLite's busy handler) for
/// readers of an older snapshot. While it waits it holds the WAL's write
/// lock, so this is what one attempt may stall every writer; the
/// connection's usual 10 s busy timeout is put back afterwards.
const CHECKPOINT_ATTEMPT_WAIT_MS: u32 = 100;

/// The pool's busy timeout (`SqliteStore::open`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes every page of the WAL into the database file and truncates the
/// WAL, so that old frames (earlier versions of pages) are gone too.
///
/// A checkpoint cannot complete while a reader holds an older snapshot (a
/// backup, Litestream or a `sqlite3` shell in another process: the pragma
/// then answers `busy`), and while a `TRUNCATE` waits for such a reader it
/// holds the write lock. So each attempt waits at most
/// [`CHECKPOINT_ATTEMPT_WAIT_MS`] and the attempts stop after
/// [`CHECKPOINT_BUDGET`]: `false` then, with the WAL copied as far as the
/// `PASSIVE` checkpoint that runs first could (the rest is copied by the
/// next checkpoint, at the latest at the next open). Every outcome is
/// counted in `upkeep` (`/readyz`, `/metrics`).
async fn checkpoint(pool: &Pool<Sqlite>, upkeep: &Upkeep) -> Result<bool> {
    checkpoint_within(pool, upkeep, CHECKPOINT_BUDGET).await
}

async fn checkpoint_within(pool: &Pool<Sqlite>, upkeep: &Upkeep, budget: Duration) -> Result<bool> {
    // A TRUNCATE checkpoint makes new writers wait while it copies; a
    // PASSIVE one first copies what it can without blocking anyone, so the
    // wait covers only what was written in between. (Its effect alone was
    // not measured: the erasure's slow writes turned out to be the busy
    // handler's back-off, see `sqlite_scrub::pause_after`.)
    sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(pool)
        .await?;
    let mut conn = pool.acquire().await?;
    sqlx::query(&format!(
        "PRAGMA busy_timeout = {CHECKPOINT_ATTEMPT_WAIT_MS}"
    ))
    .execute(&mut *conn)
    .await?;
    let deadline = tokio::time::Instant::now() + budget;
    let outcome = loop {
        let busy = sqlx::query_as::<_, (i64,)>("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(&mut *conn)
            .await;
        match busy {
            Ok((0,)) => break Ok(true),
            Ok(_) if tokio::time::Instant::now() >= deadline => break Ok(false),
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => break Err(e),
        }
    };
    let restored = sqlx::query(&format!(
        "PRAGMA busy_timeout = {}",
        BUSY_TIMEOUT.as_millis()
    ))
    .execute(&mut *conn)
    .await;
    if restored.is_err() {
        // Never hand a connection with the short wait back to the pool.
        conn.close().await.ok();
    }
    let complete = outcome?;
    upkeep.checkpointed(complete);
    Ok(complete)
}

/// [`checkpoint`], warning when it stayed busy (what it left is copied by
/// the next one).
async fn checkpoint_or_warn(pool: &Pool<Sqlite>, upkeep: &Upkeep) -> Result<()> {
    if !checkpoint(pool, upkeep).await? {
        tracing::warn!(
            budget_secs = CHECKPOINT_BUDGET.as_secs(),
            "the SQLite WAL checkpoint stayed busy (a long reader in another process?): \
             PASSIVE only, the next one completes it"
        );
    }
    Ok(())
}

impl Dialect for Sqlite {
    const USER_GUARD: GuardAt = GuardAt::AfterWrites;

    async fn lock_user_shared(
        _tx: &mut Transaction<'_, Self>,
        _tenant_id: &str,
        _user_id: &str,
    ) -> Result<()> {
        Ok(())
    }

    async fn lock_user_exclusive(
        _tx: &mut Transaction<'_, Self>,
        _tenant_id: &str,
        _user_id: &str,
    ) -> Result<()> {
        Ok(())
    }

    async fn purge_erased(pool: &Pool<Self>, upkeep: &Upkeep) -> Result<()> {
        // Clears the free space of every page in short write transactions
        // (`sqlite_scrub.rs`), or, where that module cannot vouch for the
        // file (or the database is in memory), rewrites every page from the
        // live rows with `VACUUM` under the write lock. Either way through
        // the WAL; the checkpoint then puts the cleared pages in the file and
        // empties the WAL. Both must finish: until then the erasure is not
        // done and its intent stays (the sweep retries).
        let (_, _, file): (i64, String, String) = sqlx::query_as("PRAGMA database_list")
            .fetch_one(pool)
            .await?;
        if file.is_empty() {
            // In memory (tests): no file to leave bytes in.
            sqlx::raw_sql("VACUUM").execute(pool).await?;
            return Ok(());
        }
        let scrubbed =
            tokio::task::spawn_blocking(move || super::sqlite_scrub::scrub(Path::new(&file)))
                .await
                .map_err(Error::internal)??;
        let done = match scrubbed {
            super::sqlite_scrub::Scrub::Done(done) => Some(done),
            super::sqlite_scrub::Scrub::Unsupported(reason) => {
                tracing::warn!(%reason, "store purge: VACUUM of the whole database instead");
                upkeep.vacuumed();
                sqlx::raw_sql("VACUUM").execute(pool).await?;
                None
            }
        };
        let t = std::time::Instant::now();
        let checkpointed = checkpoint(pool, upkeep).await?;
        if let Some(done) = done {
            tracing::info!(
                pages = done.pages,
                written = done.written,
                bytes = done.bytes,
                scan_ms = done.scan_ms,
                checkpoint_ms = t.elapsed().as_millis(),
                "store purge: free space cleared page by page"
            );
        }
        if checkpointed {
            Ok(())
        } else {
            Err(Error::Unavailable(
                "the SQLite WAL checkpoint after the erasure's purge stayed busy".into(),
            ))
        }
    }

    async fn after_complete_erasure(pool: &Pool<Self>, upkeep: &Upkeep) -> Result<()> {
        checkpoint_or_warn(pool, upkeep).await
    }

    async fn before_close(pool: &Pool<Self>, upkeep: &Upkeep) -> Result<()> {
        checkpoint_or_warn(pool, upkeep).await
    }

    fn refused_value(e: sqlx::Error) -> std::result::Result<Error, sqlx::Error> {
        Err(e)
    }

    // SQLITE_MAX_VARIABLE_NUMBER is 32766 since SQLite 3.32.
    const MAX_IMPORT_PARAMS: usize = 30_000;

    fn push_json_text(qb: &mut QueryBuilder<'_, Self>, text: String) {
        qb.push_bind(text);
    }

    async fn after_import(_tx: &mut Transaction<'_, Self>, _table: &Table) -> Result<()> {
        Ok(())
    }

    const LEAST: &'static str = "MIN";
    const GREATEST: &'static str = "MAX";
    const DOCUMENT_ID: &'static str = "json_extract(source, '$.document_id')";
    const MEMORIES_BY_OWNER: &'static str = "memories INDEXED BY memories_owner";
    const ERASE_BATCH: usize = 500;
    const JSON_AS_TEXT: &'static str = "";

    fn erase_pause(held: Duration) -> Duration {
        super::sqlite_scrub::pause_after(held)
    }
}

// The store's methods, compiled for SQLite (see `sql/mod.rs`).
type D = Sqlite;
#[path = "methods.rs"]
#[expect(
    clippy::duplicate_mod,
    reason = "the methods are compiled once per dialect (see sql/mod.rs)"
)]
mod methods;
