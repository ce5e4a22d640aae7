use crate::common::sorted_slice::SortedSlice;
use crate::common::types::PointOffsetType;
use crate::common::universal_io::{CachedReadFs, PreloadFuture, UniversalRead, UniversalReadFs};

use super::ReadOnlyNullIndex;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::index::field_index::LiveReload;

impl<S: UniversalRead> LiveReload for ReadOnlyNullIndex<S> {
    type File = S;

    fn live_preload<Fs: CachedReadFs<File = S>>(
        &self,
        cached_fs: &Fs,
    ) -> OperationResult<Vec<PreloadFuture>> {
        let mut futs = self.storage.has_values_flags.live_preload(cached_fs)?;
        futs.extend(self.storage.is_null_flags.live_preload(cached_fs)?);
        Ok(futs)
    }

    fn live_reload<Fs: UniversalReadFs<File = S>>(
        &mut self,
        fs: &Fs,
        _deleted_points: &SortedSlice<'_, PointOffsetType>,
        new_points: &SortedSlice<'_, PointOffsetType>,
    ) -> OperationResult<()> {
        // Resync each flag set from its on-disk state; the point deltas are
        // irrelevant, the flag files are the source of truth.
        self.storage.has_values_flags.live_reload(fs)?;
        self.storage.is_null_flags.live_reload(fs)?;

        // total_point_count only grows, to cover appended offsets.
        self.total_point_count = new_points
            .last()
            .map(|&id| id as usize + 1)
            .unwrap_or(self.total_point_count);

        Ok(())
    }
}
