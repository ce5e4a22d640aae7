mod lifecycle;
mod live_reload;
mod payload_storage_read;

use crate::blobstore::BlobstoreReader;
use crate::common::universal_io::UniversalRead;

use crate::segment::types::Payload;

/// Read-only counterpart to [`super::payload_storage_impl::PayloadStorageImpl`].
///
/// Backed by a [`BlobstoreReader`] over generic [`UniversalRead`] instead of a
/// writable [`blobstore::Blobstore`]. Unlike the read-only field indexes there
/// is no in-memory index to rebuild: [`Payload`] values are read straight from
/// the reader, so [`PayloadStorageRead`](super::PayloadStorageRead) forwards
/// directly to it. Opened via [`Self::open`] (see [`lifecycle`]); provides no
/// mutation surface.
pub struct ReadOnlyPayloadStorage<S: UniversalRead> {
    storage: BlobstoreReader<Payload, S>,
}

#[cfg(test)]
mod tests {
    use crate::common::ambient;
    use crate::common::universal_io::{MmapFile, Populate, ReadOnly, UniversalRead, UniversalReadFs};
    use rstest::rstest;
    use tempfile::TempDir;

    use super::ReadOnlyPayloadStorage;
    use crate::segment::payload_json;
    use crate::segment::payload_storage::payload_storage_impl::PayloadStorageImpl;
    use crate::segment::payload_storage::{PayloadStorage, PayloadStorageRead};

    /// Write payloads through the writable mmap storage, then reopen the same
    /// files read-only through the write-enforced `ReadOnly<MmapFile>` backend
    /// and assert the reader returns what was written.
    #[rstest]
    fn read_only_payload_storage_round_trip(
        #[values(Populate::No, Populate::PreferBackground)] populate: Populate,
    ) {
        let dir = TempDir::with_prefix("read_only_payload").unwrap();
        let _scope = ambient::test_guard();

        let payload = payload_json! {
            "a": "some text",
            "n": 42,
        };

        {
            let mut storage: PayloadStorageImpl =
                PayloadStorageImpl::open_or_create(dir.path().to_path_buf(), false).unwrap();
            for i in 0..5 {
                storage.set(i, &payload).unwrap();
            }
            // Flush so the reader observes the data on disk.
            storage.flusher()().unwrap();
        }

        // `S = ReadOnly<MmapFile>` → the write-enforced backend (every open
        // asserted non-writable), usable because the gridstore reader opens
        // read-only.
        type RoFs = <ReadOnly<MmapFile> as UniversalRead>::Fs;
        let fs = RoFs::from_context(Default::default()).unwrap();
        let storage: ReadOnlyPayloadStorage<ReadOnly<MmapFile>> =
            ReadOnlyPayloadStorage::open(&fs, dir.path().to_path_buf(), populate).unwrap();

        assert_eq!(storage.is_cold(), !populate.to_bool::<MmapFile>());
        for i in 0..5 {
            assert_eq!(storage.get(i).unwrap(), payload);
        }
        // An unwritten point reads back as an empty payload.
        assert_eq!(storage.get(99).unwrap(), payload_json! {});
    }
}
