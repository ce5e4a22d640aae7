//! How the configured model's cosine similarities are distributed on a set:
//! the measurement behind the per-model thresholds of `[embedding.<model>]`
//! (`min_vector_similarity`, `reinforce_min_similarity`,
//! `correction_min_similarity`). Pure functions over vectors.
//!
//! Four populations, as percentiles:
//! - `query_relevant`: a query against each document judged relevant for it
//!   (query embedding against passage embedding, what search compares);
//! - `query_unrelated`: a query against [`UNRELATED_PER_QUERY`] documents
//!   not judged for it, picked deterministically;
//! - `passage_relevant` / `passage_unrelated`: the same pairs with the query
//!   text embedded as a passage (what the lifecycle compares: a new memory
//!   against stored ones), for the first queries only.

use serde::{Deserialize, Serialize};

/// Unrelated documents sampled per query.
pub const UNRELATED_PER_QUERY: usize = 10;

/// Percentiles of one population of cosines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub pairs: usize,
    pub p5: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p95: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Self> {
        let p = |q| super::metrics::percentile(values, q);
        Some(Spread {
            pairs: values.len(),
            p5: p(5.0)?,
            p25: p(25.0)?,
            p50: p(50.0)?,
            p75: p(75.0)?,
            p95: p(95.0)?,
        })
    }
}

/// The four populations of a set (a population without pairs is `None`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Similarity {
    pub query_relevant: Option<Spread>,
    pub query_unrelated: Option<Spread>,
    pub passage_relevant: Option<Spread>,
    pub passage_unrelated: Option<Spread>,
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// One query's inputs.
pub struct QueryPairs<'a> {
    /// The query embedded as a query.
    pub query: &'a [f32],
    /// The query text embedded as a passage, when measured.
    pub as_passage: Option<&'a [f32]>,
    /// Documents judged relevant (relevance > 0).
    pub relevant: Vec<&'a [f32]>,
    /// Documents judged for the query at all (relevant or not): never
    /// sampled as unrelated.
    pub judged: Vec<usize>,
}

/// Measures the four populations. `docs` are every document's vector; the
/// unrelated sample of query `i` is drawn from them with a fixed stride, so
/// the result is reproducible.
pub fn measure(queries: &[QueryPairs<'_>], docs: &[&[f32]]) -> Similarity {
    let (mut qr, mut qu, mut pr, mut pu) = (vec![], vec![], vec![], vec![]);
    for (i, q) in queries.iter().enumerate() {
        for d in &q.relevant {
            qr.push(cosine(q.query, d));
            if let Some(p) = q.as_passage {
                pr.push(cosine(p, d));
            }
        }
        for j in unrelated_sample(i, docs.len(), &q.judged) {
            qu.push(cosine(q.query, docs[j]));
            if let Some(p) = q.as_passage {
                pu.push(cosine(p, docs[j]));
            }
        }
    }
    Similarity {
        query_relevant: Spread::of(&qr),
        query_unrelated: Spread::of(&qu),
        passage_relevant: Spread::of(&pr),
        passage_unrelated: Spread::of(&pu),
    }
}

/// Up to [`UNRELATED_PER_QUERY`] document indexes, none of them judged.
fn unrelated_sample(query: usize, n: usize, judged: &[usize]) -> Vec<usize> {
    if n == 0 {
        return vec![];
    }
    // A stride coprime to n visits every document before repeating one;
    // the start differs per query.
    let mut stride = n / UNRELATED_PER_QUERY + 1;
    while gcd(stride, n) != 1 {
        stride += 1;
    }
    let start = query.wrapping_mul(2_654_435_761) % n;
    (0..n)
        .map(|k| (start + k * stride) % n)
        .filter(|j| !judged.contains(j))
        .take(UNRELATED_PER_QUERY)
        .collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_parallel_orthogonal_and_zero_vectors() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn relevant_and_unrelated_pairs_are_told_apart_and_judged_docs_never_sampled() {
        let docs: Vec<Vec<f32>> = (0..40)
            .map(|i| {
                if i == 0 {
                    vec![1.0, 0.0]
                } else {
                    vec![0.0, 1.0]
                }
            })
            .collect();
        let refs: Vec<&[f32]> = docs.iter().map(|d| d.as_slice()).collect();
        let q = [1.0f32, 0.1];
        let pairs = vec![QueryPairs {
            query: &q,
            as_passage: Some(&q),
            relevant: vec![refs[0]],
            judged: vec![0],
        }];
        let s = measure(&pairs, &refs);
        let rel = s.query_relevant.unwrap();
        let unrel = s.query_unrelated.unwrap();
        assert_eq!(rel.pairs, 1);
        assert_eq!(unrel.pairs, UNRELATED_PER_QUERY);
        assert!(rel.p50 > 0.99 && unrel.p95 < 0.2, "{rel:?} {unrel:?}");
        assert_eq!(s.passage_unrelated.unwrap().pairs, UNRELATED_PER_QUERY);
        for i in 0..50 {
            let sample = unrelated_sample(i, 40, &[0, 5]);
            assert!(!sample.contains(&0) && !sample.contains(&5));
            let unique: std::collections::HashSet<_> = sample.iter().collect();
            assert_eq!(unique.len(), sample.len());
        }
        assert!(unrelated_sample(0, 0, &[]).is_empty());
    }
}
