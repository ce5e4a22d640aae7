//! An import is a trust boundary: every column of every record is checked
//! as the write path checks it before a row reaches the store (and, from
//! there, the change feed, the weekly cleanup and the start-up repair, which
//! all take the store's rows for well-formed). Pure: no I/O; the store then
//! checks that no id the file names belongs to anyone else
//! ([`crate::store::TableCopy::import_user_rows`]).
//!
//! What is checked, per record type:
//! - ids (`memory.id`, `thread.id`, `payload.id`, and every reference to
//!   them) are UUIDs in their canonical text form;
//! - enums (`tier` — a user's tier, never `reference` —, `kind`, `status`,
//!   `action`, `role`, `extraction_state`) are values the write path
//!   produces;
//! - texts and metadata within the policy's limits (`limits.max_text_bytes`,
//!   `limits.max_metadata_bytes`, `limits.max_metadata_depth`), `text_sha256`
//!   the hash of `text`, scores in 0..=1, counts and versions not negative,
//!   times in 0..=9999-12-31;
//! - JSON columns (`source`, `metadata`, `details`, `summary`, `tool`,
//!   `payload`) of the shape the read path decodes;
//! - references within the file: a message's or payload's thread, a tool
//!   message's payload, a memory's `supersedes`/`superseded_by`, an audit
//!   event's memory. Two references may name a memory the file does not
//!   hold, because the weekly cleanup purges deleted memories and keeps
//!   their history: a `supersedes`/`superseded_by` link, and an audit event
//!   without texts (what the purge leaves). The store refuses those too
//!   when the id exists there at all.

use std::collections::HashSet;

use crate::domain::memory::Source;
use crate::domain::thread::{ExtractionState, MessageRole, Summary, ToolSummary};
use crate::domain::validate::{validate_existing_id, validate_metadata, validate_text, Limits};
use crate::domain::{Kind, Status, Tier};
use crate::error::{Error, Result};
use crate::store::tables::{Table, Value};
use crate::store::{text_hash, AuditAction};

/// The latest time a record may carry (9999-12-31T23:59:59.999Z), in epoch
/// milliseconds: the read path turns times into dates.
const MAX_TIME_MS: i64 = 253_402_300_799_999;

/// The largest JSON or text cell the write path does not bound by the
/// policy (a thread summary, an audit event's details, an assistant's
/// reply): the import route's whole body is bounded anyway, this keeps one
/// cell from being most of it.
pub const MAX_CELL_BYTES: usize = crate::policy::MAX_TOOL_PAYLOAD_BYTES;

/// Checks every record of a verified export (module doc). The error names
/// the record type, its position among its type and the column, never the
/// value.
pub fn check_records(tables: &[(&'static Table, Vec<Vec<Value>>)], limits: Limits) -> Result<()> {
    let rows_of = |name: &str| {
        tables
            .iter()
            .find(|(t, _)| t.name == name)
            .map(|(t, rows)| (*t, rows.as_slice()))
    };
    let ids_of = |name: &str| -> Result<HashSet<String>> {
        let mut ids = HashSet::new();
        if let Some((table, rows)) = rows_of(name) {
            for (n, row) in rows.iter().enumerate() {
                let r = Record { table, row, n };
                if !ids.insert(r.uuid("id")?) {
                    return Err(r.bad("id", "is the id of another record of the file"));
                }
            }
        }
        Ok(ids)
    };
    let memories = ids_of("memories")?;
    let threads = ids_of("threads")?;
    let payloads = ids_of("message_payloads")?;
    for (table, rows) in tables {
        for (n, row) in rows.iter().enumerate() {
            let r = Record { table, row, n };
            if row.len() != table.columns.len() {
                return Err(r.bad("type", "has the wrong number of columns"));
            }
            match table.name {
                "memories" => r.memory(limits)?,
                "audit_events" => r.audit_event(&memories, limits)?,
                "threads" => r.thread(limits)?,
                "messages" => r.message(&threads, &payloads, limits)?,
                "message_payloads" => r.payload(&threads)?,
                other => {
                    return Err(Error::internal(format!(
                        "no import check for table {other}"
                    )))
                }
            }
        }
    }
    Ok(())
}

/// One record being checked.
struct Record<'a> {
    table: &'a Table,
    row: &'a [Value],
    /// Its position among the file's records of its type (0-based).
    n: usize,
}

impl Record<'_> {
    fn bad(&self, column: &str, why: impl std::fmt::Display) -> Error {
        let ty = match self.table.name {
            "memories" => "memory",
            "audit_events" => "audit_event",
            "threads" => "thread",
            "messages" => "message",
            _ => "payload",
        };
        Error::invalid(
            "file",
            format!("{ty} record {}: `{column}` {why}", self.n + 1),
        )
    }

    fn cell(&self, column: &str) -> &Value {
        self.table
            .columns
            .iter()
            .position(|(c, _)| *c == column)
            .and_then(|i| self.row.get(i))
            .unwrap_or(&Value::Null)
    }

    fn opt_text(&self, column: &str) -> Result<Option<&str>> {
        match self.cell(column) {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s)),
            _ => Err(self.bad(column, "is not text")),
        }
    }

    fn text(&self, column: &str) -> Result<&str> {
        self.opt_text(column)?
            .ok_or_else(|| self.bad(column, "is missing"))
    }

    /// A text the write path does not bound by the policy.
    fn bounded(&self, column: &str, max: usize) -> Result<Option<&str>> {
        let t = self.opt_text(column)?;
        if let Some(t) = t {
            if t.len() > max {
                return Err(self.bad(column, format!("is over {max} bytes")));
            }
            if t.contains('\0') {
                return Err(self.bad(column, "holds a NUL character"));
            }
        }
        Ok(t)
    }

    /// A text checked as the write path checks a memory's or message's text.
    fn checked_text(&self, column: &str, limits: Limits) -> Result<&str> {
        let t = self.text(column)?;
        validate_text(t, limits).map_err(|e| self.bad(column, reason(e)))?;
        Ok(t)
    }

    fn opt_uuid(&self, column: &str) -> Result<Option<String>> {
        let Some(s) = self.opt_text(column)? else {
            return Ok(None);
        };
        match uuid::Uuid::parse_str(s) {
            // The canonical form only: the store compares ids as text.
            Ok(u) if u.hyphenated().to_string() == s => Ok(Some(s.to_string())),
            _ => Err(self.bad(column, "is not a UUID in canonical form")),
        }
    }

    fn uuid(&self, column: &str) -> Result<String> {
        self.opt_uuid(column)?
            .ok_or_else(|| self.bad(column, "is missing"))
    }

    fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        match self.cell(column) {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            _ => Err(self.bad(column, "is not an integer")),
        }
    }

    fn count(&self, column: &str, min: i64, max: i64) -> Result<i64> {
        match self.opt_int(column)? {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            Some(_) => Err(self.bad(column, format!("is not in {min}..={max}"))),
            None => Err(self.bad(column, "is missing")),
        }
    }

    fn opt_time(&self, column: &str) -> Result<()> {
        match self.opt_int(column)? {
            Some(ms) if !(0..=MAX_TIME_MS).contains(&ms) => {
                Err(self.bad(column, "is not a time between 1970 and 9999"))
            }
            _ => Ok(()),
        }
    }

    fn time(&self, column: &str) -> Result<()> {
        self.count(column, 0, MAX_TIME_MS).map(drop)
    }

    fn unit(&self, column: &str, required: bool) -> Result<()> {
        match self.cell(column) {
            Value::Real(x) if (0.0..=1.0).contains(x) => Ok(()),
            Value::Null if !required => Ok(()),
            _ => Err(self.bad(column, "is not a number between 0 and 1")),
        }
    }

    /// A JSON column decoded as `T`, within `max` bytes.
    fn json<T: serde::de::DeserializeOwned>(&self, column: &str, max: usize) -> Result<Option<T>> {
        let Some(t) = self.bounded(column, max)? else {
            return Ok(None);
        };
        serde_json::from_str(t)
            .map(Some)
            .map_err(|_| self.bad(column, "is not of the expected JSON shape"))
    }

    fn parsed<T>(&self, column: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T> {
        parse(self.text(column)?).ok_or_else(|| self.bad(column, "is not a known value"))
    }

    fn memory(&self, limits: Limits) -> Result<()> {
        let tier: Tier = self.parsed("tier", |s| s.parse().ok())?;
        if !tier.is_user_tier() {
            return Err(self.bad("tier", "is not a user's tier"));
        }
        self.parsed("kind", |s| s.parse::<Kind>().ok())?;
        self.parsed("status", |s| s.parse::<Status>().ok())?;
        if let Some(t) = self.opt_text("thread_id")? {
            validate_existing_id("thread_id", t).map_err(|e| self.bad("thread_id", reason(e)))?;
        }
        let text = self.checked_text("text", limits)?;
        if self.text("text_sha256")? != text_hash(text) {
            return Err(self.bad("text_sha256", "is not the SHA-256 of `text`"));
        }
        self.unit("importance", true)?;
        self.unit("confidence", true)?;
        self.unit("base_importance", false)?;
        for t in ["created_at", "updated_at"] {
            self.time(t)?;
        }
        for t in ["last_accessed_at", "expires_at", "cooled_at"] {
            self.opt_time(t)?;
        }
        self.count("access_count", 0, i64::MAX)?;
        self.count("version", 1, i64::MAX)?;
        self.json::<Source>("source", limits.max_metadata_bytes)?
            .ok_or_else(|| self.bad("source", "is missing"))?;
        let metadata: serde_json::Map<String, serde_json::Value> = self
            .json("metadata", MAX_CELL_BYTES)?
            .ok_or_else(|| self.bad("metadata", "is missing"))?;
        validate_metadata(&metadata, limits).map_err(|e| self.bad("metadata", reason(e)))?;
        if let Some(m) = self.bounded("embedding_model", 256)? {
            validate_existing_id("embedding_model", m)
                .map_err(|e| self.bad("embedding_model", reason(e)))?;
        }
        self.opt_uuid("supersedes")?;
        self.opt_uuid("superseded_by")?;
        Ok(())
    }

    fn audit_event(&self, memories: &HashSet<String>, limits: Limits) -> Result<()> {
        self.count("seq", 1, i64::MAX)?;
        let memory = self.uuid("memory_id")?;
        self.parsed("action", AuditAction::parse)?;
        validate_existing_id("actor", self.text("actor")?)
            .map_err(|e| self.bad("actor", reason(e)))?;
        self.time("at")?;
        let mut texts = 0;
        for t in ["before_text", "after_text"] {
            texts += usize::from(self.bounded(t, limits.max_text_bytes)?.is_some());
        }
        // A purged memory's history stays, without its texts (module doc).
        if !memories.contains(&memory) && texts > 0 {
            return Err(self.bad(
                "memory_id",
                "names a memory the file does not hold (only a purged memory's history, \
                 without texts, may)",
            ));
        }
        self.json::<serde_json::Value>("details", MAX_CELL_BYTES)?
            .ok_or_else(|| self.bad("details", "is missing"))?;
        Ok(())
    }

    fn thread(&self, limits: Limits) -> Result<()> {
        if self.opt_text("goal")?.is_some() {
            self.checked_text("goal", limits)?;
        }
        self.json::<Summary>("summary", MAX_CELL_BYTES)?
            .ok_or_else(|| self.bad("summary", "is missing"))?;
        self.count("summary_upto_seq", 0, i64::MAX)?;
        for t in ["created_at", "updated_at", "last_activity_at"] {
            self.time(t)?;
        }
        for t in ["last_compacted_at", "turn_until"] {
            self.opt_time(t)?;
        }
        if let Some(h) = self.opt_text("turn_holder")? {
            validate_existing_id("turn_holder", h)
                .map_err(|e| self.bad("turn_holder", reason(e)))?;
        }
        Ok(())
    }

    fn message(
        &self,
        threads: &HashSet<String>,
        payloads: &HashSet<String>,
        limits: Limits,
    ) -> Result<()> {
        self.count("seq", 1, i64::MAX)?;
        self.of_thread(threads)?;
        let role = self.parsed("role", MessageRole::parse)?;
        match role {
            // Assistant messages come from the chat model, not bounded by
            // the policy's text limit.
            MessageRole::Assistant => {
                self.bounded("content", MAX_CELL_BYTES)?;
                self.text("content")?;
            }
            _ => {
                self.checked_text("content", limits)?;
            }
        }
        let tool: Option<ToolSummary> = self.json("tool", limits.max_text_bytes)?;
        match (role, tool) {
            (MessageRole::Tool, Some(tool)) => {
                if let Some(p) = tool.payload_id {
                    if !payloads.contains(&p.to_string()) {
                        return Err(self.bad("tool", "names a payload the file does not hold"));
                    }
                }
            }
            (MessageRole::Tool, None) => {}
            (_, Some(_)) => {
                return Err(self.bad("tool", "is set on a message that is not a tool's"))
            }
            (_, None) => {}
        }
        self.time("created_at")?;
        self.parsed("extraction_state", ExtractionState::parse)?;
        self.opt_time("extraction_until")?;
        self.count("compacted", 0, 1)?;
        Ok(())
    }

    fn payload(&self, threads: &HashSet<String>) -> Result<()> {
        self.of_thread(threads)?;
        self.json::<serde_json::Value>("payload", MAX_CELL_BYTES)?
            .ok_or_else(|| self.bad("payload", "is missing"))?;
        self.time("created_at")
    }

    fn of_thread(&self, threads: &HashSet<String>) -> Result<()> {
        if threads.contains(&self.uuid("thread_id")?) {
            Ok(())
        } else {
            Err(self.bad("thread_id", "names a thread the file does not hold"))
        }
    }
}

/// What a validation error says, without its field (the record names it).
fn reason(e: Error) -> String {
    match e {
        Error::Invalid { message, .. } | Error::TooLarge { message, .. } => message,
        other => other.to_string(),
    }
}
