use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ahash::AHashMap;
#[cfg(feature = "testing")]
use crate::common::ambient::AmbientContext;
use crate::common::ambient::Handoff;
use crate::common::bitvec::BitSlice;
use crate::common::cow::SimpleCow;
use crate::common::types::ScoreType;
use crate::sparse::common::types::{DimId, DimWeight};

use crate::segment::data_types::tiny_map;
use crate::segment::index::query_optimization::rescore_formula::parsed_formula::ParsedFormula;
use crate::segment::types::{Filter, PayloadKeyType, ScoredPoint, VectorName, VectorNameBuf};

#[derive(Debug, Default, Clone)]
pub struct QueryIdfStats {
    /// IDF statistics per corpus scope.
    ///
    /// Each batch request contributes its query terms to the scope matching
    /// its IDF corpus, so requests with different corpora get independently
    /// computed statistics. Typically holds a single (global) entry.
    pub scopes: Vec<IdfScopeStats>,
}

impl QueryIdfStats {
    pub fn scope(&self, corpus: Option<&Filter>) -> Option<&IdfScopeStats> {
        self.scopes
            .iter()
            .find(|scope| scope.corpus.as_ref() == corpus)
    }
}

/// Statistics of the element frequency, collected over all segments,
/// scoped to a single IDF corpus.
/// Required for processing sparse vector search with `idf-dot` similarity.
#[derive(Debug, Clone)]
pub struct IdfScopeStats {
    /// Filter defining the population the statistics are computed over.
    /// `None` — the whole collection (global statistics).
    pub corpus: Option<Filter>,

    /// Document frequency per dimension, per vector name.
    pub idf: tiny_map::TinyMap<VectorNameBuf, HashMap<DimId, usize>>,

    /// Number of documents (indexed vectors within the corpus) per vector name.
    pub indexed_vectors: tiny_map::TinyMap<VectorNameBuf, usize>,
}

/// Corpus statistics for one text field, summed over every segment of one
/// local shard. Keyed by term string rather than `TokenId`, which is local to
/// the segment that assigned it.
#[derive(Debug, Clone)]
pub struct TextFieldStats {
    /// The IDF corpus: only points matching it count as documents, for `N`,
    /// `df` and `avgdl` alike. `None` counts every point of the shard.
    pub corpus: Option<Filter>,

    /// Document frequency per query term, seeded with the terms the query
    /// needs so each segment knows which ones to resolve and report.
    pub df: HashMap<String, usize>,

    /// Documents carrying this field: `N` in the IDF formula.
    pub documents: usize,

    /// Total tokens over those documents, the numerator of `avgdl`. `None` as
    /// soon as one contributing segment does not record document lengths.
    pub total_tokens: Option<u64>,
}

impl Default for TextFieldStats {
    fn default() -> Self {
        Self {
            corpus: None,
            df: HashMap::new(),
            documents: 0,
            total_tokens: Some(0),
        }
    }
}

impl TextFieldStats {
    /// Fold in one segment's contribution.
    pub fn add_segment(&mut self, documents: usize, total_tokens: Option<u64>) {
        self.documents += documents;
        self.total_tokens = match (self.total_tokens, total_tokens) {
            (Some(total), Some(segment_total)) => Some(total + segment_total),
            _ => None,
        };
    }
}

/// Advanced formula for Inverse Document Frequency (IDF) according to wikipedia.
/// This should account for corner cases when `df` and `n` are small or zero.
#[inline]
pub fn fancy_idf(n: DimWeight, df: DimWeight) -> DimWeight {
    ((n - df + 0.5) / (df + 0.5) + 1.).ln()
}

/// Filling segments in parallel: each segment fills its own clone of an
/// unfilled context, then [`QueryContext::merge_statistics`] sums the clones
/// back into the original.
#[derive(Debug, Clone)]
pub struct QueryContext {
    /// Total amount of available (and visible) points in the segment.
    available_point_count: usize,

    /// Parameter, which defines how big a plain segment can be to be considered
    /// small enough to be searched with `indexed_only` option.
    search_optimized_threshold_kb: usize,

    /// Defines if the search process was stopped.
    /// Is changed externally if API times out or cancelled.
    is_stopped: Arc<AtomicBool>,

    /// Statistics of the element frequency,
    /// collected over all segments.
    /// Required for processing sparse vector search with `idf-dot` similarity.
    idf_stats: QueryIdfStats,

    /// Corpus statistics per text field, collected over all segments.
    /// Required for scoring a text query against a payload index.
    text_stats: AHashMap<PayloadKeyType, TextFieldStats>,

    /// The scope of the query, to enter it on segment threads.
    handoff: Handoff,
}

impl QueryContext {
    pub fn new(search_optimized_threshold_kb: usize, handoff: Handoff) -> Self {
        Self {
            available_point_count: 0,
            search_optimized_threshold_kb,
            is_stopped: Arc::new(AtomicBool::new(false)),
            idf_stats: QueryIdfStats::default(),
            text_stats: AHashMap::new(),
            handoff,
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.is_stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn with_is_stopped(mut self, flag: Arc<AtomicBool>) -> Self {
        self.is_stopped = flag;
        self
    }

    /// Shared stop flag handle, e.g. to check for cancellation while
    /// collecting IDF statistics.
    pub fn is_stopped_handle(&self) -> Arc<AtomicBool> {
        self.is_stopped.clone()
    }

    /// Returns the amount of available (and visible) points.
    pub fn available_point_count(&self) -> usize {
        self.available_point_count
    }

    pub fn search_optimized_threshold_kb(&self) -> usize {
        self.search_optimized_threshold_kb
    }

    pub fn add_available_point_count(&mut self, count: usize) {
        self.available_point_count += count;
    }

    /// Fill indices of sparse vectors, which are required for `idf-dot` similarity
    /// with zeros, so the statistics can be collected.
    ///
    /// `corpus` defines the population the statistics are computed over,
    /// `None` for the whole collection. Requests sharing a corpus share
    /// a statistics scope.
    pub fn init_idf(
        &mut self,
        vector_name: &VectorName,
        corpus: Option<&Filter>,
        indices: &[DimId],
    ) {
        let scope_index = self
            .idf_stats
            .scopes
            .iter()
            .position(|scope| scope.corpus.as_ref() == corpus)
            .unwrap_or_else(|| {
                self.idf_stats.scopes.push(IdfScopeStats {
                    corpus: corpus.cloned(),
                    idf: tiny_map::TinyMap::new(),
                    indexed_vectors: tiny_map::TinyMap::new(),
                });
                self.idf_stats.scopes.len() - 1
            });
        let scope = &mut self.idf_stats.scopes[scope_index];

        if scope.indexed_vectors.get(vector_name).is_none() {
            scope.indexed_vectors.insert(vector_name.to_owned(), 0);
        }

        // ToDo: Would be nice to have an implementation of `entry` for `TinyMap`.
        let idf = if let Some(idf) = scope.idf.get_mut(vector_name) {
            idf
        } else {
            scope.idf.insert(vector_name.to_owned(), HashMap::default());
            scope.idf.get_mut(vector_name).unwrap()
        };

        for index in indices {
            idf.insert(*index, 0);
        }
    }

    /// Seed the terms a scored text query needs on `field`, so that every
    /// segment of this shard reports their document frequencies over `corpus`
    /// (every point when `None`). Terms must already be tokenized the way the
    /// index tokenizes. A field holds one corpus per context.
    pub fn init_text_stats(
        &mut self,
        field: &PayloadKeyType,
        corpus: Option<&Filter>,
        terms: impl IntoIterator<Item = String>,
    ) {
        let stats = self
            .text_stats
            .entry(field.clone())
            .or_insert_with(|| TextFieldStats {
                corpus: corpus.cloned(),
                ..TextFieldStats::default()
            });
        debug_assert_eq!(
            stats.corpus.as_ref(),
            corpus,
            "one corpus per text field per context",
        );
        for term in terms {
            stats.df.entry(term).or_insert(0);
        }
    }

    pub fn idf_stats(&self) -> &QueryIdfStats {
        &self.idf_stats
    }

    pub fn mut_idf_stats(&mut self) -> &mut QueryIdfStats {
        &mut self.idf_stats
    }

    pub fn mut_text_stats(&mut self) -> &mut AHashMap<PayloadKeyType, TextFieldStats> {
        &mut self.text_stats
    }

    /// Whether filling needs more than the available point count, which
    /// makes it worth spreading over segments in parallel.
    pub fn has_statistics_to_collect(&self) -> bool {
        let Self {
            available_point_count: _,
            search_optimized_threshold_kb: _,
            is_stopped: _,
            idf_stats: QueryIdfStats { scopes },
            text_stats,
            handoff: _,
        } = self;
        !scopes.is_empty() || !text_stats.is_empty()
    }

    /// Sum the statistics of a filled clone of this unfilled context into it.
    pub fn merge_statistics(&mut self, fork: Self) {
        let Self {
            available_point_count,
            search_optimized_threshold_kb: _,
            is_stopped: _,
            idf_stats,
            text_stats,
            handoff: _,
        } = fork;

        self.available_point_count += available_point_count;

        debug_assert_eq!(self.idf_stats.scopes.len(), idf_stats.scopes.len());
        for (scope, fork_scope) in self.idf_stats.scopes.iter_mut().zip(idf_stats.scopes) {
            debug_assert_eq!(scope.corpus, fork_scope.corpus);
            for (vector_name, fork_idf) in fork_scope.idf {
                let idf = scope.idf.get_or_insert_default(&vector_name);
                for (dim, df) in fork_idf {
                    *idf.entry(dim).or_insert(0) += df;
                }
            }
            for (vector_name, count) in fork_scope.indexed_vectors {
                *scope.indexed_vectors.get_or_insert_default(&vector_name) += count;
            }
        }

        for (field, fork_stats) in text_stats {
            let stats = self.text_stats.entry(field).or_default();
            for (term, df) in fork_stats.df {
                *stats.df.entry(term).or_insert(0) += df;
            }
            stats.add_segment(fork_stats.documents, fork_stats.total_tokens);
        }
    }

    pub fn get_segment_query_context(&self) -> SegmentQueryContext<'_> {
        SegmentQueryContext {
            query_context: self,
            deleted_points: None,
        }
    }

    pub fn handoff(&self) -> &Handoff {
        &self.handoff
    }
}

#[cfg(feature = "testing")]
impl Default for QueryContext {
    fn default() -> Self {
        Self::new(usize::MAX, Handoff::Measured(AmbientContext::new())) // Search optimized threshold won't affect the search.
    }
}

/// Defines context of the search query on the segment level
#[derive(Debug)]
pub struct SegmentQueryContext<'a> {
    query_context: &'a QueryContext,
    deleted_points: Option<&'a BitSlice>,
}

impl<'a> SegmentQueryContext<'a> {
    pub fn available_point_count(&self) -> usize {
        self.query_context.available_point_count()
    }

    pub fn handoff(&self) -> &Handoff {
        self.query_context.handoff()
    }

    /// Vector-level context for the given vector name and IDF corpus
    /// (`None` corpus — global statistics).
    pub fn get_vector_context(
        &self,
        vector_name: &VectorName,
        idf_corpus: Option<&Filter>,
    ) -> VectorQueryContext<'_> {
        let idf_scope = self.query_context.idf_stats.scope(idf_corpus);
        VectorQueryContext {
            search_optimized_threshold_kb: self.query_context.search_optimized_threshold_kb,
            is_stopped: Some(&self.query_context.is_stopped),
            idf: idf_scope.and_then(|scope| scope.idf.get(vector_name)),
            indexed_vectors: idf_scope
                .and_then(|scope| scope.indexed_vectors.get(vector_name))
                .copied(),
            deleted_points: self.deleted_points,
        }
    }

    /// Corpus statistics for a scored text query on `field`, or `None` when
    /// nothing seeded them.
    pub fn get_text_context(&self, field: &PayloadKeyType) -> Option<TextQueryContext<'_>> {
        self.query_context
            .text_stats
            .get(field)
            .map(|stats| TextQueryContext {
                stats,
                is_stopped: &self.query_context.is_stopped,
                deleted_points: self.deleted_points,
            })
    }

    pub fn with_deleted_points(mut self, deleted_points: &'a BitSlice) -> Self {
        self.deleted_points = Some(deleted_points);
        self
    }

    pub fn is_stopped(&self) -> bool {
        self.query_context.is_stopped()
    }

    pub fn fork(&self) -> Self {
        Self {
            query_context: self.query_context,
            deleted_points: self.deleted_points,
        }
    }
}

/// Query context related to a specific vector
#[derive(Debug)]
pub struct VectorQueryContext<'a> {
    /// Parameter, which defines how big a plain segment can be to be considered
    /// small enough to be searched with `indexed_only` option.
    search_optimized_threshold_kb: usize,

    is_stopped: Option<&'a AtomicBool>,

    idf: Option<&'a HashMap<DimId, usize>>,

    indexed_vectors: Option<usize>,

    deleted_points: Option<&'a BitSlice>,
}

impl VectorQueryContext<'_> {
    pub fn search_optimized_threshold_kb(&self) -> usize {
        self.search_optimized_threshold_kb
    }

    pub fn deleted_points(&self) -> Option<&BitSlice> {
        self.deleted_points
    }

    pub fn is_stopped(&self) -> SimpleCow<'_, AtomicBool> {
        self.is_stopped
            .map(SimpleCow::Borrowed)
            .unwrap_or_else(|| SimpleCow::Owned(AtomicBool::new(false)))
    }

    pub fn remap_idf_weights(&self, indices: &[DimId], weights: &mut [DimWeight]) {
        // Number of documents
        let Some(indexed_vectors) = self.indexed_vectors else {
            return;
        };

        let n = indexed_vectors as DimWeight;
        for (weight, index) in weights.iter_mut().zip(indices) {
            // Document frequency
            let df = self
                .idf
                .and_then(|idf| idf.get(index))
                .copied()
                .unwrap_or(0);

            *weight *= fancy_idf(n, df as DimWeight);
        }
    }

    pub fn is_require_idf(&self) -> bool {
        self.idf.is_some() && self.indexed_vectors.is_some()
    }
}

#[cfg(feature = "testing")]
impl Default for VectorQueryContext<'_> {
    fn default() -> Self {
        VectorQueryContext {
            search_optimized_threshold_kb: usize::MAX,
            is_stopped: None,
            idf: None,
            indexed_vectors: None,
            deleted_points: None,
        }
    }
}

/// Corpus statistics as a scored text query consumes them: an IDF per term and
/// an average document length, both over the segments of one local shard.
#[derive(Debug)]
pub struct TextQueryContext<'a> {
    stats: &'a TextFieldStats,
    is_stopped: &'a AtomicBool,
    /// Replaces the id tracker's deletions when set, as a proxy segment does
    /// for the segment it wraps. Same role as in [`VectorQueryContext`].
    deleted_points: Option<&'a BitSlice>,
}

impl TextQueryContext<'_> {
    pub fn is_stopped(&self) -> &AtomicBool {
        self.is_stopped
    }

    pub fn deleted_points(&self) -> Option<&BitSlice> {
        self.deleted_points
    }

    /// `N`: documents carrying the field, over this shard's segments.
    pub fn document_count(&self) -> usize {
        self.stats.documents
    }

    /// `df(t)`: documents holding the term, summed over every segment. Zero
    /// for a term nothing seeded or nothing holds.
    pub fn document_frequency(&self, term: &str) -> usize {
        self.stats.df.get(term).copied().unwrap_or(0)
    }

    /// `IDF(t)`, highest for a term nothing holds. Clamped at zero: posting
    /// lists keep deleted documents while the document count excludes them,
    /// so `df` can exceed `N`.
    pub fn idf(&self, term: &str) -> DimWeight {
        let df = self.stats.df.get(term).copied().unwrap_or(0);
        fancy_idf(self.stats.documents as DimWeight, df as DimWeight).max(0.0)
    }

    /// `avgdl` over the summed totals, or `None` when the corpus holds no
    /// documents or some segment records no lengths.
    pub fn avg_doc_len(&self) -> Option<DimWeight> {
        let total_tokens = self.stats.total_tokens?;
        (self.stats.documents > 0)
            .then(|| total_tokens as DimWeight / self.stats.documents as DimWeight)
    }
}

pub struct FormulaContext {
    pub formula: ParsedFormula,
    pub prefetches_results: Vec<Vec<ScoredPoint>>,
    pub limit: usize,
    pub score_threshold: Option<ScoreType>,
    pub is_stopped: Arc<AtomicBool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_forks_sum_statistics() {
        let field = PayloadKeyType::new("text");
        let mut context = QueryContext::default();
        context.init_idf("sparse", None, &[1, 2]);
        context.init_text_stats(&field, None, ["fox".to_string(), "dog".to_string()]);

        // Each fork stands for one segment's fill.
        let segment_fill = |documents, total_tokens, fox_df, dim_1_df| {
            let mut fork = context.clone();
            fork.add_available_point_count(documents);
            let scope = &mut fork.mut_idf_stats().scopes[0];
            *scope.indexed_vectors.get_mut("sparse").unwrap() += documents;
            *scope.idf.get_mut("sparse").unwrap().get_mut(&1).unwrap() += dim_1_df;
            let stats = fork.mut_text_stats().get_mut(&field).unwrap();
            *stats.df.get_mut("fox").unwrap() += fox_df;
            stats.add_segment(documents, total_tokens);
            fork
        };
        let first = segment_fill(3, Some(10), 2, 1);
        let second = segment_fill(4, Some(7), 1, 3);
        let without_lengths = segment_fill(0, None, 0, 0);

        context.merge_statistics(first);
        context.merge_statistics(second);
        assert_eq!(context.available_point_count(), 7);
        let scope = context.idf_stats().scope(None).unwrap();
        assert_eq!(scope.indexed_vectors.get("sparse"), Some(&7));
        let idf = scope.idf.get("sparse").unwrap();
        assert_eq!((idf[&1], idf[&2]), (4, 0));
        let stats = &context.mut_text_stats()[&field];
        assert_eq!((stats.df["fox"], stats.df["dog"]), (3, 0));
        assert_eq!((stats.documents, stats.total_tokens), (7, Some(17)));

        // One segment without document lengths drops `avgdl` for the shard.
        context.merge_statistics(without_lengths);
        assert_eq!(context.mut_text_stats()[&field].total_tokens, None);
    }
}
