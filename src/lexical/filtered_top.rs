//! The best `k` BM25 hits of a query among the documents a filter admits.
//!
//! tantivy prunes a top-k search with block-max WAND only when the query is a
//! plain union (or intersection) of terms: a union of the query's terms
//! intersected with the scope filter scores *every* document that matches
//! any term and the filter. A user's scope includes the tenant's whole
//! reference tier, so a query with a common word ("the", "what") scored
//! every reference chunk: the lexical leg grew with the tenant's reference
//! knowledge, not with the user's memories.
//!
//! Per segment, one of two exact strategies, chosen by how many documents
//! the filter admits there (its scorer's size hint):
//! - **few** (at most [`DIRECT_MAX`], or under 1/[`DENSITY_DIVISOR`] of the
//!   segment): leapfrog the filter's documents and the terms' union, scoring
//!   only documents in both (what the intersection did);
//! - **many**: block-max WAND over the terms' union, with the filter checked
//!   for each document WAND cannot rule out (it calls back in increasing
//!   document order, so the filter's scorer only moves forward). The
//!   threshold is the k-th best score *among admitted documents*, kept across
//!   segments, so a document WAND skips could not have entered the top k.
//!
//! Both return what the intersection query returns, up to the order of
//! documents with equal scores at the cut: the choice is about cost only.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::{DocAddress, DocId, DocSet, Score, Searcher, SegmentReader, TERMINATED};

/// A filter admitting at most this many documents of a segment is walked
/// document by document.
const DIRECT_MAX: u32 = 1024;
/// … as is one admitting less than 1/this of the segment's documents.
const DENSITY_DIVISOR: u64 = 8;

/// The best `k` hits of `terms` (a union of term queries) among the
/// documents `filter` admits, best first, with their BM25 scores.
pub(crate) fn filtered_top_k(
    searcher: &Searcher,
    terms: &dyn Query,
    filter: &dyn Query,
    k: usize,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let terms = terms.weight(EnableScoring::enabled_from_searcher(searcher))?;
    let filter = filter.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut top = TopHits::new(k);
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let ord = u32::try_from(ord).unwrap_or(u32::MAX);
        search_segment(terms.as_ref(), filter.as_ref(), segment, ord, &mut top)?;
    }
    Ok(top.into_sorted())
}

fn search_segment(
    terms: &dyn Weight,
    filter: &dyn Weight,
    segment: &SegmentReader,
    ord: u32,
    top: &mut TopHits,
) -> tantivy::Result<()> {
    let mut admitted = filter.scorer(segment, 1.0)?;
    if admitted.doc() == TERMINATED {
        return Ok(());
    }
    let alive = |doc: DocId| segment.alive_bitset().is_none_or(|a| a.is_alive(doc));
    let estimate = admitted.size_hint();
    if estimate <= DIRECT_MAX
        || u64::from(estimate) * DENSITY_DIVISOR < u64::from(segment.max_doc())
    {
        // Leapfrog: each side seeks the other's document.
        let mut scorer = terms.scorer(segment, 1.0)?;
        let (mut f, mut t) = (admitted.doc(), scorer.doc());
        while f != TERMINATED && t != TERMINATED {
            match f.cmp(&t) {
                Ordering::Less => f = admitted.seek(t),
                Ordering::Greater => t = scorer.seek(f),
                Ordering::Equal => {
                    if alive(f) {
                        top.push(scorer.score(), ord, f);
                    }
                    f = admitted.advance();
                }
            }
        }
        return Ok(());
    }
    terms.for_each_pruning(top.threshold(), segment, &mut |doc, score| {
        if alive(doc) {
            let f = if admitted.doc() < doc {
                admitted.seek(doc)
            } else {
                admitted.doc()
            };
            if f == doc {
                top.push(score, ord, doc);
            }
        }
        top.threshold()
    })
}

/// A hit in the heap: ordered by score, then by address (earlier first).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    score: Score,
    ord: u32,
    doc: DocId,
}

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| (other.ord, other.doc).cmp(&(self.ord, self.doc)))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best `k` hits so far; the worst of them on top of the heap.
struct TopHits {
    k: usize,
    heap: BinaryHeap<Reverse<Entry>>,
}

impl TopHits {
    fn new(k: usize) -> Self {
        TopHits {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// The score a hit must beat to enter: the k-th best, once there are k.
    fn threshold(&self) -> Score {
        match self.heap.peek() {
            Some(Reverse(worst)) if self.heap.len() >= self.k => worst.score,
            _ => Score::MIN,
        }
    }

    fn push(&mut self, score: Score, ord: u32, doc: DocId) {
        if self.heap.len() >= self.k && score <= self.threshold() {
            return;
        }
        self.heap.push(Reverse(Entry { score, ord, doc }));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    fn into_sorted(self) -> Vec<(Score, DocAddress)> {
        let mut hits: Vec<Entry> = self.heap.into_iter().map(|Reverse(e)| e).collect();
        hits.sort_by(|a, b| b.cmp(a));
        hits.into_iter()
            .map(|e| (e.score, DocAddress::new(e.ord, e.doc)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, Value, STORED, STRING, TEXT};
    use tantivy::{doc, Index, Term};

    use super::*;

    /// An index of `n` documents in several segments: words drawn from a
    /// small vocabulary (so terms are common and scores vary), a `group`
    /// field to filter on, and some deletions.
    fn index(n: usize, groups: usize) -> (Index, tantivy::schema::Field, tantivy::schema::Field) {
        let mut b = Schema::builder();
        let text = b.add_text_field("text", TEXT);
        let group = b.add_text_field("group", STRING | STORED);
        let index = Index::create_in_ram(b.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        const WORDS: [&str; 12] = [
            "the", "tea", "coffee", "meeting", "report", "flight", "the", "a", "budget", "tea",
            "the", "lisbon",
        ];
        for i in 0..n {
            let len = 3 + (i * 7) % 11;
            let words: Vec<&str> = (0..len)
                .map(|j| WORDS[(i * 31 + j * j * 17 + j) % 12])
                .collect();
            let g = if i % 97 == 0 {
                "rare".to_string()
            } else {
                format!("g{}", i % groups)
            };
            writer
                .add_document(doc!(text => words.join(" "), group => g))
                .unwrap();
            if i % 400 == 399 {
                writer.commit().unwrap();
            }
        }
        writer.delete_term(Term::from_field_text(group, "g1"));
        writer.commit().unwrap();
        (index, text, group)
    }

    /// `field` holds any of `values`.
    fn any_of(
        field: tantivy::schema::Field,
        values: &[&str],
        option: IndexRecordOption,
    ) -> BooleanQuery {
        BooleanQuery::new(
            values
                .iter()
                .map(|v| {
                    let q: Box<dyn Query> =
                        Box::new(TermQuery::new(Term::from_field_text(field, v), option));
                    (Occur::Should, q)
                })
                .collect(),
        )
    }

    fn union(text: tantivy::schema::Field, words: &[&str]) -> BooleanQuery {
        any_of(text, words, IndexRecordOption::WithFreqs)
    }

    fn any_group(group: tantivy::schema::Field, groups: &[&str]) -> BooleanQuery {
        any_of(group, groups, IndexRecordOption::Basic)
    }

    /// What the intersection query (the plain way) returns: scores, best first.
    fn reference(
        searcher: &Searcher,
        terms: &BooleanQuery,
        filter: &BooleanQuery,
        k: usize,
    ) -> Vec<Score> {
        let q = BooleanQuery::new(vec![
            (Occur::Must, Box::new(terms.clone()) as Box<dyn Query>),
            (
                Occur::Must,
                Box::new(ConstScoreQuery::new(Box::new(filter.clone()), 0.0)),
            ),
        ]);
        searcher
            .search(&q, &TopDocs::with_limit(k).order_by_score())
            .unwrap()
            .into_iter()
            .map(|(s, _)| s)
            .collect()
    }

    #[test]
    fn both_strategies_return_what_the_intersection_returns() {
        let (index, text, group) = index(3000, 4);
        let searcher = index.reader().unwrap().searcher();
        assert!(searcher.segment_readers().len() > 3);
        let queries: [&[&str]; 4] = [
            &["the"],
            &["the", "tea"],
            &["lisbon", "budget", "a"],
            &["coffee", "nothing"],
        ];
        // Dense filters (WAND), a sparse one (leapfrog), and one whose group
        // was deleted (nothing).
        let filters: [&[&str]; 5] = [
            &["g0", "g2", "g3"],
            &["g0"],
            &["rare"],
            &["g1"],
            &["g0", "rare"],
        ];
        for words in queries {
            for groups in filters {
                for k in [1, 10, 50, 5000] {
                    let terms = union(text, words);
                    let filter = any_group(group, groups);
                    let got: Vec<Score> = filtered_top_k(&searcher, &terms, &filter, k)
                        .unwrap()
                        .into_iter()
                        .map(|(s, _)| s)
                        .collect();
                    let want = reference(&searcher, &terms, &filter, k);
                    assert_eq!(got.len(), want.len(), "{words:?} {groups:?} k={k}");
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                            "{words:?} {groups:?} k={k}: {got:?} vs {want:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn hits_are_admitted_alive_and_best_first() {
        let (index, text, group) = index(2000, 4);
        let searcher = index.reader().unwrap().searcher();
        let hits = filtered_top_k(
            &searcher,
            &union(text, &["the", "tea"]),
            &any_group(group, &["g1", "g2"]),
            100,
        )
        .unwrap();
        assert_eq!(hits.len(), 100);
        assert!(hits.windows(2).all(|w| w[0].0 >= w[1].0));
        for (_, addr) in hits {
            let d: tantivy::TantivyDocument = searcher.doc(addr).unwrap();
            let g = d
                .get_first(group)
                .and_then(|v| v.as_str())
                .unwrap()
                .to_string();
            assert_eq!(g, "g2", "g1 was deleted; only g2 is admitted and alive");
        }
    }
}
