//! The erasure's purge on SQLite, page by page: every byte of the database
//! that no row, index entry or b-tree structure uses is set to zero, in short
//! write transactions, so that other users' writes never wait for more than
//! one batch.
//!
//! Why a purge at all: `secure_delete` zeroes a deleted cell where it lies,
//! but a b-tree rebalance that moved a cell to a sibling page left the bytes
//! of the old copy in the first page's unallocated space, where no delete
//! reaches them (`sqlite.rs`). Those stale copies live in the parts of a
//! b-tree page that hold nothing: the unallocated area between the cell
//! pointer array and the cell content, freeblocks (past their 4-byte header)
//! and fragments (gaps of 1–3 bytes between cells), and in free pages. A
//! `VACUUM` removes them by rewriting the whole file under the write lock
//! (8 s at 120k memories, during which every other write waited); this
//! zeroes exactly those bytes and nothing else.
//!
//! How, through SQLite's `sqlite_dbpage` virtual table (compiled in by
//! `.cargo/config.toml`), which reads and writes raw pages through the pager
//! (so through the WAL, atomically per transaction):
//! 1. a scan parses every page and lists those with a non-zero byte to
//!    clear, in read transactions (one reader per core, each over a range of
//!    pages), so nobody waits for it. It reads the pages no WAL frame names
//!    from the database file itself, the others through `sqlite_dbpage`
//!    (`sqlite_file.rs` says why the file then holds what the snapshot
//!    does): through the virtual table every page cost a row and a copy
//!    out of SQLite's mapping;
//! 2. the listed pages are scrubbed [`BATCH`] at a time, each batch in a
//!    `BEGIN IMMEDIATE` transaction that reads the page again (another
//!    writer may have changed it since the scan), clears it and writes it
//!    back only if that changed a byte.
//!
//! Why one scan suffices: the erased rows were deleted before the scan
//! started, so their bytes are only where step 1 looks. SQLite never copies
//! the unallocated area of a page to another page (a rebuilt page keeps its
//! own; `copyNodeContent` copies from the cell content area on), and with
//! `secure_delete` a freeblock or free page is zeroed when it is made, so a
//! page the scan found clean cannot receive them later.
//!
//! Every page is checked against the file format (<https://sqlite.org/fileformat2.html>)
//! before anything is written: the cells, freeblocks and fragment count must
//! account for every byte of the content area, exactly as `PRAGMA
//! integrity_check` requires. A page that does not — or a database this
//! module cannot vouch for (auto-vacuum pointer maps, 2^24 pages or more, a
//! SQLite without `sqlite_dbpage`) — makes [`scrub`] answer
//! [`Scrub::Unsupported`], and the caller falls back to `VACUUM`.

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::Result;

/// Pages cleared per write transaction: 64 pages of 4 KiB are a few
/// milliseconds of other writers' wait.
const BATCH: usize = 64;

/// The shortest pause between two batches (see [`pause_after`]).
const MIN_PAUSE: Duration = Duration::from_millis(5);

/// How long a batch that held SQLite's write lock for `held` (the scrub's,
/// or the erasure's deletes) waits before the next: as long again, at least
/// [`MIN_PAUSE`]. A writer that found the lock taken sleeps in SQLite's busy
/// handler (1, 2, 5 … 100 ms) before it retries; batches back to back won
/// every retry and starved it.
pub(crate) fn pause_after(held: Duration) -> Duration {
    held.max(MIN_PAUSE)
}

/// Pages cleared between two checkpoints of the scrub's own (below
/// SQLite's automatic checkpoint, 1,000 pages of WAL).
const CHECKPOINT_EVERY: u64 = 256;

/// Page numbers at or above this could make an overflow or freelist page's
/// first byte (the high byte of its next-page pointer) look like a b-tree
/// page type; such a database is left to `VACUUM`.
const MAX_PAGES: u64 = 1 << 24;

/// What a purge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Scrubbed {
    /// Pages in the database when the scan ran.
    pub pages: u64,
    /// Pages written back with bytes cleared.
    pub written: u64,
    /// Non-zero bytes set to zero.
    pub bytes: u64,
    /// Milliseconds the scan (step 1) took.
    pub scan_ms: u64,
}

/// The answer of [`scrub`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scrub {
    Done(Scrubbed),
    /// Nothing was written; `VACUUM` must do the purge. The reason is for
    /// the log (no data in it).
    Unsupported(String),
}

/// Clears the free space of every page of the database file at `path` (see
/// the module). The WAL still holds the pages' earlier versions afterwards:
/// the caller's `TRUNCATE` checkpoint removes them.
pub(crate) fn scrub(path: &Path) -> Result<Scrub> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    let run = (|| {
        if let Some(reason) = unsupported(&conn)? {
            return Ok(Scrub::Unsupported(reason));
        }
        let scanning = Instant::now();
        let (pages, dirty) = match scan(&conn, path)? {
            Ok(found) => found,
            Err(reason) => return Ok(Scrub::Unsupported(reason)),
        };
        let mut done = Scrubbed {
            pages,
            scan_ms: scanning.elapsed().as_millis() as u64,
            ..Scrubbed::default()
        };
        let mut since_checkpoint = 0;
        for batch in dirty.chunks(BATCH) {
            let held = Instant::now();
            let cleared = clear_batch(&conn, batch)?;
            // Back to back, the batches won every retry of the writers
            // sleeping in SQLite's busy handler (one waited 0.64 s).
            std::thread::sleep(pause_after(held.elapsed()));
            match cleared {
                Ok((written, bytes)) => {
                    done.written += written;
                    done.bytes += bytes;
                    since_checkpoint += written;
                }
                Err(reason) => return Ok(Scrub::Unsupported(reason)),
            }
            // Copies the cleared pages into the file as we go, blocking no
            // one: left in the WAL, they made it pass SQLite's automatic
            // checkpoint size (1,000 pages), and the next writer to commit
            // did the copying (and its fsync) on its own request.
            if since_checkpoint >= CHECKPOINT_EVERY {
                conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
                since_checkpoint = 0;
            }
        }
        Ok(Scrub::Done(done))
    })();
    // A failed batch must not leave its transaction open on this connection
    // (dropping the connection would roll it back too; this says so).
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    run
}

/// Why this database is left to `VACUUM`, if it is.
fn unsupported(conn: &Connection) -> Result<Option<String>> {
    let has_dbpage = conn
        .query_row("SELECT 1 FROM sqlite_dbpage WHERE pgno = 1", [], |_| Ok(()))
        .is_ok();
    if !has_dbpage {
        return Ok(Some(
            "this SQLite has no sqlite_dbpage table (built without .cargo/config.toml?)".into(),
        ));
    }
    let auto_vacuum: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    if auto_vacuum != 0 {
        return Ok(Some("auto_vacuum databases have pointer-map pages".into()));
    }
    Ok(None)
}

/// The page size and the usable size of every page (the page size minus
/// the reserved bytes at each page's end, header byte 20).
fn sizes(conn: &Connection) -> Result<std::result::Result<(usize, usize), String>> {
    let first: Vec<u8> =
        conn.query_row("SELECT data FROM sqlite_dbpage WHERE pgno = 1", [], |r| {
            r.get(0)
        })?;
    if first.len() < 512 {
        return Ok(Err(format!("page 1 is {} bytes", first.len())));
    }
    Ok(Ok((first.len(), first.len() - usize::from(first[20]))))
}

/// Step 1: the page count and the pages with bytes to clear. The page
/// numbers are split into one range per core, each read by a connection of
/// its own in a read transaction of its own: every snapshot starts after the
/// erased rows were deleted, which is all the argument of the module needs
/// (a page found clean in any later snapshot cannot receive stale bytes).
/// The last range is open-ended, for pages the file gained meanwhile.
fn scan(conn: &Connection, path: &Path) -> Result<std::result::Result<(u64, Vec<u32>), String>> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let pages = u64::try_from(pages).unwrap_or(0);
    if pages >= MAX_PAGES {
        return Ok(Err(format!("{pages} pages")));
    }
    let readers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_READERS)
        .min(pages.div_ceil(MIN_PAGES_PER_READER).max(1) as usize);
    scan_split(path, pages, readers)
}

/// [`scan`] with `readers` ranges of the `pages` pages.
fn scan_split(
    path: &Path,
    pages: u64,
    readers: usize,
) -> Result<std::result::Result<(u64, Vec<u32>), String>> {
    let readers = readers.max(1);
    let step = pages.div_ceil(readers as u64).max(1);
    let ranges: Vec<(u64, u64)> = (0..readers as u64)
        .map(|i| {
            let end = if i + 1 == readers as u64 {
                MAX_PAGES
            } else {
                (i + 1) * step
            };
            (i * step + 1, end + 1)
        })
        .collect();
    let found: Vec<_> = std::thread::scope(|scope| {
        let readers: Vec<_> = ranges
            .iter()
            .map(|&range| {
                scope.spawn(move || -> Result<std::result::Result<Vec<u32>, String>> {
                    scan_range(&reader(path)?, path, range, Via::File)
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Ok(Err("a scan thread panicked".into())))
            })
            .collect()
    });
    let mut dirty = Vec::new();
    for part in found {
        match part? {
            Ok(pages) => dirty.extend(pages),
            Err(reason) => return Ok(Err(reason)),
        }
    }
    dirty.sort_unstable();
    Ok(Ok((pages, dirty)))
}

/// A scan's connection: read-only, reading the file through SQLite's
/// memory map (as far as the build allows, 2 GB by default) rather than a
/// `pread` and a copy per page: 40% less time for a one-reader scan of a
/// 2 GB store (`scan_probe`). Pages in the WAL are still read from it.
fn reader(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    conn.pragma_update(None, "mmap_size", size)?;
    Ok(conn)
}

/// Readers of a scan at most: past the cores of a small node, more only
/// contend with the service.
const MAX_READERS: usize = 4;

/// Below this many pages a range is not worth a thread.
const MIN_PAGES_PER_READER: u64 = 16_384;

/// How a scan reads pages: from the database file where it says what
/// SQLite would (`sqlite_file.rs`; a database the file cannot vouch for is
/// read through SQLite whole), or, in tests, every page through SQLite (the
/// oracle the file's reads are checked against).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    File,
    #[cfg(test)]
    Sqlite,
}

/// Pages read from the file at a time (256 KiB of 4 KiB pages).
const FILE_CHUNK_PAGES: u64 = 64;

/// The pages in `first..end` with bytes to clear, in one read transaction.
fn scan_range(
    conn: &Connection,
    path: &Path,
    (first, end): (u64, u64),
    via: Via,
) -> Result<std::result::Result<Vec<u32>, String>> {
    let tx = conn.unchecked_transaction()?;
    // The first read: the snapshot is taken here.
    let (page_size, usable) = match sizes(&tx)? {
        Ok(sizes) => sizes,
        Err(reason) => return Ok(Err(reason)),
    };
    let free = match freelist(&tx, usable)? {
        Ok(free) => free,
        Err(reason) => return Ok(Err(reason)),
    };
    let lock_page = lock_byte_page(page_size);
    let mut dirty = Vec::new();
    let mut scratch = Scratch::default();
    let mut check = |pgno: u32, page: &[u8]| -> std::result::Result<(), String> {
        let ranges = unused(page, pgno, free.kind(pgno), usable, &mut scratch)?;
        if ranges.iter().any(|r| !is_zero(&page[r.clone()])) {
            dirty.push(pgno);
        }
        Ok(())
    };
    let file = match via {
        Via::File => super::sqlite_file::DatabaseFile::open(&tx, path, page_size)?,
        #[cfg(test)]
        Via::Sqlite => None,
    };
    if let Some(file) = file {
        let pages: i64 = tx.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let last = end.min(u64::try_from(pages).unwrap_or(0) + 1);
        let mut one = tx.prepare("SELECT data FROM sqlite_dbpage WHERE pgno = ?1")?;
        let mut chunk = vec![0u8; FILE_CHUNK_PAGES as usize * page_size];
        let mut at = first;
        while at < last {
            let n = (last - at).min(FILE_CHUNK_PAGES);
            let read = file.read(at, n, &mut chunk)?;
            for i in 0..n {
                let pgno = (at + i) as u32;
                if Some(pgno) == lock_page {
                    continue;
                }
                let checked = if i < read && !file.through_sqlite(pgno) {
                    let offset = i as usize * page_size;
                    check(pgno, &chunk[offset..offset + page_size])
                } else {
                    let page: Option<Vec<u8>> = one.query_row([pgno], |r| r.get(0)).optional()?;
                    match page {
                        Some(page) => check(pgno, &page),
                        None => Ok(()),
                    }
                };
                if let Err(reason) = checked {
                    return Ok(Err(reason));
                }
            }
            at += n;
        }
    } else {
        // The virtual table answers `pgno` without reading the page; `data`
        // is read (and copied) only for the rows the range keeps.
        let mut statement =
            tx.prepare("SELECT pgno, data FROM sqlite_dbpage WHERE pgno >= ?1 AND pgno < ?2")?;
        let mut rows = statement.query(rusqlite::params![first as i64, end as i64])?;
        while let Some(row) = rows.next()? {
            let pgno: u32 = row.get(0)?;
            if Some(pgno) == lock_page {
                continue;
            }
            // Borrowed, not copied: most pages are clean and only read.
            let Ok(page) = row.get_ref(1)?.as_blob() else {
                return Ok(Err(format!("page {pgno} is not a blob")));
            };
            if let Err(reason) = check(pgno, page) {
                return Ok(Err(reason));
            }
        }
    }
    tx.commit()?;
    Ok(Ok(dirty))
}

/// Step 2 for one batch: `(pages written, bytes cleared)`.
fn clear_batch(
    conn: &Connection,
    batch: &[u32],
) -> Result<std::result::Result<(u64, u64), String>> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let (_, usable) = match sizes(conn)? {
        Ok(sizes) => sizes,
        Err(reason) => return Ok(Err(reason)),
    };
    // The freelist as of this transaction: a page freed or reused since
    // the scan is classified by what it is now.
    let free = match freelist(conn, usable)? {
        Ok(free) => free,
        Err(reason) => return Ok(Err(reason)),
    };
    let (mut written, mut bytes) = (0, 0);
    let mut scratch = Scratch::default();
    for &pgno in batch {
        let page: Option<Vec<u8>> = conn
            .prepare_cached("SELECT data FROM sqlite_dbpage WHERE pgno = ?1")?
            .query_row([pgno], |r| r.get(0))
            .optional()?;
        // Gone: the file shrank since the scan (a truncate or vacuum).
        let Some(mut page) = page else { continue };
        match clear(&mut page, pgno, free.kind(pgno), usable, &mut scratch) {
            Ok(0) => {}
            Ok(n) => {
                conn.prepare_cached("UPDATE sqlite_dbpage SET data = ?1 WHERE pgno = ?2")?
                    .execute(rusqlite::params![page, pgno])?;
                written += 1;
                bytes += n as u64;
            }
            Err(reason) => return Ok(Err(reason)),
        }
    }
    conn.execute_batch("COMMIT")?;
    Ok(Ok((written, bytes)))
}

/// The page that holds bytes 2^30 to 2^30 + 511 of the file (SQLite's lock
/// bytes): never used, never written.
fn lock_byte_page(page_size: usize) -> Option<u32> {
    u32::try_from((1usize << 30) / page_size + 1).ok()
}

/// What the freelist says of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A freelist trunk page holding `leaves` page numbers.
    Trunk { leaves: usize },
    /// A free page: nothing in it is read.
    FreeLeaf,
    /// In use: a b-tree page or an overflow page.
    InUse,
}

#[derive(Debug, Default)]
struct Freelist {
    trunks: std::collections::HashMap<u32, usize>,
    leaves: HashSet<u32>,
}

impl Freelist {
    fn kind(&self, pgno: u32) -> Kind {
        if let Some(&leaves) = self.trunks.get(&pgno) {
            Kind::Trunk { leaves }
        } else if self.leaves.contains(&pgno) {
            Kind::FreeLeaf
        } else {
            Kind::InUse
        }
    }
}

/// The freelist, walked from the database header (offsets 32 and 36).
fn freelist(conn: &Connection, usable: usize) -> Result<std::result::Result<Freelist, String>> {
    let header: Vec<u8> =
        conn.query_row("SELECT data FROM sqlite_dbpage WHERE pgno = 1", [], |r| {
            r.get(0)
        })?;
    let total = be32(&header, 36) as usize;
    let mut next = be32(&header, 32);
    let mut free = Freelist::default();
    let max_leaves = usable / 4 - 2;
    while next != 0 {
        if free.trunks.len() + free.leaves.len() > total || free.trunks.contains_key(&next) {
            return Ok(Err("the freelist does not match its count".into()));
        }
        let trunk: Option<Vec<u8>> = conn
            .prepare_cached("SELECT data FROM sqlite_dbpage WHERE pgno = ?1")?
            .query_row([next], |r| r.get(0))
            .optional()?;
        let Some(trunk) = trunk else {
            return Ok(Err(format!("freelist trunk {next} is past the end")));
        };
        let leaves = be32(&trunk, 4) as usize;
        if leaves > max_leaves {
            return Ok(Err(format!("freelist trunk {next} lists {leaves} leaves")));
        }
        free.trunks.insert(next, leaves);
        free.leaves
            .extend((0..leaves).map(|i| be32(&trunk, 8 + 4 * i)));
        next = be32(&trunk, 0);
    }
    if free.trunks.len() + free.leaves.len() != total {
        return Ok(Err("the freelist does not match its count".into()));
    }
    Ok(Ok(free))
}

/// What parsing a page needs, kept from one page to the next: a scan parses
/// every page of the file (504,926 at 1M memories), and two fresh vectors
/// and a stable sort per page were about a third of its own CPU
/// (docs/benchmarks/2026-12-01-one-node-at-1m.md, "The scan without
/// allocations").
#[derive(Debug, Default)]
struct Scratch {
    /// The content area's used spans: cells and whole freeblocks.
    covered: Vec<(usize, usize)>,
    /// What the last page parsed does not use.
    unused: Vec<Range<usize>>,
}

/// Whether every byte is zero (without an early exit, so that it
/// vectorises: the ranges are short and mostly zero).
fn is_zero(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |acc, &b| acc | b) == 0
}

/// The byte ranges page `pgno` does not use (in `scratch`). `Err` when the
/// page is not what its kind says.
fn unused<'s>(
    page: &[u8],
    pgno: u32,
    kind: Kind,
    usable: usize,
    scratch: &'s mut Scratch,
) -> std::result::Result<&'s [Range<usize>], String> {
    scratch.unused.clear();
    if usable > page.len() {
        return Err(format!("page {pgno} is shorter than the usable size"));
    }
    match kind {
        Kind::FreeLeaf => scratch.unused.push(0..page.len()),
        // Next trunk, count, then the leaves' numbers.
        Kind::Trunk { leaves } => scratch.unused.push((8 + 4 * leaves).min(usable)..usable),
        Kind::InUse => {
            let header = if pgno == 1 { 100 } else { 0 };
            match page[header] {
                0x02 | 0x05 | 0x0a | 0x0d => btree_unused(page, header, usable, scratch)
                    .map_err(|e| format!("b-tree page {pgno}: {e}"))?,
                // An overflow page (its first byte is the high byte of the
                // next page's number, 0 below 2^24 pages): all payload,
                // written whole when allocated from zeroed free pages.
                _ => {}
            }
        }
    }
    Ok(&scratch.unused)
}

/// Clears what page `pgno` does not use; the number of bytes that were not
/// zero (0: the page is unchanged). `Err` when the page is not what its
/// kind says, with nothing changed.
fn clear(
    page: &mut [u8],
    pgno: u32,
    kind: Kind,
    usable: usize,
    scratch: &mut Scratch,
) -> std::result::Result<usize, String> {
    let ranges = unused(page, pgno, kind, usable, scratch)?;
    Ok(ranges.iter().map(|r| zero(page, r.clone())).sum())
}

/// Sets `range` of `page` to zero; how many bytes were not.
fn zero(page: &mut [u8], range: Range<usize>) -> usize {
    let bytes = &mut page[range];
    let nonzero = bytes.iter().filter(|&&b| b != 0).count();
    if nonzero > 0 {
        bytes.fill(0);
    }
    nonzero
}

fn be16(page: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([page[at], page[at + 1]]))
}

fn be32(page: &[u8], at: usize) -> u32 {
    page.get(at..at + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The byte ranges of a b-tree page (header at `header`) that hold nothing,
/// into `scratch.unused`: the unallocated area, freeblocks past their
/// header, fragments. Checks that cells, freeblocks and fragments account
/// for the whole content area.
fn btree_unused(
    page: &[u8],
    header: usize,
    usable: usize,
    scratch: &mut Scratch,
) -> std::result::Result<(), String> {
    let Scratch { covered, unused } = scratch;
    covered.clear();
    unused.clear();
    let kind = page[header];
    let interior = kind == 0x02 || kind == 0x05;
    let header_len = if interior { 12 } else { 8 };
    if header + header_len > usable {
        return Err("header past the end".into());
    }
    let first_freeblock = be16(page, header + 1);
    let cells = be16(page, header + 3);
    let content = match be16(page, header + 5) {
        0 => 65536,
        n => n,
    };
    let fragments = usize::from(page[header + 7]);
    let pointers_end = header + header_len + 2 * cells;
    if pointers_end > content || content > usable {
        return Err(format!(
            "cell pointers end at {pointers_end}, content starts at {content}"
        ));
    }
    // Everything in the content area that is used: cells, freeblocks (their
    // header used, the rest not).
    for i in 0..cells {
        let at = be16(page, header + header_len + 2 * i);
        if at < content || at >= usable {
            return Err(format!("cell {i} at {at}, outside the content area"));
        }
        let size = cell_size(page, at, kind, usable)?;
        if at + size > usable {
            return Err(format!("cell {i} at {at} ends past the page"));
        }
        covered.push((at, at + size));
    }
    unused.push(pointers_end..content);
    let mut next = first_freeblock;
    let mut previous_end = 0;
    while next != 0 {
        if next < content || next < previous_end || next + 4 > usable {
            return Err(format!("freeblock at {next} out of order or place"));
        }
        let size = be16(page, next + 2);
        if size < 4 || next + size > usable {
            return Err(format!("freeblock at {next} of {size} bytes"));
        }
        covered.push((next, next + size));
        if size > 4 {
            unused.push(next + 4..next + size);
        }
        previous_end = next + size;
        next = be16(page, next);
    }
    // The fragments: what neither a cell nor a freeblock covers. Every span
    // is at least 4 bytes, so two with one start overlap, whichever order
    // the unstable sort leaves them in.
    covered.sort_unstable();
    let mut at = content;
    let mut gaps = 0;
    for &(start, end) in covered.iter() {
        if start < at {
            return Err(format!("overlap at {start}"));
        }
        if start > at {
            gaps += start - at;
            unused.push(at..start);
        }
        at = end;
    }
    if at < usable {
        gaps += usable - at;
        unused.push(at..usable);
    }
    if gaps != fragments {
        return Err(format!(
            "{gaps} bytes between cells, the header says {fragments}"
        ));
    }
    Ok(())
}

/// The size of the cell at `at` of a page of `kind`, as SQLite counts it
/// (`btreeParseCellPtr*`: local payload, overflow pointer, at least 4).
fn cell_size(
    page: &[u8],
    at: usize,
    kind: u8,
    usable: usize,
) -> std::result::Result<usize, String> {
    let varint = |at: usize| varint(page.get(at..usable).unwrap_or(&[]));
    let size = match kind {
        // Table interior: child page number, rowid.
        0x05 => 4 + varint(at + 4)?.1,
        // Table leaf: payload size, rowid, payload.
        0x0d => {
            let (payload, n1) = varint(at)?;
            let (_, n2) = varint(at + n1)?;
            n1 + n2 + stored(payload, usable - 35, usable)
        }
        // Index leaf: payload size, payload.
        0x0a => {
            let (payload, n1) = varint(at)?;
            n1 + stored(payload, index_max_local(usable), usable)
        }
        // Index interior: child page number, payload size, payload.
        0x02 => {
            let (payload, n1) = varint(at + 4)?;
            4 + n1 + stored(payload, index_max_local(usable), usable)
        }
        _ => return Err(format!("page type {kind}")),
    };
    Ok(size.max(4))
}

fn index_max_local(usable: usize) -> usize {
    (usable - 12) * 64 / 255 - 23
}

/// The bytes a payload of `payload` bytes takes in its cell: all of it up
/// to `max_local`, else the local part and the 4-byte overflow pointer.
fn stored(payload: u64, max_local: usize, usable: usize) -> usize {
    if payload <= max_local as u64 {
        return payload as usize;
    }
    let min_local = (usable - 12) * 32 / 255 - 23;
    let surplus = min_local as u64 + (payload - min_local as u64) % (usable as u64 - 4);
    let local = if surplus <= max_local as u64 {
        surplus as usize
    } else {
        min_local
    };
    local + 4
}

/// SQLite's varint: `(value, bytes)`, big-endian 7 bits a byte, the 9th
/// byte whole.
fn varint(bytes: &[u8]) -> std::result::Result<(u64, usize), String> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(9).enumerate() {
        if i == 8 {
            return Ok(((value << 8) | u64::from(b), 9));
        }
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err("varint past the page".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x05]), Ok((5, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Ok((128, 2)));
        assert_eq!(varint(&[0xff; 9]), Ok((u64::MAX, 9)));
        assert!(varint(&[0x81]).is_err());
    }

    #[test]
    fn large_payloads_keep_sqlites_local_part() {
        // 4096-byte pages: a table leaf keeps up to 4061 bytes, an index
        // 1002; above, the local part is min_local + surplus or min_local.
        let u = 4096;
        assert_eq!(stored(4061, u - 35, u), 4061);
        // min_local is 489; the figures follow the file format's formula.
        assert_eq!(stored(4062, u - 35, u), 493);
        assert_eq!(stored(10_000, u - 35, u), 489 + (10_000 - 489) % 4092 + 4);
        assert_eq!(stored(1002, index_max_local(u), u), 1002);
        assert_eq!(stored(1003, index_max_local(u), u), 493);
        assert_eq!(
            stored(5000, index_max_local(u), u),
            489 + (5000 - 489) % 4092 + 4
        );
    }

    // ----- on real SQLite files ------------------------------------------

    /// A database in `dir` like the store's (WAL, `secure_delete`), with
    /// rows of every size: small, above an index entry's local maximum, and
    /// with overflow pages; then a third of them deleted.
    fn database(dir: &Path) -> Connection {
        let conn = Connection::open(dir.join("t.db")).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA secure_delete = ON;
             CREATE TABLE m (id TEXT PRIMARY KEY, owner TEXT, text TEXT);
             CREATE INDEX m_owner ON m (owner, text);",
        )
        .unwrap();
        let tx = conn.unchecked_transaction().unwrap();
        for i in 0..3000u32 {
            let len = [20, 300, 1500, 6000][(i % 4) as usize] + (i as usize * 7) % 97;
            let text = format!("row{i:05} ").repeat(len / 9 + 1);
            tx.execute(
                "INSERT INTO m VALUES (?1, ?2, ?3)",
                rusqlite::params![
                    format!("{:08x}", i.wrapping_mul(2_654_435_761)),
                    format!("u{}", i % 13),
                    text
                ],
            )
            .unwrap();
        }
        tx.execute("DELETE FROM m WHERE rowid % 3 = 0", []).unwrap();
        tx.commit().unwrap();
        conn
    }

    fn rows(conn: &Connection) -> Vec<(String, String, String)> {
        let mut s = conn
            .prepare("SELECT id, owner, text FROM m ORDER BY id")
            .unwrap();
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    fn integrity(conn: &Connection) -> String {
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap()
    }

    fn done(path: &Path) -> Scrubbed {
        match scrub(path).unwrap() {
            Scrub::Done(done) => done,
            Scrub::Unsupported(reason) => panic!("the scrub fell back to VACUUM: {reason}"),
        }
    }

    fn page(conn: &Connection, pgno: u32) -> Vec<u8> {
        conn.query_row(
            "SELECT data FROM sqlite_dbpage WHERE pgno = ?1",
            [pgno],
            |r| r.get(0),
        )
        .unwrap()
    }

    fn put_page(conn: &Connection, pgno: u32, data: &[u8]) {
        conn.execute(
            "UPDATE sqlite_dbpage SET data = ?1 WHERE pgno = ?2",
            rusqlite::params![data, pgno],
        )
        .unwrap();
    }

    /// Every page of the file parses (the scrub did not fall back) and is
    /// left with nothing to clear; the rows are untouched and the database
    /// passes `integrity_check`. Also what fails when this build lacks
    /// `sqlite_dbpage` (`.cargo/config.toml`).
    #[test]
    fn every_page_of_a_real_database_parses_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let conn = database(dir.path());
        let before = rows(&conn);
        let first = done(&dir.path().join("t.db"));
        assert!(first.pages > 100, "{first:?}");
        let again = done(&dir.path().join("t.db"));
        assert_eq!(
            (again.written, again.bytes),
            (0, 0),
            "{first:?} then {again:?}"
        );
        assert_eq!(rows(&conn), before);
        assert_eq!(integrity(&conn), "ok");
    }

    /// One scratch through every page of a real database answers what a
    /// fresh one answers for each page alone (nothing of a page is left for
    /// the next), and a zero check agrees with the byte-by-byte one.
    #[test]
    fn a_reused_scratch_parses_every_page_as_a_fresh_one() {
        let dir = tempfile::tempdir().unwrap();
        let conn = database(dir.path());
        let (_, usable) = sizes(&conn).unwrap().unwrap();
        let free = freelist(&conn, usable).unwrap().unwrap();
        let pages: u32 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        let mut reused = Scratch::default();
        let (mut btree, mut nonzero) = (0, 0);
        for pgno in 1..=pages {
            let data = page(&conn, pgno);
            let kind = free.kind(pgno);
            let once = unused(&data, pgno, kind, usable, &mut Scratch::default())
                .unwrap()
                .to_vec();
            let again = unused(&data, pgno, kind, usable, &mut reused).unwrap();
            assert_eq!(again, once.as_slice(), "page {pgno}");
            btree += usize::from(kind == Kind::InUse && !once.is_empty());
            for r in once {
                let zero = is_zero(&data[r.clone()]);
                assert_eq!(zero, data[r].iter().all(|&b| b == 0));
                nonzero += usize::from(!zero);
            }
        }
        assert!(btree > 50, "{btree} b-tree pages");
        // The copies rebalances left behind (what a scrub is for): some
        // free space is not zero.
        assert!(nonzero > 0);
    }

    /// The deleted rows (`database` deletes every third) whose text is
    /// somewhere in the file: one pass over it for `rowNNNNN `.
    fn deleted_rows_in(path: &Path) -> usize {
        let file = std::fs::read(path).unwrap();
        let mut found = HashSet::new();
        for (at, _) in file.windows(3).enumerate().filter(|(_, w)| *w == b"row") {
            let digits = file.get(at + 3..at + 9).unwrap_or_default();
            if digits.len() == 6 && digits[5] == b' ' && digits[..5].iter().all(u8::is_ascii_digit)
            {
                let i: u32 = std::str::from_utf8(&digits[..5]).unwrap().parse().unwrap();
                if (i + 1).is_multiple_of(3) {
                    found.insert(i);
                }
            }
        }
        found.len()
    }

    /// What `secure_delete` leaves, found without planting anything: after
    /// the inserts and deletes of `database`, texts of deleted rows are
    /// still in the file (stale copies left by b-tree rebalances); after
    /// the scrub and a checkpoint, none is.
    /// The scan's cost on a real store: `MNEMO_SCRUB_PROBE=<copy of
    /// mnemo.db> cargo test --release --lib scan_probe -- --ignored
    /// --nocapture` times one reader through SQLite (without and with its
    /// mmap) and from the file, and the split scan. Reads only.
    #[test]
    #[ignore = "a probe on a store given by MNEMO_SCRUB_PROBE"]
    fn scan_probe() {
        let path = std::path::PathBuf::from(
            std::env::var("MNEMO_SCRUB_PROBE").expect("MNEMO_SCRUB_PROBE=<a mnemo.db>"),
        );
        let open = |mmap: i64| {
            let conn =
                Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            conn.query_row(&format!("PRAGMA mmap_size = {mmap}"), [], |_| Ok(()))
                .ok();
            conn
        };
        for round in 0..3 {
            for (mmap, via) in [(0, Via::Sqlite), (1 << 40, Via::Sqlite), (0, Via::File)] {
                let conn = open(mmap);
                let t = Instant::now();
                let dirty = scan_range(&conn, &path, (1, MAX_PAGES), via)
                    .unwrap()
                    .unwrap();
                println!(
                    "round {round}: one reader, {via:?}, mmap_size {mmap}: {} dirty pages in {:.0} ms",
                    dirty.len(),
                    t.elapsed().as_secs_f64() * 1e3
                );
            }
            let conn = open(0);
            let t = Instant::now();
            let (pages, dirty) = scan(&conn, &path).unwrap().unwrap();
            // (The split scan's readers map the file themselves.)
            println!(
                "round {round}: split scan of {pages} pages: {} dirty in {:.0} ms",
                dirty.len(),
                t.elapsed().as_secs_f64() * 1e3
            );
        }
    }

    #[test]
    fn a_scan_split_between_readers_finds_what_one_reader_finds() {
        let dir = tempfile::tempdir().unwrap();
        let conn = database(dir.path());
        // Dirty pages to find: stale bytes in free space, as in the tests below.
        conn.execute_batch("PRAGMA secure_delete = OFF; DELETE FROM m WHERE rowid % 5 = 1;")
            .unwrap();
        let path = dir.path().join("t.db");
        let pages: u64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get::<_, i64>(0))
            .unwrap() as u64;
        let (_, one) = scan_split(&path, pages, 1).unwrap().unwrap();
        assert!(!one.is_empty(), "nothing to find");
        for readers in [2, 3, 7] {
            let (_, split) = scan_split(&path, pages, readers).unwrap().unwrap();
            assert_eq!(split, one, "{readers} readers");
        }
        // Pages the file gains after the count are still scanned (the last
        // range is open-ended): a count of half the pages finds the same.
        let (_, short) = scan_split(&path, pages / 2, 2).unwrap().unwrap();
        assert_eq!(short, one);
    }

    /// The scan reads most pages from the file (`sqlite_file.rs`) and the
    /// ones the log holds through SQLite: it finds what a scan of every page
    /// through SQLite finds, whether a dirty page's latest version is in the
    /// log or the file, and a clean version in the log wins over a dirty one
    /// still in the file.
    #[test]
    fn the_file_and_sqlite_scans_agree_wherever_a_page_lies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = database(dir.path());
        // Nothing leaves the log unless this test says so.
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0").unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        // More stale bytes, now in the log only.
        conn.execute_batch("PRAGMA secure_delete = OFF; DELETE FROM m WHERE rowid % 5 = 1;")
            .unwrap();
        let (page_size, usable) = sizes(&conn).unwrap().unwrap();
        let scan_via = |via| {
            scan_range(&reader(&path).unwrap(), &path, (1, MAX_PAGES), via)
                .unwrap()
                .unwrap()
        };
        let in_wal = |path: &Path| {
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            super::super::sqlite_file::wal_pages(Path::new(&wal), page_size)
                .unwrap()
                .unwrap()
        };
        let dirty = scan_via(Via::Sqlite);
        assert_eq!(scan_via(Via::File), dirty);
        let logged = in_wal(&path);
        assert!(
            dirty.iter().any(|p| logged.contains(p)),
            "no dirty page in the log: the test shows nothing"
        );
        assert!(
            dirty.iter().any(|p| !logged.contains(p)),
            "no dirty page in the file: the test shows nothing"
        );

        // Clean versions in the log, dirty ones still in the file.
        let before = rows(&conn);
        let (written, _) = clear_batch(&conn, &dirty).unwrap().unwrap();
        assert!(written > 0);
        let free = freelist(&conn, usable).unwrap().unwrap();
        let file = std::fs::read(&path).unwrap();
        let dirty_in_file = dirty.iter().any(|&pgno| {
            let at = (pgno as usize - 1) * page_size;
            let Some(data) = file.get(at..at + page_size) else {
                return false;
            };
            let mut scratch = Scratch::default();
            unused(data, pgno, free.kind(pgno), usable, &mut scratch)
                .unwrap()
                .iter()
                .any(|r| !is_zero(&data[r.clone()]))
        });
        assert!(
            dirty_in_file,
            "the file was cleaned too: the test shows nothing"
        );
        assert_eq!(scan_via(Via::Sqlite), Vec::<u32>::new());
        assert_eq!(scan_via(Via::File), Vec::<u32>::new());
        assert_eq!(rows(&conn), before);
        assert_eq!(integrity(&conn), "ok");
    }

    #[test]
    fn stale_copies_secure_delete_leaves_are_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = database(dir.path());
        let checkpoint = || {
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap()
        };
        checkpoint();
        let before = deleted_rows_in(&path);
        assert!(
            before > 0,
            "SQLite left no stale copy: this test no longer shows the scrub works"
        );
        done(&path);
        checkpoint();
        assert_eq!(
            deleted_rows_in(&path),
            0,
            "{before} deleted rows were in the file before"
        );
        assert_eq!(integrity(&conn), "ok");
    }

    /// Bytes planted where a stale copy would lie — a leaf page's
    /// unallocated area, a freeblock, a free page — are gone from the file
    /// after the scrub and a checkpoint, and nothing else changed.
    #[test]
    fn stale_bytes_in_free_space_are_cleared_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = database(dir.path());
        done(&path);
        let before = rows(&conn);
        let usable = page(&conn, 1).len();
        let free = freelist(&conn, usable).unwrap().unwrap();
        assert!(!free.leaves.is_empty(), "the deletes freed no page");
        let pages: u32 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        let mut planted = Vec::new();
        let marker = b"STALE-COPY-OF-AN-ERASED-ROW";
        // A free page.
        let leaf = *free.leaves.iter().next().unwrap();
        let mut data = page(&conn, leaf);
        data[100..100 + marker.len()].copy_from_slice(marker);
        put_page(&conn, leaf, &data);
        planted.push(leaf);
        // An unallocated area and a freeblock, each on a b-tree leaf page.
        let (mut gap, mut freeblock) = (false, false);
        for pgno in 2..=pages {
            let mut data = page(&conn, pgno);
            if free.kind(pgno) != Kind::InUse || ![0x0a, 0x0d].contains(&data[0]) {
                continue;
            }
            let mut scratch = Scratch::default();
            btree_unused(&data, 0, usable, &mut scratch).unwrap();
            let unused = scratch.unused;
            if !gap && unused[0].len() >= marker.len() {
                let at = unused[0].start;
                data[at..at + marker.len()].copy_from_slice(marker);
                gap = true;
            } else if !freeblock {
                let Some(r) = unused[1..].iter().find(|r| r.len() >= marker.len()) else {
                    continue;
                };
                data[r.start..r.start + marker.len()].copy_from_slice(marker);
                freeblock = true;
            } else {
                continue;
            }
            put_page(&conn, pgno, &data);
            planted.push(pgno);
            if gap && freeblock {
                break;
            }
        }
        assert!(
            gap && freeblock,
            "no page with room for the marker: {planted:?}"
        );
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let file = std::fs::read(&path).unwrap();
        assert_eq!(
            file.windows(marker.len()).filter(|w| w == marker).count(),
            3
        );

        let cleared = done(&path);
        assert_eq!(cleared.written, 3, "{cleared:?}");
        // The first scrub had zeroed those places: the markers' bytes only.
        assert_eq!(cleared.bytes, 3 * marker.len() as u64, "{cleared:?}");
        let (busy,): (i64,) = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?,)))
            .unwrap();
        assert_eq!(busy, 0);
        for name in ["t.db", "t.db-wal"] {
            let bytes = std::fs::read(dir.path().join(name)).unwrap_or_default();
            assert!(
                !bytes.windows(marker.len()).any(|w| w == marker),
                "{name} still holds it"
            );
        }
        assert_eq!(rows(&conn), before);
        assert_eq!(integrity(&conn), "ok");
    }

    /// Other connections keep writing while the scrub runs, in batches
    /// between theirs: no write fails, none is lost, the file stays sound.
    #[test]
    fn writers_go_on_during_a_scrub() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = database(dir.path());
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                let conn = Connection::open(&path).unwrap();
                conn.busy_timeout(Duration::from_secs(10)).unwrap();
                conn.execute_batch("PRAGMA secure_delete = ON").unwrap();
                for i in 0..400u32 {
                    conn.execute(
                        "INSERT INTO m VALUES (?1, 'w', ?2)",
                        rusqlite::params![
                            format!("w{i:05}"),
                            "x".repeat(50 + (i as usize * 37) % 3000)
                        ],
                    )
                    .unwrap();
                    if i % 3 == 0 {
                        conn.execute("DELETE FROM m WHERE id = ?1", [format!("w{:05}", i / 2)])
                            .unwrap();
                    }
                }
            })
        };
        for _ in 0..5 {
            done(&path);
        }
        writer.join().unwrap();
        done(&path);
        assert_eq!(integrity(&conn), "ok");
        let written: i64 = conn
            .query_row("SELECT count(*) FROM m WHERE owner = 'w'", [], |r| r.get(0))
            .unwrap();
        let deleted = (0..400u32)
            .filter(|i| i % 3 == 0)
            .map(|i| i / 2)
            .collect::<HashSet<_>>()
            .len();
        assert_eq!(written as usize, 400 - deleted);
    }
}
