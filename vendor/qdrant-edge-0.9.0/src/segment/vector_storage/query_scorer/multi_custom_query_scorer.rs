use std::marker::PhantomData;

use crate::common::ambient::hw::HwScale;
use crate::common::typelevel::False;
use crate::common::types::{PointOffsetType, ScoreType};

use super::score_multi;
use crate::segment::common::operation_error::OperationResult;
use crate::segment::data_types::named_vectors::CowMultiVector;
use crate::segment::data_types::primitive::PrimitiveVectorElement;
use crate::segment::data_types::vectors::{
    DenseVector, MultiDenseVectorInternal, TypedMultiDenseVector, TypedMultiDenseVectorRef,
};
use crate::segment::spaces::metric::Metric;
use crate::segment::vector_storage::MultiVectorStorageRead;
use crate::segment::vector_storage::query::{Query, TransformInto};
use crate::segment::vector_storage::query_scorer::QueryScorer;

pub struct MultiCustomQueryScorer<
    'a,
    TElement: PrimitiveVectorElement,
    TMetric: Metric<TElement>,
    TVectorStorage: MultiVectorStorageRead<TElement>,
    TQuery: Query<TypedMultiDenseVector<TElement>>,
> {
    hw: HwScale,
    vector_storage: &'a TVectorStorage,
    query: TQuery,
    metric: PhantomData<TMetric>,
    element: PhantomData<TElement>,
}

impl<
    'a,
    TElement: PrimitiveVectorElement,
    TMetric: Metric<TElement>,
    TVectorStorage: MultiVectorStorageRead<TElement>,
    TQuery: Query<TypedMultiDenseVector<TElement>>,
> MultiCustomQueryScorer<'a, TElement, TMetric, TVectorStorage, TQuery>
{
    pub fn new<TInputQuery>(query: TInputQuery, vector_storage: &'a TVectorStorage) -> Self
    where
        TInputQuery: Query<MultiDenseVectorInternal>
            + TransformInto<TQuery, MultiDenseVectorInternal, TypedMultiDenseVector<TElement>>,
    {
        let query = query
            .transform(&|vector| {
                let mut preprocessed = DenseVector::new();
                for slice in vector.multi_vectors() {
                    preprocessed.extend_from_slice(&TMetric::preprocess(slice.to_vec()));
                }
                let preprocessed = MultiDenseVectorInternal::new(preprocessed, vector.dim);
                let converted =
                    TElement::from_float_multivector(CowMultiVector::Owned(preprocessed))
                        .to_owned();
                Ok(converted)
            })
            .unwrap();

        let dim = vector_storage.vector_dim();

        Self {
            hw: HwScale {
                cpu: dim * size_of::<TElement>(),
                vector_io_read: if vector_storage.is_cold() {
                    dim * size_of::<TElement>()
                } else {
                    0
                },
            },
            query,
            vector_storage,
            metric: PhantomData,
            element: PhantomData,
        }
    }
}

impl<
    TElement: PrimitiveVectorElement,
    TMetric: Metric<TElement>,
    TVectorStorage: MultiVectorStorageRead<TElement>,
    TQuery: Query<TypedMultiDenseVector<TElement>>,
> MultiCustomQueryScorer<'_, TElement, TMetric, TVectorStorage, TQuery>
{
    #[inline]
    fn score_ref(&self, against: TypedMultiDenseVectorRef<TElement>) -> ScoreType {
        let against_vector_count = against.vectors_count();

        self.query.score_by(|example| {
            self.hw.cpu(example.vectors_count() * against_vector_count);

            score_multi::<TElement, TMetric>(
                self.vector_storage.multi_vector_config(),
                TypedMultiDenseVectorRef::from(example),
                against,
            )
        })
    }
}

impl<
    TElement: PrimitiveVectorElement,
    TMetric: Metric<TElement>,
    TVectorStorage: MultiVectorStorageRead<TElement>,
    TQuery: Query<TypedMultiDenseVector<TElement>>,
> QueryScorer for MultiCustomQueryScorer<'_, TElement, TMetric, TVectorStorage, TQuery>
{
    fn score_stored_batch(
        &self,
        ids: &[PointOffsetType],
        scores: &mut [ScoreType],
    ) -> OperationResult<()> {
        debug_assert_eq!(ids.len(), scores.len());

        self.vector_storage
            .for_each_in_batch_multi(ids, |idx, vector| {
                self.hw.vector_io_read(vector.vectors_count());
                scores[idx] = self.score_ref(vector);
            })
    }

    fn score_internal(&self, _point_a: PointOffsetType, _point_b: PointOffsetType) -> ScoreType {
        unimplemented!("Custom scorer can compare against multiple vectors, not just one")
    }

    type SupportsBytes = False;
    fn score_bytes(&self, enabled: Self::SupportsBytes, _: &[u8]) -> ScoreType {
        match enabled {}
    }
}
