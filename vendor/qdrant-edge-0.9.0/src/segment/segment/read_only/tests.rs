//! End-to-end check that a segment opened read-only over the universal-IO
//! filesystem answers queries identically to the mutable `load_segment`. Both
//! read the exact same on-disk files, so vector search, filtered reads and
//! payload reads must match point-for-point.

use std::assert_matches;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use ahash::{AHashMap, AHashSet};
use crate::common::ambient;
use crate::common::flags::FeatureFlags;
use crate::common::sorted_slice::SortedSlice;
use crate::common::types::DeferredBehavior;
use crate::common::universal_io::{CachedReadFs, MmapFile, MmapFs};
use ordered_float::OrderedFloat;
use rstest::rstest;
use tempfile::Builder;

use crate::segment::common::live_reload::LiveReload;
use crate::segment::common::operation_error::{OperationError, OperationResult};
use crate::segment::data_types::index::{TextIndexParams, TextScoringParams};
use crate::segment::data_types::load_profile::LoadProfile;
use crate::segment::data_types::named_vectors::NamedVectors;
use crate::segment::data_types::query_context::QueryContext;
use crate::segment::data_types::vectors::{DEFAULT_VECTOR_NAME, QueryVector, VectorInternal};
use crate::segment::entry::entry_point::{
    NonAppendableSegmentEntry as _, ReadSegmentEntry, SegmentEntry as _, StorageSegmentEntry as _,
};
use crate::segment::json_path::JsonPath;
use crate::segment::payload_json;
use crate::segment::segment::Segment;
use crate::segment::segment::read_only::{ReadOnlySegment, build_cached_fs_async};
use crate::segment::segment_constructor::segment_builder::SegmentBuilder;
use crate::segment::segment_constructor::{build_segment, load_segment};
use crate::segment::types::{
    Condition, Distance, FieldCondition, Filter, HasVectorCondition, HnswConfig, HnswGlobalConfig,
    Indexes, Match, Memory, PayloadFieldSchema, PayloadSchemaParams, PayloadSchemaType,
    PointIdType, QuantizationConfig, Range, ScalarQuantizationConfig, ScalarType, SegmentConfig,
    ValueVariants, VectorDataConfig, VectorStorageType, WithPayload,
};

const DIM: usize = 8;
const NUM_POINTS: usize = 100;

/// Build a non-appendable, on-disk segment (Mmap storage + HNSW index + two
/// indexed payload fields) the read-only opener can consume: an appendable
/// source is populated, then optimized into the immutable target by
/// `SegmentBuilder` (Mmap storage forces `is_appendable() = false`).
/// With `inline_storage` the build ends up graph-backed (`GraphInline`).
fn build_immutable_segment(
    segments_path: &Path,
    temp_path: &Path,
    inline_storage: bool,
) -> Segment {
    let _scope = ambient::test_guard();

    let source_dir = Builder::new().prefix("ro_source").tempdir().unwrap();
    let (mut source, _) = build_segment(
        source_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::default(),
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();

    for i in 0..NUM_POINTS {
        let vector: Vec<f32> = (0..DIM)
            .map(|j| ((i * 7 + j * 3) % 13) as f32 + 0.5)
            .collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        let point_id = (i as u64 + 1).into();
        let op_num = (i + 1) as u64;
        source.upsert_point(op_num, point_id, vectors).unwrap();
        let kw = ["red", "green", "blue"][i % 3];
        let payload = serde_json::from_value(serde_json::json!({
            "kw": kw,
            "num": i as i64,
        }))
        .unwrap();
        source.set_full_payload(op_num, point_id, &payload).unwrap();
    }
    source
        .create_field_index(
            NUM_POINTS as u64 + 1,
            &JsonPath::new("kw"),
            Some(&PayloadFieldSchema::FieldType(PayloadSchemaType::Keyword)),
        )
        .unwrap();
    source
        .create_field_index(
            NUM_POINTS as u64 + 2,
            &JsonPath::new("num"),
            Some(&PayloadFieldSchema::FieldType(PayloadSchemaType::Integer)),
        )
        .unwrap();

    #[expect(deprecated, reason = "always_ram")]
    let quantization_config = inline_storage.then(|| {
        QuantizationConfig::from(ScalarQuantizationConfig {
            r#type: ScalarType::Int8,
            quantile: None,
            always_ram: None,
            memory: None,
        })
    });
    let target_config = SegmentConfig {
        vector_data: HashMap::from([(
            DEFAULT_VECTOR_NAME.to_owned(),
            VectorDataConfig {
                size: DIM,
                distance: Distance::Cosine,
                storage_type: VectorStorageType::Mmap,
                index: Indexes::Hnsw(HnswConfig {
                    inline_storage: inline_storage.then_some(true),
                    ..HnswConfig::default()
                }),
                quantization_config,
                multivector_config: None,
                datatype: None,
            },
        )]),
        sparse_vector_data: Default::default(),
        payload_storage_type: Default::default(),
        id_tracker_memory: None,
    };
    assert!(!target_config.is_appendable());

    let mut builder = SegmentBuilder::new(
        temp_path,
        &target_config,
        &HnswGlobalConfig::default(),
        FeatureFlags::default(),
    )
    .unwrap();
    builder.update(&[&source], &AtomicBool::new(false)).unwrap();
    let built = builder.build_for_test(segments_path);
    let expected_storage_type = if inline_storage {
        VectorStorageType::GraphInline
    } else {
        VectorStorageType::Mmap
    };
    assert_eq!(
        built.segment_config.vector_data[DEFAULT_VECTOR_NAME].storage_type,
        expected_storage_type,
    );
    built
}

fn keyword_filter(value: &str) -> Filter {
    Filter::new_must(Condition::Field(FieldCondition::new_match(
        JsonPath::new("kw"),
        Match::new_value(ValueVariants::String(value.into())),
    )))
}

fn sorted_filtered(segment: &impl ReadSegmentEntry, filter: &Filter) -> Vec<PointIdType> {
    let _scope = ambient::test_guard();
    let mut ids = segment
        .read_filtered(
            None,
            None,
            Some(filter),
            &AtomicBool::new(false),
            DeferredBehavior::WithDeferred,
        )
        .unwrap();
    ids.sort_unstable();
    ids
}

/// Assert a read-only segment answers vector search, filtered reads and payload
/// reads identically to a reference (mutable) segment over the same data.
fn assert_query_equivalence(reference: &impl ReadSegmentEntry, candidate: &impl ReadSegmentEntry) {
    let query = QueryVector::Nearest(VectorInternal::Dense(
        (0..DIM).map(|j| (j % 5) as f32 + 0.25).collect(),
    ));
    let query_context = QueryContext::default();
    let sqc = query_context.get_segment_query_context();

    let reference_hits = reference
        .search_batch(
            DEFAULT_VECTOR_NAME,
            &[&query],
            &WithPayload::default(),
            &false.into(),
            None,
            NUM_POINTS,
            None,
            &sqc,
        )
        .unwrap();
    let candidate_hits = candidate
        .search_batch(
            DEFAULT_VECTOR_NAME,
            &[&query],
            &WithPayload::default(),
            &false.into(),
            None,
            NUM_POINTS,
            None,
            &sqc,
        )
        .unwrap();
    assert!(!reference_hits[0].is_empty());
    assert_eq!(
        reference_hits[0], candidate_hits[0],
        "vector search mismatch"
    );

    for value in ["red", "green", "blue"] {
        let filter = keyword_filter(value);
        assert_eq!(
            sorted_filtered(reference, &filter),
            sorted_filtered(candidate, &filter),
            "filtered read mismatch for kw={value}",
        );
    }

    let _scope = ambient::test_guard();

    for i in 0..NUM_POINTS {
        let point_id: PointIdType = (i as u64 + 1).into();
        assert_eq!(
            reference.point_version(point_id).is_some(),
            candidate.point_version(point_id).is_some(),
            "visibility mismatch for point {point_id}",
        );
        if reference.point_version(point_id).is_none() {
            continue;
        }
        assert_eq!(
            reference.payload(point_id).unwrap(),
            candidate.payload(point_id).unwrap(),
            "payload mismatch for point {point_id}",
        );
    }
}

#[test]
fn read_only_segment_matches_mutable() {
    let segments_dir = Builder::new().prefix("ro_segments").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder").tempdir().unwrap();

    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let segment_path = mutable.data_path();
    let segment_uuid = mutable.uuid;

    // Open the very same directory read-only over the universal mmap fs.
    let read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &segment_path, segment_uuid, None, None)
            .expect("read-only open");

    assert_eq!(read_only.available_point_count(), NUM_POINTS);
    assert_eq!(read_only.segment_uuid(), segment_uuid);

    assert_query_equivalence(&mutable, &read_only);
}

#[test]
fn read_only_segment_graph_inline_matches_mutable() {
    let segments_dir = Builder::new().prefix("ro_segments_gi").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder_gi").tempdir().unwrap();

    let mut mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), true);

    let deleted: [PointIdType; 3] = [3.into(), 17.into(), 42.into()];
    for &point_id in &deleted {
        assert_matches!(
            mutable.delete_point(NUM_POINTS as u64 + 3, point_id),
            Ok(true),
        );
    }
    let without_vector: PointIdType = 7.into();
    assert_matches!(
        mutable.delete_vector(NUM_POINTS as u64 + 4, without_vector, DEFAULT_VECTOR_NAME),
        Ok(true),
    );
    mutable.flush(true).unwrap();

    let read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");

    assert_eq!(
        read_only.available_point_count(),
        NUM_POINTS - deleted.len(),
    );
    let has_vector = Filter::new_must(Condition::HasVector(HasVectorCondition::from(
        DEFAULT_VECTOR_NAME.to_owned(),
    )));
    let with_vector = sorted_filtered(&read_only, &has_vector);
    assert_eq!(with_vector.len(), NUM_POINTS - deleted.len() - 1);
    assert!(!with_vector.contains(&without_vector));
    assert_eq!(with_vector, sorted_filtered(&mutable, &has_vector));

    assert_query_equivalence(&mutable, &read_only);
}

/// A request-specific [`LoadProfile`] only demotes placement, never disables a
/// component: whatever the profile, every query the segment can serve must
/// still answer identically to the mutable reference.
#[rstest]
#[case::mmap(false)]
#[case::graph_inline(true)]
fn read_only_segment_with_load_profile_matches_mutable(#[case] inline_storage: bool) {
    let segments_dir = Builder::new().prefix("ro_segments_lp").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder_lp").tempdir().unwrap();

    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), inline_storage);
    let segment_path = mutable.data_path();
    let segment_uuid = mutable.uuid;

    let profiles = [
        // Everything cold: HNSW graph, vector storage and both payload indexes
        // are all demoted.
        LoadProfile::for_retrieve(),
        // Scroll filtered on "kw": vector components and the "num" index are
        // demoted, the "kw" index and payload storage keep their placement.
        LoadProfile::for_scroll(Some(&keyword_filter("red")), None, true),
        // Search on the default vector: payload storage and both payload
        // indexes are demoted, the vector components keep their placement.
        LoadProfile::for_search(DEFAULT_VECTOR_NAME, None, false),
    ];
    for profile in &profiles {
        let read_only = ReadOnlySegment::<MmapFile>::open(
            &MmapFs,
            &segment_path,
            segment_uuid,
            None,
            Some(profile),
        )
        .expect("read-only open with load profile");

        assert_eq!(read_only.available_point_count(), NUM_POINTS);
        assert_query_equivalence(&mutable, &read_only);
    }
}

/// A profile's deferred-points threshold hides the tail of an appendable segment: 1 KB of
/// `DIM` f32 vectors is 32 points, so only the first 32 inserted points stay visible.
#[test]
fn read_only_segment_load_profile_defers_points() {
    let dir = Builder::new().prefix("ro_deferred").tempdir().unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Dot,
                    storage_type: VectorStorageType::default(),
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    for i in 0..NUM_POINTS {
        let vector = vec![1.0; DIM];
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        mutable
            .upsert_point((i + 1) as u64, (i as u64 + 1).into(), vectors)
            .unwrap();
    }
    mutable.flush(true).unwrap();

    let profile = LoadProfile::for_retrieve().with_deferred_points_threshold_kb(Some(1));
    let read_only = ReadOnlySegment::<MmapFile>::open(
        &MmapFs,
        &mutable.data_path(),
        mutable.uuid,
        None,
        Some(&profile),
    )
    .expect("read-only open with deferred threshold");

    assert_eq!(read_only.available_point_count_without_deferred(), 32);
    assert!(read_only.has_point(32.into(), DeferredBehavior::VisibleOnly));
    assert!(!read_only.has_point(33.into(), DeferredBehavior::VisibleOnly));

    let unfiltered =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    assert_eq!(
        unfiltered.available_point_count_without_deferred(),
        NUM_POINTS
    );
}

/// Open a segment straight from an S3-compatible store (rustfs/minio) over
/// `BlobFs` and assert it answers queries identically to the local reference.
///
/// Ignored by default; run with a server up:
/// `S3_INTEGRATION_TEST=1 cargo test -p segment read_only_segment_over_s3 -- --ignored`
#[test]
#[ignore = "requires a running S3-compatible server (set S3_INTEGRATION_TEST=1)"]
fn read_only_segment_over_s3() {
    use bytes::Bytes;
    use crate::common::universal_io::UniversalReadFs;
    use io_bridge_object_store::backends::aws::{AwsConfig, AwsCredentials};
    use io_bridge_object_store::{BlobBackend, BlobFile, BlobFs, ObjectStoreSource};
    use object_store::ObjectStoreExt;
    use object_store::aws::AmazonS3;
    use object_store::path::Path as ObjectPath;

    if std::env::var("S3_INTEGRATION_TEST").as_deref() != Ok("1") {
        eprintln!("skipping read_only_segment_over_s3: set S3_INTEGRATION_TEST=1");
        return;
    }

    let aws_config = AwsConfig {
        bucket: std::env::var("RUSTFS_BUCKET").unwrap_or_else(|_| "test-bucket".into()),
        region: Some("us-east-1".into()),
        endpoint: Some(
            std::env::var("RUSTFS_ENDPOINT").unwrap_or_else(|_| "http://localhost:9000".into()),
        ),
        s3_express: false,
        native_append: false,
        credentials: AwsCredentials::Static {
            access_key_id: std::env::var("RUSTFS_ACCESS_KEY")
                .unwrap_or_else(|_| "rustfsadmin".into()),
            secret_access_key: std::env::var("RUSTFS_SECRET_KEY")
                .unwrap_or_else(|_| "rustfsadmin".into()),
            session_token: None,
        },
    };

    // Build an immutable segment locally as the reference.
    let segments_dir = Builder::new().prefix("ro_s3_segments").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_s3_builder").tempdir().unwrap();
    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let segment_uuid = mutable.uuid;
    let local_path = mutable.data_path();

    // Mirror the whole segment directory into the bucket under `seg/<uuid>/...`.
    let store = AmazonS3::build_store(&aws_config).expect("build S3 store");
    let key_prefix = format!("seg/{segment_uuid}");
    let upload_runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    upload_runtime.block_on(async {
        for entry in walkdir::WalkDir::new(&local_path) {
            let entry = entry.unwrap();
            if !entry.file_type().is_file() {
                continue;
            }
            let rel = entry.path().strip_prefix(&local_path).unwrap();
            let key = format!("{key_prefix}/{}", rel.to_string_lossy());
            let bytes = fs_err::read(entry.path()).unwrap();
            store
                .put(&ObjectPath::from(key.as_str()), Bytes::from(bytes).into())
                .await
                .expect("upload segment file");
        }
    });

    // Open the segment straight from S3 and compare to the local reference.
    let blob_fs = BlobFs::<ObjectStoreSource<AmazonS3>>::from_context(aws_config).expect("blob fs");
    let read_only = ReadOnlySegment::<BlobFile<ObjectStoreSource<AmazonS3>>>::open(
        &blob_fs,
        Path::new(&key_prefix),
        segment_uuid,
        None,
        None,
    )
    .expect("read-only open over S3");

    assert_eq!(read_only.available_point_count(), NUM_POINTS);
    assert_query_equivalence(&mutable, &read_only);
}

/// A `MutableRam` sparse index has no persisted representation: the read-only
/// open rebuilds it from the sparse vector storage. Sparse searches over the
/// rebuilt index must match the mutable segment point-for-point — both right
/// after the open and after a live reload folds in appends, an update and
/// deletions from the writer.
#[test]
fn read_only_segment_sparse_mutable_ram_matches_mutable() {
    use crate::sparse::common::sparse_vector::SparseVector;

    use crate::segment::data_types::vectors::VectorRef;
    use crate::segment::index::sparse_index::sparse_index_config::{SparseIndexConfig, SparseIndexType};
    use crate::segment::types::{SparseVectorDataConfig, SparseVectorStorageType};

    const SPARSE_VECTOR_NAME: &str = "sparse";

    fn sparse_vector(i: usize) -> SparseVector {
        let indices = vec![(i % 7) as u32, 8 + (i % 15) as u32, 32 + (i % 29) as u32];
        let values = vec![
            1.0 + (i % 11) as f32,
            0.5 + (i % 5) as f32,
            0.25 + (i % 3) as f32,
        ];
        SparseVector::new(indices, values).unwrap()
    }

    fn assert_sparse_search_matches(
        reference: &impl ReadSegmentEntry,
        candidate: &impl ReadSegmentEntry,
        query: &SparseVector,
    ) {
        let query = QueryVector::Nearest(VectorInternal::Sparse(query.clone()));
        let query_context = QueryContext::default();
        let sqc = query_context.get_segment_query_context();
        let reference_hits = reference
            .search_batch(
                SPARSE_VECTOR_NAME,
                &[&query],
                &WithPayload::default(),
                &false.into(),
                None,
                2 * NUM_POINTS,
                None,
                &sqc,
            )
            .unwrap();
        let candidate_hits = candidate
            .search_batch(
                SPARSE_VECTOR_NAME,
                &[&query],
                &WithPayload::default(),
                &false.into(),
                None,
                2 * NUM_POINTS,
                None,
                &sqc,
            )
            .unwrap();
        assert!(!reference_hits[0].is_empty());
        assert_eq!(
            reference_hits[0], candidate_hits[0],
            "sparse search mismatch"
        );
    }

    let dir = Builder::new().prefix("ro_sparse_mut").tempdir().unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        dir.path(),
        &SegmentConfig {
            vector_data: Default::default(),
            sparse_vector_data: HashMap::from([(
                SPARSE_VECTOR_NAME.to_owned(),
                SparseVectorDataConfig {
                    index: SparseIndexConfig::new(None, SparseIndexType::MutableRam, None, None),
                    storage_type: SparseVectorStorageType::default(),
                    modifier: None,
                },
            )]),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    // The read-only follower tails the writer's append-only logs; an in-place
    // update would be invisible to it, so the writer must run append-only
    // (an update becomes a delete plus an insert at a fresh offset).
    mutable.append_only_mutations = true;

    for i in 0..NUM_POINTS {
        let vector = sparse_vector(i);
        let vectors = NamedVectors::from_ref(SPARSE_VECTOR_NAME, VectorRef::Sparse(&vector));
        mutable
            .upsert_point((i + 1) as u64, (i as u64 + 1).into(), vectors)
            .unwrap();
    }
    mutable.flush(true).unwrap();

    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    assert_eq!(read_only.available_point_count(), NUM_POINTS);

    let query = SparseVector::new(vec![2, 10, 40], vec![1.0, 0.5, 0.25]).unwrap();
    assert_sparse_search_matches(&mutable, &read_only, &query);

    // The writer keeps going: append new points introducing a fresh dimension
    // (64), re-upsert an existing point (a delete + insert at a new offset) and
    // delete a couple of points, then flush.
    let mut op_num = NUM_POINTS as u64 + 1;
    for i in NUM_POINTS..NUM_POINTS + 20 {
        let mut vector = sparse_vector(i);
        vector.indices.push(64);
        vector.values.push(2.0 + (i % 4) as f32);
        let vectors = NamedVectors::from_ref(SPARSE_VECTOR_NAME, VectorRef::Sparse(&vector));
        mutable
            .upsert_point(op_num, (i as u64 + 1).into(), vectors)
            .unwrap();
        op_num += 1;
    }
    let updated = sparse_vector(NUM_POINTS + 20);
    let vectors = NamedVectors::from_ref(SPARSE_VECTOR_NAME, VectorRef::Sparse(&updated));
    mutable.upsert_point(op_num, 3.into(), vectors).unwrap();
    op_num += 1;
    for point_id in [5, 17] {
        mutable.delete_point(op_num, point_id.into()).unwrap();
        op_num += 1;
    }
    mutable.flush(true).unwrap();

    // A live reload folds the delta into the rebuilt sparse index.
    preload_then_reload(&mut read_only).expect("read-only live reload");
    assert_eq!(read_only.available_point_count(), NUM_POINTS + 20 - 2);

    assert_sparse_search_matches(&mutable, &read_only, &query);
    // A query on the fresh dimension only reaches points added after the open.
    let fresh_dim_query = SparseVector::new(vec![64], vec![1.0]).unwrap();
    assert_sparse_search_matches(&mutable, &read_only, &fresh_dim_query);
}

/// Full refresh cycle as the edge shard drives it: staged preload (shared
/// access), then the exclusive apply.
fn preload_then_reload(
    segment: &mut ReadOnlySegment<MmapFile>,
) -> crate::segment::common::operation_error::OperationResult<()> {
    let max_committed_id =
        futures::executor::block_on(segment.live_preload(&AtomicBool::new(false)))?;
    segment.live_reload(max_committed_id)
}

/// Drive `config_reload_diff` + `apply_config_reload`: toggle the on-disk
/// payload config (the `num` field index) while its index files stay in place,
/// and assert the read-only segment loads/drops the field index accordingly and
/// keeps answering queries identically to the reference.
#[test]
fn read_only_segment_config_reload_payload_index() {
    use crate::segment::index::payload_config::PayloadConfig;
    use crate::segment::segment_constructor::get_payload_index_path;

    let segments_dir = Builder::new().prefix("ro_cfg_segments").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_cfg_builder").tempdir().unwrap();

    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let segment_path = mutable.data_path();
    let segment_uuid = mutable.uuid;

    let kw_field = JsonPath::new("kw");
    let num_field = JsonPath::new("num");

    // The built segment indexes both `kw` and `num`. Stash the full config, then
    // write a reduced one that drops `num` (its index files are left untouched).
    let payload_index_path = get_payload_index_path(&segment_path);
    let config_path = PayloadConfig::get_config_path(&payload_index_path);
    let full_config = PayloadConfig::load(&config_path).unwrap();
    assert!(full_config.indices.contains_key(&num_field));
    let mut reduced_config = full_config.clone();
    reduced_config.indices.remove(&num_field);
    reduced_config.save(&config_path).unwrap();

    // Open read-only: only `kw` is indexed.
    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &segment_path, segment_uuid, None, None)
            .expect("read-only open");
    {
        let payload_index = read_only.payload_index.borrow();
        assert!(payload_index.field_indexes.contains_key(&kw_field));
        assert!(!payload_index.field_indexes.contains_key(&num_field));
    }

    // Restore the full config and reload: the `num` index is loaded and installed.
    full_config.save(&config_path).unwrap();
    let diff = read_only
        .config_reload_diff(&MmapFs)
        .expect("config reload diff");
    assert!(!diff.is_empty());
    read_only.apply_config_reload(diff);
    {
        let payload_index = read_only.payload_index.borrow();
        assert!(payload_index.field_indexes.contains_key(&kw_field));
        assert!(payload_index.field_indexes.contains_key(&num_field));
    }
    assert_query_equivalence(&mutable, &read_only);

    // Reloading against the unchanged on-disk config is a no-op.
    let diff = read_only
        .config_reload_diff(&MmapFs)
        .expect("config reload diff");
    assert!(diff.is_empty());

    // Drop `num` again on disk and reload: the index is removed.
    reduced_config.save(&config_path).unwrap();
    let diff = read_only
        .config_reload_diff(&MmapFs)
        .expect("config reload diff");
    assert!(!diff.is_empty());
    read_only.apply_config_reload(diff);
    {
        let payload_index = read_only.payload_index.borrow();
        assert!(payload_index.field_indexes.contains_key(&kw_field));
        assert!(!payload_index.field_indexes.contains_key(&num_field));
    }
    assert_query_equivalence(&mutable, &read_only);
}

/// A follower distinguishes "segment removed by the leader" from corruption by
/// classifying errors as not-found (see `IsNotFound for OperationError`): both
/// opening a vanished segment directory and live-reloading a segment whose
/// directory vanished mid-flight must classify, so the shard-level refresh can
/// re-check the segment manifest instead of escalating.
#[test]
fn vanished_segment_classifies_not_found() {
    use crate::common::universal_io::IsNotFound as _;

    let segments_dir = Builder::new().prefix("ro_segments").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder").tempdir().unwrap();

    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let segment_path = mutable.data_path();
    let segment_uuid = mutable.uuid;
    drop(mutable);

    // Open of a directory that never existed.
    let Err(err) = ReadOnlySegment::<MmapFile>::open(
        &MmapFs,
        &segments_dir.path().join("no-such-segment"),
        segment_uuid,
        None,
        None,
    ) else {
        panic!("open of a missing directory must fail");
    };
    assert!(err.is_not_found(), "expected not-found, got: {err}");

    // Live-reload of a segment whose directory vanished after open (the leader
    // removed it): the first component reopen hits the missing file. The failed
    // preload mutates nothing — the segment keeps serving its pre-refresh state.
    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &segment_path, segment_uuid, None, None)
            .expect("read-only open");
    let points_before = read_only.available_point_count();
    fs_err::remove_dir_all(&segment_path).unwrap();
    let err = ambient::test(|| preload_then_reload(&mut read_only))
        .expect_err("live_reload over a removed directory must fail");
    assert!(err.is_not_found(), "expected not-found, got: {err}");
    assert_eq!(read_only.available_point_count(), points_before);
}

/// A load profile that never scores a vector defers its HNSW graph load: the
/// open must not touch the graph files (only the index config, whose absence
/// it tolerates). Proven by deleting the index directory before the open —
/// the open and every non-search read still work, and only a search (whose
/// first use runs the deferred graph load) surfaces the missing files.
#[test]
fn deferred_index_reads_nothing_at_open() {
    use crate::segment::data_types::load_profile::LoadProfile;
    use crate::segment::segment_constructor::get_vector_index_path;

    let segments_dir = Builder::new().prefix("ro_segments").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder").tempdir().unwrap();

    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let segment_path = mutable.data_path();
    let segment_uuid = mutable.uuid;
    drop(mutable);

    fs_err::remove_dir_all(get_vector_index_path(&segment_path, DEFAULT_VECTOR_NAME)).unwrap();

    let filter = keyword_filter("red");
    let profile = LoadProfile::for_scroll(Some(&filter), None, true);
    let read_only = ReadOnlySegment::<MmapFile>::open(
        &MmapFs,
        &segment_path,
        segment_uuid,
        None,
        Some(&profile),
    )
    .expect("open with a deferred index must not read the index files");

    // Non-search reads never touch the deferred index.
    assert!(!sorted_filtered(&read_only, &filter).is_empty());
    let _scope = ambient::test_guard();
    assert!(read_only.payload(1.into()).unwrap() != Default::default());

    // A search runs the deferred open, which now hits the deleted files.
    let query = QueryVector::Nearest(VectorInternal::Dense(vec![0.5; DIM]));
    let query_context = QueryContext::default();
    let sqc = query_context.get_segment_query_context();
    let result = read_only.search_batch(
        DEFAULT_VECTOR_NAME,
        &[&query],
        &WithPayload::default(),
        &false.into(),
        None,
        NUM_POINTS,
        None,
        &sqc,
    );
    assert!(
        result.is_err(),
        "search over a deferred index with deleted files must fail",
    );
}

/// A deferred graph loads transparently on first use: a segment opened under a
/// scroll profile (every vector cold) answers searches, filtered reads and
/// payload reads identically to an eagerly opened one.
#[test]
fn deferred_index_opens_on_first_search() {
    use crate::segment::data_types::load_profile::LoadProfile;

    let segments_dir = Builder::new().prefix("ro_segments").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder").tempdir().unwrap();

    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let segment_path = mutable.data_path();
    let segment_uuid = mutable.uuid;
    drop(mutable);

    let eager = ReadOnlySegment::<MmapFile>::open(&MmapFs, &segment_path, segment_uuid, None, None)
        .expect("eager open");

    let profile = LoadProfile::for_scroll(None, None, true);
    let deferred = ReadOnlySegment::<MmapFile>::open(
        &MmapFs,
        &segment_path,
        segment_uuid,
        None,
        Some(&profile),
    )
    .expect("open with a deferred index");

    assert_query_equivalence(&eager, &deferred);
}

/// The stop flag is observed both while staging an open and while assembling
/// it, and an unset flag changes nothing.
#[test]
fn schedule_open_and_finish_observe_the_stop_flag() {
    let segments_dir = Builder::new().prefix("ro_segments_stop").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder_stop").tempdir().unwrap();

    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let segment_path = mutable.data_path();
    let segment_uuid = mutable.uuid;

    let is_cancelled = |result: OperationResult<ReadOnlySegment<MmapFile>>| {
        matches!(result, Err(OperationError::Cancelled { .. }))
    };

    // Already cancelled: staging refuses before scheduling anything.
    let stopped = AtomicBool::new(true);
    let staged = ReadOnlySegment::<MmapFile>::schedule_open(
        &MmapFs,
        &segment_path,
        segment_uuid,
        None,
        None,
        &stopped,
    );
    assert!(matches!(staged, Err(OperationError::Cancelled { .. })));
    assert!(stopped.load(Ordering::Relaxed));

    // Cancelled between staging and assembly: `finish` refuses.
    let stopped = AtomicBool::new(false);
    let staged = ReadOnlySegment::<MmapFile>::schedule_open(
        &MmapFs,
        &segment_path,
        segment_uuid,
        None,
        None,
        &stopped,
    )
    .unwrap();
    stopped.store(true, Ordering::Relaxed);
    assert!(is_cancelled(staged.finish(&MmapFs)));
    assert!(stopped.load(Ordering::Relaxed));

    // Never cancelled: identical to the plain open, and the flag is left alone.
    let stopped = AtomicBool::new(false);
    let read_only = ReadOnlySegment::<MmapFile>::schedule_open(
        &MmapFs,
        &segment_path,
        segment_uuid,
        None,
        None,
        &stopped,
    )
    .unwrap()
    .finish(&MmapFs)
    .unwrap();
    assert!(!stopped.load(Ordering::Relaxed));
    assert_eq!(read_only.available_point_count(), NUM_POINTS);
    assert_query_equivalence(&mutable, &read_only);
}

/// Regression test: writer flushes new vectors and versions while live_preload
/// is in flight / after the LIST snapshot was taken.
/// id-tracker must never expose points whose vectors are missing or not yet loaded.
#[test]
fn test_live_reload_writer_appends_between_preload_list_and_reload() {
    let segments_dir = Builder::new().prefix("appendable_seg").tempdir().unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    for i in 0..NUM_POINTS {
        let vector: Vec<f32> = (0..DIM)
            .map(|j| ((i * 7 + j * 3) % 13) as f32 + 0.5)
            .collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        let point_id = (i as u64 + 1).into();
        let op_num = (i + 1) as u64;
        mutable.upsert_point(op_num, point_id, vectors).unwrap();
    }
    mutable.flush(true).unwrap();

    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    assert_eq!(read_only.available_point_count(), NUM_POINTS);

    // Staged preload takes the CachedFs snapshot (t0).
    let max_committed_id =
        futures::executor::block_on(read_only.live_preload(&AtomicBool::new(false)))
            .expect("live preload");

    // After the listing snapshot was taken, writer appends more points and flushes.
    // 5000 points will cross chunk 0 capacity (4096) and create chunk 1!
    for i in NUM_POINTS..5000 {
        let op_num = i as u64 + 1;
        let vector: Vec<f32> = (0..DIM)
            .map(|j| ((i * 7 + j * 3) % 13) as f32 + 0.5)
            .collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        let point_id = (i as u64 + 1).into();
        mutable.upsert_point(op_num, point_id, vectors).unwrap();
    }
    mutable.flush(true).unwrap();

    // Now reload.
    // Under the safe read sequence, this reload commits at most the state probed
    // before the LIST (i.e. NUM_POINTS), keeping all components consistent!
    read_only
        .live_reload(max_committed_id)
        .expect("first live reload");
    assert_eq!(
        read_only.available_point_count(),
        NUM_POINTS,
        "first reload must only commit up to the probed max_committed_id at preload time",
    );

    // All currently available points must have valid vectors.
    for point_id in 1..=read_only.available_point_count() as u64 {
        let vec = read_only
            .vector(DEFAULT_VECTOR_NAME, point_id.into())
            .unwrap();
        assert!(
            vec.is_some(),
            "vector for point {point_id} must be present, but got None"
        );
    }

    // A subsequent preload and reload cycle picks up the remaining points.
    preload_then_reload(&mut read_only).expect("second live reload");
    assert_eq!(read_only.available_point_count(), 5000);
    for point_id in 1..=5000_u64 {
        let vec = read_only
            .vector(DEFAULT_VECTOR_NAME, point_id.into())
            .unwrap();
        assert!(
            vec.is_some(),
            "vector for point {point_id} must be present after second reload"
        );
    }
}

/// Regression test: pure deletes without any inserts do not grow `versions.dat`,
/// but must still be detected via `mappings.dat` changes and reloaded.
#[test]
fn test_live_reload_pure_delete_without_inserts() {
    let segments_dir = Builder::new()
        .prefix("appendable_seg_del")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    for i in 0..NUM_POINTS {
        let vector: Vec<f32> = (0..DIM)
            .map(|j| ((i * 7 + j * 3) % 13) as f32 + 0.5)
            .collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        let point_id = (i as u64 + 1).into();
        let op_num = (i + 1) as u64;
        mutable.upsert_point(op_num, point_id, vectors).unwrap();
    }
    mutable.flush(true).unwrap();

    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    assert_eq!(read_only.available_point_count(), NUM_POINTS);

    // Delete a point without adding any new points (versions.dat length does not change)
    let op_num = NUM_POINTS as u64 + 1;
    mutable.delete_point(op_num, 5.into()).unwrap();
    mutable.flush(true).unwrap();

    preload_then_reload(&mut read_only).expect("live reload after delete");
    assert_eq!(
        read_only.available_point_count(),
        NUM_POINTS - 1,
        "pure delete must reduce available point count"
    );
    assert!(
        !read_only.has_point(5.into(), DeferredBehavior::VisibleOnly),
        "deleted point must no longer be present"
    );
}

/// A reload whose components fail after the id tracker read its delta must not
/// expose the new points: their vectors are not loaded yet.
#[test]
fn test_failed_live_reload_keeps_new_points_invisible() {
    let segments_dir = Builder::new()
        .prefix("appendable_seg_fail")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    let upsert = |segment: &mut Segment, i: usize| {
        let vector: Vec<f32> = (0..DIM)
            .map(|j| ((i * 7 + j * 3) % 13) as f32 + 0.5)
            .collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        segment
            .upsert_point((i + 1) as u64, (i as u64 + 1).into(), vectors)
            .unwrap();
    };

    let half = NUM_POINTS / 2;
    for i in 0..half {
        upsert(&mut mutable, i);
    }
    mutable.flush(true).unwrap();

    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    assert_eq!(read_only.available_point_count(), half);

    for i in half..NUM_POINTS {
        upsert(&mut mutable, i);
    }
    mutable.flush(true).unwrap();

    // Run the tracker half of `live_reload`, as if every component then failed
    let max_committed_id =
        futures::executor::block_on(read_only.live_preload(&AtomicBool::new(false))).unwrap();
    {
        let fs = &*read_only.reload_fs.get_mut();
        let fresh = read_only
            .id_tracker
            .borrow_mut()
            .live_reload(fs, max_committed_id)
            .unwrap();
        assert_eq!(fresh.inserted.len(), NUM_POINTS - half);
        read_only.pending_reload.borrow_mut().merge(fresh);
    }

    let query = QueryVector::Nearest(VectorInternal::Dense(
        (0..DIM).map(|j| (j % 5) as f32 + 0.25).collect(),
    ));
    let query_context = QueryContext::default();
    let sqc = query_context.get_segment_query_context();
    let search = |segment: &ReadOnlySegment<MmapFile>| {
        segment
            .search_batch(
                DEFAULT_VECTOR_NAME,
                &[&query],
                &WithPayload::default(),
                &true.into(),
                None,
                NUM_POINTS,
                None,
                &sqc,
            )
            .expect("search must not hit unloaded vectors")
    };

    assert_eq!(read_only.available_point_count(), half);
    assert_eq!(search(&read_only)[0].len(), half);
    for i in half..NUM_POINTS {
        assert!(!read_only.has_point((i as u64 + 1).into(), DeferredBehavior::VisibleOnly));
    }

    // The retry applies the retained delta and publishes the points
    preload_then_reload(&mut read_only).expect("retried live reload");
    assert!(read_only.pending_reload.borrow().is_empty());
    assert_eq!(read_only.available_point_count(), NUM_POINTS);
    assert_eq!(search(&read_only)[0].len(), NUM_POINTS);
    assert_query_equivalence(&mutable, &read_only);
}

/// Verify that `live_preload` short-circuits and skips the directory LIST
/// when the tracker files are unchanged.
#[test]
fn test_live_preload_skips_list_when_unchanged() {
    let segments_dir = Builder::new()
        .prefix("appendable_seg_skip")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    for i in 0..10 {
        let vector: Vec<f32> = (0..DIM).map(|j| (i + j) as f32).collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        mutable
            .upsert_point((i + 1) as u64, (i as u64 + 1).into(), vectors)
            .unwrap();
    }
    mutable.flush(true).unwrap();

    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");

    // First preload + reload
    preload_then_reload(&mut read_only).expect("first reload");
    assert_eq!(read_only.available_point_count(), 10);

    // After live_reload, files_info was rotated into previous_files_info, so cached_file_info is None
    let config_path = mutable.data_path().join("config.json");
    assert!(
        read_only
            .reload_fs
            .borrow()
            .cached_file_info(&config_path)
            .is_none()
    );

    // Call live_preload again without any writer changes
    let max_committed_id =
        futures::executor::block_on(read_only.live_preload(&AtomicBool::new(false)))
            .expect("second preload");
    assert_eq!(max_committed_id, Some(10));

    // Since nothing changed, live_preload skipped cache_file_info_async(), so cached_file_info remains None!
    assert!(
        read_only
            .reload_fs
            .borrow()
            .cached_file_info(&config_path)
            .is_none(),
        "live_preload must skip directory listing when tracker files are unchanged",
    );

    // live_reload is an instantaneous no-op
    read_only
        .live_reload(max_committed_id)
        .expect("second reload");
    assert_eq!(read_only.available_point_count(), 10);
}

/// Regression test: `live_preload` runs under shared access, concurrently with readers.
/// Probing the id tracker must not borrow it mutably while a reader holds it.
#[test]
fn test_live_preload_while_reader_holds_id_tracker() {
    use crate::segment::id_tracker::IdTrackerRead as _;

    let segments_dir = Builder::new()
        .prefix("appendable_seg_shared_preload")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    let upsert = |mutable: &mut Segment, ids: std::ops::Range<u64>| {
        for i in ids {
            let vector: Vec<f32> = (0..DIM).map(|j| (i as usize + j) as f32).collect();
            let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
            mutable
                .upsert_point(i + 1, (i + 1).into(), vectors)
                .unwrap();
        }
        mutable.flush(true).unwrap();
    };

    upsert(&mut mutable, 0..10);
    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    upsert(&mut mutable, 10..20);

    let max_committed_id = {
        let reader = read_only.id_tracker.borrow();
        let max_committed_id =
            futures::executor::block_on(read_only.live_preload(&AtomicBool::new(false)))
                .expect("preload alongside a reader");
        assert_eq!(
            reader.available_point_count(),
            10,
            "preload must not change what readers see"
        );
        max_committed_id
    };

    read_only.live_reload(max_committed_id).expect("reload");
    assert_eq!(read_only.available_point_count(), 20);
}

/// Regression test: the writer flushes between the open's listing snapshot and the id-tracker
/// open. The tracker must not commit points whose vectors that snapshot doesn't cover.
#[test]
#[cfg_attr(
    windows,
    ignore = "the flush replaces files the staged open holds mapped"
)]
fn test_open_writer_appends_between_list_and_tracker_open() {
    let segments_dir = Builder::new()
        .prefix("appendable_seg_open")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    let upsert = |mutable: &mut Segment, ids: std::ops::Range<usize>| {
        for i in ids {
            let vector: Vec<f32> = (0..DIM)
                .map(|j| ((i * 7 + j * 3) % 13) as f32 + 0.5)
                .collect();
            let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
            mutable
                .upsert_point(i as u64 + 1, (i as u64 + 1).into(), vectors)
                .unwrap();
        }
        mutable.flush(true).unwrap();
    };

    upsert(&mut mutable, 0..NUM_POINTS);

    // The open's listing snapshot.
    let cached_fs =
        futures::executor::block_on(build_cached_fs_async(&MmapFs, &mutable.data_path()))
            .expect("listing");

    // The writer crosses chunk 0 capacity (4096): chunk 1 is not in the snapshot.
    upsert(&mut mutable, NUM_POINTS..5000);

    let stop = AtomicBool::new(false);
    let mut read_only = ReadOnlySegment::<MmapFile>::schedule_open_with_cached_fs(
        cached_fs,
        &mutable.data_path(),
        mutable.uuid,
        None,
        None,
        &stop,
    )
    .and_then(|staged| staged.finish(&MmapFs))
    .expect("read-only open");

    assert_eq!(
        read_only.available_point_count(),
        NUM_POINTS,
        "open must commit only what the listing snapshot covers",
    );
    for point_id in 1..=read_only.available_point_count() as u64 {
        let vector = read_only
            .vector(DEFAULT_VECTOR_NAME, point_id.into())
            .unwrap();
        assert!(
            vector.is_some(),
            "vector for point {point_id} must be present"
        );
    }

    // The next refresh picks up the rest.
    preload_then_reload(&mut read_only).expect("reload");
    assert_eq!(read_only.available_point_count(), 5000);
}

/// Where a simulated partial live reload stops (as if the next component's
/// reload returned an error).
#[derive(Debug, Clone, Copy)]
enum PartialStop {
    /// Payload storage and every field index applied the delta; vectors failed.
    BeforeVectors,
    /// Payload storage applied; the payload index failed on its first field.
    BeforePayloadIndex,
    /// Payload storage and the `num` field index applied; another field failed.
    InsidePayloadIndex,
    /// Payload storage and the `kw` (map) field index applied; another field failed.
    InsidePayloadIndexKeyword,
}

fn num_range_filter(lt: i64) -> Filter {
    Filter::new_must(Condition::Field(FieldCondition::new_range(
        JsonPath::new("num"),
        Range {
            lt: Some(OrderedFloat(lt as f64)),
            gt: None,
            gte: None,
            lte: None,
        },
    )))
}

fn num_match_filter(value: i64) -> Filter {
    Filter::new_must(Condition::Field(FieldCondition::new_match(
        JsonPath::new("num"),
        Match::new_value(ValueVariants::Integer(value)),
    )))
}

/// Regression test: a live reload whose components fail
/// after *some* of them already applied the tracker delta. The retained delta
/// is replayed to every component on the retry, including those that applied
/// it the first time, so each component's reload must be idempotent. The
/// follower must end up answering exactly like the writer.
#[rstest]
#[case::before_vectors(PartialStop::BeforeVectors)]
#[case::before_payload_index(PartialStop::BeforePayloadIndex)]
#[case::inside_payload_index(PartialStop::InsidePayloadIndex)]
#[case::inside_payload_index_keyword(PartialStop::InsidePayloadIndexKeyword)]
fn test_partially_failed_live_reload_converges(#[case] stop: PartialStop) {
    let segments_dir = Builder::new()
        .prefix("appendable_seg_partial")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    let mut op_num = 0u64;
    let mut next_op = || {
        op_num += 1;
        op_num
    };
    mutable
        .create_field_index(
            next_op(),
            &JsonPath::new("kw"),
            Some(&PayloadFieldSchema::FieldType(PayloadSchemaType::Keyword)),
        )
        .unwrap();
    mutable
        .create_field_index(
            next_op(),
            &JsonPath::new("num"),
            Some(&PayloadFieldSchema::FieldType(PayloadSchemaType::Integer)),
        )
        .unwrap();

    let write = |segment: &mut Segment, op: u64, i: usize, round: usize| {
        let vector: Vec<f32> = (0..DIM)
            .map(|j| ((i * 7 + j * 3 + round * 5) % 13) as f32 + 0.5)
            .collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        let point_id = (i as u64 + 1).into();
        segment.upsert_point(op, point_id, vectors).unwrap();
        let kw = ["red", "green", "blue"][(i + round) % 3];
        let payload = serde_json::from_value(serde_json::json!({
            "kw": kw,
            "num": (i % 7 + round * 10) as i64,
        }))
        .unwrap();
        segment.set_full_payload(op, point_id, &payload).unwrap();
    };

    for i in 0..NUM_POINTS {
        let op = next_op();
        write(&mut mutable, op, i, 0);
    }
    mutable.flush(true).unwrap();

    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    assert_query_equivalence(&mutable, &read_only);

    // Writer: overwrite a third, patch a few payloads, clear some, delete some.
    for i in (0..NUM_POINTS).step_by(3) {
        let op = next_op();
        write(&mut mutable, op, i, 1);
    }
    for i in (1..NUM_POINTS).step_by(11) {
        let payload = serde_json::from_value(serde_json::json!({ "num": 999 })).unwrap();
        let op = next_op();
        mutable
            .set_payload(op, (i as u64 + 1).into(), &payload, &None)
            .unwrap();
    }
    for i in (2..NUM_POINTS).step_by(13) {
        let op = next_op();
        mutable.clear_payload(op, (i as u64 + 1).into()).unwrap();
    }
    for i in (5..NUM_POINTS).step_by(17) {
        let op = next_op();
        mutable.delete_point(op, (i as u64 + 1).into()).unwrap();
    }
    mutable.flush(true).unwrap();

    // First reload attempt: tracker delta drained, then components applied in
    // `live_reload`'s order until the simulated failure.
    let max_committed_id =
        futures::executor::block_on(read_only.live_preload(&AtomicBool::new(false))).unwrap();
    {
        let fs = &*read_only.reload_fs.get_mut();
        let fresh = read_only
            .id_tracker
            .borrow_mut()
            .live_reload(fs, max_committed_id)
            .unwrap();
        assert!(!fresh.is_empty());
        let mut pending = read_only.pending_reload.borrow_mut();
        pending.merge(fresh);
        let deleted = SortedSlice::new(&pending.deleted).unwrap();
        let inserted = SortedSlice::new(&pending.inserted).unwrap();

        read_only
            .payload_storage
            .borrow_mut()
            .live_reload(fs, &deleted, &inserted)
            .unwrap();
        match stop {
            PartialStop::BeforePayloadIndex => {}
            PartialStop::BeforeVectors => read_only
                .payload_index
                .borrow_mut()
                .live_reload(fs, &deleted, &inserted)
                .unwrap(),
            PartialStop::InsidePayloadIndex | PartialStop::InsidePayloadIndexKeyword => {
                let name = match stop {
                    PartialStop::InsidePayloadIndex => "num",
                    PartialStop::InsidePayloadIndexKeyword => "kw",
                    PartialStop::BeforeVectors | PartialStop::BeforePayloadIndex => unreachable!(),
                };
                let mut payload_index = read_only.payload_index.borrow_mut();
                let field = payload_index
                    .field_indexes
                    .get_mut(&JsonPath::new(name))
                    .expect("field is indexed");
                for index in field.iter_mut() {
                    index.live_reload(fs, &deleted, &inserted).unwrap();
                }
            }
        }
        // ... and the next component fails: `pending` is retained.
    }

    // The retry replays the retained delta to every component.
    preload_then_reload(&mut read_only).expect("retried live reload");
    assert!(read_only.pending_reload.borrow().is_empty());

    assert_query_equivalence(&mutable, &read_only);
    for lt in [5, 12, 1000] {
        let filter = num_range_filter(lt);
        assert_eq!(
            sorted_filtered(&mutable, &filter),
            sorted_filtered(&read_only, &filter),
            "filtered read mismatch for num < {lt} ({stop:?})",
        );
    }
    // Two-clause filters: the planner iterates one field's index and checks the
    // other clause per point, which reads the forward (point -> values) side.
    for kw in ["red", "green", "blue"] {
        for value in [0, 3, 13, 999] {
            let mut filter = keyword_filter(kw);
            filter
                .must
                .as_mut()
                .unwrap()
                .extend(num_match_filter(value).must.unwrap());
            assert_eq!(
                sorted_filtered(&mutable, &filter),
                sorted_filtered(&read_only, &filter),
                "filtered read mismatch for kw == {kw} && num == {value} ({stop:?})",
            );
        }
    }
    for value in [0, 3, 13, 999] {
        let filter = num_match_filter(value);
        assert_eq!(
            sorted_filtered(&mutable, &filter),
            sorted_filtered(&read_only, &filter),
            "filtered read mismatch for num == {value} ({stop:?})",
        );
    }
    for i in 0..NUM_POINTS {
        let point_id: PointIdType = (i as u64 + 1).into();
        if mutable.point_version(point_id).is_none() {
            continue;
        }
        assert_eq!(
            mutable.vector(DEFAULT_VECTOR_NAME, point_id).unwrap(),
            read_only.vector(DEFAULT_VECTOR_NAME, point_id).unwrap(),
            "vector mismatch for point {point_id} ({stop:?})",
        );
    }
}

/// Regression test: a reload retried after a part-way failure replays its
/// inserts into every appendable index (geo, full-text, bool and null indexes,
/// and the mutable-RAM sparse index whose vector count is IDF's N). The
/// follower must end up indistinguishable from a fresh open of the same files.
///
/// `applied` names the vector whose reload succeeded before the failure.
#[rstest]
#[case::no_vector_applied(None)]
#[case::dense_applied(Some(DEFAULT_VECTOR_NAME))]
#[case::sparse_applied(Some("sp"))]
fn test_retried_live_reload_matches_fresh_open(#[case] applied: Option<&'static str>) {
    use crate::sparse::common::sparse_vector::SparseVector;

    use crate::segment::data_types::modifier::Modifier;
    use crate::segment::data_types::vectors::VectorRef;
    use crate::segment::index::VectorIndexRead as _;
    use crate::segment::index::sparse_index::sparse_index_config::{SparseIndexConfig, SparseIndexType};
    use crate::segment::types::{
        GeoPoint, GeoRadius, IsEmptyCondition, IsNullCondition, PayloadField,
        SparseVectorDataConfig, SparseVectorStorageType,
    };

    const SPARSE: &str = "sp";

    let segments_dir = Builder::new()
        .prefix("appendable_seg_all_indexes")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: HashMap::from([(
                SPARSE.to_owned(),
                SparseVectorDataConfig {
                    index: SparseIndexConfig::new(None, SparseIndexType::MutableRam, None, None),
                    storage_type: SparseVectorStorageType::default(),
                    modifier: Some(Modifier::Idf),
                },
            )]),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    let mut op_num = 0u64;
    let mut next_op = || {
        op_num += 1;
        op_num
    };
    for (name, schema) in [
        ("kw", PayloadSchemaType::Keyword),
        ("num", PayloadSchemaType::Integer),
        ("loc", PayloadSchemaType::Geo),
        ("txt", PayloadSchemaType::Text),
        ("flag", PayloadSchemaType::Bool),
    ] {
        mutable
            .create_field_index(
                next_op(),
                &JsonPath::new(name),
                Some(&PayloadFieldSchema::FieldType(schema)),
            )
            .unwrap();
    }

    let write = |segment: &mut Segment, op: u64, i: usize, round: usize| {
        let dense: Vec<f32> = (0..DIM)
            .map(|j| ((i * 7 + j * 3 + round * 5) % 13) as f32 + 0.5)
            .collect();
        let sparse = SparseVector::new(
            vec![(i % 7) as u32, 8 + ((i + round) % 15) as u32],
            vec![1.0 + (i % 11) as f32, 0.5 + (round % 5) as f32],
        )
        .unwrap();
        let mut vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, dense.as_slice().into());
        vectors.insert_ref(SPARSE, VectorRef::Sparse(&sparse));
        let point_id = (i as u64 + 1).into();
        segment.upsert_point(op, point_id, vectors).unwrap();
        let kw = ["red", "green", "blue"][(i + round) % 3];
        let word = ["alpha", "beta", "gamma"][(i + round) % 3];
        let mut payload = serde_json::json!({
            "kw": kw,
            "loc": { "lat": (i % 50) as f64, "lon": ((i + round) % 50) as f64 },
            "txt": format!("{word} point {i}"),
            "flag": (i + round).is_multiple_of(2),
        });
        // Every 4th point has an explicit null `num`, every 5th none at all.
        if i.is_multiple_of(4) {
            payload["num"] = serde_json::Value::Null;
        } else if !i.is_multiple_of(5) {
            payload["num"] = serde_json::json!((i % 7 + round * 10) as i64);
        }
        let payload = serde_json::from_value(payload).unwrap();
        segment.set_full_payload(op, point_id, &payload).unwrap();
    };

    for i in 0..NUM_POINTS {
        let op = next_op();
        write(&mut mutable, op, i, 0);
    }
    mutable.flush(true).unwrap();

    let mut read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");
    // Same history, reloads never fail: the reference for the sparse index,
    // whose statistics a fresh open computes differently (see below).
    let mut clean =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");

    for i in (0..NUM_POINTS).step_by(3) {
        let op = next_op();
        write(&mut mutable, op, i, 1);
    }
    for i in (1..NUM_POINTS).step_by(11) {
        let payload = serde_json::from_value(serde_json::json!({ "flag": true })).unwrap();
        let op = next_op();
        mutable
            .set_payload(op, (i as u64 + 1).into(), &payload, &None)
            .unwrap();
    }
    for i in (2..NUM_POINTS).step_by(13) {
        let op = next_op();
        mutable.clear_payload(op, (i as u64 + 1).into()).unwrap();
    }
    for i in (5..NUM_POINTS).step_by(17) {
        let op = next_op();
        mutable.delete_point(op, (i as u64 + 1).into()).unwrap();
    }
    mutable.flush(true).unwrap();

    // First reload attempt: the tracker delta is drained, payload storage, every
    // field index and the `applied` vector apply it, and the other vector fails.
    // Naming the vector covers both reload orders whatever the map's order is.
    let max_committed_id =
        futures::executor::block_on(read_only.live_preload(&AtomicBool::new(false))).unwrap();
    {
        let fs = &*read_only.reload_fs.get_mut();
        let fresh = read_only
            .id_tracker
            .borrow_mut()
            .live_reload(fs, max_committed_id)
            .unwrap();
        assert!(!fresh.is_empty());
        let mut pending = read_only.pending_reload.borrow_mut();
        pending.merge(fresh);
        let deleted = SortedSlice::new(&pending.deleted).unwrap();
        let inserted = SortedSlice::new(&pending.inserted).unwrap();

        read_only
            .payload_storage
            .borrow_mut()
            .live_reload(fs, &deleted, &inserted)
            .unwrap();
        read_only
            .payload_index
            .borrow_mut()
            .live_reload(fs, &deleted, &inserted)
            .unwrap();
        if let Some(name) = applied {
            read_only.vector_data[name]
                .live_reload(fs, &deleted, &inserted)
                .unwrap();
        }
        // ... and the other vector fails: `pending` is retained.
    }
    preload_then_reload(&mut read_only).expect("retried live reload");
    // One more reload on each follower, so both have settled.
    preload_then_reload(&mut read_only).expect("follow-up live reload");
    preload_then_reload(&mut clean).expect("clean live reload");
    preload_then_reload(&mut clean).expect("clean follow-up live reload");

    let fresh =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("fresh read-only open");

    let field = |key: &str| PayloadField {
        key: JsonPath::new(key),
    };
    let filters: Vec<(&str, Filter)> = vec![
        ("kw==red", keyword_filter("red")),
        ("num<5", num_range_filter(5)),
        ("num==13", num_match_filter(13)),
        (
            "geo",
            Filter::new_must(Condition::Field(FieldCondition::new_geo_radius(
                JsonPath::new("loc"),
                GeoRadius {
                    center: GeoPoint::new(10.0, 10.0).unwrap(),
                    radius: OrderedFloat(1_500_000.0),
                },
            ))),
        ),
        (
            "txt~alpha",
            Filter::new_must(Condition::Field(FieldCondition::new_match(
                JsonPath::new("txt"),
                Match::new_text("alpha"),
            ))),
        ),
        (
            "flag==true",
            Filter::new_must(Condition::Field(FieldCondition::new_match(
                JsonPath::new("flag"),
                Match::new_value(ValueVariants::Bool(true)),
            ))),
        ),
        (
            "is_empty(num)",
            Filter::new_must(Condition::IsEmpty(IsEmptyCondition {
                is_empty: field("num"),
            })),
        ),
        (
            "is_null(num)",
            Filter::new_must(Condition::IsNull(IsNullCondition {
                is_null: field("num"),
            })),
        ),
        (
            "is_empty(kw)",
            Filter::new_must(Condition::IsEmpty(IsEmptyCondition {
                is_empty: field("kw"),
            })),
        ),
    ];
    for (name, filter) in &filters {
        assert_eq!(
            sorted_filtered(&fresh, filter),
            sorted_filtered(&read_only, filter),
            "filtered read mismatch for {name} (applied before the failure: {applied:?})",
        );
        // Two-clause variant: one clause drives, the other is checked per point.
        let mut combined = keyword_filter("green");
        combined
            .must
            .as_mut()
            .unwrap()
            .extend(filter.must.clone().unwrap());
        assert_eq!(
            sorted_filtered(&fresh, &combined),
            sorted_filtered(&read_only, &combined),
            "filtered read mismatch for kw==green && {name} (applied before the failure: {applied:?})",
        );
    }

    let sparse_count = |segment: &ReadOnlySegment<MmapFile>| {
        segment.vector_data[SPARSE]
            .vector_index
            .borrow()
            .indexed_vector_count()
    };
    // The follower's mutable-RAM sparse index never drops superseded or deleted
    // offsets, so its count (IDF's N) is not a fresh open's: compare against the
    // follower whose reloads never failed.
    assert_eq!(
        sparse_count(&clean),
        sparse_count(&read_only),
        "sparse indexed vector count (IDF's N) drifted (applied before the failure: {applied:?})",
    );
    let query = QueryVector::Nearest(VectorInternal::Sparse(
        SparseVector::new(vec![2, 10], vec![1.0, 0.5]).unwrap(),
    ));
    let query_context = QueryContext::default();
    let sqc = query_context.get_segment_query_context();
    let search = |segment: &ReadOnlySegment<MmapFile>| {
        segment
            .search_batch(
                SPARSE,
                &[&query],
                &WithPayload::default(),
                &false.into(),
                None,
                NUM_POINTS,
                None,
                &sqc,
            )
            .unwrap()
    };
    assert_eq!(
        search(&clean),
        search(&read_only),
        "sparse IDF search mismatch"
    );
}

/// Points deleted by a tombstone-only writer keep their values in the appendable
/// indexes. A read-only segment drops them from its indexes both when it opens and when
/// it reloads, so facets count only live points, and a fresh open agrees with a reload.
#[test]
fn appendable_indexes_drop_tombstoned_points_at_open_and_reload() {
    use crate::segment::data_types::facets::{FacetParams, FacetValue};

    let segments_dir = Builder::new()
        .prefix("appendable_tombstones")
        .tempdir()
        .unwrap();
    let _scope = ambient::test_guard();

    let (mut mutable, _) = build_segment(
        segments_dir.path(),
        &SegmentConfig {
            vector_data: HashMap::from([(
                DEFAULT_VECTOR_NAME.to_owned(),
                VectorDataConfig {
                    size: DIM,
                    distance: Distance::Cosine,
                    storage_type: VectorStorageType::ChunkedMmap,
                    index: Indexes::Plain {},
                    quantization_config: None,
                    multivector_config: None,
                    datatype: None,
                },
            )]),
            sparse_vector_data: Default::default(),
            payload_storage_type: Default::default(),
            id_tracker_memory: None,
        },
        None,
        true,
    )
    .unwrap();
    mutable.append_only_mutations = true;

    let mut op_num = 0u64;
    let mut next_op = || {
        op_num += 1;
        op_num
    };
    for (field, schema) in [
        ("kw", PayloadSchemaType::Keyword),
        ("num", PayloadSchemaType::Integer),
    ] {
        mutable
            .create_field_index(
                next_op(),
                &JsonPath::new(field),
                Some(&PayloadFieldSchema::FieldType(schema)),
            )
            .unwrap();
    }

    let write = |segment: &mut Segment, op: u64, i: usize, round: usize| {
        let vector: Vec<f32> = (0..DIM).map(|j| ((i + j) % 13) as f32 + 0.5).collect();
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        let point_id = (i as u64 + 1).into();
        segment.upsert_point(op, point_id, vectors).unwrap();
        let kw = ["red", "green", "blue"][(i + round) % 3];
        let payload = serde_json::from_value(serde_json::json!({
            "kw": kw,
            "num": (i % 7 + round * 10) as i64,
        }))
        .unwrap();
        segment.set_full_payload(op, point_id, &payload).unwrap();
    };
    for i in 0..NUM_POINTS {
        let op = next_op();
        write(&mut mutable, op, i, 0);
    }
    mutable.flush(true).unwrap();

    let mut reloaded =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .unwrap();

    // Overwrites move points to new offsets, deletes only tombstone them
    for i in (0..NUM_POINTS).step_by(3) {
        let op = next_op();
        write(&mut mutable, op, i, 1);
    }
    for i in (5..NUM_POINTS).step_by(7) {
        let op = next_op();
        mutable.delete_point(op, (i as u64 + 1).into()).unwrap();
    }
    mutable.flush(true).unwrap();
    preload_then_reload(&mut reloaded).unwrap();

    let fresh =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .unwrap();

    let stopped = AtomicBool::new(false);
    let request = FacetParams {
        key: JsonPath::new("kw"),
        limit: 10,
        filter: None,
        exact: true,
    };
    let expected: HashMap<FacetValue, usize> = ["red", "green", "blue"]
        .into_iter()
        .map(|value| {
            let count = sorted_filtered(&mutable, &keyword_filter(value)).len();
            (FacetValue::Keyword(value.to_owned()), count)
        })
        // Facets leave out values without points
        .filter(|&(_, count)| count > 0)
        .collect();
    assert_eq!(reloaded.facet(&request, &stopped).unwrap(), expected);
    assert_eq!(fresh.facet(&request, &stopped).unwrap(), expected);

    let request = FacetParams {
        key: JsonPath::new("num"),
        limit: 100,
        filter: None,
        exact: true,
    };
    assert_eq!(
        fresh.facet(&request, &stopped).unwrap(),
        reloaded.facet(&request, &stopped).unwrap(),
    );
}

/// Text statistics as a scored query sees them on one segment: `N`, the `df` of
/// each term, and the average document length.
fn text_stats(segment: &impl ReadSegmentEntry, terms: &[&str]) -> TextStats {
    let field = JsonPath::new("text");
    let mut query_context = QueryContext::default();
    query_context.init_text_stats(&field, None, terms.iter().map(|term| term.to_string()));
    segment.fill_query_context(&mut query_context).unwrap();
    let segment_context = query_context.get_segment_query_context();
    let text = segment_context.get_text_context(&field).unwrap();
    let df = terms
        .iter()
        .map(|term| text.document_frequency(term))
        .collect();
    (text.document_count(), df, text.avg_doc_len())
}

fn scoring_text_index(memory: Memory) -> PayloadFieldSchema {
    PayloadFieldSchema::FieldParams(PayloadSchemaParams::Text(TextIndexParams {
        phrase_matching: Some(true),
        memory: Some(memory),
        scoring: Some(TextScoringParams::default()),
        ..TextIndexParams::default()
    }))
}

const TEXT_DOCUMENTS: [&str; 6] = [
    "quick brown fox",
    "lazy dog sleeps",
    "quick fox jumps over the dog",
    "brown bear",
    "fox",
    "the quick dog",
];
const TEXT_TERMS: [&str; 3] = ["quick", "fox", "dog"];

/// `N`, the `df` of each of [`TEXT_TERMS`], and the average document length.
type TextStats = (usize, Vec<usize>, Option<f32>);

/// Text statistics of four views of the same files, after the writer deleted
/// points.
#[derive(Debug)]
struct TextStatsViews {
    /// The writer that made the deletions.
    writer: TextStats,
    /// The writer, loaded again from its files.
    writer_reopened: TextStats,
    /// A reader opened before the deletions, then live-reloaded.
    reader_reloaded: TextStats,
    /// A reader opened after the deletions.
    reader_opened: TextStats,
}

fn text_stats_views(
    writer: &Segment,
    mut reader_before: ReadOnlySegment<MmapFile>,
) -> TextStatsViews {
    preload_then_reload(&mut reader_before).expect("live reload");
    let reader_after =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &writer.data_path(), writer.uuid, None, None)
            .expect("read-only open");
    let reopened = load_segment(
        &writer.data_path(),
        writer.uuid,
        None,
        &AtomicBool::new(false),
        false,
    )
    .expect("reopen");

    TextStatsViews {
        writer: text_stats(writer, &TEXT_TERMS),
        writer_reopened: text_stats(&reopened, &TEXT_TERMS),
        reader_reloaded: text_stats(&reader_before, &TEXT_TERMS),
        reader_opened: text_stats(&reader_after, &TEXT_TERMS),
    }
}

/// The mutable text index of an appendable segment, after a delete and an
/// update (clone and tombstone). Its statistics follow the deletes that reach
/// the index: a reader drops deleted points at open and on reload alike. The
/// append-only writer never sees its tombstones, so it is only compared with
/// itself reopened.
#[test]
fn text_stats_ignore_load_history_appendable() {
    let segments_dir = Builder::new().prefix("text_stats_ao").tempdir().unwrap();
    let _scope = ambient::test_guard();

    let config = SegmentConfig {
        vector_data: Default::default(),
        sparse_vector_data: Default::default(),
        payload_storage_type: Default::default(),
        id_tracker_memory: None,
    };
    let (mut writer, _) = build_segment(segments_dir.path(), &config, None, true).unwrap();
    writer.append_only_mutations = true;

    let mut op_num = 1;
    writer
        .create_field_index(
            op_num,
            &JsonPath::new("text"),
            Some(&scoring_text_index(Memory::Pinned)),
        )
        .unwrap();
    for (i, document) in TEXT_DOCUMENTS.iter().enumerate() {
        op_num += 1;
        let point_id = (i as u64 + 1).into();
        writer
            .upsert_point(op_num, point_id, NamedVectors::default())
            .unwrap();
        writer
            .set_full_payload(op_num, point_id, &payload_json! { "text": *document })
            .unwrap();
    }
    writer.flush(true).unwrap();

    let reader_before =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &writer.data_path(), writer.uuid, None, None)
            .expect("read-only open");

    writer.delete_point(op_num + 1, 1.into()).unwrap();
    writer
        .set_full_payload(op_num + 2, 3.into(), &payload_json! { "text": "slow dog" })
        .unwrap();
    writer.flush(true).unwrap();

    let views = text_stats_views(&writer, reader_before);
    assert_eq!(views.writer, views.writer_reopened, "{views:?}");
    assert_eq!(views.reader_reloaded, views.reader_opened, "{views:?}");
    // Six documents, less the deleted point 1 and the old copy of point 3.
    assert_eq!(views.reader_opened.0, TEXT_DOCUMENTS.len() - 1, "{views:?}");
}

/// The immutable (`Pinned`) and on-disk (`Cold`) text indexes of an optimized
/// segment, after a delete: every view keeps the build-time statistics.
#[rstest]
fn text_stats_ignore_load_history_optimized(
    #[values(Memory::Pinned, Memory::Cold)] memory: Memory,
) {
    let segments_dir = Builder::new().prefix("text_stats_opt").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("text_stats_tmp").tempdir().unwrap();
    let source_dir = Builder::new().prefix("text_stats_src").tempdir().unwrap();
    let _scope = ambient::test_guard();

    let vector_config = |storage_type| VectorDataConfig {
        size: DIM,
        distance: Distance::Cosine,
        storage_type,
        index: Indexes::Plain {},
        quantization_config: None,
        multivector_config: None,
        datatype: None,
    };
    let segment_config = |storage_type| SegmentConfig {
        vector_data: HashMap::from([(DEFAULT_VECTOR_NAME.to_owned(), vector_config(storage_type))]),
        sparse_vector_data: Default::default(),
        payload_storage_type: Default::default(),
        id_tracker_memory: None,
    };

    let (mut source, _) = build_segment(
        source_dir.path(),
        &segment_config(VectorStorageType::default()),
        None,
        true,
    )
    .unwrap();
    for (i, document) in TEXT_DOCUMENTS.iter().enumerate() {
        let op_num = i as u64 + 1;
        let point_id = (i as u64 + 1).into();
        let vector = vec![i as f32 + 1.0; DIM];
        let vectors = NamedVectors::from_ref(DEFAULT_VECTOR_NAME, vector.as_slice().into());
        source.upsert_point(op_num, point_id, vectors).unwrap();
        source
            .set_full_payload(op_num, point_id, &payload_json! { "text": *document })
            .unwrap();
    }
    source
        .create_field_index(
            TEXT_DOCUMENTS.len() as u64 + 1,
            &JsonPath::new("text"),
            Some(&scoring_text_index(memory)),
        )
        .unwrap();

    let target_config = segment_config(VectorStorageType::Mmap);
    assert!(!target_config.is_appendable());
    let mut builder = SegmentBuilder::new(
        temp_dir.path(),
        &target_config,
        &HnswGlobalConfig::default(),
        FeatureFlags::default(),
    )
    .unwrap();
    builder.update(&[&source], &AtomicBool::new(false)).unwrap();
    let mut writer = builder.build_for_test(segments_dir.path());
    writer.append_only_mutations = true;

    let reader_before =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &writer.data_path(), writer.uuid, None, None)
            .expect("read-only open");

    writer
        .delete_point(TEXT_DOCUMENTS.len() as u64 + 2, 1.into())
        .unwrap();
    writer.flush(true).unwrap();

    let views = text_stats_views(&writer, reader_before);
    let TextStatsViews {
        writer,
        writer_reopened,
        reader_reloaded,
        reader_opened,
    } = &views;
    assert!(
        [writer_reopened, reader_reloaded, reader_opened]
            .iter()
            .all(|stats| *stats == writer),
        "{views:?}",
    );
    // Deletes don't change the statistics of an immutable segment.
    assert_eq!(writer.0, TEXT_DOCUMENTS.len(), "{views:?}");
}

/// The batched lookups give what the per-id ones give, over the read-only
/// opener's id tracker, for held and unknown points.
#[test]
fn read_only_segment_batched_lookups_match_single() {
    let segments_dir = Builder::new().prefix("ro_segments").tempdir().unwrap();
    let temp_dir = Builder::new().prefix("ro_builder").tempdir().unwrap();
    let mutable = build_immutable_segment(segments_dir.path(), temp_dir.path(), false);
    let read_only =
        ReadOnlySegment::<MmapFile>::open(&MmapFs, &mutable.data_path(), mutable.uuid, None, None)
            .expect("read-only open");

    let ids: Vec<PointIdType> = [0, 1, 50, 99, 100, 12345].map(PointIdType::from).to_vec();
    for deferred_behavior in [
        DeferredBehavior::VisibleOnly,
        DeferredBehavior::WithDeferred,
    ] {
        let expected: AHashSet<_> = ids
            .iter()
            .copied()
            .filter(|&id| read_only.has_point(id, deferred_behavior))
            .collect();
        assert_eq!(
            read_only.has_points(&ids, deferred_behavior).unwrap(),
            expected
        );
    }
    let expected: AHashMap<_, _> = ids
        .iter()
        .filter_map(|&id| Some((id, read_only.point_version(id)?)))
        .collect();
    assert_eq!(expected.len(), 4, "held points have versions");
    assert_eq!(read_only.point_versions(&ids).unwrap(), expected);
}
