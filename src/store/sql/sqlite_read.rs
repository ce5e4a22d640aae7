//! SQLite's direct reader: the hydration of a search (`get_many`, and the
//! conversation context's `turns_beside`) read on
//! connections of its own, without sqlx.
//!
//! Why: sqlx's SQLite driver copies every value of every row
//! (`sqlite3_value_dup`) and hands the rows one by one from its connection
//! thread to the task. For the ~100 rows a search hydrates that was 1.6 ms
//! of the 1.9 ms `get_many` took on 10k memories, against 0.6 ms here
//! (`examples/hydrate_probe.rs`; docs/benchmarks/2026-12-01-rest-search.md,
//! "Hydration without sqlx"). The rows are
//! decoded by the same [`decode::memory`] as sqlx's.
//!
//! The connections are read-only and see what the pool committed (WAL
//! mode: each statement reads the last committed snapshot). They are opened
//! as needed and kept idle for the next read, at most [`IDLE`]; none holds a
//! read transaction between statements, so the erasure's `TRUNCATE`
//! checkpoint is never held up by them. Each read runs on tokio's blocking
//! pool.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::decode::{self, Columns};
use super::{parse_uuid as parse_id, COLUMNS};
use crate::domain::Memory;
use crate::error::{Error, Result};
use crate::store::TurnsBeside;

/// Idle connections kept for the next read (one per concurrent search up
/// to this many; more searches at once open more, closed after use).
const IDLE: usize = 8;

pub(crate) struct DirectReader {
    path: PathBuf,
    idle: Mutex<Option<Vec<Connection>>>,
}

impl std::fmt::Debug for DirectReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectReader").finish_non_exhaustive()
    }
}

impl DirectReader {
    /// A reader of the database file at `path`, which the pool has already
    /// created and migrated. One connection is opened here, so that a
    /// file the reader cannot open fails at start, not at the first search.
    pub(crate) fn open(path: &Path) -> Result<Arc<Self>> {
        let reader = DirectReader {
            path: path.to_owned(),
            idle: Mutex::new(Some(Vec::new())),
        };
        let first = reader.connect()?;
        reader.put_back(first);
        Ok(Arc::new(reader))
    }

    /// The memories of `ids` that exist, by id.
    pub(crate) async fn get_many(self: &Arc<Self>, ids: &[Uuid]) -> Result<HashMap<Uuid, Memory>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let reader = self.clone();
        let ids = ids.to_vec();
        tokio::task::spawn_blocking(move || reader.read_ids(&ids))
            .await
            .map_err(Error::internal)?
    }

    /// `get_many` on the calling thread (a blocking one).
    pub(crate) fn read_ids(&self, ids: &[Uuid]) -> Result<HashMap<Uuid, Memory>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let ids = serde_json::to_string(&ids).map_err(Error::internal)?;
        self.read_many(&ids)
    }

    /// The turns beside each of `ids` ([`crate::store::Memories::turns_beside`]).
    pub(crate) async fn turns_beside(self: &Arc<Self>, ids: &[Uuid]) -> Result<Vec<TurnsBeside>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let reader = self.clone();
        let ids = serde_json::to_string(&ids).map_err(Error::internal)?;
        tokio::task::spawn_blocking(move || reader.read_turns_beside(&ids))
            .await
            .map_err(Error::internal)?
    }

    /// Drops the idle connections; reads after this fail.
    pub(crate) fn close(&self) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn read_many(&self, ids_json: &str) -> Result<HashMap<Uuid, Memory>> {
        let conn = self.take()?;
        let out = (|| {
            // One statement for any number of ids (the ids travel as one
            // JSON array), so it is prepared once per connection.
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?1))"
            ))?;
            let mut rows = statement.query([ids_json])?;
            let mut out = HashMap::new();
            while let Some(row) = rows.next()? {
                let memory = decode::memory(&Cells(row))?;
                out.insert(memory.id, memory);
            }
            Ok(out)
        })();
        self.put_back(conn);
        out
    }

    fn read_turns_beside(&self, ids_json: &str) -> Result<Vec<TurnsBeside>> {
        let conn = self.take()?;
        let out = (|| {
            let mut statement = conn.prepare_cached(&super::turns_beside_sql(
                "IN (SELECT value FROM json_each(?1))",
            ))?;
            let mut rows = statement.query([ids_json])?;
            let id = |s: Option<String>| s.as_deref().map(parse_id).transpose();
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(TurnsBeside {
                    id: parse_id(&row.get::<_, String>(0)?)?,
                    before: id(row.get(1)?)?,
                    after: id(row.get(2)?)?,
                });
            }
            Ok(out)
        })();
        self.put_back(conn);
        out
    }

    fn take(&self) -> Result<Connection> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(Vec::pop);
        match idle {
            None => Err(Error::internal("the store is closed")),
            Some(Some(conn)) => Ok(conn),
            Some(None) => self.connect(),
        }
    }

    fn put_back(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(idle) = idle.as_mut() {
            if idle.len() < IDLE {
                idle.push(conn);
            }
        }
    }

    fn connect(&self) -> Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(10))?;
        // Reads through mmap, as the pool's connections do (`sqlite.rs`).
        conn.pragma_update(None, "mmap_size", 268_435_456)?;
        Ok(conn)
    }
}

/// A row of the reader's statement, whose columns are [`COLUMNS`] in that
/// order: a name is found by exact match in [`NAMES`] (rusqlite's own
/// lookup compares every name case-insensitively, a fifth of the decode).
struct Cells<'r>(&'r rusqlite::Row<'r>);

static NAMES: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| COLUMNS.split(',').map(str::trim).collect());

impl Cells<'_> {
    fn at(&self, column: &str) -> Result<usize> {
        NAMES
            .iter()
            .position(|name| *name == column)
            .ok_or_else(|| Error::internal(format!("no column `{column}` in the reader's row")))
    }

    fn get<T: rusqlite::types::FromSql>(&self, column: &str) -> Result<T> {
        Ok(self.0.get(self.at(column)?)?)
    }
}

impl Columns for Cells<'_> {
    fn text(&self, column: &str) -> Result<String> {
        self.get(column)
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>> {
        self.get(column)
    }
    fn int(&self, column: &str) -> Result<i64> {
        self.get(column)
    }
    fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        self.get(column)
    }
    fn real(&self, column: &str) -> Result<f64> {
        self.get(column)
    }
    fn json<T: DeserializeOwned>(&self, column: &str) -> Result<T> {
        let value = self.0.get_ref(self.at(column)?)?;
        let text = value.as_str().map_err(rusqlite::Error::from)?;
        serde_json::from_str(text).map_err(Error::internal)
    }
}
