use crate::common::sorted_slice::SortedSlice;
use crate::common::types::PointOffsetType;
use crate::common::universal_io::{CachedReadFs, PreloadFuture, UniversalRead, UniversalReadFs};

use super::ReadOnlySparseVectorStorage;
use crate::segment::common::live_reload::LiveReload;
use crate::segment::common::operation_error::OperationResult;

impl<S: UniversalRead> LiveReload for ReadOnlySparseVectorStorage<S> {
    type File = S;

    fn live_preload<Fs: CachedReadFs<File = S>>(
        &self,
        fs: &Fs,
    ) -> OperationResult<Vec<PreloadFuture>> {
        let futs = self.storage.live_preload(fs)?;
        self.deleted.live_preload(fs)?;
        Ok(futs)
    }

    /// Reload the Blobstore, apply `deleted_points`, fold in the persisted
    /// deletion of each appended offset, and recompute `next_point_offset`.
    fn live_reload<Fs: UniversalReadFs<File = S>>(
        &mut self,
        fs: &Fs,
        deleted_points: &SortedSlice<'_, PointOffsetType>,
        new_points: &SortedSlice<'_, PointOffsetType>,
    ) -> OperationResult<()> {
        self.storage.live_reload(fs)?;
        self.deleted.insert_all(deleted_points);
        self.deleted.reload_appended::<S>(fs, new_points)?;

        self.next_point_offset = self
            .deleted
            .as_bitslice()
            .last_one()
            .map(|i| i + 1)
            .max(Some(self.storage.max_point_offset()? as usize))
            .unwrap_or_default();

        Ok(())
    }
}
