//! Paired comparison of two runs on the same queries: per-query deltas and a
//! percentile bootstrap confidence interval on the mean difference of each
//! metric. Pure; the resampling generator is a fixed-seed SplitMix64 written
//! out here so that a report's intervals are reproducible bit for bit,
//! independent of any dependency's generator.

use serde::{Deserialize, Serialize};

use super::metrics::MetricMap;

/// Bootstrap settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    pub resamples: usize,
    /// Two-sided confidence level, e.g. 0.95.
    pub confidence: f64,
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: 1000,
            confidence: 0.95,
            seed: 0x5EED_2026,
        }
    }
}

/// The difference `b - a` of one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub a: f64,
    pub b: f64,
    pub delta: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The interval excludes 0: the difference is unlikely to be noise.
    pub significant: bool,
}

/// One query's differences, `b - a` per metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryDelta {
    pub query_id: String,
    pub deltas: MetricMap,
}

/// A paired comparison of runs `a` and `b` on one set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub set: String,
    pub a: String,
    pub b: String,
    pub queries: usize,
    pub resamples: usize,
    pub confidence: f64,
    pub seed: u64,
    pub metrics: std::collections::BTreeMap<String, Delta>,
    pub per_query: Vec<QueryDelta>,
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, well distributed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (Lemire's multiply-shift; bias negligible for n ≪ 2^64).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// Mean of the paired differences and its bootstrap interval.
pub fn bootstrap_mean_diff(diffs: &[f64], b: Bootstrap) -> (f64, f64, f64) {
    let n = diffs.len();
    if n == 0 {
        return (0.0, 0.0, 0.0);
    }
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let mut rng = SplitMix64(b.seed);
    let mut means: Vec<f64> = (0..b.resamples.max(1))
        .map(|_| (0..n).map(|_| diffs[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let alpha = (1.0 - b.confidence) / 2.0;
    let at = |q: f64| {
        let i = (q * (means.len() - 1) as f64).round() as usize;
        means[i.min(means.len() - 1)]
    };
    (mean, at(alpha), at(1.0 - alpha))
}

/// Compares two runs query by query. `a` and `b` are (query id, metrics) in
/// the same query order; only queries present in both are paired.
pub fn compare(
    set: &str,
    (a_name, a): (&str, &[(String, MetricMap)]),
    (b_name, b): (&str, &[(String, MetricMap)]),
    metric_names: &[String],
    boot: Bootstrap,
) -> Comparison {
    let b_by_id: std::collections::HashMap<&str, &MetricMap> =
        b.iter().map(|(id, m)| (id.as_str(), m)).collect();
    let pairs: Vec<(&str, &MetricMap, &MetricMap)> = a
        .iter()
        .filter_map(|(id, ma)| b_by_id.get(id.as_str()).map(|mb| (id.as_str(), ma, *mb)))
        .collect();
    let per_query: Vec<QueryDelta> = pairs
        .iter()
        .map(|(id, ma, mb)| QueryDelta {
            query_id: id.to_string(),
            deltas: metric_names
                .iter()
                .map(|m| {
                    (
                        m.clone(),
                        mb.get(m).unwrap_or(&0.0) - ma.get(m).unwrap_or(&0.0),
                    )
                })
                .collect(),
        })
        .collect();
    let n = pairs.len().max(1) as f64;
    let metrics = metric_names
        .iter()
        .map(|m| {
            let diffs: Vec<f64> = per_query.iter().map(|q| q.deltas[m]).collect();
            let (delta, lo, hi) = bootstrap_mean_diff(&diffs, boot);
            let mean_of = |side: usize| {
                pairs
                    .iter()
                    .map(|p| *(if side == 0 { p.1 } else { p.2 }).get(m).unwrap_or(&0.0))
                    .sum::<f64>()
                    / n
            };
            let d = Delta {
                a: mean_of(0),
                b: mean_of(1),
                delta,
                ci_low: lo,
                ci_high: hi,
                significant: lo > 0.0 || hi < 0.0,
            };
            (m.clone(), d)
        })
        .collect();
    Comparison {
        set: set.to_string(),
        a: a_name.to_string(),
        b: b_name.to_string(),
        queries: pairs.len(),
        resamples: boot.resamples,
        confidence: boot.confidence,
        seed: boot.seed,
        metrics,
        per_query,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(values: &[f64]) -> Vec<(String, MetricMap)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("q{i}"), MetricMap::from([("m".to_string(), *v)])))
            .collect()
    }

    #[test]
    fn identical_runs_have_a_zero_interval() {
        let a = run(&[1.0, 0.0, 1.0, 0.5]);
        let c = compare(
            "s",
            ("a", &a),
            ("b", &a),
            &["m".into()],
            Bootstrap::default(),
        );
        let d = &c.metrics["m"];
        assert_eq!((d.delta, d.ci_low, d.ci_high), (0.0, 0.0, 0.0));
        assert!(!d.significant);
        assert_eq!(c.per_query.len(), 4);
    }

    #[test]
    fn a_consistent_gain_is_significant_and_a_coin_flip_is_not() {
        let a = run(&[0.0; 40]);
        let b = run(&[1.0; 40]);
        let c = compare(
            "s",
            ("a", &a),
            ("b", &b),
            &["m".into()],
            Bootstrap::default(),
        );
        let d = &c.metrics["m"];
        assert_eq!((d.a, d.b, d.delta), (0.0, 1.0, 1.0));
        assert!(d.significant);
        // One query better, one worse, many equal: no evidence of a change.
        let mut bv = vec![0.0; 40];
        bv[0] = 1.0;
        let mut av = vec![0.0; 40];
        av[1] = 1.0;
        let c = compare(
            "s",
            ("a", &run(&av)),
            ("b", &run(&bv)),
            &["m".into()],
            Bootstrap::default(),
        );
        let d = &c.metrics["m"];
        assert_eq!(d.delta, 0.0);
        assert!(d.ci_low < 0.0 && d.ci_high > 0.0, "{d:?}");
        assert!(!d.significant);
    }

    #[test]
    fn the_interval_is_reproducible_and_brackets_the_mean() {
        let diffs: Vec<f64> = (0..50)
            .map(|i| ((i * 7919) % 13) as f64 / 13.0 - 0.4)
            .collect();
        let x = bootstrap_mean_diff(&diffs, Bootstrap::default());
        let y = bootstrap_mean_diff(&diffs, Bootstrap::default());
        assert_eq!(x, y);
        assert!(x.1 <= x.0 && x.0 <= x.2, "{x:?}");
        let other = bootstrap_mean_diff(
            &diffs,
            Bootstrap {
                seed: 1,
                ..Default::default()
            },
        );
        assert_eq!(other.0, x.0);
    }

    #[test]
    fn only_shared_queries_are_paired() {
        let a = run(&[1.0, 1.0]);
        let b = vec![("q1".to_string(), MetricMap::from([("m".into(), 0.0)]))];
        let c = compare(
            "s",
            ("a", &a),
            ("b", &b),
            &["m".into()],
            Bootstrap::default(),
        );
        assert_eq!(c.queries, 1);
        assert_eq!(c.metrics["m"].delta, -1.0);
    }
}
