//! BM25 over one segment's inverted index.
//!
//! The formula and the top-k driver live here once; what differs per backend
//! is how a posting list is walked and where a term frequency comes from, and
//! that is behind [`TermCursors`]. The immutable and on-disk indexes read `tf`
//! from `term_frequencies.dat`, in posting order. The mutable index stores documents as
//! ordered token ids and counts a candidate document once for every query term.
//!
//! Corpus statistics are inputs, not something computed here: `IDF` and the
//! average document length are gathered across the shard before any segment
//! scores, so the same document scores the same wherever it lives.

mod frequency_cursors;
mod mutable_cursors;
#[cfg(test)]
mod tests;
mod top_k;

use crate::common::condition_checker::{CheckItem, ConditionChecker, Rest, Select, default_check_batched};
use crate::common::types::{PointOffsetType, ScoreType};
pub use frequency_cursors::FrequencyCursors;
pub use mutable_cursors::MutableCursors;
#[cfg(test)]
use top_k::{HEAP_MIN_ESSENTIAL, Strategy, score_top_k_with};
pub use top_k::{ON_DISK_BLOCK, score_top_k};

use super::TokenId;
use crate::segment::common::operation_error::{OperationError, OperationResult};
use crate::segment::index::field_index::nested_index::ElementOffsetType;
use crate::segment::index::query_optimization::optimized_filter::OptimizedFilter;

/// Saturation and length normalization. Request-time parameters: they are not
/// part of the index, so changing them never rebuilds anything.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self { k1: 1.2, b: 0.75 }
    }
}

/// Which documents a BM25 query may score: the points a query sees, and of
/// those the ones an outer filter allows.
pub struct Bm25Accept<'a> {
    /// In-memory masks: deletions, deferred and shadowed points.
    visible: &'a dyn Fn(PointOffsetType) -> bool,
    /// May read storage, and fail.
    filter: Option<&'a OptimizedFilter<'a>>,
    /// The point that owns a scored document, when the index scores the elements
    /// of a nested array instead of points. `filter` is checked on that point.
    element_point: Option<&'a dyn Fn(ElementOffsetType) -> Option<PointOffsetType>>,
}

impl<'a> Bm25Accept<'a> {
    pub fn new(
        visible: &'a dyn Fn(PointOffsetType) -> bool,
        filter: Option<&'a OptimizedFilter<'a>>,
    ) -> Self {
        Self {
            visible,
            filter,
            element_point: None,
        }
    }

    /// The same filter for an index whose documents are elements of a nested array:
    /// `element_point` gives the point that owns an element, `None` for an element
    /// no point owns, and `visible` is the mask over elements.
    pub fn for_elements<'b>(
        &'b self,
        visible: &'b dyn Fn(ElementOffsetType) -> bool,
        element_point: &'b dyn Fn(ElementOffsetType) -> Option<PointOffsetType>,
    ) -> Bm25Accept<'b> {
        debug_assert!(self.element_point.is_none());
        Bm25Accept {
            visible,
            filter: self.filter,
            element_point: Some(element_point),
        }
    }

    /// Whether a query sees `point_id`.
    pub fn is_visible(&self, point_id: PointOffsetType) -> bool {
        (self.visible)(point_id)
    }

    /// The same filter behind a narrower mask, for an index whose posting
    /// lists keep the points removed from it.
    pub fn with_visible<'b>(
        &'b self,
        visible: &'b dyn Fn(PointOffsetType) -> bool,
    ) -> Bm25Accept<'b> {
        Bm25Accept {
            visible,
            filter: self.filter,
            element_point: self.element_point,
        }
    }

    /// Whether the outer filter allows the document `id`.
    fn check_filter(&self, filter: &OptimizedFilter, id: PointOffsetType) -> OperationResult<bool> {
        match self.element_point {
            Some(element_point) => match element_point(id) {
                Some(point_id) => filter.check(point_id),
                None => Ok(false),
            },
            None => filter.check(id),
        }
    }
}

/// A batch is masked in memory first, and the outer filter then reads storage
/// once for what is left. A filter that fails to read reports the error rather
/// than leaving the points out.
impl ConditionChecker for Bm25Accept<'_> {
    type Error = OperationError;

    fn check(&self, point_id: PointOffsetType) -> OperationResult<bool> {
        if !self.is_visible(point_id) {
            return Ok(false);
        }
        match self.filter {
            Some(filter) => self.check_filter(filter, point_id),
            None => Ok(true),
        }
    }

    fn check_batched<K: CheckItem>(
        &self,
        items: &mut [K],
        select: Select,
        rest: Rest,
    ) -> OperationResult<usize> {
        match select {
            Select::Matches => {
                let visible = default_check_batched(items, Select::Matches, rest, |point_id| {
                    Ok::<_, OperationError>(self.is_visible(point_id))
                })?;
                match (self.filter, self.element_point) {
                    (Some(filter), None) => {
                        filter.check_batched(&mut items[..visible], Select::Matches, rest)
                    }
                    // Element ids are not point ids: check the owning points one by one
                    (Some(filter), Some(_)) => {
                        default_check_batched(&mut items[..visible], Select::Matches, rest, |id| {
                            self.check_filter(filter, id)
                        })
                    }
                    (None, _) => Ok(visible),
                }
            }
            Select::NonMatches => {
                default_check_batched(items, select, rest, |point_id| self.check(point_id))
            }
        }
    }
}

/// One query term resolved against a segment: the segment-local token id and
/// the corpus-wide inverse document frequency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Term {
    pub token_id: TokenId,
    pub idf: f32,
}

/// A query ready to score one segment.
#[derive(Debug, Clone)]
pub struct Bm25Query {
    /// Deduplicated by token id and sorted by upper bound ascending, which the
    /// MaxScore driver relies on.
    terms: Vec<Bm25Term>,
    params: Bm25Params,
    /// `None` degrades length normalization to `b = 0`, which is what the
    /// sparse route gives today: every document is treated as average length.
    avg_doc_len: Option<f32>,
}

impl Bm25Params {
    /// The domain in which a term's contribution stays under its MaxScore
    /// bound: finite `k1 >= 0` and finite `b` in `[0, 1]`. Outside it the
    /// length normalization can shrink the denominator below `tf`, a term
    /// can score above `idf * (k1 + 1)`, and pruning would drop documents
    /// that belong in the top `k`.
    pub fn validate(&self) -> OperationResult<()> {
        let Self { k1, b } = *self;
        if !(k1.is_finite() && k1 >= 0.0) {
            return Err(OperationError::validation_error(format!(
                "BM25 k1 must be finite and non-negative, got {k1}"
            )));
        }
        if !(b.is_finite() && (0.0..=1.0).contains(&b)) {
            return Err(OperationError::validation_error(format!(
                "BM25 b must be finite and within [0, 1], got {b}"
            )));
        }
        Ok(())
    }
}

impl Bm25Query {
    /// Fails when `params` leave the domain the MaxScore bound holds in, when
    /// a term's `idf` is not finite and non-negative, or when the average
    /// length is not a finite positive number.
    pub fn new(
        terms: impl IntoIterator<Item = Bm25Term>,
        params: Bm25Params,
        avg_doc_len: Option<f32>,
    ) -> OperationResult<Self> {
        params.validate()?;
        if let Some(avg) = avg_doc_len
            && !(avg.is_finite() && avg > 0.0)
        {
            return Err(OperationError::validation_error(format!(
                "BM25 average document length must be finite and positive, got {avg}"
            )));
        }
        let mut terms: Vec<Bm25Term> = terms.into_iter().collect();
        // Pruning needs every bound non-negative, so that summing more terms
        // never lowers it.
        if let Some(term) = terms
            .iter()
            .find(|term| !(term.idf.is_finite() && term.idf >= 0.0))
        {
            return Err(OperationError::validation_error(format!(
                "BM25 idf must be finite and non-negative, got {} for token {}",
                term.idf, term.token_id
            )));
        }
        // A repeated query term counts once. BM25 has a query-frequency factor
        // in some formulations; this one, like the sparse route, does not.
        terms.sort_by_key(|term| term.token_id);
        terms.dedup_by_key(|term| term.token_id);
        // The bound is `idf * (k1 + 1)`, so ordering by idf orders by bound.
        terms.sort_by(|a, b| a.idf.total_cmp(&b.idf));
        Ok(Self {
            terms,
            params,
            avg_doc_len,
        })
    }

    pub fn terms(&self) -> &[Bm25Term] {
        &self.terms
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether document lengths take part in the score at all. When they do
    /// not, the driver never asks for one.
    pub(super) fn normalizes_length(&self) -> bool {
        self.params.b > 0.0 && self.avg_doc_len.is_some_and(|avg| avg > 0.0)
    }

    /// The most a term can contribute, reached as `tf` grows without bound.
    fn upper_bound(&self, term: &Bm25Term) -> ScoreType {
        term.idf * (self.params.k1 + 1.0)
    }

    /// One term's contribution to one document. The scorers compute
    /// [`Self::doc_norm`] once per document and use
    /// [`Self::term_score_with_norm`]; this is their definition, for the tests.
    #[cfg(test)]
    fn term_score(&self, idf: f32, tf: u32, doc_len: Option<u32>) -> ScoreType {
        self.term_score_with_norm(idf, tf, self.doc_norm(doc_len))
    }

    /// The part of [`Self::term_score`] that depends on the document alone,
    /// `k1 * (1 - b + b * len / avg)`: computed once per document, it saves a
    /// division per posting.
    fn doc_norm(&self, doc_len: Option<u32>) -> ScoreType {
        let Bm25Params { k1, b } = self.params;
        match (self.avg_doc_len, doc_len) {
            (Some(avg), Some(len)) if self.normalizes_length() => {
                k1 * (1.0 - b + b * len as f32 / avg)
            }
            _ => k1,
        }
    }

    /// [`Self::term_score`] given the document's [`Self::doc_norm`].
    #[inline]
    fn term_score_with_norm(&self, idf: f32, tf: u32, norm: ScoreType) -> ScoreType {
        let k1 = self.params.k1;
        let tf = tf as f32;
        idf * tf * (k1 + 1.0) / (tf + norm)
    }
}

/// One cursor per query term, in the query's term order. The driver only ever
/// moves cursors forward.
pub trait TermCursors {
    /// The document the cursor for `term` stands on, `None` once exhausted.
    fn current(&self, term: usize) -> Option<PointOffsetType>;

    /// Move the cursor for `term` past its current document.
    fn advance(&mut self, term: usize);

    /// Entries in the posting list of `term`, as when the cursors were made.
    fn posting_len(&self, term: usize) -> usize;

    /// Call `f(doc, tf)` for every document from the cursor's current one up
    /// to `end`, excluded, in order, and leave the cursor on the first
    /// document at or past `end`, if any.
    fn for_each_posting_below(
        &mut self,
        term: usize,
        end: PointOffsetType,
        mut f: impl FnMut(PointOffsetType, u32),
    ) where
        Self: Sized,
    {
        while let Some(doc) = self.current(term) {
            if doc >= end {
                break;
            }
            let tf = self.tf(term, doc);
            f(doc, tf);
            self.advance(term);
        }
    }

    /// Whether `tf` is as cheap read one term at a time over many documents as
    /// one document at a time over its terms, so the query may be scored term
    /// at a time.
    fn term_at_a_time(&self) -> bool;

    /// Move the cursor for `term` to the first document at or after `target`
    /// and return it. A cursor already at or past `target` does not move.
    fn seek(&mut self, term: usize, target: PointOffsetType) -> Option<PointOffsetType>;

    /// Occurrences of `term` in `doc`. Only called while
    /// `current(term) == Some(doc)`.
    ///
    /// Takes `&mut self` so a backend can cache per-document work across the
    /// terms of one candidate: the mutable index counts every query term's
    /// frequency on the first call for a document and answers the rest from
    /// that count.
    fn tf(&mut self, term: usize, doc: PointOffsetType) -> u32;
}
