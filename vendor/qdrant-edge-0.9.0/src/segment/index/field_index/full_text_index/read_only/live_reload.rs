use crate::common::sorted_slice::SortedSlice;
use crate::common::types::PointOffsetType;
use crate::common::universal_io::{CachedReadFs, PreloadFuture, UniversalRead, UniversalReadFs};

use super::ReadOnlyFullTextIndex;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::index::field_index::LiveReload;

impl<S: UniversalRead> LiveReload for ReadOnlyFullTextIndex<S> {
    type File = S;

    fn live_preload<Fs: CachedReadFs<File = S>>(
        &self,
        fs: &Fs,
    ) -> OperationResult<Vec<PreloadFuture>> {
        match self {
            Self::Appendable(index) => index.live_preload(fs),
            Self::Immutable(index) => index.live_preload(fs),
            Self::OnDisk(index) => index.live_preload(fs),
        }
    }

    fn live_reload<Fs: UniversalReadFs<File = S>>(
        &mut self,
        fs: &Fs,
        deleted_points: &SortedSlice<'_, PointOffsetType>,
        new_points: &SortedSlice<'_, PointOffsetType>,
    ) -> OperationResult<()> {
        match self {
            ReadOnlyFullTextIndex::Appendable(index) => {
                index.live_reload(fs, deleted_points, new_points)
            }
            ReadOnlyFullTextIndex::Immutable(index) => {
                index.live_reload(fs, deleted_points, new_points)
            }
            ReadOnlyFullTextIndex::OnDisk(index) => {
                index.live_reload(fs, deleted_points, new_points)
            }
        }
    }
}
