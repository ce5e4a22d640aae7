//! Rebuilding the embedded shard into a fresh directory, then swapping it in:
//! a copy of the live points and nothing else. Used for what the engine's
//! own vacuum (see the parent module: `purge_deleted`) cannot do:
//! - a resumed erasure (`purge_unconditionally`): after a kill -9 the
//!   segment files can hold points the id tracker no longer counts (applied,
//!   not flushed out of it), which the vacuum, rewriting segments by their
//!   count of deleted points, never selects;
//! - a shard created with a WAL (every qdrant-edge 0.7.2 index): the engine
//!   refuses to turn an existing shard's WAL off (`wal_enabled cannot be
//!   changed after the shard is created`), so it is copied into a shard
//!   created without one, at open, once;
//! - payloads written before thread ids were hashed ([`Payloads::HashThreads`]),
//!   at open.
//!
//! **How.** [`EdgeVectorIndex::rebuild`]:
//! 1. starts recording the ids that `upsert` and `delete` touch from now on
//!    (taken under the exclusive write lock, so no write is half-counted);
//! 2. creates a new shard in `<dir>.next` with the index's configuration and
//!    payload indexes, copies every live point into it page by page
//!    (`EdgeShard::scroll` with vectors and payload, then
//!    `EdgeShard::update` with `UpsertPoints`) and runs its optimisers, which
//!    build HNSW for the segments above the indexing threshold, all while
//!    searches and writes go on against the old shard;
//! 3. takes the shard exclusively (searches and writes wait, for as long as
//!    replaying the recorded ids takes), replays the recorded ids (present in
//!    the old shard: copied again; absent: deleted in the new one), flushes
//!    and closes the new shard, writes the payload key and a `rebuild.complete`
//!    marker into it, closes the old one, renames `<dir>` to `<dir>.old` and
//!    `<dir>.next` to `<dir>`, removes `<dir>.old` and opens the new shard.
//!
//! A crash at any point leaves either the old or the complete new directory
//! to open: [`recover`] (run at every open) finishes or undoes the swap and
//! removes the leftovers, so nothing of the old files survives a restart.
//! An erasure that crashed before its rebuild finished is resumed (its intent
//! is still recorded) and rebuilds again.
//!
//! **Cost.** A copy of the live points and an HNSW build of the copy (reads
//! and writes against the index continue meanwhile: 872 s for 1M points of
//! 384 dimensions on this 2-core machine, measured on qdrant-edge 0.7.2)
//! and a pause of the index for the replay and the swap. At open (the WAL
//! and payload migrations) the service waits for it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use qdrant_edge::{
    PointId, PointInsertOperations, PointOperations, PointStructPersisted, RetrieveRequest,
    ScrollRequest, UpdateOperation, VectorStructPersisted, WithPayloadInterface, WithVector,
};
use serde_json::Value;
use uuid::Uuid;

use super::{
    engine, lock_dir, open_shard, point_uuid, shard_config, EdgeShard, EdgeVectorIndex, KEY_FILE,
    PURGE_PENDING, SCROLL_PAGE,
};
use crate::domain::Owner;
use crate::error::{Error, Result};
use crate::vector::VectorError;
use crate::vector::{PayloadKey, F_OWNER, F_THREAD};

const COMPLETE: &str = "rebuild.complete";

/// What a rebuild does to payloads besides copying them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Payloads {
    /// Copied as they are.
    Keep,
    /// `thread_id` values are raw (an index written before payload hashing):
    /// hash them with the index's key.
    HashThreads,
}

/// What a rebuild did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RebuildStats {
    pub points: usize,
    /// Ids written during the copy and replayed at the swap.
    pub replayed: usize,
    /// Bytes of index files before and after.
    pub bytes_before: u64,
    pub bytes_after: u64,
}

pub(super) fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "vectors".into());
    dir.with_file_name(format!("{name}.{suffix}"))
}

pub(super) fn io(what: &'static str, path: &Path, e: std::io::Error) -> Error {
    VectorError::io(what, path, e)
}

pub(super) fn remove_dir(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("cannot remove", path, e)),
        _ => Ok(()),
    }
}

/// Bytes of every file under `path` (0 when it does not exist).
pub(super) fn dir_bytes(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|d| {
            d.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Finishes or undoes a swap a crash interrupted, and removes leftovers of
/// an unfinished rebuild. Run before the shard in `dir` is opened.
pub(super) fn recover(dir: &Path) -> Result<()> {
    let next = sibling(dir, "next");
    let old = sibling(dir, "old");
    let next_complete = next.join(COMPLETE).exists();
    if !dir.exists() {
        if next_complete {
            std::fs::rename(&next, dir).map_err(|e| io("cannot move", &next, e))?;
        } else if old.exists() {
            std::fs::rename(&old, dir).map_err(|e| io("cannot move", &old, e))?;
        }
    }
    remove_dir(&next)?;
    remove_dir(&old)?;
    match std::fs::remove_file(dir.join(COMPLETE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(io("cannot remove", &dir.join(COMPLETE), e))
        }
        _ => Ok(()),
    }
}

/// A page of the live points, with vectors and payloads, from `offset`;
/// the offset of the next page, `None` after the last.
pub(super) fn page_of_points(
    shard: &EdgeShard,
    offset: Option<PointId>,
    what: &str,
) -> Result<(Vec<qdrant_edge::Record>, Option<PointId>)> {
    shard
        .scroll(ScrollRequest {
            offset,
            limit: Some(SCROLL_PAGE),
            filter: None,
            with_payload: Some(WithPayloadInterface::Bool(true)),
            with_vector: WithVector::Bool(true),
            order_by: None,
        })
        .map_err(|e| engine(what, e))
}

/// The new shard's copy of `records`' points, payloads rewritten per `mode`.
pub(super) fn copy_points(
    target: &EdgeShard,
    records: Vec<qdrant_edge::Record>,
    mode: Payloads,
    key: &PayloadKey,
) -> Result<usize> {
    let mut points = Vec::with_capacity(records.len());
    for r in records {
        let id = r.id;
        let vector = r.vector.ok_or_else(|| {
            VectorError::invalid(format!(
                "point {} has no vector to copy",
                point_uuid(id).map_or_else(|e| e.to_string(), |u| u.to_string())
            ))
        })?;
        let mut payload = r.payload;
        if mode == Payloads::HashThreads {
            if let Some(p) = payload.as_mut() {
                hash_thread(&mut p.0, key)?;
            }
        }
        points.push(PointStructPersisted {
            id,
            vector: VectorStructPersisted::from(vector),
            payload,
        });
    }
    let n = points.len();
    if n > 0 {
        target
            .update(UpdateOperation::PointOperation(
                PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
            ))
            .map_err(|e| engine("copying points into the rebuilt index", e))?;
    }
    Ok(n)
}

/// Replaces a raw `thread_id` with its keyed hash (the owner is read from
/// the same payload).
fn hash_thread(payload: &mut serde_json::Map<String, Value>, key: &PayloadKey) -> Result<()> {
    let Some(Value::String(thread)) = payload.get(F_THREAD) else {
        return Ok(());
    };
    let owner = payload
        .get(F_OWNER)
        .and_then(Value::as_str)
        .and_then(Owner::from_key)
        .ok_or_else(|| VectorError::invalid("a point with a thread has no valid owner key"))?;
    let hashed = key.thread(&owner, thread);
    payload.insert(F_THREAD.to_string(), Value::String(hashed));
    Ok(())
}

impl EdgeVectorIndex {
    /// Rebuilds the shard into a fresh directory and swaps it in. See the
    /// module docs.
    pub(super) fn rebuild(&self, mode: Payloads) -> Result<RebuildStats> {
        let _one = self.rebuilding.lock();
        let bytes_before = dir_bytes(&self.dir);
        let deletes_at_start = {
            let _w = self.writes.write();
            *self.touched.lock() = Some(HashSet::new());
            self.owner_deletes.load(Ordering::SeqCst)
        };
        let result = self.rebuild_inner(mode, deletes_at_start);
        *self.touched.lock() = None;
        let (points, replayed) = result?;
        Ok(RebuildStats {
            points,
            replayed,
            bytes_before,
            bytes_after: dir_bytes(&self.dir),
        })
    }

    fn rebuild_inner(&self, mode: Payloads, deletes_at_start: u64) -> Result<(usize, usize)> {
        let next = sibling(&self.dir, "next");
        let old = sibling(&self.dir, "old");
        remove_dir(&next)?;
        // The index's own configuration, as a fresh open creates it. A shard
        // created with the config the old one reports (`EdgeShard::config`,
        // derived from its segments) built a poorer graph: in
        // `search_is_still_correct_after_optimize` a stored vector missed its
        // own top 10 in 3 of 12 runs.
        // Locked before it has a shard: after the swap it is the index's lock.
        let next_lock = lock_dir(&next)?;
        let (target, _) = open_shard(&next, self.dim, shard_config(self.dim, self.tuning))?;
        // Copy while the old shard keeps serving.
        let mut points = 0;
        let mut offset = None;
        // With a segment cap, the copy optimises as it goes (as `upsert`
        // does): the engine puts every new point into one appendable segment
        // and never splits it.
        let cap_bytes = self.tuning.segment_cap_kb.map(|kb| kb * 1024);
        let mut unoptimized = 0;
        loop {
            let (records, next_offset) = self
                .with_shard(|shard| page_of_points(shard, offset, "reading points to rebuild"))?;
            let copied = copy_points(&target, records, mode, &self.key)?;
            points += copied;
            unoptimized += copied * self.dim * std::mem::size_of::<f32>();
            if cap_bytes.is_some_and(|cap| unoptimized >= cap) {
                target
                    .optimize()
                    .map_err(|e| engine("indexing the rebuilt index", e))?;
                unoptimized = 0;
            }
            match next_offset {
                Some(n) => offset = Some(n),
                None => break,
            }
        }
        // HNSW for the copy, still while the old shard serves: a fresh shard
        // holds every point in plain segments, and swapped in as it is it
        // would turn every search into a brute-force scan until the
        // background optimiser had rebuilt the graph (at 1M points, 17 min
        // of 60-80 ms searches after every erasure).
        target
            .optimize()
            .map_err(|e| engine("indexing the rebuilt index", e))?;
        // Replay what was written meanwhile, then swap, with the index to
        // ourselves.
        let mut guard = self.shard.write();
        self.implied.replaced();
        let old_shard = guard.as_ref().ok_or_else(|| {
            VectorError::invalid(format!(
                "vector index at {} is unavailable",
                self.dir.display()
            ))
        })?;
        let touched: Vec<Uuid> = self
            .touched
            .lock()
            .take()
            .unwrap_or_default()
            .into_iter()
            .collect();
        for chunk in touched.chunks(SCROLL_PAGE) {
            let ids: Vec<PointId> = chunk.iter().map(|u| PointId::Uuid(*u)).collect();
            let present = old_shard
                .retrieve(RetrieveRequest {
                    point_ids: ids.clone(),
                    with_payload: Some(WithPayloadInterface::Bool(true)),
                    with_vector: Some(WithVector::Bool(true)),
                })
                .map_err(|e| engine("reading points written during the rebuild", e))?;
            let kept: HashSet<PointId> = present.iter().map(|r| r.id).collect();
            copy_points(&target, present, mode, &self.key)?;
            let gone: Vec<PointId> = ids.into_iter().filter(|i| !kept.contains(i)).collect();
            if !gone.is_empty() {
                target
                    .update(UpdateOperation::PointOperation(
                        PointOperations::DeletePoints { ids: gone },
                    ))
                    .map_err(|e| engine("deleting points in the rebuilt index", e))?;
            }
        }
        // Dropping a shard flushes it (and panics on I/O errors: the
        // directory is then left incomplete and `recover` removes it).
        drop(target);
        self.key.save(&next.join(KEY_FILE))?;
        if self.owner_deletes.load(Ordering::SeqCst) != deletes_at_start {
            // An owner was deleted while we copied: their points were copied
            // too (then deleted), so the new shard needs a purge of its own.
            std::fs::write(next.join(PURGE_PENDING), b"")
                .map_err(|e| io("cannot write", &next, e))?;
        }
        std::fs::write(next.join(COMPLETE), b"").map_err(|e| io("cannot write", &next, e))?;
        sync_dir(&next);
        // From here the new directory is what a restart opens.
        drop(guard.take());
        let swapped = std::fs::rename(&self.dir, &old)
            .map_err(|e| io("cannot move", &self.dir, e))
            .and_then(|()| recover(&self.dir));
        // Whatever happened, open what is there now, so the index stays usable.
        // A swapped-in directory was created with the current vector layout.
        let reopened = open_shard(&self.dir, self.dim, shard_config(self.dim, self.tuning))
            .map(|(shard, _)| shard);
        match reopened {
            Ok(shard) => {
                *guard = Some(shard);
                if swapped.is_ok() {
                    *self.lock.lock() = next_lock;
                }
                swapped.map(|()| (points, touched.len()))
            }
            Err(e) => Err(swapped.err().unwrap_or(e)),
        }
    }
}

/// Makes a directory's entries durable (best effort: not every filesystem
/// supports fsync on a directory).
pub(super) fn sync_dir(path: &Path) {
    if let Ok(d) = std::fs::File::open(path) {
        let _ = d.sync_all();
    }
    if let Some(parent) = path.parent() {
        if let Ok(d) = std::fs::File::open(parent) {
            let _ = d.sync_all();
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashSet;

    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use tempfile::TempDir;

    use super::super::Tuning;
    use super::*;
    use crate::domain::scope::Scope;
    use crate::domain::Tier;
    use crate::service::erasure::scan::{scan_dir, Needle};
    use crate::vector::contract::*;
    use crate::vector::{VectorIndex, VectorPoint};

    /// The bytes qdrant stores for a cosine vector (normalised), and the raw
    /// ones: a vector is in the files when either prefix is.
    pub(in crate::vector::edge) fn vector_needles(label: &str, v: &[f32]) -> Vec<Needle> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let unit: Vec<f32> = v.iter().map(|x| x / norm).collect();
        vec![
            Needle::vector_prefix(format!("{label}:raw"), v, 6),
            Needle::vector_prefix(format!("{label}:unit"), &unit, 6),
        ]
    }

    pub(in crate::vector::edge) fn holds(
        report: &crate::service::erasure::scan::ResidueReport,
        label: &str,
    ) -> bool {
        report
            .hits
            .iter()
            .any(|h| h.found.iter().any(|f| f.starts_with(label)))
    }

    fn thread_point(rng: &mut StdRng, owner: &Owner, thread: &str) -> VectorPoint {
        let mut p = point(Uuid::now_v7(), random_vec(rng, 16), owner, Tier::Working);
        p.thread_id = Some(thread.into());
        p
    }

    /// The erased owner's vectors stay in the files after delete + flush (the
    /// engine's behaviour, which is why the rebuild exists) and are gone from
    /// every file after `purge_deleted`; the others' points and searches are
    /// untouched; raw thread ids never reach a file at all.
    #[test]
    fn purge_removes_a_deleted_owners_vectors_from_every_file() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let idx = EdgeVectorIndex::open(&dir, 16).unwrap();
        let mut rng = StdRng::seed_from_u64(21);
        let alice_pts: Vec<_> = (0..40)
            .map(|_| thread_point(&mut rng, &alice(), "ticket-ALICE-4711"))
            .collect();
        let bob_pts: Vec<_> = (0..40)
            .map(|_| thread_point(&mut rng, &bob(), "ticket-BOB-0815"))
            .collect();
        idx.upsert(alice_pts.clone()).unwrap();
        idx.upsert(bob_pts.clone()).unwrap();
        idx.flush().unwrap();
        let mut needles = vec![
            Needle::text("alice-thread", "ticket-ALICE-4711"),
            Needle::text("bob-thread", "ticket-BOB-0815"),
        ];
        for (i, p) in alice_pts.iter().enumerate().take(5) {
            needles.extend(vector_needles(&format!("alice-vec{i}"), &p.vector));
        }
        needles.extend(vector_needles("bob-vec", &bob_pts[0].vector));

        let before = scan_dir(root.path(), &needles).unwrap();
        assert!(!holds(&before, "alice-thread") && !holds(&before, "bob-thread"));
        for i in 0..5 {
            assert!(holds(&before, &format!("alice-vec{i}")), "needle valid");
        }
        assert_eq!(idx.delete_owner(&alice()).unwrap(), 40);
        idx.flush().unwrap();
        let deleted = scan_dir(root.path(), &needles).unwrap();
        assert!(
            holds(&deleted, "alice-vec"),
            "delete alone leaves the bytes"
        );

        assert!(dir.join(PURGE_PENDING).exists());
        assert!(idx.purge_deleted().unwrap() > 0);
        assert!(!dir.join(PURGE_PENDING).exists());
        let after = scan_dir(root.path(), &needles).unwrap();
        assert!(!holds(&after, "alice-vec"), "{:?}", after.hits);
        assert!(holds(&after, "bob-vec"), "the others stay");
        // Only the shard directory remains (no .next / .old leftovers).
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["vectors"]);
        assert_eq!(idx.count_owner(&alice()).unwrap(), 0);
        assert_eq!(idx.count_owner(&bob()).unwrap(), 40);
        // Erasing again costs nothing: no owner was deleted since.
        assert_eq!(idx.delete_owner(&alice()).unwrap(), 0);
        assert_eq!(idx.purge_deleted().unwrap(), 0);
        let f = Scope::user("bob").with_thread("ticket-BOB-0815").filter();
        let hits = idx.search(&bob_pts[3].vector, &f, 1).unwrap();
        assert_eq!(hits[0].0, bob_pts[3].id);
        // Writes after the swap land and survive a reopen.
        let late = thread_point(&mut rng, &bob(), "ticket-BOB-0815");
        idx.upsert(vec![late.clone()]).unwrap();
        idx.flush().unwrap();
        drop(idx);
        let idx = EdgeVectorIndex::open(&dir, 16).unwrap();
        assert_eq!(idx.count_owner(&bob()).unwrap(), 41);
        assert_eq!(idx.search(&late.vector, &f, 1).unwrap()[0].0, late.id);
        // An update of a copied point is applied (operation numbers of the
        // new shard are consistent with its points' versions).
        let mut moved = bob_pts[0].clone();
        moved.vector = random_vec(&mut rng, 16);
        moved.version = 99;
        idx.upsert(vec![moved.clone()]).unwrap();
        assert_eq!(idx.search(&moved.vector, &f, 1).unwrap()[0].0, moved.id);
        assert!(idx.entries().unwrap().contains(&(moved.id, 99)));
    }

    /// Writes and deletes racing a rebuild all end up in the new shard.
    #[test]
    fn writes_during_a_rebuild_are_replayed() {
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open(dir.path(), 8).unwrap();
        let mut rng = StdRng::seed_from_u64(4);
        let base = population(&mut rng, 8, 3000, "default");
        idx.upsert(base.clone()).unwrap();
        let mut model: HashSet<(Uuid, i64)> = base.iter().map(|p| (p.id, p.version)).collect();
        let (added, removed) = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut rng = StdRng::seed_from_u64(5);
                let mut added = Vec::new();
                let mut removed = Vec::new();
                for old in &base[..60] {
                    let p = point(
                        Uuid::now_v7(),
                        random_vec(&mut rng, 8),
                        &bob(),
                        Tier::LongTerm,
                    );
                    idx.upsert(vec![p.clone()]).unwrap();
                    added.push((p.id, p.version));
                    idx.delete(&[old.id]).unwrap();
                    removed.push((old.id, old.version));
                }
                (added, removed)
            });
            let stats = idx.rebuild_now().unwrap();
            assert!(stats.points > 0);
            writer.join().unwrap()
        });
        model.extend(added);
        for r in removed {
            model.remove(&r);
        }
        let got: HashSet<_> = idx.entries().unwrap().into_iter().collect();
        assert_eq!(got, model);
    }

    /// An index written before payload hashing (raw thread ids, no key file)
    /// is migrated at open: thread filters still work, the raw ids are gone
    /// from every file.
    #[test]
    fn raw_thread_ids_are_migrated_to_hashes_at_open() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let mut rng = StdRng::seed_from_u64(8);
        let pts: Vec<_> = (0..30)
            .map(|_| thread_point(&mut rng, &alice(), "raw-thread-QX42"))
            .collect();
        {
            let (shard, _) = open_shard(&dir, 16, shard_config(16, Tuning::default())).unwrap();
            let raw: Vec<PointStructPersisted> = pts
                .iter()
                .map(|p| {
                    let mut payload = crate::vector::payload_json(p, &PayloadKey::random());
                    payload[F_THREAD] = serde_json::json!("raw-thread-QX42");
                    qdrant_edge::PointStruct::new(PointId::Uuid(p.id), p.vector.clone(), payload)
                        .into()
                })
                .collect();
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(raw)),
                ))
                .unwrap();
        }
        let needle = [Needle::text("raw", "raw-thread-QX42")];
        assert!(!scan_dir(root.path(), &needle).unwrap().clean, "old format");
        let idx = EdgeVectorIndex::open(&dir, 16).unwrap();
        assert!(dir.join(KEY_FILE).exists());
        let report = scan_dir(root.path(), &needle).unwrap();
        assert!(report.clean, "{:?}", report.hits);
        let f = Scope::user("alice").with_thread("raw-thread-QX42").filter();
        assert_eq!(idx.search(&pts[7].vector, &f, 1).unwrap()[0].0, pts[7].id);
        assert_eq!(idx.count_owner(&alice()).unwrap(), 30);
        // The key is kept: a reopen does not migrate again and still matches.
        drop(idx);
        let idx = EdgeVectorIndex::open(&dir, 16).unwrap();
        assert_eq!(idx.search(&pts[9].vector, &f, 1).unwrap()[0].0, pts[9].id);
    }

    /// A crash between the two renames of a swap: the complete new directory
    /// is opened; an incomplete one is discarded and the old one kept.
    #[test]
    fn an_interrupted_swap_is_finished_or_undone_at_open() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let mut rng = StdRng::seed_from_u64(9);
        let p = point(
            Uuid::now_v7(),
            random_vec(&mut rng, 4),
            &alice(),
            Tier::LongTerm,
        );
        {
            let idx = EdgeVectorIndex::open(&dir, 4).unwrap();
            idx.upsert(vec![p.clone()]).unwrap();
            idx.flush().unwrap();
        }
        // Complete new directory, old one already moved aside.
        let next = sibling(&dir, "next");
        let old = sibling(&dir, "old");
        copy_tree(&dir, &next);
        std::fs::write(next.join(COMPLETE), b"").unwrap();
        std::fs::rename(&dir, &old).unwrap();
        let idx = EdgeVectorIndex::open(&dir, 4).unwrap();
        assert_eq!(idx.entries().unwrap(), vec![(p.id, p.version)]);
        assert!(!next.exists() && !old.exists() && !dir.join(COMPLETE).exists());
        drop(idx);
        // Incomplete new directory: discarded, the current one kept.
        copy_tree(&dir, &next);
        std::fs::remove_dir_all(next.join("segments")).unwrap();
        let idx = EdgeVectorIndex::open(&dir, 4).unwrap();
        assert_eq!(idx.entries().unwrap(), vec![(p.id, p.version)]);
        assert!(!next.exists());
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }

    /// The WAL is bounded by not existing: a new index runs without one
    /// (the engine's `UpdateLog::Disabled`) through continuous writes,
    /// flushes and optimisations; an index created with a WAL (as every
    /// qdrant-edge 0.7.2 index was, the engine's default) is rebuilt without
    /// one at open, its points kept.
    #[test]
    fn the_wal_stays_bounded_under_continuous_writes() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let idx = EdgeVectorIndex::open(&dir, 64).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        // 200 live points rewritten over and over: with a WAL every round
        // appends ~64 KB to it.
        let ids: Vec<Uuid> = (0..200).map(|_| Uuid::now_v7()).collect();
        for round in 0..12 {
            let pts = ids
                .iter()
                .map(|id| {
                    let mut p = point(*id, random_vec(&mut rng, 64), &alice(), Tier::LongTerm);
                    p.version = round;
                    p
                })
                .collect();
            idx.upsert(pts).unwrap();
            idx.flush().unwrap();
            idx.optimize().unwrap();
            assert_eq!(idx.wal_bytes(), 0, "round {round}");
            assert!(!dir.join("wal").exists());
        }
        assert_eq!(idx.count_owner(&alice()).unwrap(), 200);
        assert!(idx.entries().unwrap().iter().all(|(_, v)| *v == 11));
        drop(idx);

        // An index with a WAL, its payloads already hashed (key file present).
        let old = root.path().join("old");
        let key = PayloadKey::random();
        let pts: Vec<_> = (0..50)
            .map(|_| thread_point(&mut rng, &bob(), "t-old"))
            .collect();
        {
            let mut config = shard_config(16, Tuning::default());
            config.wal_enabled = None;
            let (shard, _) = open_shard(&old, 16, config).unwrap();
            assert!(shard.config().wal_enabled());
            let raw: Vec<PointStructPersisted> = pts
                .iter()
                .map(|p| {
                    let payload = crate::vector::payload_json(p, &key);
                    qdrant_edge::PointStruct::new(PointId::Uuid(p.id), p.vector.clone(), payload)
                        .into()
                })
                .collect();
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(raw)),
                ))
                .unwrap();
            key.save(&old.join(KEY_FILE)).unwrap();
        }
        assert!(dir_bytes(&old.join("wal")) > 0, "written with a WAL");
        let idx = EdgeVectorIndex::open(&old, 16).unwrap();
        assert!(!old.join("wal").exists(), "rebuilt without a WAL");
        assert_eq!(idx.wal_bytes(), 0);
        assert!(!idx.shard.read().as_ref().unwrap().config().wal_enabled());
        assert_eq!(idx.count_owner(&bob()).unwrap(), 50);
        let f = Scope::user("bob").with_thread("t-old").filter();
        assert_eq!(idx.search(&pts[3].vector, &f, 1).unwrap()[0].0, pts[3].id);
        drop(idx);
        // Reopening does not rebuild again.
        let idx = EdgeVectorIndex::open(&old, 16).unwrap();
        assert_eq!(idx.count_owner(&bob()).unwrap(), 50);
    }

    /// A purge rewrites only the segments that held deleted points: a
    /// segment of another owner's points keeps its directory, while the
    /// erased owner's vectors leave every file.
    #[test]
    fn a_purge_rewrites_only_the_segments_that_held_deleted_points() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let tuning = Tuning {
            // No merge of small segments: what is rewritten is the vacuum's.
            segments: Some(8),
            ..Tuning::tiny()
        };
        let idx = EdgeVectorIndex::open_with(&dir, 16, tuning).unwrap();
        let mut rng = StdRng::seed_from_u64(31);
        let bob_pts: Vec<_> = (0..300)
            .map(|_| thread_point(&mut rng, &bob(), "ticket-BOB-0815"))
            .collect();
        idx.upsert(bob_pts.clone()).unwrap();
        // Bob's points move into an indexed segment; new writes go to a
        // fresh appendable one.
        idx.optimize().unwrap();
        let alice_pts: Vec<_> = (0..40)
            .map(|_| thread_point(&mut rng, &alice(), "ticket-ALICE-4711"))
            .collect();
        idx.upsert(alice_pts.clone()).unwrap();
        idx.flush().unwrap();
        let segments = |d: &Path| -> HashSet<String> {
            std::fs::read_dir(d.join("segments"))
                .unwrap()
                .flatten()
                .filter(|e| e.file_type().unwrap().is_dir())
                .map(|e| e.file_name().into_string().unwrap())
                .collect()
        };
        let before = segments(&dir);
        let mut needles = Vec::new();
        for (i, p) in alice_pts.iter().enumerate().take(5) {
            needles.extend(vector_needles(&format!("alice-vec{i}"), &p.vector));
        }
        // Several: a unit needle misses a vector whose normalisation the
        // engine rounds differently in the last bit.
        for (i, p) in bob_pts.iter().enumerate().take(5) {
            needles.extend(vector_needles(&format!("bob-vec{i}"), &p.vector));
        }
        let report = scan_dir(root.path(), &needles).unwrap();
        assert!(holds(&report, "alice-vec0"));
        assert!(holds(&report, "bob-vec"));

        assert_eq!(idx.delete_owner(&alice()).unwrap(), 40);
        idx.flush().unwrap();
        let removed = idx.purge_deleted().unwrap();
        assert!(removed > 0);
        assert!(!dir.join(PURGE_PENDING).exists());
        let after = segments(&dir);
        let report = scan_dir(root.path(), &needles).unwrap();
        assert!(!holds(&report, "alice-vec"), "{:?}", report.hits);
        assert!(holds(&report, "bob-vec"));
        let kept: Vec<_> = before.intersection(&after).collect();
        println!("segments before {before:?}, after {after:?}, removed {removed} bytes");
        assert!(!kept.is_empty(), "bob's segment was not rewritten");
        assert!(before.difference(&after).count() > 0, "alice's was");
        assert_eq!(idx.count_owner(&bob()).unwrap(), 300);
        assert_eq!(idx.unindexed().unwrap(), 0);
        let f = Scope::user("bob").with_thread("ticket-BOB-0815").filter();
        assert_eq!(
            idx.search(&bob_pts[7].vector, &f, 1).unwrap()[0].0,
            bob_pts[7].id
        );
        // The vacuum thresholds were for that run only.
        let shard = idx.shard.read();
        let optimizers = shard.as_ref().unwrap().config().optimizers();
        assert_eq!(optimizers.deleted_threshold, None);
        assert_eq!(optimizers.vacuum_min_vector_number, None);
    }
}
