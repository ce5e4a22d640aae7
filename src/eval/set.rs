//! Evaluation sets: a directory holding `corpus.jsonl`, `queries.jsonl` and
//! `qrels.tsv` in the format of the shared evaluation data (see
//! `eval_sets/README.md`). Loading validates everything before any engine is
//! opened; every problem names its file and line.
//!
//! Corpus lines are parsed by the same [`CorpusLine`] as `mnemo ingest`, so an
//! eval set and an ingested corpus mean the same thing.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, TimeZone, Utc};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::metrics::Judgments;
use super::{Error, Result};
use crate::domain::corpus::CorpusLine;
use crate::domain::{NewMemory, Tier};

pub const CORPUS: &str = "corpus.jsonl";
pub const QUERIES: &str = "queries.jsonl";
pub const QRELS: &str = "qrels.tsv";

/// The clock for sets without any date (the shared data's constant).
pub fn undated() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap()
}

/// One corpus document, ready to ingest.
#[derive(Debug, Clone)]
pub struct Doc {
    pub id: String,
    /// `None` for reference documents (shared by every user).
    pub user_id: Option<String>,
    pub memory: NewMemory,
    /// The `--group-by` value, when asked for and present.
    pub group: Option<String>,
}

/// One query line.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Query {
    pub id: String,
    pub text: String,
    pub user_id: String,
    #[serde(default)]
    pub asked_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// A loaded, validated set.
#[derive(Debug, Clone)]
pub struct EvalSet {
    /// The directory's name: how reports refer to the set.
    pub name: String,
    pub dir: PathBuf,
    pub docs: Vec<Doc>,
    pub queries: Vec<Query>,
    /// Query id → judged documents.
    pub qrels: HashMap<String, Judgments>,
    /// SHA-256 of `corpus.jsonl ‖ queries.jsonl ‖ qrels.tsv`, i.e.
    /// `cat corpus.jsonl queries.jsonl qrels.tsv | sha256sum`.
    pub data_sha256: String,
    /// The `--group-by` field, when at least one document has it.
    pub group_by: Option<String>,
    /// The `--thread-by` field, when at least one document has it.
    pub thread_by: Option<String>,
    /// Documents that are turns of a conversation (a `thread_id` of their
    /// own or from `--thread-by`).
    pub threaded: usize,
    /// Lines left out (lenient loading only).
    pub skipped: Vec<Skipped>,
}

impl EvalSet {
    /// The latest `created_at` of the corpus: the clock of queries without
    /// `asked_at` (the undated constant when no document has a date).
    pub fn default_asked_at(&self) -> DateTime<Utc> {
        self.docs
            .iter()
            .filter_map(|d| d.memory.created_at)
            .max()
            .unwrap_or_else(undated)
    }

    /// Queries that have at least one relevant judgment (the evaluated ones).
    pub fn judged_queries(&self) -> impl Iterator<Item = &Query> {
        self.queries.iter().filter(|q| {
            self.qrels
                .get(&q.id)
                .is_some_and(|j| j.values().any(|r| *r > 0))
        })
    }
}

fn set_error(file: &Path, line: Option<usize>, message: impl Into<String>) -> Error {
    Error::Set {
        file: file.to_path_buf(),
        line,
        message: message.into(),
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| set_error(path, None, format!("cannot read: {e}")))
}

/// Non-blank lines with their 1-based numbers, as UTF-8.
fn lines<'a>(path: &'a Path, bytes: &'a [u8]) -> impl Iterator<Item = Result<(usize, &'a str)>> {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(move |(i, l)| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            std::str::from_utf8(l)
                .map(|s| (i + 1, s))
                .map_err(|e| set_error(path, Some(i + 1), format!("invalid UTF-8: {e}")))
        })
}

/// The value at a dotted path (`meta.session_key`) of a JSON line, as text.
pub fn field_at(line: &serde_json::Value, dotted: &str) -> Option<String> {
    let v = dotted.split('.').try_fold(line, |v, part| v.get(part))?;
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A line left out of a set loaded leniently, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    /// The file name within the set (`corpus.jsonl`, …) and 1-based line.
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Loads and validates a set, strictly: the first bad line is an error.
/// `group_by` is a dotted path into corpus lines.
pub fn load(dir: &Path, group_by: Option<&str>) -> Result<EvalSet> {
    load_with(dir, group_by, None, None, true)
}

/// Loads a set; when `strict` is false a bad line (malformed JSON, a
/// duplicate or unknown id, a judgment no query could reach) is left out and
/// listed in [`EvalSet::skipped`] instead of ending the run. Unreadable files
/// are errors either way. `thread_by` is a dotted path whose value, within a
/// user, names the conversation a document is a turn of (LoCoMo's
/// `meta.session`), as a `thread_id` field of the line would. `asked_at_by`
/// is a dotted path into query lines whose RFC 3339 value is the query's
/// time when the line has no `asked_at` (LoCoMo's
/// `meta.conversation_end_at`).
pub fn load_with(
    dir: &Path,
    group_by: Option<&str>,
    thread_by: Option<&str>,
    asked_at_by: Option<&str>,
    strict: bool,
) -> Result<EvalSet> {
    let (corpus_path, queries_path, qrels_path) =
        (dir.join(CORPUS), dir.join(QUERIES), dir.join(QRELS));
    let (corpus, queries, qrels) = (
        read(&corpus_path)?,
        read(&queries_path)?,
        read(&qrels_path)?,
    );
    let mut hasher = Sha256::new();
    for bytes in [&corpus, &queries, &qrels] {
        hasher.update(bytes);
    }
    let mut skipped = Vec::new();
    // A line's error: returned when strict, recorded otherwise.
    let mut keep_going = |e: Error| -> Result<()> {
        match e {
            Error::Set {
                file,
                line: Some(line),
                message,
            } if !strict => {
                skipped.push(Skipped {
                    file: file
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    line,
                    message,
                });
                Ok(())
            }
            e => Err(e),
        }
    };

    // corpus.jsonl
    let mut docs = Vec::new();
    let mut doc_line: HashMap<String, usize> = HashMap::new();
    let (mut grouped, mut threaded) = (0usize, 0usize);
    for l in lines(&corpus_path, &corpus) {
        let parsed = l.and_then(|(n, text)| {
            let err = |m: String| set_error(&corpus_path, Some(n), m);
            let line: CorpusLine = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
            if let Some(first) = doc_line.get(&line.id) {
                return Err(err(format!(
                    "duplicate document id `{}` (first on line {first})",
                    line.id
                )));
            }
            let raw: Option<serde_json::Value> = if group_by.is_some() || thread_by.is_some() {
                Some(serde_json::from_str(text).map_err(|e| err(e.to_string()))?)
            } else {
                None
            };
            let at = |path: Option<&str>| field_at(raw.as_ref()?, path?);
            let group = at(group_by);
            let id = line.id.clone();
            let user_id = line.user_id.clone();
            let mut memory = line.into_new_memory().map_err(|e| err(e.to_string()))?;
            if memory.thread_id.is_none() && memory.tier == Some(Tier::LongTerm) {
                memory.thread_id = at(thread_by);
            }
            if memory.text.trim().is_empty() {
                return Err(err(format!("document `{id}` has empty text")));
            }
            let user_id = match memory.tier {
                Some(Tier::Reference) => None,
                Some(Tier::LongTerm) => Some(user_id.ok_or_else(|| {
                    err(format!(
                        "document `{id}` has no user_id (only reference documents may omit it)"
                    ))
                })?),
                _ => {
                    return Err(err(format!(
                        "document `{id}`: memory_type must be `long_term` or `reference`"
                    )))
                }
            };
            Ok((
                n,
                Doc {
                    id,
                    user_id,
                    memory,
                    group,
                },
            ))
        });
        match parsed {
            Ok((n, doc)) => {
                doc_line.insert(doc.id.clone(), n);
                grouped += usize::from(doc.group.is_some());
                threaded += usize::from(doc.memory.thread_id.is_some());
                docs.push(doc);
            }
            Err(e) => keep_going(e)?,
        }
    }

    // queries.jsonl
    let mut parsed_queries = Vec::new();
    let mut query_line: HashMap<String, usize> = HashMap::new();
    for l in lines(&queries_path, &queries) {
        let parsed = l.and_then(|(n, text)| {
            let err = |m: String| set_error(&queries_path, Some(n), m);
            let mut q: Query = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
            if let (None, Some(path)) = (q.asked_at, asked_at_by) {
                let raw: serde_json::Value =
                    serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
                if let Some(value) = field_at(&raw, path) {
                    let at = DateTime::parse_from_rfc3339(&value).map_err(|e| {
                        err(format!(
                            "query `{}`: `{path}` is not an RFC 3339 time ({e})",
                            q.id
                        ))
                    })?;
                    q.asked_at = Some(at.with_timezone(&Utc));
                }
            }
            if let Some(first) = query_line.get(&q.id) {
                return Err(err(format!(
                    "duplicate query id `{}` (first on line {first})",
                    q.id
                )));
            }
            if q.text.trim().is_empty() {
                return Err(err(format!("query `{}` has empty text", q.id)));
            }
            Ok((n, q))
        });
        match parsed {
            Ok((n, q)) => {
                query_line.insert(q.id.clone(), n);
                parsed_queries.push(q);
            }
            Err(e) => keep_going(e)?,
        }
    }

    // qrels.tsv
    let doc_user: HashMap<&str, Option<&str>> = docs
        .iter()
        .map(|d| (d.id.as_str(), d.user_id.as_deref()))
        .collect();
    let query_user: HashMap<&str, &str> = parsed_queries
        .iter()
        .map(|q| (q.id.as_str(), q.user_id.as_str()))
        .collect();
    let mut judged: HashMap<String, Judgments> = HashMap::new();
    let mut pairs: HashSet<(String, String)> = HashSet::new();
    for l in lines(&qrels_path, &qrels) {
        let parsed = l.and_then(|(n, text)| {
            let err = |m: String| set_error(&qrels_path, Some(n), m);
            let fields: Vec<&str> = text.split('\t').collect();
            let [qid, did, rel] = fields[..] else {
                return Err(err(format!(
                    "expected `query_id<TAB>doc_id<TAB>relevance`, found {} field(s)",
                    fields.len()
                )));
            };
            let rel: u32 = rel.trim().parse().map_err(|_| {
                err(format!(
                    "relevance must be a non-negative integer, found `{rel}`"
                ))
            })?;
            let Some(quser) = query_user.get(qid) else {
                return Err(err(format!("unknown query id `{qid}` (not in {QUERIES})")));
            };
            let Some(duser) = doc_user.get(did) else {
                return Err(err(format!(
                    "unknown document id `{did}` (not in {CORPUS})"
                )));
            };
            if let Some(duser) = duser {
                if duser != quser {
                    return Err(err(format!(
                        "document `{did}` belongs to user `{duser}` but query `{qid}` is asked by `{quser}`; \
                         retrieval is scoped to the query's user, so it could never be found"
                    )));
                }
            }
            if pairs.contains(&(qid.to_string(), did.to_string())) {
                return Err(err(format!("duplicate judgment for `{qid}` → `{did}`")));
            }
            Ok((qid.to_string(), did.to_string(), rel))
        });
        match parsed {
            Ok((qid, did, rel)) => {
                pairs.insert((qid.clone(), did.clone()));
                judged.entry(qid).or_default().insert(did, rel);
            }
            Err(e) => keep_going(e)?,
        }
    }

    let name = dir
        .canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    Ok(EvalSet {
        name,
        dir: dir.to_path_buf(),
        docs,
        queries: parsed_queries,
        qrels: judged,
        data_sha256: hex::encode(hasher.finalize()),
        group_by: group_by.filter(|_| grouped > 0).map(str::to_string),
        thread_by: thread_by.filter(|_| threaded > 0).map(str::to_string),
        threaded,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_at_follows_dotted_paths() {
        let v = serde_json::json!({"user_id": "u", "meta": {"s": 3, "k": "a", "n": null}});
        assert_eq!(field_at(&v, "meta.s").as_deref(), Some("3"));
        assert_eq!(field_at(&v, "meta.k").as_deref(), Some("a"));
        assert_eq!(field_at(&v, "user_id").as_deref(), Some("u"));
        assert_eq!(field_at(&v, "meta.n"), None);
        assert_eq!(field_at(&v, "meta.missing"), None);
    }
}
