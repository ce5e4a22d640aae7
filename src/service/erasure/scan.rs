//! Proof of erasure on disk: scans every file under a data directory for
//! byte patterns of an erased user (their raw id, the owner key and hashed
//! values the indexes carry, and whatever else the caller knows: thread ids,
//! memory texts, vector bytes), and reports each hit by store.
//!
//! Counts (`verify_erasure`) say what the stores *answer*; this says what the
//! files *hold*, deleted-but-not-reclaimed pages, WAL records and
//! segments marked deleted included. `mnemo verify-erasure` runs it over the
//! data directory; the erasure tests run it with the texts, thread ids and
//! vectors they wrote.
//!
//! Plain synchronous file I/O: call it off the async runtime. Files are read
//! in 8 MiB chunks overlapping by the longest needle, so memory stays bounded
//! whatever the file sizes; one pass of a multi-pattern matcher per chunk.
//!
//! The SQLite files (`mnemo.db`, `-wal`, `-shm`) are never opened and
//! closed here: closing any descriptor of a file drops every POSIX lock the
//! process holds on it, so a scan run inside `mnemo serve` would drop the
//! server's SQLite locks, and the next process to open the database (`mnemo
//! keys list`) would take itself for the last one and delete the WAL under
//! the server. They are read through the store's kept handles
//! ([`crate::store::sqlite::kept_file`]: opened once, never closed while the
//! file has a name).

use std::io::Read;
use std::path::{Path, PathBuf};

use regex::bytes::RegexSet;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::Owner;
use crate::error::{Error, Result};

const CHUNK: usize = 8 << 20;

/// One byte pattern to look for, with a label that says what it is (never
/// the pattern itself: reports and logs must not echo user data).
#[derive(Clone, Debug)]
pub struct Needle {
    pub label: String,
    pub bytes: Vec<u8>,
}

impl Needle {
    pub fn new(label: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Needle {
            label: label.into(),
            bytes: bytes.into(),
        }
    }

    /// A text as UTF-8 bytes.
    pub fn text(label: impl Into<String>, text: &str) -> Self {
        Needle::new(label, text.as_bytes())
    }

    /// The little-endian bytes of a vector's first `n` components, as the
    /// vector index stores them.
    pub fn vector_prefix(label: impl Into<String>, v: &[f32], n: usize) -> Self {
        let bytes: Vec<u8> = v.iter().take(n).flat_map(|x| x.to_le_bytes()).collect();
        Needle::new(label, bytes)
    }
}

/// Which store a file belongs to, by its place in the data directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StoreFiles {
    /// The SQLite database, its WAL and shared-memory file.
    Store,
    /// The tantivy index (`lexical/`).
    Lexical,
    /// The vector index (`vectors/`, and a rebuild's `vectors.next`/`.old`).
    Vectors,
    /// Anything else under the data directory.
    Other,
}

fn classify(rel: &Path) -> StoreFiles {
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    if first == "lexical" {
        StoreFiles::Lexical
    } else if first == "vectors" || first.starts_with("vectors.") {
        StoreFiles::Vectors
    } else if first.starts_with("mnemo.db") {
        StoreFiles::Store
    } else {
        StoreFiles::Other
    }
}

/// A file holding at least one needle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResidueHit {
    /// Relative to the data directory.
    pub path: String,
    pub store: StoreFiles,
    /// The labels of the needles found in it.
    pub found: Vec<String>,
}

/// What one store's files hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StoreResidue {
    pub store: StoreFiles,
    pub files_scanned: u64,
    pub bytes_scanned: u64,
    /// Files holding a needle.
    pub files_with_residue: u64,
}

/// The result of a scan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResidueReport {
    /// The needle labels searched for.
    pub searched_for: Vec<String>,
    pub stores: Vec<StoreResidue>,
    pub hits: Vec<ResidueHit>,
    /// No file holds any needle.
    pub clean: bool,
}

impl ResidueReport {
    /// The hits whose labels include `label`.
    pub fn files_with(&self, label: &str) -> Vec<&ResidueHit> {
        self.hits
            .iter()
            .filter(|h| h.found.iter().any(|f| f == label))
            .collect()
    }
}

/// The needles every erasure check can build from the user id alone: the raw
/// id, and the owner key the indexes and the change feed carry.
pub fn user_needles(tenant: &str, user_id: &str) -> Vec<Needle> {
    vec![
        Needle::text("user_id", user_id),
        Needle::text("owner_key", Owner::user(tenant, user_id).as_str()),
    ]
}

/// What `mnemo verify-erasure` scans a data directory for: the raw user id
/// in every file, and the owner key in the index files (the store's
/// tombstone and change-feed receipt hold the owner key on purpose: they are
/// the proof of erasure, content-free). Index files are those of the
/// lexical and vector stores.
pub fn scan_data_dir_for_user(
    data_dir: &Path,
    tenant: &str,
    user_id: &str,
) -> Result<ResidueReport> {
    let mut report = scan_dir(data_dir, &user_needles(tenant, user_id))?;
    report
        .hits
        .retain(|h| !(h.store == StoreFiles::Store && h.found == ["owner_key"]));
    for s in &mut report.stores {
        s.files_with_residue = report.hits.iter().filter(|h| h.store == s.store).count() as u64;
    }
    report.clean = report.hits.is_empty();
    Ok(report)
}

/// Scans every regular file under `root` for `needles` (empty needles are
/// ignored). Symbolic links are not followed.
pub fn scan_dir(root: &Path, needles: &[Needle]) -> Result<ResidueReport> {
    let needles: Vec<&Needle> = needles.iter().filter(|n| !n.bytes.is_empty()).collect();
    let set = RegexSet::new(
        needles
            .iter()
            .map(|n| format!("(?-u:{})", escape_bytes(&n.bytes))),
    )
    .map_err(|e| Error::internal(format!("building the residue matcher: {e}")))?;
    let overlap = needles.iter().map(|n| n.bytes.len()).max().unwrap_or(1) - 1;
    let mut files = Vec::new();
    walk(root, &mut files)?;
    let mut stores: Vec<StoreResidue> = Vec::new();
    let mut hits = Vec::new();
    for path in files {
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let store = classify(&rel);
        let (found, bytes) = scan_file(&path, store, &set, overlap)?;
        let entry = match stores.iter_mut().find(|s| s.store == store) {
            Some(e) => e,
            None => {
                stores.push(StoreResidue {
                    store,
                    files_scanned: 0,
                    bytes_scanned: 0,
                    files_with_residue: 0,
                });
                stores.last_mut().expect("just pushed")
            }
        };
        entry.files_scanned += 1;
        entry.bytes_scanned += bytes;
        if !found.is_empty() {
            entry.files_with_residue += 1;
            hits.push(ResidueHit {
                path: rel.to_string_lossy().into_owned(),
                store,
                found: found.iter().map(|&i| needles[i].label.clone()).collect(),
            });
        }
    }
    stores.sort_by_key(|s| s.store);
    Ok(ResidueReport {
        searched_for: needles.iter().map(|n| n.label.clone()).collect(),
        clean: hits.is_empty(),
        stores,
        hits,
    })
}

/// A byte string as a regex matching exactly it.
fn escape_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\x{b:02x}")).collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        // A file removed while we walk (a rebuild's swap) is not residue.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::Io(e)),
    };
    for entry in entries {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&entry.path(), out)?;
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(())
}

/// A file being scanned: opened for the scan, or one of SQLite's files
/// read through a kept handle (module doc).
enum Source {
    Opened(std::fs::File),
    Kept(std::sync::Arc<std::fs::File>, u64),
}

impl Source {
    /// `None` when the file is gone.
    fn open(path: &Path, store: StoreFiles) -> Result<Option<Self>> {
        let missing = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
        if store == StoreFiles::Store && cfg!(unix) {
            // `None`: replaced while it was being opened; the name now
            // points at the new file.
            for _ in 0..3 {
                match crate::store::sqlite::kept_file(path) {
                    Ok(Some(f)) => return Ok(Some(Source::Kept(f, 0))),
                    Ok(None) => continue,
                    Err(e) if missing(&e) => return Ok(None),
                    Err(e) => return Err(Error::Io(e)),
                }
            }
            return Err(Error::Unavailable(
                "a SQLite file kept being replaced during the scan; retry".into(),
            ));
        }
        match std::fs::File::open(path) {
            Ok(f) => Ok(Some(Source::Opened(f))),
            Err(e) if missing(&e) => Ok(None),
            Err(e) => Err(Error::Io(e)),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::Opened(f) => f.read(buf),
            Source::Kept(f, at) => {
                let n = crate::store::sqlite::read_kept(f, buf, *at)?;
                *at += n as u64;
                Ok(n)
            }
        }
    }
}

/// The indexes of the needles found in one file, and its size.
fn scan_file(
    path: &Path,
    store: StoreFiles,
    set: &RegexSet,
    overlap: usize,
) -> Result<(Vec<usize>, u64)> {
    let Some(mut file) = Source::open(path, store)? else {
        return Ok((Vec::new(), 0));
    };
    let mut found = vec![false; set.len()];
    let mut buf = vec![0u8; CHUNK + overlap];
    let mut carried = 0;
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf[carried..])?;
        if n == 0 {
            break;
        }
        total += n as u64;
        let filled = carried + n;
        for i in set.matches(&buf[..filled]).iter() {
            found[i] = true;
        }
        carried = overlap.min(filled);
        buf.copy_within(filled - carried..filled, 0);
    }
    Ok((
        found
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.then_some(i))
            .collect(),
        total,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_needles_across_chunk_boundaries_and_names_the_store() {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("vectors/wal")).unwrap();
        std::fs::create_dir_all(root.join("lexical")).unwrap();
        // The needle straddles the first 8 MiB chunk's end.
        let mut big = vec![0u8; CHUNK - 3];
        big.extend_from_slice(b"secret-thread-7");
        big.extend_from_slice(&[0u8; 100]);
        std::fs::write(root.join("vectors/wal/open-1"), &big).unwrap();
        let v = [0.125f32, -0.5, 0.75, 0.3];
        let vbytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(
            root.join("mnemo.db-wal"),
            [b"xx".as_slice(), &vbytes].concat(),
        )
        .unwrap();
        std::fs::write(root.join("lexical/meta.json"), b"nothing here").unwrap();
        let needles = vec![
            Needle::text("thread", "secret-thread-7"),
            Needle::vector_prefix("vector", &v, 4),
            Needle::text("absent", "never-written"),
            Needle::text("empty", ""),
        ];
        let r = scan_dir(root, &needles).unwrap();
        assert!(!r.clean);
        assert_eq!(r.searched_for, vec!["thread", "vector", "absent"]);
        assert_eq!(r.files_with("thread").len(), 1);
        assert_eq!(r.files_with("thread")[0].store, StoreFiles::Vectors);
        assert_eq!(r.files_with("vector")[0].path, "mnemo.db-wal");
        assert_eq!(r.files_with("vector")[0].store, StoreFiles::Store);
        assert!(r.files_with("absent").is_empty());
        let lexical = r
            .stores
            .iter()
            .find(|s| s.store == StoreFiles::Lexical)
            .unwrap();
        assert_eq!((lexical.files_scanned, lexical.files_with_residue), (1, 0));
        // The report never carries the bytes themselves.
        assert!(!serde_json::to_string(&r)
            .unwrap()
            .contains("secret-thread-7"));
        let clean = scan_dir(root, &[Needle::text("absent", "never-written")]).unwrap();
        assert!(clean.clean);
    }
}
