//! [`NumericIndexRead`] and [`StreamRange`] dispatch for
//! [`ReadOnlyNumericIndexInner`].
//!
//! Forwards every read-path method to the active read-only storage
//! variant; the `values_is_empty` / `get_telemetry_data` helpers come
//! from the trait's default impls.

use std::ops::Bound;

use crate::blobstore::Blob;
use crate::common::types::PointOffsetType;
use crate::common::universal_io::{UniversalRead, UserData};

use super::super::super::numeric_index_read::NumericIndexRead;
use super::super::super::{Encodable, StreamRange, query};
use super::ReadOnlyNumericIndexInner;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::index::field_index::histogram::Histogram;
use crate::segment::index::field_index::numeric_point::{Numericable, Point};
use crate::segment::index::field_index::on_disk_point_to_values::StoredValue;
use crate::segment::index::payload_config::StorageType;
use crate::segment::types::RangeInterface;

impl<T: Encodable + Numericable + StoredValue + Send + Sync + Default, S: UniversalRead>
    NumericIndexRead<T> for ReadOnlyNumericIndexInner<T, S>
where
    Vec<T>: Blob,
{
    fn check_values_any(
        &self,
        idx: PointOffsetType,
        check_fn: impl Fn(&T) -> bool,
    ) -> OperationResult<bool> {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.check_values_any(idx, check_fn),
            ReadOnlyNumericIndexInner::Immutable(index) => index.check_values_any(idx, check_fn),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.check_values_any(idx, check_fn),
        }
    }

    fn for_each_matching_value<I, F, M, U>(
        &self,
        items: I,
        check_fn: F,
        on_match: M,
    ) -> OperationResult<()>
    where
        U: UserData,
        I: Iterator<Item = (U, PointOffsetType)>,
        F: Fn(&T) -> bool,
        M: FnMut(U, bool),
    {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => {
                index.for_each_matching_value(items, check_fn, on_match)
            }
            ReadOnlyNumericIndexInner::Immutable(index) => {
                index.for_each_matching_value(items, check_fn, on_match)
            }
            ReadOnlyNumericIndexInner::OnDisk(index) => {
                index.for_each_matching_value(items, check_fn, on_match)
            }
        }
    }

    fn get_values(&self, idx: PointOffsetType) -> Option<Box<dyn Iterator<Item = T> + '_>> {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.get_values(idx),
            ReadOnlyNumericIndexInner::Immutable(index) => index.get_values(idx),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.get_values(idx),
        }
    }

    fn values_count(&self, idx: PointOffsetType) -> Option<usize> {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.values_count(idx),
            ReadOnlyNumericIndexInner::Immutable(index) => index.values_count(idx),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.values_count(idx),
        }
    }

    fn total_unique_values_count(&self) -> OperationResult<usize> {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.total_unique_values_count(),
            ReadOnlyNumericIndexInner::Immutable(index) => index.total_unique_values_count(),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.total_unique_values_count(),
        }
    }

    fn values_range<'a>(
        &'a self,
        start_bound: Bound<Point<T>>,
        end_bound: Bound<Point<T>>,
    ) -> OperationResult<impl Iterator<Item = PointOffsetType> + 'a> {
        let boxed: Box<dyn Iterator<Item = PointOffsetType> + 'a> = match self {
            ReadOnlyNumericIndexInner::Appendable(index) => {
                Box::new(index.values_range(start_bound, end_bound)?)
            }
            ReadOnlyNumericIndexInner::Immutable(index) => {
                Box::new(index.values_range(start_bound, end_bound)?)
            }
            ReadOnlyNumericIndexInner::OnDisk(index) => {
                Box::new(index.values_range(start_bound, end_bound)?)
            }
        };
        Ok(boxed)
    }

    fn orderable_values_range(
        &self,
        start_bound: Bound<Point<T>>,
        end_bound: Bound<Point<T>>,
    ) -> OperationResult<impl DoubleEndedIterator<Item = (T, PointOffsetType)> + '_> {
        let boxed: Box<dyn DoubleEndedIterator<Item = (T, PointOffsetType)> + '_> = match self {
            ReadOnlyNumericIndexInner::Appendable(index) => {
                Box::new(index.orderable_values_range(start_bound, end_bound)?)
            }
            ReadOnlyNumericIndexInner::Immutable(index) => {
                Box::new(index.orderable_values_range(start_bound, end_bound)?)
            }
            ReadOnlyNumericIndexInner::OnDisk(index) => {
                Box::new(index.orderable_values_range(start_bound, end_bound)?)
            }
        };
        Ok(boxed)
    }

    fn get_histogram(&self) -> &Histogram<T> {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.get_histogram(),
            ReadOnlyNumericIndexInner::Immutable(index) => index.get_histogram(),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.get_histogram(),
        }
    }

    fn get_points_count(&self) -> usize {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.get_points_count(),
            ReadOnlyNumericIndexInner::Immutable(index) => index.get_points_count(),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.get_points_count(),
        }
    }

    fn get_max_values_per_point(&self) -> usize {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.get_max_values_per_point(),
            ReadOnlyNumericIndexInner::Immutable(index) => index.get_max_values_per_point(),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.get_max_values_per_point(),
        }
    }

    fn storage_type(&self) -> StorageType {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.storage_type(),
            ReadOnlyNumericIndexInner::Immutable(index) => index.storage_type(),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.storage_type(),
        }
    }

    fn ram_usage_bytes(&self) -> usize {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.ram_usage_bytes(),
            ReadOnlyNumericIndexInner::Immutable(index) => index.ram_usage_bytes(),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.ram_usage_bytes(),
        }
    }

    fn telemetry_index_type(&self) -> &'static str {
        match self {
            ReadOnlyNumericIndexInner::Appendable(index) => index.telemetry_index_type(),
            ReadOnlyNumericIndexInner::Immutable(index) => index.telemetry_index_type(),
            ReadOnlyNumericIndexInner::OnDisk(index) => index.telemetry_index_type(),
        }
    }
}

impl<T: Encodable + Numericable + StoredValue + Send + Sync + Default, S: UniversalRead>
    StreamRange<T> for ReadOnlyNumericIndexInner<T, S>
where
    Vec<T>: Blob,
{
    fn stream_range(
        &self,
        range: &RangeInterface,
    ) -> OperationResult<impl DoubleEndedIterator<Item = (T, PointOffsetType)> + '_> {
        query::stream_range(self, range)
    }
}
