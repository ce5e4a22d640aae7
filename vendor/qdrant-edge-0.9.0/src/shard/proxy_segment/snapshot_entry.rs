use std::path::{Path, PathBuf};

use crate::common::tar_ext;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::data_types::manifest::{FileVersion, SegmentManifest};
use crate::segment::entry::StorageSegmentEntry;
use crate::segment::entry::snapshot_entry::SnapshotEntry;
use crate::segment::types::*;

use super::ProxySegment;

impl SnapshotEntry for ProxySegment {
    fn segment_id(&self) -> OperationResult<String> {
        self.wrapped_segment.get().read().segment_id()
    }

    fn take_snapshot_with_pending_changes_logs(
        &self,
        temp_path: &Path,
        tar: &tar_ext::BuilderExt,
        format: SnapshotFormat,
        manifest: Option<&SegmentManifest>,
        pending_changes_logs: &[PathBuf],
    ) -> OperationResult<()> {
        log::info!("Taking a snapshot of a proxy segment");

        // Snapshot wrapped segment data into the temporary dir
        self.wrapped_segment
            .get()
            .read()
            .take_snapshot_with_pending_changes_logs(
                temp_path,
                tar,
                format,
                manifest,
                pending_changes_logs,
            )?;

        Ok(())
    }

    fn get_segment_manifest(&self) -> OperationResult<SegmentManifest> {
        let mut manifest = self.wrapped_segment.get().read().get_segment_manifest()?;

        // Add persisted pending changes log file
        manifest.segment_version = self.version();
        let log_file_name = self
            .pending_changes
            .log_path()
            .file_name()
            .expect("pending changes log path must have a file name");
        manifest.file_versions.insert(
            PathBuf::from(log_file_name),
            FileVersion::Version(manifest.segment_version),
        );

        Ok(manifest)
    }

    fn visible_pending_changes_log_files(&self) -> Vec<PathBuf> {
        let mut files = self
            .wrapped_segment
            .get()
            .read()
            .visible_pending_changes_log_files();
        let log_path = self.pending_changes.log_path();
        if log_path.is_file() {
            files.push(log_path.to_path_buf());
        }
        files
    }
}
