//! `mnemo migrate`: copies one store into another, table by table — the way
//! from an embedded deployment (SQLite) to a clustered one (PostgreSQL).
//!
//! Every table of [`TABLES`] is read in key order in batches and written
//! with "insert unless the key exists", each batch in one transaction, rows
//! exactly as stored (ids, versions, audit sequence numbers, times, cached
//! embeddings). So a copy is resumable: run it again after an interruption
//! and it skips what arrived. A non-empty target is refused unless the
//! caller says it is resuming, so that two deployments are never merged by
//! mistake. The end is a count per table, source against target.
//!
//! The source should not be written to during the copy (stop the service):
//! rows written to a table already copied would be missed, and the final
//! count says so. Indexes are not copied: the target's are built from the
//! target store by the engine (reconcile/reindex), with the copied
//! embedding cache, so nothing is embedded again.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::tables::{Table, TABLES};
use crate::store::MemoryStore;

#[derive(Clone, Copy, Debug)]
pub struct CopyOptions {
    /// Rows per read and per write transaction.
    pub batch: usize,
    /// Accept a non-empty target (continuing an interrupted copy).
    pub resume: bool,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            batch: 1000,
            resume: false,
        }
    }
}

/// One table's rows on each side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableCount {
    pub table: &'static str,
    pub source: u64,
    pub target: u64,
    /// Rows this run wrote (the rest were there already).
    pub copied: u64,
}

impl TableCount {
    pub fn matches(&self) -> bool {
        self.source == self.target
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    pub tables: Vec<TableCount>,
}

impl CopyReport {
    /// Every table holds as many rows in the target as in the source.
    pub fn verified(&self) -> bool {
        self.tables.iter().all(TableCount::matches)
    }
}

/// Where a copy is: the table being copied, rows done and rows in all.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    pub table: &'a str,
    pub done: u64,
    pub total: u64,
}

/// Copies every table of `from` into `to`, then counts both sides.
pub async fn copy_store(
    from: &dyn MemoryStore,
    to: &dyn MemoryStore,
    options: CopyOptions,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<CopyReport> {
    if options.batch == 0 {
        return Err(Error::invalid("batch", "must be at least 1"));
    }
    if !options.resume {
        for table in TABLES {
            let n = to.count_rows(table).await?;
            if n > 0 {
                return Err(Error::Conflict(format!(
                    "the target store is not empty ({n} rows in {}); \
                     pass --resume to continue an interrupted copy into it",
                    table.name
                )));
            }
        }
    }
    let mut sources = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        sources.push(from.count_rows(table).await?);
    }
    let total = sources.iter().sum();
    let mut done = 0;
    let mut copied = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        progress(Progress {
            table: table.name,
            done,
            total,
        });
        copied.push(
            copy_table(from, to, table, options.batch, |n| {
                done += n;
                progress(Progress {
                    table: table.name,
                    done,
                    total,
                })
            })
            .await?,
        );
    }
    let mut tables = Vec::with_capacity(TABLES.len());
    for (table, copied) in TABLES.iter().zip(copied) {
        tables.push(TableCount {
            table: table.name,
            source: from.count_rows(table).await?,
            target: to.count_rows(table).await?,
            copied,
        });
    }
    Ok(CopyReport { tables })
}

/// Copies one table in key-ordered batches; returns the rows written.
async fn copy_table(
    from: &dyn MemoryStore,
    to: &dyn MemoryStore,
    table: &Table,
    batch: usize,
    mut read: impl FnMut(u64),
) -> Result<u64> {
    let mut after = None;
    let mut written = 0;
    loop {
        let rows = from.export_rows(table, after.as_deref(), batch).await?;
        let Some(last) = rows.last() else { break };
        after = Some(table.key_of(last));
        written += to.import_rows(table, &rows).await?;
        read(rows.len() as u64);
    }
    Ok(written)
}
