//! The point versions file: a dense array of one [`SeqNumberType`] per internal id, the entry for
//! id `n` sitting at `n * VERSION_ELEMENT_SIZE`.
//!
//! Both write paths, [`store_version_changes`] here and the append-only writer in
//! [`super::update_only`], go through the format definitions in this module.

use std::collections::BTreeMap;
use std::io::{self, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use byteorder::{ReadBytesExt, WriteBytesExt};
use crate::common::types::PointOffsetType;
use fs_err::File;
use parking_lot::Mutex;

use crate::segment::common::operation_error::{OperationError, OperationResult};
use crate::segment::id_tracker::point_mappings::FileEndianess;
use crate::segment::types::SeqNumberType;

const FILE_VERSIONS: &str = "mutable_id_tracker.versions";

pub(super) const VERSION_ELEMENT_SIZE: u64 = size_of::<SeqNumberType>() as u64;

// Entries are written as `u64`, a change to `SeqNumberType` has to be made there too.
const _: () = assert!(VERSION_ELEMENT_SIZE == size_of::<u64>() as u64);

pub(super) fn versions_path(segment_path: &Path) -> PathBuf {
    segment_path.join(FILE_VERSIONS)
}

/// Write one version entry at the writer's current position.
pub(super) fn write_version<W: Write>(mut writer: W, version: SeqNumberType) -> io::Result<()> {
    writer.write_u64::<FileEndianess>(version)
}

/// Cut a partial trailing entry off a versions file of `file_len` bytes, leaving it ending on an
/// entry boundary. A file already ending on one is not touched.
///
/// Dropping those bytes loses nothing: a torn entry is a slot nobody counted as committed. Leaving
/// them would misplace every entry written after them.
///
/// `shrink_to` cuts the file down however its backend can: in place for [`store_version_changes`],
/// by rewriting the file for the append-only writer, which has no truncate.
pub(super) fn heal_versions_tail(
    versions_path: &Path,
    file_len: u64,
    shrink_to: impl FnOnce(u64) -> OperationResult<()>,
) -> OperationResult<()> {
    let partial_tail = file_len % VERSION_ELEMENT_SIZE;
    if partial_tail == 0 {
        return Ok(());
    }

    log::warn!(
        "Mutable ID tracker versions file ends with a partial entry ({partial_tail} bytes into a {VERSION_ELEMENT_SIZE}-byte slot), dropping it because the slot it belongs to was never committed: {}",
        versions_path.display(),
    );
    shrink_to(file_len - partial_tail)?;

    Ok(())
}

pub(super) fn load_versions(versions_path: &Path) -> OperationResult<Vec<SeqNumberType>> {
    let file = File::open(versions_path)?;

    let file_len = file.metadata()?.len();
    let partial_tail = file_len % VERSION_ELEMENT_SIZE;
    if partial_tail != 0 {
        log::warn!(
            "Mutable ID tracker versions file has partial trailing entry, ignoring last {partial_tail} bytes (will be cleaned up on next flush)",
        );
    }

    let mut reader = BufReader::new(file);

    Ok((0..file_len / VERSION_ELEMENT_SIZE)
        .map(|_| reader.read_u64::<FileEndianess>())
        .collect::<Result<_, _>>()?)
}

/// Store new version changes, appending them to the given file
pub(super) fn store_version_changes(
    versions_path: &Path,
    changes: &BTreeMap<PointOffsetType, SeqNumberType>,
) -> OperationResult<()> {
    if changes.is_empty() {
        return Ok(());
    }

    // Create or open file
    let file = File::options()
        .create(true)
        .write(true)
        .truncate(false)
        .open(versions_path)?;

    // Heal a partial trailing entry (e.g. from a previous crash mid-write) before writing:
    // the zero-fill of a later extension would otherwise merge with the partial bytes into
    // a corrupt-but-complete-looking entry.
    heal_versions_tail(versions_path, file.metadata()?.len(), |healthy_len| {
        Ok(file.set_len(healthy_len)?)
    })?;

    let mut writer = BufWriter::new(file);

    write_version_changes(&mut writer, changes).map_err(|err| {
        OperationError::service_error(format!(
            "Failed to persist ID tracker point versions ({}): {err}",
            versions_path.display(),
        ))
    })?;

    // Explicitly fsync file contents to ensure durability
    writer.flush().map_err(|err| {
        OperationError::service_error(format!(
            "Failed to flush ID tracker point versions write buffer: {err}",
        ))
    })?;
    let file = writer.into_inner().map_err(|err| err.into_error())?;
    file.sync_all().map_err(|err| {
        OperationError::service_error(format!("Failed to fsync ID tracker point versions: {err}"))
    })?;

    Ok(())
}

/// Serializes pending point version changes into the given writer
fn write_version_changes<W>(
    mut writer: W,
    changes: &BTreeMap<PointOffsetType, SeqNumberType>,
) -> OperationResult<()>
where
    W: Write + Seek,
{
    let mut position = writer.stream_position()?;

    // Write all changes, must be ordered by internal ID, see optimization note below
    for (&internal_id, &version) in changes {
        let offset = u64::from(internal_id) * VERSION_ELEMENT_SIZE;

        // Seek to correct position if not already at it
        //
        // This assumes we're using a BufWriter. We only explicitly seek if not at the correct
        // position already, because seeking is expensive. When we seek it automatically flushes
        // our buffered writes to durable storage even if our position didn't change. This
        // optimization significantly improves performance when writing a large batch of versions
        // by reducing the number of flushes and syscalls.
        // See: <https://doc.rust-lang.org/std/io/trait.Seek.html#tymethod.seek>
        //
        // We track the position ourselves because using `stream_position()` as getter also invokes
        // a seek, causing an explicit flush.
        //
        // Now we only flush if:
        // - we seek to a new position because there's a gap in versions to update
        // - our write buffer is full
        // - after writing all versions
        if offset != position {
            position = writer.seek(io::SeekFrom::Start(offset))?;
        }

        // Write version and update position
        write_version(&mut writer, version)?;
        position += VERSION_ELEMENT_SIZE;
    }

    // Explicitly flush writer to catch IO errors
    writer.flush()?;

    Ok(())
}

pub(super) fn reconcile_persisted_version_changes(
    pending: &Mutex<BTreeMap<PointOffsetType, SeqNumberType>>,
    changes: BTreeMap<PointOffsetType, SeqNumberType>,
) {
    pending.lock().retain(|point_offset, pending_version| {
        changes
            .get(point_offset)
            .is_none_or(|persisted_version| pending_version != persisted_version)
    });
}
