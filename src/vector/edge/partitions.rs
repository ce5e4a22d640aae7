//! The embedded vector index as two partitions, one shard each: `reference/`
//! holds the tenants' reference chunks, `users/` every user's memories.
//!
//! **Why.** The two have opposite needs, and one shard could only serve one:
//! - A user's erasure must leave no vector of theirs in any file, and the
//!   engine removes a deleted point only by rewriting its whole segment (the
//!   vacuum). With one shard, a user's 8 points shared a segment with a
//!   million others and the tenant's reference graph: forget-all took 35 s at
//!   1M memories. The users partition caps its segments
//!   ([`USER_SEGMENT_CAP_KB`] of vectors, about 22,000 points of 384
//!   dimensions) and keeps them capped under bulk writes (see
//!   `EdgeVectorIndex::wrote`), so an erasure rewrites one or two small
//!   segments whatever the deployment's size.
//! - The reference chunks are searched by every user of a tenant and erased
//!   only with their documents: they want one big graph, not a graph cut
//!   into capped segments (in the synthetic probe at 1M, 200,000 reference
//!   points in capped segments searched in 7.0 ms p50 against 2.8 ms in
//!   segments of the engine's default size). The reference partition keeps
//!   the engine's defaults.
//!
//! **Routing.** A point goes where its owner belongs ([`Owner::is_reference`]);
//! a search sends each scope clause to its owner's partition and merges the
//! hits by score (one embedder, one cosine: the scores compare); a delete by
//! id, whose owner is unknown here, goes to both. Each partition is a whole
//! [`EdgeVectorIndex`] with its own lock, payload key, purge marker and
//! rebuilds.
//!
//! **Migration.** A directory holding one shard (every index before the
//! partitions) is split at open, once: the live points are copied into
//! `<dir>.parts/{reference,users}` (payloads as they are, with the old
//! index's payload key), a `split.complete` marker is written, and the
//! directories are swapped (`<dir>` → `<dir>.flat`, `<dir>.parts` → `<dir>`,
//! `<dir>.flat` removed). [`recover_split`] (run at every open) finishes or
//! undoes a swap a crash interrupted. Deleted points are not copied, so a
//! purge the old shard still owed is paid by the split.

use std::path::Path;

use uuid::Uuid;

use super::rebuild::{copy_points, io, page_of_points, remove_dir, sibling, sync_dir, Payloads};
use super::{has_shard_files, EdgeVectorIndex, Tuning, KEY_FILE};
use crate::domain::scope::IndexFilter;
use crate::domain::Owner;
use crate::error::Result;
use crate::vector::{check_query_dim, merge_nearest, VectorIndex, VectorPoint, F_OWNER};

const REFERENCE_DIR: &str = "reference";
const USERS_DIR: &str = "users";
const SPLIT_COMPLETE: &str = "split.complete";

/// KB of vectors a segment of the users partition may hold: 32 MB, about
/// 22,000 points of 384 dimensions. An erasure's vacuum rewrites the
/// segments holding the user's points (vectors, payloads, five payload
/// indexes, and a 32 MB payload page whatever the points); searches pay a
/// few microseconds per segment for a user's clause, found through each
/// segment's owner index. At 1M memories (`examples/forget_bench.rs`,
/// docs/decisions/0015-partitions.md) the vector leg of an erasure took
/// 1.24–1.40 s with 64 MB segments and 0.75–0.89 s with 32 MB, and a
/// user's vector search p50 3.53 and 3.10 ms. Halving again (16 MB, tried)
/// took erasures from 0.89–0.98 s to 0.81–0.93 s but the partition from
/// 3.0 to 4.5 GB on disk, since every segment carries a 32 MB payload page
/// (the engine's blobstore `DEFAULT_PAGE_SIZE_BYTES`) whatever its points:
/// a smaller page for this partition is the lever, not a smaller cap.
pub(super) const USER_SEGMENT_CAP_KB: usize = 32_000;

impl Tuning {
    /// The users partition's: capped segments, no int8 copies.
    fn users() -> Self {
        Tuning {
            segment_cap_kb: Some(USER_SEGMENT_CAP_KB),
            unquantized: true,
            ..Tuning::default()
        }
    }
}

/// The embedded vector index: a reference and a users partition. See the
/// module docs.
#[derive(Debug)]
pub struct PartitionedIndex {
    reference: EdgeVectorIndex,
    users: EdgeVectorIndex,
}

impl PartitionedIndex {
    /// Opens the index in `dir` (created if needed; a single-shard index is
    /// split first). Fails if it holds vectors of another dimension.
    pub fn open(dir: &Path, dim: usize) -> Result<Self> {
        Self::open_with(dir, dim, Tuning::default(), Tuning::users())
    }

    fn open_with(dir: &Path, dim: usize, reference: Tuning, users: Tuning) -> Result<Self> {
        recover_split(dir)?;
        if has_shard_files(dir) {
            split(dir, dim, reference, users)?;
        }
        Ok(PartitionedIndex {
            reference: EdgeVectorIndex::open_with(&dir.join(REFERENCE_DIR), dim, reference)?,
            users: EdgeVectorIndex::open_with(&dir.join(USERS_DIR), dim, users)?,
        })
    }

    fn part(&self, owner: &Owner) -> &EdgeVectorIndex {
        if owner.is_reference() {
            &self.reference
        } else {
            &self.users
        }
    }

    fn both(&self) -> [&EdgeVectorIndex; 2] {
        [&self.reference, &self.users]
    }
}

/// Finishes or undoes a split whose swap a crash interrupted, and removes
/// the leftovers of an unfinished one. Run before anything opens `dir`.
fn recover_split(dir: &Path) -> Result<()> {
    let parts = sibling(dir, "parts");
    let flat = sibling(dir, "flat");
    if !dir.exists() {
        if parts.join(SPLIT_COMPLETE).exists() {
            std::fs::rename(&parts, dir).map_err(|e| io("cannot move", &parts, e))?;
        } else if flat.exists() {
            std::fs::rename(&flat, dir).map_err(|e| io("cannot move", &flat, e))?;
        }
    }
    remove_dir(&parts)?;
    if dir.exists() {
        remove_dir(&flat)?;
    }
    match std::fs::remove_file(dir.join(SPLIT_COMPLETE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(io("cannot remove", &dir.join(SPLIT_COMPLETE), e))
        }
        _ => Ok(()),
    }
}

/// Whether a copied record belongs to the reference partition (a record
/// without a readable owner goes to the users', whose files erasures purge).
fn is_reference(record: &qdrant_edge::Record) -> bool {
    record
        .payload
        .as_ref()
        .and_then(|p| p.0.get(F_OWNER))
        .and_then(serde_json::Value::as_str)
        .and_then(Owner::from_key)
        .is_some_and(|o| o.is_reference())
}

/// Splits the single shard in `dir` into the two partitions. See the module
/// docs.
fn split(dir: &Path, dim: usize, reference: Tuning, users: Tuning) -> Result<()> {
    let started = std::time::Instant::now();
    // Opened (and locked) as the index it is; its own migrations run first.
    let flat = EdgeVectorIndex::open_with(dir, dim, Tuning::default())?;
    let parts = sibling(dir, "parts");
    remove_dir(&parts)?;
    let mut copied = [0usize; 2];
    {
        let mut targets = Vec::with_capacity(2);
        for (name, tuning) in [(REFERENCE_DIR, reference), (USERS_DIR, users)] {
            let target_dir = parts.join(name);
            std::fs::create_dir_all(&target_dir)
                .map_err(|e| io("cannot create", &target_dir, e))?;
            // The old key: thread ids in the copied payloads are hashed
            // with it.
            flat.key.save(&target_dir.join(KEY_FILE))?;
            targets.push(EdgeVectorIndex::open_with(&target_dir, dim, tuning)?);
        }
        let mut offset = None;
        loop {
            let (records, next) =
                flat.with_shard(|shard| page_of_points(shard, offset, "reading points to split"))?;
            let (refs, others): (Vec<_>, Vec<_>) = records.into_iter().partition(is_reference);
            for (i, records) in [refs, others].into_iter().enumerate() {
                let target = &targets[i];
                let n = target
                    .with_shard(|shard| copy_points(shard, records, Payloads::Keep, &target.key))?;
                target.wrote(n * dim * std::mem::size_of::<f32>())?;
                copied[i] += n;
            }
            match next {
                Some(n) => offset = Some(n),
                None => break,
            }
        }
        for target in &targets {
            target.optimize()?;
            target.flush()?;
        }
    }
    let marker = parts.join(SPLIT_COMPLETE);
    std::fs::write(&marker, b"").map_err(|e| io("cannot write", &marker, e))?;
    sync_dir(&parts);
    drop(flat);
    // From here `<dir>.parts` is what a restart opens (see `recover_split`).
    let flat_dir = sibling(dir, "flat");
    std::fs::rename(dir, &flat_dir).map_err(|e| io("cannot move", dir, e))?;
    recover_split(dir)?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent);
    }
    tracing::info!(
        reference_points = copied[0],
        user_points = copied[1],
        secs = started.elapsed().as_secs_f64(),
        "vector index split into reference and users partitions"
    );
    Ok(())
}

impl VectorIndex for PartitionedIndex {
    fn dim(&self) -> usize {
        self.users.dim
    }

    fn upsert(&self, points: Vec<VectorPoint>) -> Result<()> {
        let (refs, others): (Vec<_>, Vec<_>) =
            points.into_iter().partition(|p| p.owner.is_reference());
        self.reference.upsert(refs)?;
        self.users.upsert(others)
    }

    fn delete(&self, ids: &[Uuid]) -> Result<()> {
        self.both().into_iter().try_for_each(|p| p.delete(ids))
    }

    fn delete_owner(&self, owner: &Owner) -> Result<usize> {
        self.part(owner).delete_owner(owner)
    }

    fn search(
        &self,
        vector: &[f32],
        filter: &IndexFilter,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>> {
        check_query_dim(vector, self.dim())?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (refs, others): (Vec<_>, Vec<_>) = filter
            .clauses
            .iter()
            .cloned()
            .partition(|c| c.owner.is_reference());
        let mut lists = Vec::with_capacity(2);
        for (part, clauses) in [(&self.users, others), (&self.reference, refs)] {
            if clauses.is_empty() {
                continue;
            }
            let filter = IndexFilter {
                clauses,
                statuses: filter.statuses.clone(),
                kinds: filter.kinds.clone(),
            };
            lists.push(part.search(vector, &filter, limit)?);
        }
        Ok(merge_nearest(lists, limit))
    }

    fn entries(&self) -> Result<Vec<(Uuid, i64)>> {
        let mut all = self.reference.entries()?;
        all.extend(self.users.entries()?);
        Ok(all)
    }

    fn versions(&self, ids: &[Uuid]) -> Result<std::collections::HashMap<Uuid, i64>> {
        let mut found = self.users.versions(ids)?;
        if found.len() < ids.len() {
            found.extend(self.reference.versions(ids)?);
        }
        Ok(found)
    }

    fn entry_count(&self) -> Result<usize> {
        Ok(self.reference.entry_count()? + self.users.entry_count()?)
    }

    fn count_owner(&self, owner: &Owner) -> Result<usize> {
        self.part(owner).count_owner(owner)
    }

    fn flush(&self) -> Result<()> {
        self.both().into_iter().try_for_each(|p| p.flush())
    }

    fn optimize(&self) -> Result<()> {
        self.both().into_iter().try_for_each(|p| p.optimize())
    }

    fn unindexed(&self) -> Result<usize> {
        Ok(self.reference.unindexed()? + self.users.unindexed()?)
    }

    fn clear(&self) -> Result<()> {
        self.both().into_iter().try_for_each(|p| p.clear())
    }

    fn purge_deleted(&self) -> Result<u64> {
        Ok(self.reference.purge_deleted()? + self.users.purge_deleted()?)
    }

    /// Unconditionally in the users partition, whose owners erasures delete;
    /// the reference partition purges what it has marked.
    fn purge_unconditionally(&self) -> Result<u64> {
        Ok(self.reference.purge_deleted()? + self.users.purge_unconditionally()?)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use tempfile::TempDir;

    use super::*;
    use crate::domain::scope::Scope;
    use crate::domain::Tier;
    use crate::service::erasure::scan::scan_dir;
    use crate::vector::contract::*;
    use crate::vector::edge::rebuild::tests::{holds, vector_needles};

    fn partitioned_fixture(dim: usize) -> Fixture {
        let dir = TempDir::new().unwrap();
        let idx = PartitionedIndex::open(&dir.path().join("vectors"), dim).unwrap();
        Fixture::new(std::sync::Arc::new(idx)).keeping(dir)
    }

    /// The contract every vector backend passes.
    mod contract {
        use super::partitioned_fixture;
        crate::vector::contract::vector_contract_tests!(partitioned_fixture);
    }

    fn user_points(rng: &mut StdRng, owner: &Owner, n: usize, thread: &str) -> Vec<VectorPoint> {
        (0..n)
            .map(|_| {
                let mut p = point(Uuid::now_v7(), random_vec(rng, 16), owner, Tier::Working);
                p.thread_id = Some(thread.into());
                p
            })
            .collect()
    }

    fn reference_points(rng: &mut StdRng, n: usize) -> Vec<VectorPoint> {
        let tenant = Owner::reference("default");
        (0..n)
            .map(|_| {
                point(
                    Uuid::now_v7(),
                    random_vec(rng, 16),
                    &tenant,
                    Tier::Reference,
                )
            })
            .collect()
    }

    /// Exact answer: the ids of the `k` points nearest to `q` by cosine.
    fn exact(points: &[&VectorPoint], q: &[f32], k: usize) -> Vec<Uuid> {
        let mut scored: Vec<_> = points
            .iter()
            .map(|p| (cosine(q, &p.vector), p.id))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(k).map(|(_, id)| id).collect()
    }

    /// Reference points live in `reference/`, users' in `users/`, and a
    /// search over a user's scope (their memories and the tenant's reference
    /// chunks) merges the two by score, exactly as one index would.
    #[test]
    fn each_owner_has_its_partition_and_a_search_merges_them() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let idx = PartitionedIndex::open(&dir, 16).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        let refs = reference_points(&mut rng, 60);
        let alice_pts = user_points(&mut rng, &alice(), 30, "t-1");
        let bob_pts = user_points(&mut rng, &bob(), 30, "t-2");
        let mut all = refs.clone();
        all.extend(alice_pts.clone());
        all.extend(bob_pts.clone());
        idx.upsert(all).unwrap();
        idx.flush().unwrap();

        let reference = EdgeVectorIndex::open(&dir.join(REFERENCE_DIR), 16);
        assert!(reference.is_err(), "the partition is locked by the index");
        assert_eq!(
            idx.reference
                .count_owner(&Owner::reference("default"))
                .unwrap(),
            60
        );
        assert_eq!(
            idx.users.count_owner(&Owner::reference("default")).unwrap(),
            0
        );
        assert_eq!(idx.users.count_owner(&alice()).unwrap(), 30);
        assert_eq!(idx.reference.count_owner(&alice()).unwrap(), 0);
        assert_eq!(idx.entries().unwrap().len(), 120);
        // Only the reference partition keeps int8 copies of its vectors
        // (they are built with its graphs; an erasure rewrites the users').
        let quantized = |p: &EdgeVectorIndex| {
            p.with_shard(|shard| Ok(shard.config().quantization_config.is_some()))
                .unwrap()
        };
        assert!(quantized(&idx.reference));
        assert!(!quantized(&idx.users));

        // Alice's scope with the reference tier: her points and the
        // tenant's, never Bob's.
        let filter = Scope::user("alice").with_thread("t-1").filter();
        let allowed: Vec<&VectorPoint> = refs.iter().chain(alice_pts.iter()).collect();
        for q in 0..10 {
            let query = random_vec(&mut rng, 16);
            let hits = idx.search(&query, &filter, 10).unwrap();
            assert_eq!(ids(&hits), exact(&allowed, &query, 10), "query {q}");
            assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        }
        // A delete by id finds the point in either partition.
        idx.delete(&[refs[0].id, alice_pts[0].id]).unwrap();
        assert!(
            idx.versions(&[refs[0].id, alice_pts[0].id, bob_pts[0].id])
                .unwrap()
                .len()
                == 1
        );
    }

    /// Bulk writes into the users partition stay in segments under the cap
    /// (the engine would put them all in one), so an erasure rewrites only
    /// the segments that held the user's points and leaves their vectors in
    /// no file; the reference partition's files are not touched.
    #[test]
    fn bulk_writes_stay_in_capped_segments_and_an_erasure_rewrites_few() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let users_tuning = Tuning {
            // 4 KB: 64 points of 16 dimensions.
            segment_cap_kb: Some(4),
            ..Tuning::tiny()
        };
        let idx = PartitionedIndex::open_with(&dir, 16, Tuning::tiny(), users_tuning).unwrap();
        let mut rng = StdRng::seed_from_u64(11);
        idx.upsert(reference_points(&mut rng, 100)).unwrap();
        let mut users = Vec::new();
        for u in 0..40 {
            let owner = Owner::user("default", &format!("user{u}"));
            let points = user_points(&mut rng, &owner, 8, &format!("thread-{u}"));
            // Batches of 16, as a bulk ingest sends them.
            users.push((owner, points));
        }
        for pair in users.chunks(2) {
            let batch: Vec<_> = pair.iter().flat_map(|(_, p)| p.clone()).collect();
            idx.upsert(batch).unwrap();
        }
        idx.optimize().unwrap();
        idx.flush().unwrap();

        let segments = |part: &str| -> HashSet<(String, u64)> {
            std::fs::read_dir(dir.join(part).join("segments"))
                .unwrap()
                .flatten()
                .filter(|e| e.file_type().unwrap().is_dir())
                .map(|e| {
                    let bytes = super::super::rebuild::dir_bytes(&e.path());
                    (e.file_name().into_string().unwrap(), bytes)
                })
                .collect()
        };
        let users_before = segments(USERS_DIR);
        let reference_before = segments(REFERENCE_DIR);
        // 320 points at 64 per segment: the writes were spread.
        assert!(users_before.len() >= 5, "{users_before:?}");
        let total: u64 = users_before.iter().map(|(_, b)| b).sum();

        let (victim, victim_points) = &users[17];
        let mut needles = Vec::new();
        for (i, p) in victim_points.iter().enumerate() {
            needles.extend(vector_needles(&format!("victim{i}"), &p.vector));
        }
        let before = scan_dir(root.path(), &needles).unwrap();
        assert!(holds(&before, "victim"), "the needles see the vectors");

        assert_eq!(idx.delete_owner(victim).unwrap(), 8);
        idx.flush().unwrap();
        let removed = idx.purge_deleted().unwrap();
        assert!(removed > 0);
        assert!(
            removed * 2 < total,
            "an erasure rewrote {removed} of {total} bytes of the users partition"
        );
        let after = scan_dir(root.path(), &needles).unwrap();
        assert!(!holds(&after, "victim"), "{:?}", after.hits);
        assert_eq!(segments(REFERENCE_DIR), reference_before);
        // Everyone else is still there and found.
        let (other, other_points) = &users[18];
        assert_eq!(idx.count_owner(other).unwrap(), 8);
        let f = Scope::user("user18").with_thread("thread-18").filter();
        assert_eq!(
            idx.search(&other_points[3].vector, &f, 1).unwrap()[0].0,
            other_points[3].id
        );
        assert_eq!(idx.entries().unwrap().len(), 100 + 39 * 8);
    }

    /// An index of one shard (every index before the partitions) is split
    /// at open: its live points and payloads are in the partitions, thread
    /// filters still match (the payload key came along), the deleted
    /// owner's vectors are in no file, and nothing of the old layout stays.
    #[test]
    fn a_single_shard_index_is_split_at_open() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let mut rng = StdRng::seed_from_u64(5);
        let refs = reference_points(&mut rng, 50);
        let alice_pts = user_points(&mut rng, &alice(), 20, "ticket-ALICE");
        let bob_pts = user_points(&mut rng, &bob(), 20, "ticket-BOB");
        {
            let flat = EdgeVectorIndex::open(&dir, 16).unwrap();
            flat.upsert(refs.clone()).unwrap();
            flat.upsert(alice_pts.clone()).unwrap();
            flat.upsert(bob_pts.clone()).unwrap();
            // Deleted, not yet purged: the split must not carry it over.
            assert_eq!(flat.delete_owner(&bob()).unwrap(), 20);
            flat.flush().unwrap();
        }
        let mut needles = Vec::new();
        for (i, p) in bob_pts.iter().enumerate().take(5) {
            needles.extend(vector_needles(&format!("bob{i}"), &p.vector));
        }
        assert!(holds(&scan_dir(root.path(), &needles).unwrap(), "bob"));

        let idx = PartitionedIndex::open(&dir, 16).unwrap();
        let names: HashSet<String> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, HashSet::from(["vectors".to_string()]));
        assert!(!dir.join("segments").exists());
        assert!(!dir.join(SPLIT_COMPLETE).exists());
        assert!(!holds(&scan_dir(root.path(), &needles).unwrap(), "bob"));
        let want: Vec<(Uuid, i64)> = refs
            .iter()
            .chain(alice_pts.iter())
            .map(|p| (p.id, p.version))
            .collect();
        assert_eq!(sorted(idx.entries().unwrap()), sorted(want));
        assert_eq!(
            idx.reference
                .count_owner(&Owner::reference("default"))
                .unwrap(),
            50
        );
        assert_eq!(idx.users.count_owner(&alice()).unwrap(), 20);
        let f = Scope::user("alice").with_thread("ticket-ALICE").filter();
        assert_eq!(
            idx.search(&alice_pts[4].vector, &f, 1).unwrap()[0].0,
            alice_pts[4].id
        );
        drop(idx);
        // Opening again changes nothing.
        let idx = PartitionedIndex::open(&dir, 16).unwrap();
        assert_eq!(idx.entries().unwrap().len(), 70);
    }

    /// A crash during the swap leaves either the old directory or the
    /// complete partitions; the next open finishes from either.
    #[test]
    fn an_interrupted_split_is_finished_or_undone_at_open() {
        let root = TempDir::new().unwrap();
        let dir = root.path().join("vectors");
        let mut rng = StdRng::seed_from_u64(9);
        let mut points = reference_points(&mut rng, 10);
        points.extend(user_points(&mut rng, &alice(), 10, "t"));
        {
            let flat = EdgeVectorIndex::open(&dir, 16).unwrap();
            flat.upsert(points.clone()).unwrap();
            flat.flush().unwrap();
        }
        // Crash after the old directory moved aside, before the complete
        // partitions moved in.
        {
            let idx = PartitionedIndex::open(&dir, 16).unwrap();
            assert_eq!(idx.entries().unwrap().len(), 20);
        }
        let parts = sibling(&dir, "parts");
        std::fs::rename(&dir, &parts).unwrap();
        std::fs::write(parts.join(SPLIT_COMPLETE), b"").unwrap();
        std::fs::create_dir_all(sibling(&dir, "flat").join("segments")).unwrap();
        let idx = PartitionedIndex::open(&dir, 16).unwrap();
        assert_eq!(idx.entries().unwrap().len(), 20);
        assert!(!parts.exists() && !sibling(&dir, "flat").exists());
        drop(idx);
        // Crash during the copy: an incomplete `.parts` beside the old
        // directory is dropped and the split runs again.
        let flat_root = TempDir::new().unwrap();
        let dir = flat_root.path().join("vectors");
        {
            let flat = EdgeVectorIndex::open(&dir, 16).unwrap();
            flat.upsert(points.clone()).unwrap();
            flat.flush().unwrap();
        }
        std::fs::create_dir_all(sibling(&dir, "parts").join(USERS_DIR)).unwrap();
        let idx = PartitionedIndex::open(&dir, 16).unwrap();
        assert_eq!(sorted(idx.entries().unwrap()).len(), 20);
        assert!(!sibling(&dir, "parts").exists());
    }
}
