use std::path::PathBuf;

use crate::blobstore::error::BlobstoreError;
use crate::blobstore::{Blob, BlobstoreReader};
use crate::common::ambient;
use crate::common::ambient::hw::HwMetric;
use crate::common::bitvec::BitSlice;
use crate::common::reason::reason;
use crate::common::types::PointOffsetType;
use crate::common::universal_io::{CachedReadFs, OkNotFound, Populate, UniversalRead, UniversalReadFs};

use super::super::MapIndexKey;
use super::super::in_memory::InMemoryMapIndex;
use super::ReadOnlyAppendableMapIndex;
use crate::segment::common::operation_error::{OperationError, OperationResult};

impl<N: MapIndexKey + ?Sized, S: UniversalRead> ReadOnlyAppendableMapIndex<N, S>
where
    Vec<<N as MapIndexKey>::Owned>: Blob + Send + Sync,
{
    pub fn preopen(fs: &impl CachedReadFs<File = S>, dir: PathBuf) -> OperationResult<bool> {
        // Blobstore reader
        Ok(
            BlobstoreReader::<Vec<<N as MapIndexKey>::Owned>, S>::preopen(
                fs,
                dir,
                Populate::PreferBackground,
            )
            .ok_not_found()?
            .is_some(),
        )
    }

    /// Open the appendable (Gridstore) map index read-only, threading every
    /// file open through the filesystem handle `fs`.
    ///
    /// Opens a [`BlobstoreReader`] over the generic filesystem object, then
    /// rebuilds the in-memory state by feeding every stored value through
    /// [`MutableMapIndexInner::ingest`] — the exact reconstruction the writable
    /// [`MutableMapIndex::open_gridstore`][1] performs over a writable
    /// [`blobstore::Blobstore`]. No write path; the reader is retained for
    /// later `files` / `clear_cache` use.
    ///
    /// Returns [`Ok(None)`] when the on-disk directory doesn't exist, matching
    /// the `create_if_missing == false` branch of the writable counterpart —
    /// the read path never creates.
    ///
    /// Values at or past `max_point_offset` are skipped, as the id tracker may
    /// not yet cover them.
    ///
    /// [1]: super::super::MutableMapIndex::open_gridstore
    pub fn open(
        fs: &impl UniversalReadFs<File = S>,
        path: PathBuf,
        max_point_offset: PointOffsetType,
        deleted: &BitSlice,
    ) -> OperationResult<Option<Self>> {
        let Some(storage) = BlobstoreReader::<Vec<<N as MapIndexKey>::Owned>, S>::open(
            fs,
            path,
            Populate::Blocking,
        )
        .ok_not_found()?
        else {
            // Files don't exist, cannot load
            return Ok(None);
        };

        // Prefix support is not wired for the read-only appendable variant:
        // the gridstore carries no prefix marker, and this open path has no
        // schema access. Prefix conditions fall back to slower checks.
        let mut in_memory_index = InMemoryMapIndex::<N>::empty(false);
        let _scope = ambient::unmeasured_guard(reason("Internal operation"));
        storage.iter::<_, BlobstoreError>(
            storage.max_point_offset()?.min(max_point_offset),
            |idx, values: Vec<_>| {
                if deleted.get(idx as usize).is_some_and(|deleted| *deleted) {
                    return Ok(true);
                }
                in_memory_index.add_many_to_map(idx, values);
                Ok(true)
            },
            HwMetric::PayloadIndexIoWrite,
        )?;

        Ok(Some(Self {
            in_memory_index,
            storage,
        }))
    }

    pub fn files(&self) -> Vec<PathBuf> {
        self.storage.files()
    }

    /// Clear gridstore disk cache. Does not affect the in-memory index.
    pub fn clear_cache(&self) -> OperationResult<()> {
        self.storage.clear_cache().map_err(|err| {
            OperationError::service_error(format!(
                "Failed to clear read-only appendable map index gridstore cache: {err}"
            ))
        })
    }
}
