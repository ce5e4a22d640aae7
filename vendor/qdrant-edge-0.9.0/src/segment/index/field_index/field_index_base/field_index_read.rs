use std::sync::atomic::AtomicBool;

use crate::common::types::{PointOffsetType, ScoredPointOffset};

use super::payload_field_index::PayloadFieldIndexRead;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::data_types::query_context::{TextFieldStats, TextQueryContext};
use crate::segment::index::field_index::facet_index::FacetIndex;
use crate::segment::index::field_index::full_text_index::{Bm25Accept, Bm25Params};
use crate::segment::index::field_index::nested_index::ElementConditionChecker;
use crate::segment::index::field_index::numeric_index::NumericFieldIndexRead;
use crate::segment::index::query_optimization::rescore_formula::value_retriever::VariableRetrieverFn;
use crate::segment::json_path::JsonPath;
use crate::segment::telemetry::PayloadIndexTelemetry;
use crate::segment::types::FieldCondition;

/// Read-only access surface of [`FieldIndex`](super::FieldIndex).
///
/// Extends [`PayloadFieldIndexRead`] with enum-level operations that
/// don't belong to any single typed-index variant: telemetry,
/// per-point value access, an index-aware condition check, value
/// retrieval, and downcasts to specific index views (`as_numeric`,
/// `as_facet_index`). The five overlapping read methods
/// (`count_indexed_points`, `filter`, `estimate_cardinality`,
/// `for_each_payload_block`, `condition_checker`) come from the
/// [`PayloadFieldIndexRead`] supertrait directly — no `&dyn`
/// indirection.
///
/// Lifecycle methods (`wipe`, `flusher`, `files`, …) and per-point
/// write methods (`add_point`, `remove_point`) stay inherent on
/// `FieldIndex`.
///
/// Helpers that destructure `FieldIndex` to reach a variant-specific
/// predicate on the underlying typed index keep taking `&FieldIndex`
/// directly — this trait only captures the uniform surface.
///
/// [`StructPayloadIndexReadView`]: crate::index::struct_payload_index::StructPayloadIndexReadView
pub trait FieldIndexRead: PayloadFieldIndexRead {
    /// Per-index telemetry snapshot.
    ///
    /// Fallible for the same reason as
    /// [`count_indexed_points`](PayloadFieldIndexRead::count_indexed_points):
    /// the read-only bool index derives its point counts from bitmaps it
    /// materializes on demand.
    fn get_telemetry_data(&self) -> OperationResult<PayloadIndexTelemetry>;

    /// Number of values for `point_id`.
    fn values_count(&self, point_id: PointOffsetType) -> OperationResult<usize>;

    /// True if `point_id` has zero values in this index.
    fn values_is_empty(&self, point_id: PointOffsetType) -> OperationResult<bool>;

    /// Build a closure that extracts this index's values for a given
    /// point as a [`MultiValue<Value>`](crate::common::utils::MultiValue).
    ///
    /// Returns `None` when this index can't serve point-level value
    /// retrieval — `FullTextIndex` (callers fall back to payload) and
    /// `NullIndex` (no underlying values to return).
    ///
    /// Used by rescore-formula value lookup; mirrors the shape of
    /// [`PayloadFieldIndexRead::condition_checker`] (build a closure
    /// once, invoke per point).
    fn value_retriever<'a, 'q>(&'a self) -> OperationResult<Option<VariableRetrieverFn<'q>>>
    where
        'a: 'q;

    /// Borrowed numeric view, if this index is numeric.
    ///
    /// The concrete numeric-index type is opaque per implementation —
    /// this matches the shape of [`PayloadIndexRead::numeric_index_for`].
    ///
    /// [`PayloadIndexRead::numeric_index_for`]: crate::index::PayloadIndexRead::numeric_index_for
    fn as_numeric(&self) -> Option<impl NumericFieldIndexRead + '_>;

    /// Add this index's text statistics to `stats`, counting only the
    /// `corpus` points when given, and report whether it is a text index at
    /// all.
    fn fill_text_statistics(
        &self,
        stats: &mut TextFieldStats,
        corpus: Option<&[PointOffsetType]>,
        is_stopped: &AtomicBool,
    ) -> OperationResult<bool>;

    /// Score `terms` by BM25 against this index and return the `limit` best
    /// documents, or `None` when it is not a text index. See
    /// [`score_bm25`](crate::index::field_index::full_text_index::full_text_index_read::score_bm25).
    fn score_bm25(
        &self,
        terms: &[String],
        context: &TextQueryContext<'_>,
        params: Bm25Params,
        accept: &Bm25Accept<'_>,
        limit: usize,
    ) -> OperationResult<Option<Vec<ScoredPointOffset>>>;

    /// Borrowed facet view, if this index supports faceting.
    ///
    /// The concrete facet-index type is opaque per implementation —
    /// this matches the shape of [`PayloadIndexRead::facet_index_for`].
    ///
    /// [`PayloadIndexRead::facet_index_for`]: crate::index::PayloadIndexRead::facet_index_for
    fn as_facet_index(&self) -> Option<impl FacetIndex + '_>;

    /// Checker of `condition` over the elements of the `array_key` array, if this is a
    /// per-element index of it that can serve the condition.
    ///
    /// The condition key is the full path of the field, e.g. `offers[].price`.
    fn element_condition_checker<'a>(
        &'a self,
        array_key: &JsonPath,
        condition: &FieldCondition,
    ) -> OperationResult<Option<ElementConditionChecker<'a>>>;
}
