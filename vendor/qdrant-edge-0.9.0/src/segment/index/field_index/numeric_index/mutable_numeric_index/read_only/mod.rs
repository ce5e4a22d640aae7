use crate::blobstore::{Blob, BlobstoreReader};
use crate::common::universal_io::UniversalRead;

use super::super::Encodable;
use super::InMemoryNumericIndex;
use crate::segment::index::field_index::numeric_point::Numericable;

mod lifecycle;
mod live_reload;
mod read_ops;

/// Read-only counterpart to [`super::MutableNumericIndex`].
///
/// Owns the same in-memory state ([`InMemoryNumericIndex`]) but is backed by
/// [`BlobstoreReader`] over generic [`UniversalRead`] instead of a writable
/// [`blobstore::Blobstore`]. Implements
/// [`super::super::numeric_index_read::NumericIndexRead`] by forwarding to the
/// in-memory index; provides no mutation surface.
///
/// Opened via [`Self::open`], which rebuilds the in-memory state by iterating
/// the Gridstore on disk.
pub struct ReadOnlyAppendableNumericIndex<T: Encodable + Numericable, S: UniversalRead>
where
    Vec<T>: Blob,
{
    pub(super) in_memory_index: InMemoryNumericIndex<T>,
    /// Backing Blobstore reader, populated by [`Self::open`]. Held to keep the
    /// storage mapped for [`Self::files`] / [`Self::clear_cache`] (those are
    /// not part of the
    /// [`NumericIndexRead`](super::super::numeric_index_read::NumericIndexRead)
    /// surface).
    pub(super) storage: BlobstoreReader<Vec<T>, S>,
}

#[cfg(test)]
mod tests {
    use crate::common::ambient;
    use crate::common::bitvec::BitSlice;
    use crate::common::types::PointOffsetType;
    use crate::common::universal_io::{MmapFile, ReadOnly, UniversalRead, UniversalReadFs};
    use serde_json::Value;
    use tempfile::TempDir;

    use super::ReadOnlyAppendableNumericIndex;
    use crate::segment::index::field_index::FieldIndexBuilderTrait;
    use crate::segment::index::field_index::numeric_index::{NumericIndex, NumericIndexRead};
    use crate::segment::types::FloatPayloadType;

    /// Build an appendable (Gridstore) numeric index on disk, then open it
    /// read-only through the write-enforced `ReadOnly<MmapFile>` backend and
    /// assert the rebuilt in-memory index matches what was written.
    #[test]
    fn read_only_appendable_numeric_round_trip() {
        let dir = TempDir::with_prefix("read_only_numeric").unwrap();
        let _scope = ambient::test_guard();

        {
            let mut builder = NumericIndex::<FloatPayloadType, FloatPayloadType>::builder_gridstore(
                dir.path().to_path_buf(),
            );
            builder.init().unwrap();
            builder.add_point(0, &[&Value::from(1.5)]).unwrap();
            builder
                .add_point(1, &[&Value::from(2.5), &Value::from(3.5)])
                .unwrap(); // 2 values
            builder.add_point(2, &[&Value::from(4.5)]).unwrap();
            // `finalize` flushes the Gridstore to disk.
            builder.finalize().unwrap();
        }

        // `S = ReadOnly<MmapFile>` → the write-enforced backend (every open
        // asserted non-writable), now usable because the gridstore reader opens
        // read-only.
        type RoFs = <ReadOnly<MmapFile> as UniversalRead>::Fs;
        let fs = RoFs::from_context(Default::default()).unwrap();
        let index: ReadOnlyAppendableNumericIndex<FloatPayloadType, ReadOnly<MmapFile>> =
            ReadOnlyAppendableNumericIndex::open(
                &fs,
                dir.path().to_path_buf(),
                PointOffsetType::MAX,
                BitSlice::empty(),
            )
            .unwrap()
            .unwrap();

        assert_eq!(index.get_points_count(), 3);
        assert_eq!(index.get_max_values_per_point(), 2);
        assert_eq!(index.values_count(0), Some(1));
        assert_eq!(index.values_count(1), Some(2));
        assert_eq!(index.get_values(0).unwrap().count(), 1);
        assert_eq!(index.get_values(1).unwrap().count(), 2);
        assert_eq!(index.total_unique_values_count().unwrap(), 4);

        // Values at or past `max_point_offset` are not loaded.
        let capped: ReadOnlyAppendableNumericIndex<FloatPayloadType, ReadOnly<MmapFile>> =
            ReadOnlyAppendableNumericIndex::open(
                &fs,
                dir.path().to_path_buf(),
                2,
                BitSlice::empty(),
            )
            .unwrap()
            .unwrap();
        assert_eq!(capped.get_points_count(), 2);
        assert_eq!(capped.values_count(1), Some(2));
        assert_eq!(capped.values_count(2), None);
        assert_eq!(capped.total_unique_values_count().unwrap(), 3);
    }
}
