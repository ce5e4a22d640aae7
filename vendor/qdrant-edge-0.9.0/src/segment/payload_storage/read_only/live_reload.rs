use crate::common::sorted_slice::SortedSlice;
use crate::common::types::PointOffsetType;
use crate::common::universal_io::{PreloadFuture, UniversalRead, UniversalReadFs};

use super::ReadOnlyPayloadStorage;
use crate::segment::common::live_reload::LiveReload;
use crate::segment::common::operation_error::OperationResult;

impl<S: UniversalRead> LiveReload for ReadOnlyPayloadStorage<S> {
    type File = S;

    fn live_preload<Fs: crate::common::universal_io::CachedReadFs<File = Self::File>>(
        &self,
        cached_fs: &Fs,
    ) -> OperationResult<Vec<PreloadFuture>> {
        Ok(self.storage.live_preload(cached_fs)?)
    }

    fn live_reload<Fs: UniversalReadFs<File = S>>(
        &mut self,
        fs: &Fs,
        _deleted_points: &SortedSlice<'_, PointOffsetType>,
        _new_points: &SortedSlice<'_, PointOffsetType>,
    ) -> OperationResult<()> {
        Ok(self.storage.live_reload(fs)?)
    }
}
