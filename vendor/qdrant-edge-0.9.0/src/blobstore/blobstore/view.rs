use std::borrow::Cow;

use crate::common::ambient::hw::HwMetric;
use crate::common::generic_consts::AccessPattern;
use crate::common::universal_io::{UniversalRead, UserData};

use super::gridstore::GridstoreView;
use super::logstore::LogstoreView;
use crate::blobstore::Result;
use crate::blobstore::blob::Blob;
use crate::blobstore::error::BlobstoreError;
use crate::blobstore::tracker::tracker_enum::TrackerEnum;
use crate::blobstore::tracker::{PointOffset, ReadOnlyTracker, ValuePointer};

/// A non-owning view into blobstore data.
///
/// Holds borrowed references to the underlying storage, and contains all reading logic.
///
/// Constructed from either [`super::Blobstore`] or [`super::BlobstoreReader`].
pub struct BlobstoreView<'a, V, S: UniversalRead> {
    variant: ViewVariant<'a, V, S>,
}

/// Mode specific implementation of the view, see [`crate::config::Mode`].
enum ViewVariant<'a, V, S: UniversalRead> {
    Gridstore(GridstoreView<'a, V, S, ReadOnlyTracker<S>>),
    Logstore(LogstoreView<'a, V, S, TrackerEnum<S>>),
}

impl<'a, V, S: UniversalRead> BlobstoreView<'a, V, S> {
    pub(super) fn from_gridstore(view: GridstoreView<'a, V, S, ReadOnlyTracker<S>>) -> Self {
        Self {
            variant: ViewVariant::Gridstore(view),
        }
    }

    pub(super) fn from_logstore(view: LogstoreView<'a, V, S, TrackerEnum<S>>) -> Self {
        Self {
            variant: ViewVariant::Logstore(view),
        }
    }

    /// Exclusive upper bound of point offsets that may have a value.
    ///
    /// In mutable mode this is the stored header count as of the last reload —
    /// see [`TrackerRead::max_point_offset`](crate::tracker::TrackerRead::max_point_offset).
    pub fn max_point_offset(&self) -> Result<PointOffset> {
        match &self.variant {
            ViewVariant::Gridstore(view) => view.max_point_offset(),
            ViewVariant::Logstore(view) => view.max_point_offset(),
        }
    }

    /// Return the storage size in bytes.
    ///
    /// Approximate (total page capacity) in mutable mode, exact in append-only mode.
    pub fn get_storage_size_bytes(&self) -> usize {
        match &self.variant {
            ViewVariant::Gridstore(view) => view.get_storage_size_bytes(),
            ViewVariant::Logstore(view) => view.get_storage_size_bytes(),
        }
    }

    /// Read the raw value bytes at the given pointer.
    pub fn read_from_pages<P: AccessPattern>(
        &self,
        pointer: ValuePointer,
    ) -> Result<Cow<'_, [u8]>> {
        match &self.variant {
            ViewVariant::Gridstore(view) => view.read_from_pages::<P>(pointer),
            ViewVariant::Logstore(view) => view.read_from_pages::<P>(pointer),
        }
    }
}

impl<'a, V: Blob, S: UniversalRead> BlobstoreView<'a, V, S> {
    /// Get the value for a given point offset.
    pub fn get_value<P: AccessPattern>(&self, point_offset: PointOffset) -> Result<Option<V>> {
        match &self.variant {
            ViewVariant::Gridstore(view) => view.get_value::<P>(point_offset),
            ViewVariant::Logstore(view) => view.get_value::<P>(point_offset),
        }
    }

    /// Iterate over all given values and execute callback for each one.
    ///
    /// Return `false` from the callback to stop iteration early.
    pub fn read_values<P, U, E>(
        &self,
        point_offsets: impl Iterator<Item = (U, PointOffset)>,
        callback: impl FnMut(U, PointOffset, Option<V>) -> Result<bool, E>,
        hw_metric: Option<HwMetric>,
    ) -> Result<bool, E>
    where
        P: AccessPattern,
        U: UserData,
        E: From<BlobstoreError>,
    {
        match &self.variant {
            ViewVariant::Gridstore(view) => {
                view.read_values::<P, U, E>(point_offsets, callback, hw_metric)
            }
            ViewVariant::Logstore(view) => {
                view.read_values::<P, U, E>(point_offsets, callback, hw_metric)
            }
        }
    }
}
