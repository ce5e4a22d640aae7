use std::path::Path;
use std::sync::Arc;

use crate::common::ambient;
use crate::common::reason::reason;
use crate::common::save_on_disk::SaveOnDisk;
use crate::common::storage_version::StorageVersion;
use crate::common::types::PointOffsetType;
use parking_lot::{RwLockUpgradableReadGuard, RwLockWriteGuard};
use crate::segment::common::operation_error::OperationResult;
use crate::segment::entry::StorageSegmentEntry as _;
use crate::segment::segment::SegmentVersion;
use crate::segment::types::SegmentConfig;

use crate::shard::locked_segment::LockedSegment;
use crate::shard::payload_index_schema::PayloadIndexSchema;
use crate::shard::proxy_segment::UnsyncedProxySegment;
use crate::shard::segment_holder::locked::LockedSegmentHolder;
use crate::shard::segment_holder::{SegmentHolder, SegmentId};
use crate::shard::snapshots::snapshot_manifest::SnapshotManifest;

impl SegmentHolder {
    pub fn snapshot_manifest(&self) -> OperationResult<SnapshotManifest> {
        let mut manifest = SnapshotManifest::default();

        for (_, segment) in self.iter() {
            let segment_manifest = segment.get().read().get_segment_manifest()?;
            manifest.add(segment_manifest);
        }

        Ok(manifest)
    }

    /// Proxy all shard segments for [`proxy_all_segments_and_apply`].
    #[allow(clippy::type_complexity)]
    pub fn proxy_all_segments<'a>(
        segments_lock: RwLockUpgradableReadGuard<'a, SegmentHolder>,
        segments_path: &Path,
        segment_config: Option<SegmentConfig>,
        payload_index_schema: Arc<SaveOnDisk<PayloadIndexSchema>>,
        deferred_internal_id: Option<PointOffsetType>,
    ) -> OperationResult<(
        Vec<(SegmentId, LockedSegment)>,
        SegmentId,
        RwLockUpgradableReadGuard<'a, SegmentHolder>,
    )> {
        let _scope = ambient::unmeasured_guard(reason(
            "This counter will be used to measure operations on temp segment, \
             which is part of internal process and can be ignored",
        ));

        // Create temporary appendable segment to direct all proxy writes into
        let (tmp_segment, tmp_token) = segments_lock.build_tmp_segment(
            segments_path,
            segment_config,
            payload_index_schema,
            deferred_internal_id,
            false,
        )?;

        // List all segments we want to snapshot
        let segment_ids = segments_lock.segment_ids();

        // Create proxy for all segments
        let mut new_proxies = Vec::with_capacity(segment_ids.len());
        for segment_id in segment_ids {
            let segment = segments_lock.get(segment_id).unwrap();
            let proxy = UnsyncedProxySegment::new(segment.clone())?;

            // Write segment is fresh, so it has no operations
            // Operation with number 0 will be applied
            proxy.replicate_field_indexes(0, &tmp_segment)?;
            new_proxies.push((segment_id, proxy));
        }

        // Save segment version once all payload indices have been converted
        // If this ends up not being saved due to a crash, the segment will not be used
        match &tmp_segment {
            LockedSegment::Original(segment) => {
                // Register the temp segment before saving its version, so it exists in the manifest
                // before it can receive proxied writes.
                segments_lock.sync_segment_manifest(Some(tmp_token))?;
                let segment_path = &segment.read().segment_path;
                SegmentVersion::save(segment_path)?;
            }
            LockedSegment::Proxy(_) => unreachable!(),
        }

        // Replace all segments with proxies
        // We cannot fail past this point to prevent only having some segments proxified
        let mut proxies = Vec::with_capacity(new_proxies.len());
        let mut write_segments = RwLockUpgradableReadGuard::upgrade(segments_lock);
        for (segment_id, proxy) in new_proxies {
            // Some points might have been changed in the underlying segment before we upgraded the
            // `write_segments` lock, so the wrapped segment is only frozen now. Finalizing here
            // syncs `deleted_mask` from the now-immutable segment — the type-state guarantees this
            // happens exactly once and cannot be skipped.
            let proxy = proxy.finalize();

            // Replicate field indexes the second time, because optimized segments could have
            // been changed. The probability is small, though, so we can afford this operation
            // under the full collection write lock
            let op_num = proxy.version();
            if let Err(err) = proxy.replicate_field_indexes(op_num, &tmp_segment) {
                log::error!("Failed to replicate proxy segment field indexes, ignoring: {err}");
            }

            // We must keep existing segment IDs because ongoing optimizations might depend on the mapping being the same
            write_segments.replace(segment_id, proxy)?;
            let locked_proxy_segment = write_segments
                .get(segment_id)
                .cloned()
                .expect("failed to get segment from segment holder we just swapped in");
            proxies.push((segment_id, locked_proxy_segment));
        }

        // Make sure at least one appendable segment exists
        let temp_segment_id = write_segments.add_new_locked(tmp_segment);

        let segments_lock = RwLockWriteGuard::downgrade_to_upgradable(write_segments);

        Ok((proxies, temp_segment_id, segments_lock))
    }

    /// Try to unproxy a single shard segment for [`proxy_all_segments_and_apply`].
    ///
    /// # Warning
    ///
    /// If unproxying fails an error is returned with the lock and the proxy is left behind in the
    /// shard holder.
    pub fn try_unproxy_segment<'a>(
        segments: &'a LockedSegmentHolder,
        segments_lock: RwLockUpgradableReadGuard<'a, SegmentHolder>,
        segment_id: SegmentId,
    ) -> Result<
        RwLockUpgradableReadGuard<'a, SegmentHolder>,
        RwLockUpgradableReadGuard<'a, SegmentHolder>,
    > {
        if !matches!(segments_lock.get(segment_id), Some(LockedSegment::Proxy(_))) {
            log::warn!(
                "Unproxying segment {segment_id} that is not proxified, that is unexpected, skipping",
            );
            return Err(segments_lock);
        }

        // Propagate changes to wrapped segment with segment holder read lock. On failure keep the
        // proxy installed rather than unwrapping into a segment that never got the changes;
        // `unproxy_all_segments` retries the propagation for every proxy left behind.
        let (write_segments, updates_guard) =
            match SegmentHolder::unproxy_segments(segments, segments_lock, &[segment_id]) {
                Ok(unproxied) => unproxied,
                Err((segments_lock, _err)) => return Err(segments_lock),
            };

        drop(updates_guard); // Release updates lock as soon as possible

        // Downgrade write lock to read and give it back
        Ok(RwLockWriteGuard::downgrade_to_upgradable(write_segments))
    }

    /// Unproxy all shard segments for [`proxy_all_segments_and_apply`].
    pub fn unproxy_all_segments(
        segments: &LockedSegmentHolder,
        segments_lock: RwLockUpgradableReadGuard<SegmentHolder>,
        proxy_ids: &[SegmentId],
        tmp_segment_id: SegmentId,
    ) -> OperationResult<()> {
        // Propagate all changes in the proxies into their wrapped segments and put the wrapped
        // segments back into the segment holder. On failure nothing is unwrapped: every proxy
        // stays installed and keeps serving its changes, and the temp segment they write into is
        // left in place.
        let (mut write_segments, updates_guard) =
            SegmentHolder::unproxy_segments(segments, segments_lock, proxy_ids)
                .map_err(|(_segments_lock, err)| err)?;

        debug_assert!(
            write_segments.get(tmp_segment_id).is_some(),
            "temp segment must exist",
        );

        // Remove temporary appendable segment, if we don't need it anymore
        write_segments.remove_segment_if_not_needed(tmp_segment_id)?;

        drop(updates_guard); // Release updates lock as soon as possible

        Ok(())
    }
}
