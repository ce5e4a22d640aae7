//! Retrieval metrics: pure functions over one query's ranked document ids and
//! its relevance judgments. No I/O, no engine; the runner feeds them.
//!
//! Conventions (those of `trec_eval` / BEIR with binary or graded qrels):
//! - a document is relevant when its judged relevance is > 0;
//! - a ranking is the engine's order; a document appearing more than once
//!   (several memories for one document id, or several documents of one
//!   group) counts once, at its first rank;
//! - nDCG uses linear gain (`rel / log2(rank + 1)`), the ideal ranking being
//!   every judged document sorted by relevance, cut at the same depth.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

/// Relevance judgments of one query: document id → relevance.
pub type Judgments = HashMap<String, u32>;

/// The cut-offs nDCG and MRR are reported at (fixed by the report schema).
pub const NDCG_AT: usize = 10;
pub const MRR_AT: usize = 10;

/// The report's metric names, in display order, for the given recall cut-offs.
pub fn metric_names(ks: &[usize]) -> Vec<String> {
    let mut out: Vec<String> = ks.iter().map(|k| format!("recall_any@{k}")).collect();
    out.extend(ks.iter().map(|k| format!("recall_all@{k}")));
    out.push(format!("ndcg@{NDCG_AT}"));
    out.push(format!("mrr@{MRR_AT}"));
    out
}

/// A metric name → value map; ordered so that reports are stable.
pub type MetricMap = BTreeMap<String, f64>;

/// The ranking with repeats removed, first occurrence kept.
pub fn dedup<'a>(ranking: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    ranking.into_iter().filter(|d| seen.insert(*d)).collect()
}

fn relevant(j: &Judgments) -> impl Iterator<Item = &String> {
    j.iter().filter(|(_, r)| **r > 0).map(|(d, _)| d)
}

/// 1 when at least one relevant document is in the top `k`, else 0.
pub fn recall_any(ranking: &[&str], j: &Judgments, k: usize) -> f64 {
    let hit = ranking
        .iter()
        .take(k)
        .any(|d| j.get(*d).is_some_and(|r| *r > 0));
    f64::from(u8::from(hit))
}

/// 1 when every relevant document is in the top `k`, else 0 (0 when the query
/// has more relevant documents than `k`).
pub fn recall_all(ranking: &[&str], j: &Judgments, k: usize) -> f64 {
    let top: HashSet<&str> = ranking.iter().take(k).copied().collect();
    let mut rel = relevant(j).peekable();
    if rel.peek().is_none() {
        return 0.0;
    }
    f64::from(u8::from(rel.all(|d| top.contains(d.as_str()))))
}

/// Normalised discounted cumulative gain at `k`, linear gain.
pub fn ndcg(ranking: &[&str], j: &Judgments, k: usize) -> f64 {
    let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = ranking
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| f64::from(j.get(*d).copied().unwrap_or(0)) * discount(i))
        .sum();
    let mut ideal: Vec<u32> = j.values().copied().filter(|r| *r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, r)| f64::from(*r) * discount(i))
        .sum();
    if idcg > 0.0 {
        dcg / idcg
    } else {
        0.0
    }
}

/// Reciprocal rank of the first relevant document within the top `k`; 0 if none.
pub fn mrr(ranking: &[&str], j: &Judgments, k: usize) -> f64 {
    ranking
        .iter()
        .take(k)
        .position(|d| j.get(*d).is_some_and(|r| *r > 0))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Every reported metric of one query. `ranking` may hold repeats.
pub fn query_metrics<'a>(
    ranking: impl IntoIterator<Item = &'a str>,
    j: &Judgments,
    ks: &[usize],
) -> MetricMap {
    let r = dedup(ranking);
    let mut m = MetricMap::new();
    for &k in ks {
        m.insert(format!("recall_any@{k}"), recall_any(&r, j, k));
        m.insert(format!("recall_all@{k}"), recall_all(&r, j, k));
    }
    m.insert(format!("ndcg@{NDCG_AT}"), ndcg(&r, j, NDCG_AT));
    m.insert(format!("mrr@{MRR_AT}"), mrr(&r, j, MRR_AT));
    m
}

/// The mean of each metric over queries (empty map for no queries).
pub fn mean(per_query: &[&MetricMap]) -> MetricMap {
    let mut out = MetricMap::new();
    if per_query.is_empty() {
        return out;
    }
    for m in per_query {
        for (k, v) in m.iter() {
            *out.entry(k.clone()).or_default() += v;
        }
    }
    let n = per_query.len() as f64;
    out.values_mut().for_each(|v| *v /= n);
    out
}

/// Latency percentiles by the nearest-rank method (`p` in 0..=100).
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    Some(v[rank.min(v.len()) - 1])
}

/// The latency summary of a run, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub search_p50: Option<f64>,
    pub search_p95: Option<f64>,
    pub search_p99: Option<f64>,
    /// Query-embedding time; `None` when the run embeds no queries (bm25).
    pub embed_p50: Option<f64>,
}

impl Latency {
    pub fn of(search_ms: &[f64], embed_ms: &[f64]) -> Self {
        Latency {
            search_p50: percentile(search_ms, 50.0),
            search_p95: percentile(search_ms, 95.0),
            search_p99: percentile(search_ms, 99.0),
            embed_p50: percentile(embed_ms, 50.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(pairs: &[(&str, u32)]) -> Judgments {
        pairs.iter().map(|(d, r)| (d.to_string(), *r)).collect()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn one_relevant_document_at_rank_three() {
        let q = j(&[("c", 1)]);
        let r = ["a", "b", "c", "d"];
        assert_eq!(recall_any(&r, &q, 1), 0.0);
        assert_eq!(recall_any(&r, &q, 3), 1.0);
        assert_eq!(recall_all(&r, &q, 3), 1.0);
        close(mrr(&r, &q, 10), 1.0 / 3.0);
        // dcg = 1/log2(4) = 0.5, idcg = 1
        close(ndcg(&r, &q, 10), 0.5);
    }

    #[test]
    fn several_relevant_documents() {
        let q = j(&[("a", 1), ("c", 1), ("z", 1)]);
        let r = ["a", "b", "c", "d"];
        assert_eq!(recall_any(&r, &q, 1), 1.0);
        assert_eq!(recall_all(&r, &q, 3), 0.0, "z is never retrieved");
        close(mrr(&r, &q, 10), 1.0);
        // dcg = 1 + 1/log2(4) = 1.5; idcg = 1 + 1/log2(3) + 1/log2(4)
        let idcg = 1.0 + 1.0 / 3f64.log2() + 0.5;
        close(ndcg(&r, &q, 10), 1.5 / idcg);
        let q2 = j(&[("a", 1), ("c", 1)]);
        assert_eq!(recall_all(&r, &q2, 2), 0.0);
        assert_eq!(recall_all(&r, &q2, 3), 1.0);
    }

    #[test]
    fn no_hit_scores_zero_everywhere() {
        let q = j(&[("x", 1)]);
        let m = query_metrics(["a", "b"], &q, &[1, 5]);
        assert!(m.values().all(|v| *v == 0.0), "{m:?}");
        let empty = query_metrics([], &q, &[1]);
        assert!(empty.values().all(|v| *v == 0.0));
    }

    #[test]
    fn repeats_count_once_at_their_first_rank() {
        // Two memories of one document (or two documents of one group) tie
        // for the same judged item: the second occurrence must not push the
        // relevant item down nor count twice.
        let q = j(&[("a", 1), ("b", 1)]);
        let m = query_metrics(["a", "a", "b"], &q, &[2]);
        assert_eq!(m["recall_all@2"], 1.0);
        close(m["ndcg@10"], 1.0);
    }

    #[test]
    fn zero_relevance_judgments_are_not_relevant() {
        let q = j(&[("a", 0), ("b", 1)]);
        let r = ["a", "b"];
        assert_eq!(recall_any(&r, &q, 1), 0.0);
        close(mrr(&r, &q, 10), 0.5);
        assert_eq!(recall_all(&r, &q, 2), 1.0);
        assert_eq!(recall_all(&r, &j(&[("a", 0)]), 2), 0.0);
    }

    #[test]
    fn graded_ndcg_uses_linear_gain() {
        let q = j(&[("a", 1), ("b", 2)]);
        // dcg = 1 + 2/log2(3); idcg = 2 + 1/log2(3)
        let l3 = 3f64.log2();
        close(
            ndcg(&["a", "b"], &q, 10),
            (1.0 + 2.0 / l3) / (2.0 + 1.0 / l3),
        );
        close(ndcg(&["b", "a"], &q, 10), 1.0);
    }

    #[test]
    fn cut_offs_are_respected() {
        let q = j(&[("k", 1)]);
        let r: Vec<String> = (0..12).map(|i| format!("d{i}")).collect();
        let mut r: Vec<&str> = r.iter().map(String::as_str).collect();
        r.insert(10, "k"); // rank 11
        assert_eq!(mrr(&r, &q, 10), 0.0);
        assert_eq!(ndcg(&r, &q, 10), 0.0);
        assert_eq!(recall_any(&r, &q, 20), 1.0);
    }

    #[test]
    fn mean_and_percentiles() {
        let a = MetricMap::from([("m".into(), 1.0)]);
        let b = MetricMap::from([("m".into(), 0.0)]);
        assert_eq!(mean(&[&a, &b])["m"], 0.5);
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 95.0), Some(95.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn metric_names_match_the_schema() {
        assert_eq!(
            metric_names(&[1, 5, 10, 20]),
            [
                "recall_any@1",
                "recall_any@5",
                "recall_any@10",
                "recall_any@20",
                "recall_all@1",
                "recall_all@5",
                "recall_all@10",
                "recall_all@20",
                "ndcg@10",
                "mrr@10"
            ]
        );
    }
}
