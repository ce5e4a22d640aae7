use std::sync::atomic::AtomicBool;

use crate::common::types::{PointOffsetType, ScoredPointOffset};
use serde_json::Value;

use super::field_index::FieldIndex;
use super::field_index_read::FieldIndexRead;
use super::payload_field_index::PayloadFieldIndexRead;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::data_types::query_context::{TextFieldStats, TextQueryContext};
use crate::segment::index::condition_checker::ConditionCheckerEnum;
use crate::segment::index::field_index::bool_index::BoolIndexRead;
use crate::segment::index::field_index::facet_index::{FacetIndex, FacetIndexEnum};
use crate::segment::index::field_index::full_text_index::full_text_index_read::{
    FullTextIndexRead, fill_text_statistics, score_bm25,
};
use crate::segment::index::field_index::full_text_index::{Bm25Accept, Bm25Params};
use crate::segment::index::field_index::geo_index::GeoIndexRead;
use crate::segment::index::field_index::nested_index::{ElementConditionChecker, FacetView, NumericView};
use crate::segment::index::field_index::null_index::NullIndexRead;
use crate::segment::index::field_index::numeric_index::{NumericFieldIndex, NumericFieldIndexRead};
use crate::segment::index::field_index::{CardinalityEstimation, PayloadBlockCondition};
use crate::segment::index::query_optimization::rescore_formula::value_retriever::VariableRetrieverFn;
use crate::segment::json_path::JsonPath;
use crate::segment::telemetry::PayloadIndexTelemetry;
use crate::segment::types::{FieldCondition, PayloadKeyType};

impl PayloadFieldIndexRead for FieldIndex {
    fn count_indexed_points(&self) -> OperationResult<usize> {
        match self {
            FieldIndex::IntIndex(idx) => idx.count_indexed_points(),
            FieldIndex::DatetimeIndex(idx) => idx.count_indexed_points(),
            FieldIndex::IntMapIndex(idx) => idx.count_indexed_points(),
            FieldIndex::KeywordIndex(idx) => idx.count_indexed_points(),
            FieldIndex::FloatIndex(idx) => idx.count_indexed_points(),
            FieldIndex::GeoIndex(idx) => idx.count_indexed_points(),
            FieldIndex::BoolIndex(idx) => idx.count_indexed_points(),
            FieldIndex::FullTextIndex(idx) => idx.count_indexed_points(),
            FieldIndex::UuidIndex(idx) => idx.count_indexed_points(),
            FieldIndex::UuidMapIndex(idx) => idx.count_indexed_points(),
            FieldIndex::NullIndex(idx) => idx.count_indexed_points(),
            FieldIndex::Nested(idx) => idx.count_indexed_points(),
        }
    }

    fn filter<'a>(
        &'a self,
        condition: &'a FieldCondition,
    ) -> OperationResult<Option<Box<dyn Iterator<Item = PointOffsetType> + 'a>>> {
        match self {
            FieldIndex::IntIndex(idx) => idx.filter(condition),
            FieldIndex::DatetimeIndex(idx) => idx.filter(condition),
            FieldIndex::IntMapIndex(idx) => idx.filter(condition),
            FieldIndex::KeywordIndex(idx) => idx.filter(condition),
            FieldIndex::FloatIndex(idx) => idx.filter(condition),
            FieldIndex::GeoIndex(idx) => idx.filter(condition),
            FieldIndex::BoolIndex(idx) => idx.filter(condition),
            FieldIndex::FullTextIndex(idx) => idx.filter(condition),
            FieldIndex::UuidIndex(idx) => idx.filter(condition),
            FieldIndex::UuidMapIndex(idx) => idx.filter(condition),
            FieldIndex::NullIndex(idx) => idx.filter(condition),
            FieldIndex::Nested(idx) => idx.filter(condition),
        }
    }

    fn estimate_cardinality(
        &self,
        condition: &FieldCondition,
    ) -> OperationResult<Option<CardinalityEstimation>> {
        match self {
            FieldIndex::IntIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::DatetimeIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::IntMapIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::KeywordIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::FloatIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::GeoIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::BoolIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::FullTextIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::UuidIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::UuidMapIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::NullIndex(idx) => idx.estimate_cardinality(condition),
            FieldIndex::Nested(idx) => idx.estimate_cardinality(condition),
        }
    }

    fn for_each_payload_block(
        &self,
        threshold: usize,
        key: PayloadKeyType,
        f: &mut dyn FnMut(PayloadBlockCondition) -> OperationResult<()>,
    ) -> OperationResult<()> {
        match self {
            FieldIndex::IntIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::DatetimeIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::IntMapIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::KeywordIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::FloatIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::GeoIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::BoolIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::FullTextIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::UuidIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::UuidMapIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::NullIndex(idx) => idx.for_each_payload_block(threshold, key, f),
            FieldIndex::Nested(idx) => idx.for_each_payload_block(threshold, key, f),
        }
    }

    fn condition_checker<'a>(
        &'a self,
        condition: &FieldCondition,
    ) -> OperationResult<Option<ConditionCheckerEnum<'a>>> {
        match self {
            FieldIndex::IntIndex(idx) => idx.condition_checker(condition),
            FieldIndex::DatetimeIndex(idx) => idx.condition_checker(condition),
            FieldIndex::IntMapIndex(idx) => idx.condition_checker(condition),
            FieldIndex::KeywordIndex(idx) => idx.condition_checker(condition),
            FieldIndex::FloatIndex(idx) => idx.condition_checker(condition),
            FieldIndex::GeoIndex(idx) => idx.condition_checker(condition),
            FieldIndex::BoolIndex(idx) => idx.condition_checker(condition),
            FieldIndex::FullTextIndex(idx) => idx.condition_checker(condition),
            FieldIndex::UuidIndex(idx) => idx.condition_checker(condition),
            FieldIndex::UuidMapIndex(idx) => idx.condition_checker(condition),
            FieldIndex::NullIndex(idx) => idx.condition_checker(condition),
            FieldIndex::Nested(idx) => idx.condition_checker(condition),
        }
    }

    fn special_check_condition(
        &self,
        condition: &FieldCondition,
        payload_value: &Value,
    ) -> OperationResult<Option<bool>> {
        match self {
            FieldIndex::IntIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::DatetimeIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::IntMapIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::KeywordIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::FloatIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::GeoIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::BoolIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::FullTextIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::UuidIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::UuidMapIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::NullIndex(idx) => idx.special_check_condition(condition, payload_value),
            FieldIndex::Nested(idx) => idx.special_check_condition(condition, payload_value),
        }
    }
}

impl FieldIndexRead for FieldIndex {
    fn get_telemetry_data(&self) -> OperationResult<PayloadIndexTelemetry> {
        Ok(match self {
            FieldIndex::IntIndex(index) => index.get_telemetry_data(),
            FieldIndex::DatetimeIndex(index) => index.get_telemetry_data(),
            FieldIndex::IntMapIndex(index) => index.get_telemetry_data(),
            FieldIndex::KeywordIndex(index) => index.get_telemetry_data(),
            FieldIndex::FloatIndex(index) => index.get_telemetry_data(),
            FieldIndex::GeoIndex(index) => index.get_telemetry_data(),
            FieldIndex::BoolIndex(index) => index.get_telemetry_data()?,
            FieldIndex::FullTextIndex(index) => index.get_telemetry_data(),
            FieldIndex::UuidIndex(index) => index.get_telemetry_data(),
            FieldIndex::UuidMapIndex(index) => index.get_telemetry_data(),
            FieldIndex::NullIndex(index) => index.get_telemetry_data(),
            FieldIndex::Nested(index) => index.get_telemetry_data()?,
        })
    }

    fn values_count(&self, point_id: PointOffsetType) -> OperationResult<usize> {
        Ok(match self {
            FieldIndex::IntIndex(index) => index.values_count(point_id),
            FieldIndex::DatetimeIndex(index) => index.values_count(point_id),
            FieldIndex::IntMapIndex(index) => index.values_count(point_id),
            FieldIndex::KeywordIndex(index) => index.values_count(point_id),
            FieldIndex::FloatIndex(index) => index.values_count(point_id),
            FieldIndex::GeoIndex(index) => index.values_count(point_id),
            FieldIndex::BoolIndex(index) => index.values_count(point_id)?,
            FieldIndex::FullTextIndex(index) => index.values_count(point_id),
            FieldIndex::UuidIndex(index) => index.values_count(point_id),
            FieldIndex::UuidMapIndex(index) => index.values_count(point_id),
            FieldIndex::NullIndex(index) => index.values_count(point_id)?,
            FieldIndex::Nested(index) => index.values_count(point_id)?,
        })
    }

    fn values_is_empty(&self, point_id: PointOffsetType) -> OperationResult<bool> {
        Ok(match self {
            FieldIndex::IntIndex(index) => index.values_is_empty(point_id),
            FieldIndex::DatetimeIndex(index) => index.values_is_empty(point_id),
            FieldIndex::IntMapIndex(index) => index.values_is_empty(point_id),
            FieldIndex::KeywordIndex(index) => index.values_is_empty(point_id),
            FieldIndex::FloatIndex(index) => index.values_is_empty(point_id),
            FieldIndex::GeoIndex(index) => index.values_is_empty(point_id),
            FieldIndex::BoolIndex(index) => index.values_is_empty(point_id)?,
            FieldIndex::FullTextIndex(index) => index.values_is_empty(point_id),
            FieldIndex::UuidIndex(index) => index.values_is_empty(point_id),
            FieldIndex::UuidMapIndex(index) => index.values_is_empty(point_id),
            FieldIndex::NullIndex(index) => index.values_is_empty(point_id)?,
            FieldIndex::Nested(index) => index.values_is_empty(point_id)?,
        })
    }

    fn value_retriever<'a, 'q>(&'a self) -> OperationResult<Option<VariableRetrieverFn<'q>>>
    where
        'a: 'q,
    {
        // Per-variant value-to-`Value` conversion lives on each typed
        // index as an inherent `value_retriever` method (see e.g.
        // `NumericIndex<IntPayloadType, DateTimePayloadType>::value_retriever`).
        // This dispatch is mechanical — adding a `FieldIndex` variant
        // forces a compile error here.
        Ok(match self {
            FieldIndex::IntIndex(index) => Some(index.value_retriever()),
            FieldIndex::DatetimeIndex(index) => Some(index.value_retriever()),
            FieldIndex::IntMapIndex(index) => Some(index.value_retriever()),
            FieldIndex::KeywordIndex(index) => Some(index.value_retriever()),
            FieldIndex::FloatIndex(index) => Some(index.value_retriever()),
            FieldIndex::GeoIndex(index) => Some(index.value_retriever()),
            FieldIndex::BoolIndex(index) => Some(index.value_retriever()?),
            FieldIndex::UuidIndex(index) => Some(index.value_retriever()),
            FieldIndex::UuidMapIndex(index) => Some(index.value_retriever()),
            // FullTextIndex: caller falls back to payload — text values
            // are easier to read directly than reconstruct from the
            // inverted index.
            FieldIndex::FullTextIndex(_) => None,
            // NullIndex: no underlying values to return; another index
            // on the same field is expected to provide them.
            FieldIndex::NullIndex(_) => None,
            FieldIndex::Nested(index) => index.value_retriever()?,
        })
    }

    fn as_numeric(&self) -> Option<impl NumericFieldIndexRead + '_> {
        match self {
            FieldIndex::Nested(index) => index.numeric_view().map(NumericView::Nested),
            FieldIndex::IntIndex(_)
            | FieldIndex::DatetimeIndex(_)
            | FieldIndex::FloatIndex(_)
            | FieldIndex::IntMapIndex(_)
            | FieldIndex::KeywordIndex(_)
            | FieldIndex::GeoIndex(_)
            | FieldIndex::BoolIndex(_)
            | FieldIndex::UuidMapIndex(_)
            | FieldIndex::UuidIndex(_)
            | FieldIndex::FullTextIndex(_)
            | FieldIndex::NullIndex(_) => self.numeric_view().map(NumericView::Plain),
        }
    }

    fn fill_text_statistics(
        &self,
        stats: &mut TextFieldStats,
        corpus: Option<&[PointOffsetType]>,
        is_stopped: &AtomicBool,
    ) -> OperationResult<bool> {
        match self {
            FieldIndex::FullTextIndex(index) => {
                fill_text_statistics(index, stats, corpus, is_stopped)?;
                Ok(true)
            }
            FieldIndex::IntIndex(_)
            | FieldIndex::DatetimeIndex(_)
            | FieldIndex::FloatIndex(_)
            | FieldIndex::IntMapIndex(_)
            | FieldIndex::KeywordIndex(_)
            | FieldIndex::GeoIndex(_)
            | FieldIndex::BoolIndex(_)
            | FieldIndex::UuidMapIndex(_)
            | FieldIndex::UuidIndex(_)
            | FieldIndex::NullIndex(_) => Ok(false),
            FieldIndex::Nested(index) => index.fill_text_statistics(stats, corpus, is_stopped),
        }
    }

    fn score_bm25(
        &self,
        terms: &[String],
        context: &TextQueryContext<'_>,
        params: Bm25Params,
        accept: &Bm25Accept<'_>,
        limit: usize,
    ) -> OperationResult<Option<Vec<ScoredPointOffset>>> {
        match self {
            FieldIndex::FullTextIndex(index) => score_bm25(
                index,
                terms,
                context,
                params,
                accept,
                limit,
                context.is_stopped(),
            )
            .map(Some),
            FieldIndex::IntIndex(_)
            | FieldIndex::DatetimeIndex(_)
            | FieldIndex::FloatIndex(_)
            | FieldIndex::IntMapIndex(_)
            | FieldIndex::KeywordIndex(_)
            | FieldIndex::GeoIndex(_)
            | FieldIndex::BoolIndex(_)
            | FieldIndex::UuidMapIndex(_)
            | FieldIndex::UuidIndex(_)
            | FieldIndex::NullIndex(_) => Ok(None),
            FieldIndex::Nested(index) => index.score_bm25(terms, context, params, accept, limit),
        }
    }

    fn as_facet_index(&self) -> Option<impl FacetIndex + '_> {
        match self {
            FieldIndex::Nested(index) => index.facet_view().map(FacetView::Nested),
            FieldIndex::KeywordIndex(_)
            | FieldIndex::IntMapIndex(_)
            | FieldIndex::UuidMapIndex(_)
            | FieldIndex::BoolIndex(_)
            | FieldIndex::UuidIndex(_)
            | FieldIndex::IntIndex(_)
            | FieldIndex::DatetimeIndex(_)
            | FieldIndex::FloatIndex(_)
            | FieldIndex::GeoIndex(_)
            | FieldIndex::FullTextIndex(_)
            | FieldIndex::NullIndex(_) => self.facet_view().map(FacetView::Plain),
        }
    }

    fn element_condition_checker<'a>(
        &'a self,
        array_key: &JsonPath,
        condition: &FieldCondition,
    ) -> OperationResult<Option<ElementConditionChecker<'a>>> {
        match self {
            FieldIndex::Nested(index) => index.element_condition_checker(array_key, condition),
            FieldIndex::IntIndex(_)
            | FieldIndex::DatetimeIndex(_)
            | FieldIndex::IntMapIndex(_)
            | FieldIndex::KeywordIndex(_)
            | FieldIndex::FloatIndex(_)
            | FieldIndex::GeoIndex(_)
            | FieldIndex::FullTextIndex(_)
            | FieldIndex::BoolIndex(_)
            | FieldIndex::UuidIndex(_)
            | FieldIndex::UuidMapIndex(_)
            | FieldIndex::NullIndex(_) => Ok(None),
        }
    }
}

impl FieldIndex {
    /// Order-by view of a flattened numeric index; `None` for other indexes, including
    /// per-element ones.
    pub(crate) fn numeric_view(&self) -> Option<NumericFieldIndex<'_>> {
        match self {
            FieldIndex::IntIndex(index) => Some(NumericFieldIndex::IntIndex(index.inner())),
            FieldIndex::DatetimeIndex(index) => Some(NumericFieldIndex::IntIndex(index.inner())),
            FieldIndex::FloatIndex(index) => Some(NumericFieldIndex::FloatIndex(index.inner())),
            FieldIndex::IntMapIndex(_)
            | FieldIndex::KeywordIndex(_)
            | FieldIndex::GeoIndex(_)
            | FieldIndex::BoolIndex(_)
            | FieldIndex::UuidMapIndex(_)
            | FieldIndex::UuidIndex(_)
            | FieldIndex::FullTextIndex(_)
            | FieldIndex::NullIndex(_)
            | FieldIndex::Nested(_) => None,
        }
    }

    /// Facet view of a flattened index that supports faceting; `None` for other indexes,
    /// including per-element ones.
    pub(crate) fn facet_view(&self) -> Option<FacetIndexEnum<'_>> {
        match self {
            FieldIndex::KeywordIndex(index) => Some(FacetIndexEnum::Keyword(index)),
            FieldIndex::IntMapIndex(index) => Some(FacetIndexEnum::Int(index)),
            FieldIndex::UuidMapIndex(index) => Some(FacetIndexEnum::Uuid(index)),
            FieldIndex::BoolIndex(index) => Some(FacetIndexEnum::Bool(index)),
            FieldIndex::UuidIndex(_)
            | FieldIndex::IntIndex(_)
            | FieldIndex::DatetimeIndex(_)
            | FieldIndex::FloatIndex(_)
            | FieldIndex::GeoIndex(_)
            | FieldIndex::FullTextIndex(_)
            | FieldIndex::NullIndex(_)
            | FieldIndex::Nested(_) => None,
        }
    }
}
