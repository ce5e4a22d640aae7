//! What differs between the SQL databases the store runs on, and nothing
//! else: each item names one difference and says why it exists. Implemented
//! for [`sqlx::Sqlite`] (`sqlite.rs`) and [`sqlx::Postgres`] (`postgres.rs`).

use std::future::Future;

use sqlx::{Pool, QueryBuilder, Transaction};

use crate::error::{Error, Result};
use crate::store::tables::Table;
use crate::store::Upkeep;

/// Where a write of a user's data checks that no erasure of that user is
/// under way ([`Dialect::USER_GUARD`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardAt {
    /// Before the transaction's first write, under the user's erasure lock
    /// taken shared ([`Dialect::lock_user_shared`]).
    BeforeWrites,
    /// After the transaction's writes, which hold the database's write lock.
    AfterWrites,
}

pub trait Dialect: sqlx::Database {
    /// Nothing new may land for a user being erased: the erasure deletes by
    /// user, and a row committed after it would survive "forget all my data".
    ///
    /// SQLite has one writer at a time, so the check runs after the writes,
    /// which took the write lock: it then sees every committed intent (a
    /// read-then-write transaction would instead fail with
    /// SQLITE_BUSY_SNAPSHOT whenever another writer committed in between).
    /// PostgreSQL runs writers side by side, so the check runs first, under
    /// the user's advisory lock taken shared: the erasure takes it
    /// exclusively ([`Dialect::lock_user_exclusive`]), so its delete waits
    /// for every write already past its check and deletes that write's rows.
    const USER_GUARD: GuardAt;

    /// Takes the user's erasure lock shared until the transaction ends
    /// (PostgreSQL; nothing on SQLite, whose write lock serialises instead).
    fn lock_user_shared(
        tx: &mut Transaction<'_, Self>,
        tenant_id: &str,
        user_id: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Takes the user's erasure lock exclusively until the transaction ends:
    /// `erase_user`, before it deletes.
    fn lock_user_exclusive(
        tx: &mut Transaction<'_, Self>,
        tenant_id: &str,
        user_id: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// After `erase_user` committed and before the intent is replaced by
    /// the tombstone (`ErasureStore::purge_erased`): what the deleted rows
    /// left in the files goes. PostgreSQL VACUUMs the tables it deleted from
    /// (a `DELETE` leaves dead row versions in the pages). SQLite clears the
    /// free space of every page (`sqlite_scrub.rs`; `VACUUM` as a fallback)
    /// and checkpoints the WAL: `secure_delete` zeroes a deleted cell where
    /// it lies, but a row's cell that a b-tree rebalance once moved to a
    /// sibling page leaves its old bytes in the first page's unallocated
    /// space, where no delete reaches them.
    fn purge_erased(pool: &Pool<Self>, upkeep: &Upkeep) -> impl Future<Output = Result<()>> + Send;

    /// After `complete_erasure` committed: SQLite checkpoints the WAL into
    /// the file; PostgreSQL VACUUMs `erasure_intents` (the intent held the
    /// user id in clear).
    fn after_complete_erasure(
        pool: &Pool<Self>,
        upkeep: &Upkeep,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Before the pool closes: SQLite checkpoints the WAL; PostgreSQL owns
    /// its WAL and has nothing buffered here.
    fn before_close(pool: &Pool<Self>, upkeep: &Upkeep) -> impl Future<Output = Result<()>> + Send;

    /// A database error that is the caller's, not the store's: PostgreSQL
    /// cannot store U+0000 in a JSONB string (SQLite can). `Err` gives the
    /// error back untouched.
    fn refused_value(e: sqlx::Error) -> std::result::Result<Error, sqlx::Error>;

    // ----- bulk import (`mnemo migrate`) ---------------------------------

    /// Bind parameters one multi-row `INSERT` of an import may use.
    const MAX_IMPORT_PARAMS: usize;

    /// Pushes a JSON cell of an imported row, which travels as text.
    fn push_json_text(qb: &mut QueryBuilder<'_, Self>, text: String);

    /// After rows were imported into `table`: PostgreSQL moves a generated
    /// key's sequence past the imported keys; SQLite's `INTEGER PRIMARY KEY`
    /// follows by itself.
    fn after_import(
        tx: &mut Transaction<'_, Self>,
        table: &Table,
    ) -> impl Future<Output = Result<()>> + Send;

    // ----- spellings ------------------------------------------------------

    /// The two-argument minimum and maximum (`LEAST`/`GREATEST` on
    /// PostgreSQL, the scalar `MIN`/`MAX` on SQLite).
    const LEAST: &'static str;
    const GREATEST: &'static str;

    /// A memory's `source.document_id`, spelled as its index
    /// (`memories_document`) is, so that lookups use it.
    const DOCUMENT_ID: &'static str;

    /// The table `erase_user` deletes a user's memories from. SQLite names
    /// the index: its planner's pick, `memories_dedup`, walks the rows in
    /// text-hash order and visits each table page many times.
    const MEMORIES_BY_OWNER: &'static str;

    /// Rows one erasure transaction deletes at most (`erase_user` works in
    /// batches, each its own transaction). SQLite: 500, because its write
    /// lock is global and every other user's write waits for the batch.
    /// PostgreSQL: 5,000, because its deletes lock only the erased user's
    /// rows (other users' writes never wait for them) while each transaction
    /// costs round trips and a WAL flush (500 made a 20k-memory erasure 15 s
    /// instead of 1 s on a loaded machine).
    const ERASE_BATCH: usize;

    /// How long an erasure's batch that held the write lock for `held`
    /// waits before the next one. SQLite: as long as it held it (at least
    /// 5 ms), since a writer that found the lock taken sleeps in SQLite's
    /// busy handler (1, 2, 5 … 100 ms) before it retries, and back-to-back
    /// batches won every retry. PostgreSQL: none (other users' rows are not
    /// locked).
    fn erase_pause(held: std::time::Duration) -> std::time::Duration;

    /// Turns a JSON column into text in a `SELECT` of a copy (appended to
    /// the column name; empty where JSON is text already).
    const JSON_AS_TEXT: &'static str;
}
