//! Reading a SQLite database's pages from its file, beside SQLite, for the
//! erasure scan (`sqlite_scrub.rs`): the scan reads every page, and through
//! `sqlite_dbpage` each page costs a virtual-table row and a 4 KiB copy out
//! of SQLite's mapping (at 1M memories, 573,266 pages: about 0.65 s on two
//! cores, most of it that copy; `read` of the same file takes 0.28 s on one).
//!
//! **Why the file says what SQLite would.** In WAL mode a page's latest
//! version is either in the log (a frame) or, if no frame of the snapshot
//! holds it, in the database file. While a read transaction is open, the
//! file changes only by a checkpoint copying frames back, and a checkpoint
//! copies no frame past the oldest open reader's snapshot (it waits on that
//! reader's lock; a reader of the file alone blocks every copy through
//! `WAL_READ_LOCK(0)`). So, read inside a read transaction, every page that
//! no frame of the log names is in the file exactly as the snapshot has it,
//! and stays so until the transaction ends. The pages the log names are read
//! through SQLite, in the same transaction. [`wal_pages`] lists the page of
//! every frame the log file holds (the snapshot's and any left from an
//! earlier generation of the log): more than needed, never fewer.
//!
//! **Why a handle is never closed.** Closing any descriptor of a file drops
//! every POSIX lock the process holds on it, SQLite's included (SQLite keeps
//! its own descriptors open for that reason: "How To Corrupt An SQLite
//! Database File", 2.2.1). A dropped shared lock on the database file could
//! let another process take the exclusive lock, believe it is the last
//! connection, checkpoint and delete the log under this one. So the handles
//! of [`DatabaseFile::open`] (and of every other read of a database's
//! files in the serving process: the log's frames here, the erasure's file
//! scan through [`kept_file`]) live until the process ends, one per file
//! (keyed by device and inode), except those of files that no longer have a
//! name, which nobody can open again.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

/// Bytes of the WAL header, then of each frame's header.
const WAL_HEADER: u64 = 32;
const FRAME_HEADER: u64 = 24;

/// The magic numbers of a WAL file (big- and little-endian checksums).
const WAL_MAGIC: [u32; 2] = [0x377f_0682, 0x377f_0683];

/// The database file of a read transaction, with the pages its log names.
#[derive(Debug)]
pub(super) struct DatabaseFile {
    file: Arc<File>,
    /// Whole pages in the file when it was opened.
    pages_in_file: u64,
    page_size: usize,
    in_wal: HashSet<u32>,
}

impl DatabaseFile {
    /// The file of the database at `path`, for a connection that is inside a
    /// read transaction which has read something (so its snapshot is taken).
    /// `None` when the file cannot be vouched for: not in WAL mode, a log
    /// of another page size, a platform without positioned reads, or a
    /// file replaced since it was named; the caller reads through SQLite.
    pub(super) fn open(
        conn: &rusqlite::Connection,
        path: &Path,
        page_size: usize,
    ) -> crate::error::Result<Option<Self>> {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") || !cfg!(unix) {
            return Ok(None);
        }
        let Some(file) = kept_file(path).map_err(io)? else {
            return Ok(None);
        };
        let mut wal = OsString::from(path.as_os_str());
        wal.push("-wal");
        let Some(in_wal) = wal_pages(Path::new(&wal), page_size).map_err(io)? else {
            return Ok(None);
        };
        let pages_in_file = file.metadata().map_err(io)?.len() / page_size as u64;
        Ok(Some(DatabaseFile {
            file,
            pages_in_file,
            page_size,
            in_wal,
        }))
    }

    /// Whether page `pgno` must be read through SQLite: the log has a
    /// version of it, or the file does not reach it.
    pub(super) fn through_sqlite(&self, pgno: u32) -> bool {
        u64::from(pgno) > self.pages_in_file || self.in_wal.contains(&pgno)
    }

    /// Reads pages `first..first + n` into `buf` (`n` pages long); how many
    /// were in the file (the rest are past its end).
    pub(super) fn read(&self, first: u64, n: u64, buf: &mut [u8]) -> crate::error::Result<u64> {
        let n = n.min((self.pages_in_file + 1).saturating_sub(first));
        let bytes = n as usize * self.page_size;
        read_at(
            &self.file,
            &mut buf[..bytes],
            (first - 1) * self.page_size as u64,
        )
        .map_err(io)?;
        Ok(n)
    }
}

/// An I/O error of these reads, for the purge's caller.
fn io(e: std::io::Error) -> crate::error::Error {
    crate::error::Error::internal(format!("the scan's read of the database file: {e}"))
}

/// A read-only handle of the file at `path` (a database, its `-wal` or its
/// `-shm`), opened once per file and never closed while the file has a
/// name (see the module): the only way the serving process may read a
/// SQLite file other than through SQLite. `None` when the file at `path`
/// changed while it was being opened; `NotFound` when there is none.
pub(crate) fn kept_file(path: &Path) -> std::io::Result<Option<Arc<File>>> {
    /// By device and inode.
    type Handles = HashMap<(u64, u64), Arc<File>>;
    static OPEN: LazyLock<Mutex<Handles>> = LazyLock::new(|| Mutex::new(HashMap::new()));
    // By name first: `stat` opens no descriptor.
    let named = identity(&std::fs::metadata(path)?);
    let mut open = OPEN.lock();
    open.retain(|_, file| file.metadata().is_ok_and(|m| has_name(&m)));
    if let Some(file) = open.get(&named) {
        return Ok(Some(file.clone()));
    }
    let file = Arc::new(File::open(path)?);
    let opened = identity(&file.metadata()?);
    // Kept even if it is not the file named (replaced in between): it may
    // be a database another connection uses.
    open.insert(opened, file.clone());
    Ok((opened == named).then_some(file))
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(unix)]
fn has_name(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.nlink() > 0
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

/// Reads into `buf` from `offset` of a [`kept_file`] (positioned: the
/// handle's offset is shared); how many bytes (0 at the end).
#[cfg(unix)]
pub(crate) fn read_kept(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    file.read_at(buf, offset)
}

// Never called: `DatabaseFile::open` answers `None` off Unix.
#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(not(unix))]
fn has_name(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(not(unix))]
fn read_at(_: &File, _: &mut [u8], _: u64) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(not(unix))]
pub(crate) fn read_kept(_: &File, _: &mut [u8], _: u64) -> std::io::Result<usize> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// The page numbers of every frame in the WAL file at `path` (none if
/// there is no file); `None` if it is not a log of `page_size` pages.
/// Frames past the snapshot's and left from earlier generations of the log
/// are counted too (see the module: more is safe, fewer is not).
pub(super) fn wal_pages(path: &Path, page_size: usize) -> std::io::Result<Option<HashSet<u32>>> {
    let wal = match kept_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(HashSet::new())),
        Ok(None) => return Ok(None),
        Ok(Some(wal)) => wal,
        Err(e) => return Err(e),
    };
    let len = wal.metadata()?.len();
    if len < WAL_HEADER {
        return Ok(Some(HashSet::new()));
    }
    let mut header = [0u8; WAL_HEADER as usize];
    read_at(&wal, &mut header, 0)?;
    let word = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    // Page size 1 stands for 65,536.
    let size = match word(8) {
        1 => 65_536,
        n => n as usize,
    };
    if !WAL_MAGIC.contains(&word(0)) || size != page_size {
        return Ok(None);
    }
    let frame = FRAME_HEADER + page_size as u64;
    let frames = (len - WAL_HEADER) / frame;
    let mut pages = HashSet::new();
    let mut pgno = [0u8; 4];
    for i in 0..frames {
        read_at(&wal, &mut pgno, WAL_HEADER + i * frame)?;
        pages.insert(u32::from_be_bytes(pgno));
    }
    Ok(Some(pages))
}
