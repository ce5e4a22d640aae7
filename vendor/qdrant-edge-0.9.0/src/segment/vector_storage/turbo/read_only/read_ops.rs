use std::borrow::Cow;

use crate::common::bitvec::BitSlice;
use crate::common::generic_consts::AccessPattern;
use crate::common::types::{PointOffsetType, ScoreType};
use crate::common::universal_io::{UniversalRead, UserData};
use crate::quantization::turboquant::EncodedQueryTQ;
use crate::quantization::{EncodedStorage, EncodedStorageWrite};

use super::super::shared;
use super::ReadOnlyChunkedTurboVectorStorage;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::data_types::named_vectors::CowVector;
use crate::segment::data_types::vectors::DenseVector;
use crate::segment::types::{Distance, VectorStorageDatatype};
use crate::segment::vector_storage::vector_storage_base::VectorStorageRead;
use crate::segment::vector_storage::{DenseTQVectorStorageRead, TurboScoring};

impl<S: UniversalRead> VectorStorageRead for ReadOnlyChunkedTurboVectorStorage<S> {
    fn size_of_available_vectors_in_bytes(&self) -> usize {
        self.available_vector_count() * self.quantized_vector_size()
    }

    fn distance(&self) -> Distance {
        self.distance
    }

    fn datatype(&self) -> VectorStorageDatatype {
        shared::storage_datatype(&self.quantizer)
    }

    fn is_cold(&self) -> bool {
        self.storage.is_cold()
    }

    fn total_vector_count(&self) -> usize {
        self.storage.vectors_count()
    }

    fn get_vector<P: AccessPattern>(&self, key: PointOffsetType) -> CowVector<'_> {
        shared::dequantize_vector(
            &self.quantizer,
            self.dim,
            &self.storage.get_vector_data(key),
        )
    }

    fn read_vectors<P: AccessPattern, U: Copy + UserData>(
        &self,
        keys: impl IntoIterator<Item = (U, PointOffsetType)>,
        mut callback: impl FnMut(U, PointOffsetType, CowVector<'_>),
    ) -> OperationResult<()> {
        let (user_data, point_offsets): (Vec<U>, Vec<PointOffsetType>) = keys.into_iter().unzip();

        self.storage.for_each_batch(&point_offsets, |idx, bytes| {
            let vector = shared::dequantize_vector(&self.quantizer, self.dim, &bytes);
            callback(user_data[idx], point_offsets[idx], vector);
        })?;
        Ok(())
    }

    fn get_vector_opt<P: AccessPattern>(&self, key: PointOffsetType) -> Option<CowVector<'_>> {
        let bytes = self.storage.get_vector_data_opt(key)?;
        Some(shared::dequantize_vector(&self.quantizer, self.dim, &bytes))
    }

    fn is_deleted_vector(&self, key: PointOffsetType) -> bool {
        self.deleted.get(key)
    }

    fn deleted_vector_count(&self) -> usize {
        self.deleted.count()
    }

    fn deleted_vector_bitslice(&self) -> &BitSlice {
        self.deleted.as_bitslice()
    }

    fn read_vector_bytes<P: AccessPattern, U: Copy + UserData>(
        &self,
        keys: impl IntoIterator<Item = (U, PointOffsetType)>,
        callback: impl FnMut(U, PointOffsetType, Vec<u8>),
    ) -> OperationResult<()> {
        self.read_dense_tq_bytes::<P, U>(keys, callback)
    }
}

impl<S: UniversalRead> DenseTQVectorStorageRead for ReadOnlyChunkedTurboVectorStorage<S> {
    fn vector_dim(&self) -> usize {
        self.dim
    }

    fn quantized_vector_size(&self) -> usize {
        self.quantizer.quantized_size()
    }

    fn get_dense_tq<P: AccessPattern>(&self, key: PointOffsetType) -> Cow<'_, [u8]> {
        self.storage.get_vector_data(key)
    }

    fn for_each_in_dense_tq_batch<F: FnMut(usize, &[u8])>(
        &self,
        keys: &[PointOffsetType],
        mut f: F,
    ) -> OperationResult<()> {
        self.storage
            .for_each_batch(keys, |idx, bytes| f(idx, &bytes))?;
        Ok(())
    }

    fn read_dense_tq_bytes<P: AccessPattern, U: Copy + UserData>(
        &self,
        keys: impl IntoIterator<Item = (U, PointOffsetType)>,
        mut callback: impl FnMut(U, PointOffsetType, Vec<u8>),
    ) -> OperationResult<()> {
        let (user_data, point_offsets): (Vec<U>, Vec<PointOffsetType>) = keys.into_iter().unzip();

        self.storage.for_each_batch(&point_offsets, |idx, bytes| {
            callback(user_data[idx], point_offsets[idx], bytes.to_vec());
        })?;
        Ok(())
    }

    fn get_dense_for_requantization(
        &self,
        key: PointOffsetType,
        keep_rotated: bool,
    ) -> DenseVector {
        shared::dequantize_for_requantization(
            &self.quantizer,
            self.dim,
            &self.storage.get_vector_data(key),
            keep_rotated,
        )
    }
}

impl<S: UniversalRead> TurboScoring for ReadOnlyChunkedTurboVectorStorage<S> {
    fn preprocess_query(&self, query: DenseVector) -> EncodedQueryTQ {
        shared::preprocess_query(&self.quantizer, self.distance, query)
    }

    fn score_query_bytes(&self, query: &EncodedQueryTQ, bytes: &[u8]) -> ScoreType {
        shared::score_query_bytes(&self.quantizer, self.distance, query, bytes)
    }

    fn score_query_batch(
        &self,
        query: &EncodedQueryTQ,
        ids: &[PointOffsetType],
        scores: &mut [ScoreType],
    ) -> OperationResult<()> {
        shared::score_query_batch(
            &self.storage,
            &self.quantizer,
            self.distance,
            query,
            ids,
            scores,
        )
    }

    fn score_internal_encoded(
        &self,
        point_a: PointOffsetType,
        point_b: PointOffsetType,
    ) -> ScoreType {
        let v1 = self.storage.get_vector_data(point_a);
        let v2 = self.storage.get_vector_data(point_b);
        shared::score_symmetric_bytes(&self.quantizer, self.distance, &v1, &v2)
    }

    fn get_quantized_vector(&self, key: PointOffsetType) -> Cow<'_, [u8]> {
        self.storage.get_vector_data(key)
    }
}
