//! Export and import of one user's data ("give me all my data"): the
//! use case behind `GET /v1/users/{user_id}/export`, `mnemo export`,
//! `POST /v1/users/{user_id}/import` and `mnemo import`.
//!
//! An export is JSON Lines: one record per stored row of the user — memories
//! in every status, their audit events, threads, messages and tool payloads
//! ([`USER_TABLES`]) — each an object of the row's columns as stored (times
//! in epoch milliseconds, JSON columns as JSON) plus a `type` field
//! (`memory`, `audit_event`, `thread`, `message`, `payload`), followed by
//! one `manifest` record: counts per type, the SHA-256 of every record line
//! before it (each with its `\n`), `schema_version`, the embedding model and
//! `exported_at`. The manifest comes last so the export streams, a page of
//! rows at a time (keyset pages from the store); a file whose last line is
//! not a manifest is a truncated export. Vectors are not exported: they are
//! derived, and an import embeds the texts with the deployment's model
//! (reusing nothing from the source deployment), so an import into a
//! deployment with another model needs no extra step.
//!
//! An import verifies the whole file first (manifest, hash, counts, every
//! record's columns), then writes every row in one store transaction (ids,
//! statuses, versions, timestamps and histories kept; audit and message
//! sequence numbers are assigned anew, in order), then indexes the user's
//! active and pending memories through the engine's normal path. A file that
//! fails verification writes nothing. The whole file is held in memory
//! during an import.
//!
//! Consistency: an export reads table after table, not one snapshot; a user
//! writing during their own export may see a write in one table and not in
//! another.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use uuid::Uuid;

use crate::domain::validate::validate_id;
use crate::domain::Actor;
use crate::error::{Error, Result};
use crate::service::erasure::ErasureReceipt;
use crate::service::Engine;
use crate::store::tables::{ColumnType, Table, Value, USER_TABLES};
use crate::store::AuditAction;

/// The format of the records; bumped when a table's columns change.
pub const SCHEMA_VERSION: u32 = 1;

/// Rows read from the store per page.
const PAGE: usize = 500;

/// The record type of a user table's rows.
fn record_type(table: &str) -> &'static str {
    match table {
        "memories" => "memory",
        "audit_events" => "audit_event",
        "threads" => "thread",
        "messages" => "message",
        _ => "payload",
    }
}

/// The last line of an export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always `manifest`.
    #[serde(rename = "type")]
    pub record_type: String,
    pub schema_version: u32,
    pub tenant_id: String,
    pub user_id: String,
    /// The embedding model of the exporting deployment.
    pub embedding_model: String,
    pub exported_at: DateTime<Utc>,
    /// Records per type.
    pub counts: BTreeMap<String, u64>,
    /// Hex SHA-256 of every line before the manifest, each with its `\n`.
    pub sha256: String,
}

/// What an import wrote.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ImportReport {
    pub user_id: String,
    /// Records per type, as verified against the manifest.
    pub counts: BTreeMap<String, u64>,
    /// Rows written to the store.
    pub rows_written: u64,
    /// Active and pending memories embedded and indexed.
    pub indexed: usize,
    /// The export's model differs from this deployment's (the texts were
    /// embedded with this deployment's model either way).
    pub model_changed: bool,
    /// With `replace`: the erasure of the data the user had before.
    pub replaced: Option<ErasureReceipt>,
}

/// How an import treats a user who has data or was erased.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Erase the user's existing data first (with a receipt) instead of
    /// refusing.
    pub replace: bool,
    /// Import a user who was erased (a forget-all tombstone) instead of
    /// refusing: the admin says the data may come back.
    pub allow_erased: bool,
}

/// The ids of the memories of a (verified) export.
fn imported_memory_ids(tables: &[(&'static Table, Vec<Vec<Value>>)]) -> Vec<Uuid> {
    let Some((memories, rows)) = tables.iter().find(|(t, _)| t.name == "memories") else {
        return Vec::new();
    };
    let id_col = memories.key_positions()[0];
    rows.iter()
        .filter_map(|row| match &row[id_col] {
            Value::Text(s) => Uuid::parse_str(s).ok(),
            _ => None,
        })
        .collect()
}

/// A verified export: each user table's rows, in [`USER_TABLES`] order.
#[derive(Debug)]
pub struct Verified {
    pub manifest: Manifest,
    pub tables: Vec<(&'static Table, Vec<Vec<Value>>)>,
}

fn bad_file(message: impl Into<String>) -> Error {
    Error::invalid("file", message)
}

fn user_tables() -> impl Iterator<Item = &'static Table> {
    USER_TABLES.iter().filter_map(|name| Table::by_name(name))
}

/// One row as a record line (with its `\n`).
fn encode(table: &Table, row: &[Value]) -> Result<Vec<u8>> {
    let mut obj = serde_json::Map::new();
    obj.insert("type".into(), record_type(table.name).into());
    for ((name, ty), v) in table.columns.iter().zip(row) {
        let json = match (v, ty) {
            (Value::Null, _) => serde_json::Value::Null,
            (Value::Text(s), ColumnType::Json) => serde_json::from_str(s).map_err(|e| {
                Error::internal(format!("corrupt JSON in {}.{name}: {e}", table.name))
            })?,
            (Value::Text(s), _) => s.clone().into(),
            (Value::Int(n), _) => (*n).into(),
            (Value::Real(x), _) => serde_json::Number::from_f64(*x)
                .map(serde_json::Value::Number)
                .ok_or_else(|| Error::internal(format!("non-finite {}.{name}", table.name)))?,
            (Value::Bytes(b), _) => hex::encode(b).into(),
        };
        obj.insert((*name).into(), json);
    }
    let mut line = serde_json::to_vec(&obj).map_err(Error::internal)?;
    line.push(b'\n');
    Ok(line)
}

/// A record back into a row of `table`: every column present, no other.
fn decode(
    table: &Table,
    mut obj: serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<Value>> {
    obj.remove("type");
    let mut row = Vec::with_capacity(table.columns.len());
    for (name, ty) in table.columns {
        let v = obj
            .remove(*name)
            .ok_or_else(|| bad_file(format!("a {} record has no `{name}`", table.name)))?;
        let wrong = || bad_file(format!("a {} record has a malformed `{name}`", table.name));
        row.push(match (v, ty) {
            (serde_json::Value::Null, _) => Value::Null,
            (v, ColumnType::Json) => Value::Text(v.to_string()),
            (serde_json::Value::String(s), ColumnType::Text) => Value::Text(s),
            (serde_json::Value::String(s), ColumnType::Bytes) => {
                Value::Bytes(hex::decode(s).map_err(|_| wrong())?)
            }
            (serde_json::Value::Number(n), ColumnType::Int) => {
                Value::Int(n.as_i64().ok_or_else(wrong)?)
            }
            (serde_json::Value::Number(n), ColumnType::Real) => {
                Value::Real(n.as_f64().ok_or_else(wrong)?)
            }
            _ => return Err(wrong()),
        });
    }
    if let Some(extra) = obj.keys().next() {
        return Err(bad_file(format!(
            "a {} record has an unknown field `{extra}`",
            table.name
        )));
    }
    Ok(row)
}

/// Checks an export whole — manifest last, hash, schema version, counts,
/// every record — and decodes its rows. Writes nothing.
pub fn verify(data: &[u8]) -> Result<Verified> {
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let (records, manifest_line) = match body.iter().rposition(|&b| b == b'\n') {
        Some(i) => (&data[..=i], &body[i + 1..]),
        None => (&data[..0], body),
    };
    let manifest: Manifest = serde_json::from_slice(manifest_line).map_err(|e| {
        bad_file(format!(
            "the last line is not an export manifest ({e}): a truncated export?"
        ))
    })?;
    if manifest.record_type != "manifest" {
        return Err(bad_file("the last line is not an export manifest"));
    }
    if manifest.schema_version != SCHEMA_VERSION {
        return Err(bad_file(format!(
            "schema_version {} is not supported (this version reads {SCHEMA_VERSION})",
            manifest.schema_version
        )));
    }
    if hex::encode(Sha256::digest(records)) != manifest.sha256 {
        return Err(bad_file(
            "the records do not match the manifest's sha256: the file was changed or damaged",
        ));
    }
    let mut tables: Vec<(&'static Table, Vec<Vec<Value>>)> =
        user_tables().map(|t| (t, Vec::new())).collect();
    for (n, line) in records.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(line)
            .map_err(|e| bad_file(format!("line {} is not a JSON object: {e}", n + 1)))?;
        let ty = obj.get("type").and_then(|t| t.as_str()).unwrap_or_default();
        let (table, rows) = tables
            .iter_mut()
            .find(|(t, _)| record_type(t.name) == ty)
            .ok_or_else(|| bad_file(format!("line {} has an unknown type `{ty}`", n + 1)))?;
        rows.push(decode(table, obj)?);
    }
    let counts: BTreeMap<String, u64> = tables
        .iter()
        .map(|(t, rows)| (record_type(t.name).to_string(), rows.len() as u64))
        .collect();
    if counts != manifest.counts {
        return Err(bad_file(format!(
            "the records ({counts:?}) do not match the manifest's counts ({:?})",
            manifest.counts
        )));
    }
    Ok(Verified { manifest, tables })
}

/// Replaces the tenant and user of every row (an import into another user
/// or tenant).
fn retarget(tables: &mut [(&'static Table, Vec<Vec<Value>>)], tenant_id: &str, user_id: &str) {
    for (table, rows) in tables {
        let pos = |name: &str| table.columns.iter().position(|(c, _)| *c == name);
        let (Some(t), Some(u)) = (pos("tenant_id"), pos("user_id")) else {
            continue;
        };
        for row in rows {
            row[t] = Value::Text(tenant_id.to_string());
            row[u] = Value::Text(user_id.to_string());
        }
    }
}

impl Engine {
    /// Writes everything the store holds of a user of the actor's tenant as
    /// an export (module doc) to `out`, a page at a time; returns the
    /// manifest it wrote last. The user's own key and admin keys may;
    /// agent keys when the policy's `export.allow_agent_keys` says so.
    pub async fn export_user<W>(
        &self,
        actor: &Actor,
        user_id: &str,
        out: &mut W,
    ) -> Result<Manifest>
    where
        W: AsyncWrite + Unpin + Send,
    {
        self.export_user_reporting(actor, user_id, out, |_, _| {})
            .await
    }

    /// [`Engine::export_user`], telling `progress` each table's name and its
    /// rows written so far, at the table's start and after every page.
    pub async fn export_user_reporting<W>(
        &self,
        actor: &Actor,
        user_id: &str,
        out: &mut W,
        mut progress: impl FnMut(&'static str, u64) + Send,
    ) -> Result<Manifest>
    where
        W: AsyncWrite + Unpin + Send,
    {
        self.check_export(actor, user_id).await?;
        let tenant_id = actor.tenant_id.as_str();
        let mut hasher = Sha256::new();
        let mut counts = BTreeMap::new();
        for table in user_tables() {
            let mut n = 0u64;
            progress(table.name, n);
            let mut after: Option<Vec<Value>> = None;
            loop {
                let rows = self
                    .store()
                    .export_user_rows(table, tenant_id, user_id, after.as_deref(), PAGE)
                    .await?;
                let Some(last) = rows.last() else { break };
                after = Some(table.key_of(last));
                let mut page = Vec::new();
                for row in &rows {
                    page.extend(encode(table, row)?);
                }
                hasher.update(&page);
                out.write_all(&page).await.map_err(Error::internal)?;
                n += rows.len() as u64;
                progress(table.name, n);
                if rows.len() < PAGE {
                    break;
                }
            }
            counts.insert(record_type(table.name).to_string(), n);
        }
        let manifest = Manifest {
            record_type: "manifest".into(),
            schema_version: SCHEMA_VERSION,
            tenant_id: tenant_id.to_string(),
            user_id: user_id.to_string(),
            embedding_model: self.embedder().model_id().to_string(),
            exported_at: self.clock().now(),
            counts,
            sha256: hex::encode(hasher.finalize()),
        };
        let mut line = serde_json::to_vec(&manifest).map_err(Error::internal)?;
        line.push(b'\n');
        out.write_all(&line).await.map_err(Error::internal)?;
        out.flush().await.map_err(Error::internal)?;
        tracing::info!(
            records = manifest.counts.values().sum::<u64>(),
            "user exported"
        );
        Ok(manifest)
    }

    /// Whether the actor may export this user now: the user's own key,
    /// admin keys, agent keys if the policy allows; not during an erasure.
    pub async fn check_export(&self, actor: &Actor, user_id: &str) -> Result<()> {
        validate_id("user_id", user_id)?;
        self.may_export(actor, user_id)?;
        self.refuse_if_erasing(&actor.tenant_id, user_id).await
    }

    fn may_export(&self, actor: &Actor, user_id: &str) -> Result<()> {
        match &actor.user_id {
            Some(own) if own == user_id => Ok(()),
            Some(_) => Err(Error::Forbidden(
                "this key may only export its own user".into(),
            )),
            None if actor.admin || self.policy().export.allow_agent_keys => Ok(()),
            None => Err(Error::Forbidden(
                "agent keys may not export users' data (policy `export.allow_agent_keys`)".into(),
            )),
        }
    }

    async fn refuse_if_erasing(&self, tenant_id: &str, user_id: &str) -> Result<()> {
        let pending = self.store().pending_erasures().await?;
        if pending
            .iter()
            .any(|(t, u, _)| t == tenant_id && u == user_id)
        {
            return Err(Error::Conflict(
                "this user's data is being erased; retry when the erasure has completed".into(),
            ));
        }
        Ok(())
    }

    /// Restores an export (module doc) as `user_id` (default: the export's
    /// user) of the actor's tenant; admin keys only. Every record is checked
    /// as the write path checks it ([`crate::service::import_check`]) and
    /// every id it names must be free in the store (no other user's or
    /// tenant's thread or memory). Refused (`Conflict`) when the user has
    /// data already, unless `replace` (which erases it first, with a
    /// receipt); while the user is being erased; and when the user was
    /// erased (a tombstone), unless `allow_erased`. Each imported memory's
    /// history gains an `import` event by the actor.
    pub async fn import_user(
        &self,
        actor: &Actor,
        user_id: Option<&str>,
        data: &[u8],
        options: ImportOptions,
    ) -> Result<ImportReport> {
        self.import_user_reporting(actor, user_id, data, options, |_, _| {})
            .await
    }

    /// [`Engine::import_user`], telling `progress` the memories indexed so
    /// far and how many there are to index (embedding them is the long
    /// part), after every page.
    pub async fn import_user_reporting(
        &self,
        actor: &Actor,
        user_id: Option<&str>,
        data: &[u8],
        options: ImportOptions,
        progress: impl FnMut(u64, u64) + Send,
    ) -> Result<ImportReport> {
        if !actor.admin {
            return Err(Error::Forbidden(
                "only admin keys may import users' data".into(),
            ));
        }
        let Verified {
            manifest,
            mut tables,
        } = verify(data)?;
        crate::service::import_check::check_records(&tables, self.policy().limits())?;
        let user_id = user_id.unwrap_or(&manifest.user_id).to_string();
        validate_id("user_id", &user_id)?;
        let tenant_id = actor.tenant_id.clone();
        self.refuse_if_erasing(&tenant_id, &user_id).await?;
        if !options.allow_erased
            && self
                .store()
                .last_erasure(&tenant_id, &user_id)
                .await?
                .is_some()
        {
            return Err(Error::Conflict(
                "this user was erased (forget-all); importing would bring the data back: \
                 import with allow_erased (`--allow-erased`) to do so deliberately"
                    .into(),
            ));
        }
        retarget(&mut tables, &tenant_id, &user_id);
        // Before `replace` erases anything: a file naming someone else's
        // ids costs the user nothing.
        self.store()
            .refuse_foreign_ids(&tenant_id, &user_id, &tables)
            .await?;
        let had = self.store().user_footprint(&tenant_id, &user_id).await?;
        let has_data = had.memories + had.audit_events + had.threads + had.messages > 0;
        let replaced = match (has_data, options.replace) {
            (false, _) => None,
            (true, true) => Some(self.forget_user(actor, &user_id).await?),
            (true, false) => {
                return Err(Error::Conflict(
                    "the user already has data; import with replace to erase it first".into(),
                ))
            }
        };
        let ids = imported_memory_ids(&tables);
        self.audit_import(&mut tables, actor, &user_id, &ids, &manifest, options)?;
        let rows_written = self
            .store()
            .import_user_rows(&tenant_id, &user_id, &tables)
            .await?;
        let indexed = self.index_imported(&ids, progress).await?;
        tracing::info!(
            rows_written,
            indexed,
            allow_erased = options.allow_erased,
            replaced = replaced.is_some(),
            "user imported"
        );
        Ok(ImportReport {
            user_id,
            counts: manifest.counts.clone(),
            rows_written,
            indexed,
            model_changed: manifest.embedding_model != self.embedder().model_id(),
            replaced,
        })
    }

    /// Adds an `import` event by the actor to the history of every imported
    /// memory, after the events the file brings: written in the import's
    /// transaction, so the import is on record exactly when it happened.
    fn audit_import(
        &self,
        tables: &mut [(&'static Table, Vec<Vec<Value>>)],
        actor: &Actor,
        user_id: &str,
        ids: &[Uuid],
        manifest: &Manifest,
        options: ImportOptions,
    ) -> Result<()> {
        let Some((audit, rows)) = tables.iter_mut().find(|(t, _)| t.name == "audit_events") else {
            return Err(Error::internal(
                "no audit_events table among the user tables",
            ));
        };
        let details = serde_json::json!({
            "exported_at": manifest.exported_at,
            "embedding_model": manifest.embedding_model,
            "replace": options.replace,
            "allow_erased": options.allow_erased,
        })
        .to_string();
        let at = self.clock().now().timestamp_millis();
        for id in ids {
            let row = audit
                .columns
                .iter()
                .map(|(c, _)| match *c {
                    "seq" => Value::Int(0),
                    "memory_id" => Value::Text(id.to_string()),
                    "tenant_id" => Value::Text(actor.tenant_id.clone()),
                    "user_id" => Value::Text(user_id.to_string()),
                    "action" => Value::Text(AuditAction::Import.as_str().into()),
                    "actor" => Value::Text(actor.id.clone()),
                    "at" => Value::Int(at),
                    "details" => Value::Text(details.clone()),
                    _ => Value::Null,
                })
                .collect();
            rows.push(row);
        }
        Ok(())
    }

    /// Embeds (with this deployment's model, through the embedding cache)
    /// and indexes the imported memories the indexes should hold.
    async fn index_imported(
        &self,
        ids: &[Uuid],
        mut progress: impl FnMut(u64, u64) + Send,
    ) -> Result<usize> {
        let mut indexed = 0;
        let total = ids.len() as u64;
        for (i, chunk) in ids.chunks(PAGE).enumerate() {
            progress((i * PAGE) as u64, total);
            let found = self.store().get_many(chunk).await?;
            let mems: Vec<_> = chunk
                .iter()
                .filter_map(|id| found.get(id))
                .filter(|m| m.status.is_indexed())
                .cloned()
                .collect();
            if mems.is_empty() {
                continue;
            }
            let vectors = self.embed_passages(&mems).await?;
            self.index(&mems, vectors, false).await;
            indexed += mems.len();
        }
        progress(total, total);
        self.commit().await?;
        Ok(indexed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memories() -> &'static Table {
        Table::by_name("memories").unwrap()
    }

    #[test]
    fn a_row_round_trips_through_a_record() {
        let t = memories();
        let row: Vec<Value> = t
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, ty))| match ty {
                ColumnType::Text => Value::Text(format!("t{i}")),
                ColumnType::Int => Value::Int(i as i64 * 1_000_000_007),
                ColumnType::Real => Value::Real(0.1 + i as f64),
                ColumnType::Json => Value::Text(r#"{"a":[1,2]}"#.into()),
                ColumnType::Bytes => Value::Bytes(vec![1, 2, 255]),
            })
            .collect();
        let mut row_with_null = row.clone();
        row_with_null[3] = Value::Null;
        for r in [row, row_with_null] {
            let line = encode(t, &r).unwrap();
            assert_eq!(line.last(), Some(&b'\n'));
            let obj = serde_json::from_slice(&line).unwrap();
            assert_eq!(decode(t, obj).unwrap(), r);
        }
    }

    #[test]
    fn a_record_with_a_missing_or_unknown_field_is_refused() {
        let t = memories();
        let row: Vec<Value> = t.columns.iter().map(|_| Value::Null).collect();
        let obj: serde_json::Map<_, _> = serde_json::from_slice(&encode(t, &row).unwrap()).unwrap();
        let mut missing = obj.clone();
        missing.remove("text");
        assert!(decode(t, missing).is_err());
        let mut extra = obj;
        extra.insert("vector".into(), serde_json::Value::Null);
        assert!(decode(t, extra).is_err());
    }

    fn export_of(lines: &[Vec<u8>], counts: &[(&str, u64)]) -> Vec<u8> {
        let records: Vec<u8> = lines.concat();
        let mut all_counts: BTreeMap<String, u64> = user_tables()
            .map(|t| (record_type(t.name).to_string(), 0))
            .collect();
        for (k, n) in counts {
            all_counts.insert(k.to_string(), *n);
        }
        let manifest = Manifest {
            record_type: "manifest".into(),
            schema_version: SCHEMA_VERSION,
            tenant_id: "t".into(),
            user_id: "u".into(),
            embedding_model: "m".into(),
            exported_at: Utc::now(),
            counts: all_counts,
            sha256: hex::encode(Sha256::digest(&records)),
        };
        let mut out = records;
        out.extend(serde_json::to_vec(&manifest).unwrap());
        out.push(b'\n');
        out
    }

    #[test]
    fn verify_checks_hash_counts_and_truncation() {
        let t = memories();
        let row: Vec<Value> = t.columns.iter().map(|_| Value::Null).collect();
        let line = encode(t, &row).unwrap();
        let good = export_of(std::slice::from_ref(&line), &[("memory", 1)]);
        let v = verify(&good).unwrap();
        assert_eq!(v.tables[0].1.len(), 1);
        assert_eq!(v.manifest.counts["memory"], 1);
        // Wrong counts.
        assert!(verify(&export_of(std::slice::from_ref(&line), &[("memory", 2)])).is_err());
        // A changed byte.
        let mut tampered = good.clone();
        let i = tampered.iter().position(|&b| b == b'n').unwrap();
        tampered[i] = b'N';
        assert!(verify(&tampered).is_err());
        // Truncated: no manifest last.
        assert!(verify(&good[..line.len()]).is_err());
        // Empty export (a user with no data) is valid.
        assert!(verify(&export_of(&[], &[])).is_ok());
    }
}
