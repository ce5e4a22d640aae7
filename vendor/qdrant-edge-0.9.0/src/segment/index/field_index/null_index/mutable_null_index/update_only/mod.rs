use std::path::Path;

use crate::common::types::PointOffsetType;
use crate::common::universal_io::UniversalWriteFs;
use serde_json::Value;

use super::lifecycle::classify_payload;
use super::{HAS_VALUES_DIRNAME, IS_NULL_DIRNAME};
use crate::segment::common::flags::update_only_stored_flags::UpdateOnlyStoredFlags;
use crate::segment::common::operation_error::OperationResult;

/// Writes what [`MutableNullIndex`] persists: the two masks saying, per point,
/// whether its field holds any value and whether any of them is null.
///
/// [`MutableNullIndex`]: super::MutableNullIndex
pub struct UpdateOnlyNullIndex {
    has_values: UpdateOnlyStoredFlags,
    is_null: UpdateOnlyStoredFlags,
}

impl UpdateOnlyNullIndex {
    /// Open the index at `dir` for writing, reading both masks into memory.
    pub fn open<Fs: UniversalWriteFs>(fs: &Fs, dir: &Path) -> OperationResult<Self> {
        Ok(Self {
            has_values: UpdateOnlyStoredFlags::open(fs, &dir.join(HAS_VALUES_DIRNAME))?,
            is_null: UpdateOnlyStoredFlags::open(fs, &dir.join(IS_NULL_DIRNAME))?,
        })
    }

    /// Record `values`, the point's values for this index's field, at the slot
    /// the ID tracker claimed for it.
    ///
    /// Must be called for every point of the batch, including those whose field
    /// holds nothing: a point this index never saw is one it answers wrongly
    /// about.
    pub fn add_point(&mut self, slot: PointOffsetType, values: &[&Value]) -> OperationResult<()> {
        let (has_values, is_null) = classify_payload(values);

        self.has_values.set(slot, has_values);
        self.is_null.set(slot, is_null);

        Ok(())
    }

    /// Persist both masks.
    pub fn flush<Fs: UniversalWriteFs>(&mut self, fs: &Fs) -> OperationResult<()> {
        self.has_values.flush(fs)?;
        self.is_null.flush(fs)
    }
}
