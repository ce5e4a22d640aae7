//! Which segments the lexical index merges: never into one bigger than
//! [`SEGMENT_MAX_DOCS`].
//!
//! Forget-all rewrites every segment that holds one of the user's documents
//! (a merge is what drops deleted documents from the files), so its cost is
//! the size of those segments, not the user's. tantivy's [`LogMergePolicy`]
//! merges segments of similar size level by level without bound: after a
//! bulk ingest of a million memories one segment held 806,856 documents and
//! every erasure rewrote it (1.4 s). [`CappedMergePolicy`] keeps the log
//! policy's choice of *which* segments belong together and packs each of its
//! candidates into merges of at most the cap, so no merge ever makes a
//! segment larger than the cap. The purge packs the segments it rewrites the
//! same way ([`pack`]).
//!
//! The cost: more segments to search at scale (a million documents are at
//! least ten segments). BM25 statistics are the searcher's, over every
//! segment, so scores do not depend on how documents are split.

use tantivy::merge_policy::{LogMergePolicy, MergeCandidate, MergePolicy};
use tantivy::SegmentMeta;

/// Live documents a merge may produce at most. Rewriting a segment costs
/// about 1.7 µs a document on this machine kind (a 806,856-document segment
/// took 1.38 s), so an erasure's lexical leg stays near 0.2 s per segment it
/// touches. The writer's 64 MB budget flushes bulk writes into segments of
/// about this size already, so a bulk ingest makes segments near the cap that
/// are never merged again.
pub(crate) const SEGMENT_MAX_DOCS: u32 = 100_000;

/// [`LogMergePolicy`]'s candidates, packed into merges of at most `max_docs`
/// live documents. See the module.
#[derive(Debug)]
pub(crate) struct CappedMergePolicy {
    log: LogMergePolicy,
    max_docs: u32,
}

impl CappedMergePolicy {
    pub(crate) fn new(max_docs: u32) -> Self {
        let mut log = LogMergePolicy::default();
        // A segment over half the cap could only be merged with a smaller
        // one; leave it as it is (a purge still rewrites it alone). Its
        // deleted documents (an edit is a delete and an add) wait for a purge,
        // or until its live documents fall under half the cap and it is a
        // candidate again: at most about half of a big segment is dead.
        log.set_max_docs_before_merge((max_docs / 2) as usize);
        CappedMergePolicy { log, max_docs }
    }
}

impl MergePolicy for CappedMergePolicy {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        self.log
            .compute_merge_candidates(segments)
            .into_iter()
            .flat_map(|candidate| {
                let sized = candidate
                    .0
                    .into_iter()
                    .filter_map(|id| {
                        let meta = segments.iter().find(|m| m.id() == id)?;
                        Some(((id, meta.has_deletes()), meta.num_docs()))
                    })
                    .collect();
                pack(sized, self.max_docs)
            })
            // A merge of one segment only rewrites it: worth it to drop
            // deleted documents, not otherwise.
            .filter(|group| group.len() > 1 || group.iter().any(|(_, deletes)| *deletes))
            .map(|group| MergeCandidate(group.into_iter().map(|(id, _)| id).collect()))
            .collect()
    }
}

/// Packs segments `(id, live documents)` into groups of at most `max_docs`
/// documents (first fit, largest first); a segment larger than `max_docs` is
/// a group of its own. Every segment is in exactly one group, and the groups
/// are as few as first fit makes them: merged at once, they use the merge
/// threads in parallel, and no merge makes a segment over the cap.
pub(crate) fn pack<Id>(mut segments: Vec<(Id, u32)>, max_docs: u32) -> Vec<Vec<Id>> {
    segments.sort_by_key(|(_, docs)| std::cmp::Reverse(*docs));
    let mut groups: Vec<(u64, Vec<Id>)> = Vec::new();
    for (id, docs) in segments {
        let docs = u64::from(docs);
        match groups
            .iter_mut()
            .find(|(total, _)| total + docs <= u64::from(max_docs))
        {
            Some(group) => {
                group.0 += docs;
                group.1.push(id);
            }
            None => groups.push((docs, vec![id])),
        }
    }
    groups.into_iter().map(|(_, ids)| ids).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_never_makes_a_group_over_the_cap_unless_alone() {
        let segments = vec![("a", 60), ("b", 50), ("c", 40), ("d", 30), ("e", 120)];
        let groups = pack(segments, 100);
        assert_eq!(
            groups,
            vec![vec!["e"], vec!["a", "c"], vec!["b", "d"]],
            "the big one alone, the rest first fit"
        );
        assert!(pack(Vec::<(&str, u32)>::new(), 100).is_empty());
        assert_eq!(pack(vec![("x", 0)], 0), vec![vec!["x"]]);
    }

    /// Real tantivy: many small commits under a cap of 50 documents are
    /// merged (fewer segments than commits), and never past the cap.
    #[test]
    fn the_policy_merges_small_segments_and_never_past_the_cap() {
        use tantivy::schema::{Schema, STRING};
        use tantivy::{doc, Index};

        let mut schema = Schema::builder();
        let id = schema.add_text_field("id", STRING);
        let index = Index::create_in_ram(schema.build());
        let mut writer: tantivy::IndexWriter =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(CappedMergePolicy::new(50)));
        let commits = 40;
        for c in 0..commits {
            for i in 0..10 {
                writer.add_document(doc!(id => format!("{c}-{i}"))).unwrap();
            }
            writer.commit().unwrap();
        }
        writer.wait_merging_threads().unwrap();
        let segments = index.searchable_segment_metas().unwrap();
        let docs: Vec<u32> = segments.iter().map(|m| m.num_docs()).collect();
        assert_eq!(docs.iter().sum::<u32>(), commits * 10, "{docs:?}");
        assert!(docs.len() < commits as usize / 2, "merged: {docs:?}");
        assert!(docs.iter().all(|&d| d <= 50), "capped: {docs:?}");
    }

    proptest::proptest! {
        #[test]
        fn pack_keeps_every_segment_once_and_respects_the_cap(
            docs in proptest::collection::vec(0u32..300, 0..40),
            cap in 1u32..400,
        ) {
            let segments: Vec<(usize, u32)> = docs.iter().copied().enumerate().collect();
            let groups = pack(segments, cap);
            let mut seen: Vec<usize> = groups.iter().flatten().copied().collect();
            seen.sort_unstable();
            proptest::prop_assert_eq!(seen, (0..docs.len()).collect::<Vec<_>>());
            for group in &groups {
                let total: u64 = group.iter().map(|&i| u64::from(docs[i])).sum();
                proptest::prop_assert!(group.len() == 1 || total <= u64::from(cap));
            }
        }
    }
}
