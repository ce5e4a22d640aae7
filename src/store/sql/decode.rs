//! One decoder of a memory row for every way the store reads one: sqlx rows
//! of either dialect (`rows.rs`) and SQLite's direct reader
//! (`sqlite_read.rs`). Each reads its columns by name through [`Columns`].

use std::str::FromStr;

use serde::de::DeserializeOwned;

use super::{from_ms, parse_uuid};
use crate::domain::{Memory, Source, Tier};
use crate::error::{Error, Result};

/// A row's columns by name, in the types the store keeps them in: ids,
/// enums and text as TEXT, times as epoch-ms integers, scores as REAL, JSON
/// as TEXT (SQLite) or JSONB (PostgreSQL).
pub(super) trait Columns {
    fn text(&self, column: &str) -> Result<String>;
    fn opt_text(&self, column: &str) -> Result<Option<String>>;
    fn int(&self, column: &str) -> Result<i64>;
    fn opt_int(&self, column: &str) -> Result<Option<i64>>;
    fn real(&self, column: &str) -> Result<f64>;
    fn json<T: DeserializeOwned>(&self, column: &str) -> Result<T>;
}

/// A memory from a row that holds [`COLUMNS`](super::COLUMNS).
pub(super) fn memory(row: &impl Columns) -> Result<Memory> {
    let opt_uuid = |column: &str| -> Result<Option<uuid::Uuid>> {
        row.opt_text(column)?.as_deref().map(parse_uuid).transpose()
    };
    Ok(Memory {
        id: parse_uuid(&row.text("id")?)?,
        tenant_id: row.text("tenant_id")?,
        tier: Tier::from_str(&row.text("tier")?).map_err(Error::internal)?,
        user_id: row.opt_text("user_id")?,
        thread_id: row.opt_text("thread_id")?,
        kind: row.text("kind")?.parse().map_err(Error::internal)?,
        text: row.text("text")?,
        importance: row.real("importance")? as f32,
        confidence: row.real("confidence")? as f32,
        status: row.text("status")?.parse().map_err(Error::internal)?,
        created_at: from_ms(row.int("created_at")?),
        updated_at: from_ms(row.int("updated_at")?),
        last_accessed_at: row.opt_int("last_accessed_at")?.map(from_ms),
        access_count: row.int("access_count")? as u64,
        expires_at: row.opt_int("expires_at")?.map(from_ms),
        source: row.json::<Source>("source")?,
        metadata: row.json("metadata")?,
        embedding_model: row.opt_text("embedding_model")?,
        version: row.int("version")?,
        supersedes: opt_uuid("supersedes")?,
        superseded_by: opt_uuid("superseded_by")?,
    })
}
