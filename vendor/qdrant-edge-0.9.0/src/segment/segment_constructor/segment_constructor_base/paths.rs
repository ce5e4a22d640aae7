use std::path::{Component, Path, PathBuf};

use crate::segment::common::operation_error::{OperationError, OperationResult};
use crate::segment::types::VectorName;

pub const PAYLOAD_INDEX_PATH: &str = "payload_index";
pub const VECTOR_STORAGE_PATH: &str = "vector_storage";
pub const VECTOR_INDEX_PATH: &str = "vector_index";

pub fn get_vector_name_with_prefix(prefix: &str, vector_name: &VectorName) -> String {
    if !vector_name.is_empty() {
        format!("{prefix}-{vector_name}")
    } else {
        prefix.to_owned()
    }
}

/// Check that `vector_name` stays inside the segment directory when used in
/// [`get_vector_storage_path`] and [`get_vector_index_path`].
///
/// Vector names may come from untrusted snapshots (`segment.json`, WAL, pending changes).
/// Only parent, root and prefix components are rejected, so names that were accepted
/// before `validate_vector_name` existed (e.g. `a/b`) still load.
pub fn check_vector_name_path(vector_name: &VectorName) -> OperationResult<()> {
    let escapes = Path::new(vector_name)
        .components()
        .any(|component| match component {
            Component::Normal(_) | Component::CurDir => false,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => true,
        });
    if escapes {
        return Err(OperationError::validation_error(format!(
            "invalid vector name {vector_name:?}: it must not escape the segment directory"
        )));
    }
    Ok(())
}

pub fn get_vector_storage_path(segment_path: &Path, vector_name: &VectorName) -> PathBuf {
    segment_path.join(get_vector_name_with_prefix(
        VECTOR_STORAGE_PATH,
        vector_name,
    ))
}

pub fn get_vector_index_path(segment_path: &Path, vector_name: &VectorName) -> PathBuf {
    segment_path.join(get_vector_name_with_prefix(VECTOR_INDEX_PATH, vector_name))
}

pub fn get_payload_index_path(segment_path: &Path) -> PathBuf {
    segment_path.join(PAYLOAD_INDEX_PATH)
}
