use std::path::Path;

use crate::common::types::PointOffsetType;
use crate::common::universal_io::{UniversalAppend, UniversalReadFs, UniversalWriteFs};
use crate::quantization::turboquant::TQBits;
use crate::quantization::turboquant::quantization::TurboQuantizer;

use super::super::shared::{self, DELETED_DIR_PATH, VECTORS_DIR_PATH};
use super::appendable_mmap_multi_turbo_vector_storage::OFFSETS_DIR_PATH;
use crate::segment::common::flags::update_only_stored_flags::UpdateOnlyStoredFlags;
use crate::segment::common::operation_error::{OperationError, OperationResult};
use crate::segment::data_types::vectors::{TypedMultiDenseVectorRef, VectorElementType, VectorRef};
use crate::segment::types::Distance;
use crate::segment::vector_storage::VectorOffsetType;
use crate::segment::vector_storage::chunked_vectors::update_only::UpdateOnlyChunkedVectors;
use crate::segment::vector_storage::multi_dense::appendable_mmap_multi_dense_vector_storage::MultivectorMmapOffset;
use crate::segment::vector_storage::update_only::VectorToStore;

/// Writes what [`AppendableMmapMultiTurboVectorStorage`] persists: the encoded
/// inner vectors flat, the per-point row ranges into them, and the deleted
/// flags.
///
/// The multivector counterpart of [`UpdateOnlyTurboVectorStorage`][1]: it places
/// runs of rows the way [`UpdateOnlyMultiDenseVectorStorage`][2] does, and
/// encodes them the way the turbo writer does.
///
/// [`AppendableMmapMultiTurboVectorStorage`]: super::appendable_mmap_multi_turbo_vector_storage::AppendableMmapMultiTurboVectorStorage
/// [1]: crate::vector_storage::turbo::update_only::UpdateOnlyTurboVectorStorage
/// [2]: crate::vector_storage::multi_dense::update_only::UpdateOnlyMultiDenseVectorStorage
pub struct UpdateOnlyMultiTurboVectorStorage {
    vectors: UpdateOnlyChunkedVectors<u8>,
    offsets: UpdateOnlyChunkedVectors<MultivectorMmapOffset>,
    deleted: UpdateOnlyStoredFlags,
    quantizer: TurboQuantizer,
    quantization_buffer: Vec<f64>,
    dim: usize,
    /// One past the last row in use, carried across the batch.
    next_row: usize,
}

impl UpdateOnlyMultiTurboVectorStorage {
    /// Open the storage at `path` for appending, creating it if it is not there
    /// yet.
    pub fn open<Fs: UniversalWriteFs>(
        fs: &Fs,
        path: &Path,
        dim: usize,
        distance: Distance,
        bits: TQBits,
    ) -> OperationResult<Self> {
        let quantizer = shared::build_quantizer(dim, distance, bits);
        let quantization_buffer = vec![0.0; quantizer.get_padded_dim()];
        let deleted = UpdateOnlyStoredFlags::open(fs, &path.join(DELETED_DIR_PATH))?;
        let vectors = UpdateOnlyChunkedVectors::open(
            fs,
            &path.join(VECTORS_DIR_PATH),
            quantizer.quantized_size(),
        )?;
        let offsets = UpdateOnlyChunkedVectors::open(fs, &path.join(OFFSETS_DIR_PATH), 1)?;
        let next_row = vectors.stored_len(fs)?;

        Ok(Self {
            vectors,
            offsets,
            deleted,
            quantizer,
            quantization_buffer,
            dim,
            next_row,
        })
    }

    /// Append one encoded multi-vector per point of a batch, starting at
    /// `start_slot`, and persist them.
    pub fn append_many<'a, Fs: UniversalReadFs<File: UniversalAppend> + UniversalWriteFs>(
        &mut self,
        fs: &Fs,
        start_slot: PointOffsetType,
        vectors: impl IntoIterator<Item = VectorToStore<'a>>,
    ) -> OperationResult<()> {
        let encoded_size = self.quantizer.quantized_size();
        let batch_start = self.next_row;
        let mut rows: Vec<u8> = Vec::new();
        let mut offsets = Vec::new();
        let mut missing = Vec::new();

        for (offset, vector) in vectors.into_iter().enumerate() {
            let encoded = match vector {
                VectorToStore::Decoded(vector) => self.encode_decoded(vector)?,
                VectorToStore::Raw(bytes) => self.encode_raw(bytes)?,
                VectorToStore::Missing => {
                    missing.push(start_slot + offset as PointOffsetType);
                    Vec::new()
                }
            };

            let count = encoded.len() / encoded_size;
            rows.extend_from_slice(&encoded);
            offsets.push(MultivectorMmapOffset {
                offset: self.next_row as PointOffsetType,
                count: count as PointOffsetType,
                capacity: count as PointOffsetType,
            });
            self.next_row += count;
        }

        self.vectors.append_many(
            fs,
            batch_start as VectorOffsetType,
            rows.chunks_exact(encoded_size),
        )?;

        self.offsets.append_many(
            fs,
            start_slot as VectorOffsetType,
            offsets.iter().map(std::slice::from_ref),
        )?;

        for slot in missing {
            self.deleted.set(slot, true);
        }

        self.deleted.flush(fs)
    }

    /// Encode every inner vector, back to back.
    fn encode_decoded(&mut self, vector: VectorRef<'_>) -> OperationResult<Vec<u8>> {
        let multi = TypedMultiDenseVectorRef::<VectorElementType>::try_from(vector)?;
        if multi.dim != self.dim {
            return Err(OperationError::WrongVectorDimension {
                expected_dim: self.dim,
                received_dim: multi.dim,
            });
        }

        let mut encoded =
            Vec::with_capacity(multi.vectors_count() * self.quantizer.quantized_size());
        for inner in multi.flattened_vectors.chunks_exact(multi.dim) {
            encoded.extend_from_slice(
                &self
                    .quantizer
                    .quantize(inner, &mut self.quantization_buffer),
            );
        }
        Ok(encoded)
    }

    /// Storage-native bytes are the encoded inner vectors, already packed.
    fn encode_raw(&self, bytes: &[u8]) -> OperationResult<Vec<u8>> {
        let encoded_size = self.quantizer.quantized_size();
        if !bytes.len().is_multiple_of(encoded_size) {
            return Err(OperationError::malformed_vector_blob(format!(
                "Malformed multi TQ blob of {} bytes, not a whole number of {encoded_size}-byte \
                 encoded inner vectors",
                bytes.len(),
            )));
        }
        Ok(bytes.to_vec())
    }
}
