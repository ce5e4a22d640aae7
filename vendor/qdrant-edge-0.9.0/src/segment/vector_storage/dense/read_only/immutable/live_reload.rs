use crate::common::sorted_slice::SortedSlice;
use crate::common::types::PointOffsetType;
use crate::common::universal_io::{CachedReadFs, PreloadFuture, UniversalReadFs};

use super::ReadOnlyImmutableDenseVectorStorage;
use crate::segment::common::live_reload::LiveReload;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::vector_storage::dense::dense_vectors::DenseVectorBlob;

impl<B: DenseVectorBlob> LiveReload for ReadOnlyImmutableDenseVectorStorage<B> {
    type File = B::File;

    fn live_preload<Fs: CachedReadFs<File = B::File>>(
        &self,
        _fs: &Fs,
    ) -> OperationResult<Vec<PreloadFuture>> {
        // Reload only applies deletes directly from arguments. No file to check.
        Ok(Vec::new())
    }

    /// Vector data is immutable, so only the in-memory deletion flags are patched
    /// from the authoritative `deleted_points`; `fs` and `new_points` are unused.
    fn live_reload<Fs: UniversalReadFs<File = B::File>>(
        &mut self,
        _fs: &Fs,
        deleted_points: &SortedSlice<'_, PointOffsetType>,
        _new_points: &SortedSlice<'_, PointOffsetType>,
    ) -> OperationResult<()> {
        self.deleted.insert_all(deleted_points);

        Ok(())
    }
}
