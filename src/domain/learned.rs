//! The learned stage: a small linear model over every fused candidate's
//! signals, fitted to labelled data by `mnemo tune` (`eval::tune`), that
//! turns them into a calibrated probability of relevance. Pure: it reads the
//! hits `ranking::rank` produced (each with its score breakdown) and nothing
//! else.
//!
//! ```text
//! x          = features(hit, the query's other candidates)      (FEATURES, below)
//! relevance  = σ(bias + Σ wᵢ · xᵢ)                              (0..1, calibrated)
//! final      = relevance                                        (then conversation context)
//! ```
//!
//! Every feature is on a scale that means the same on any store and either
//! embedding model: cosines are measured against the model's own
//! `unrelated_cosine` (0) and `paraphrase_cosine` (1), BM25 as the share of a
//! full match of the query, ranks as 1/log₂(1 + rank), times relative to the
//! query's other candidates. So one model serves both embedding models and
//! every store size, and a weight fitted on some sets can be measured on
//! others (`mnemo tune` reports the held-out figures). What the fitted
//! weights are and where they come from: `docs/decisions/0023-learned-stage.md`.
//!
//! The score is a probability, so a caller can decide what is too weak to
//! show a model (`[context] min_relevance`) instead of a similarity floor
//! before fusion deciding it for every caller.

use std::collections::BTreeMap;

pub use super::hit::LearnedSignals;
use super::hit::{compare_hits, Hit};
use super::temporal::TimeWindow;
use super::Tier;

/// The features, in the order of [`Features`]; the names are the keys of
/// `[retrieval.learned.weights]`.
pub const FEATURES: [&str; 18] = [
    // `absolute` fusion's score of both legs (`ranking::fuse_scaled`).
    "fused",
    // The vector leg (× the model's confidence in the query's tokens).
    "vector",
    "vector_gap",
    "vector_over_background",
    "vector_rank",
    // The lexical leg.
    "lexical",
    "lexical_of_best",
    "lexical_rank",
    "both_legs",
    // Time: how new among the candidates, and statements of one fact.
    "recency",
    "newer_rival",
    "older_rival",
    "decay",
    "importance",
    // A time the query names.
    "in_named_time",
    "told_after_named_time",
    // The tier.
    "reference",
    "working",
];

/// Number of features.
pub const N: usize = FEATURES.len();

/// One candidate's features, in the order of [`FEATURES`].
pub type Features = [f32; N];

/// How near (in units of the model's paraphrase − unrelated range, either
/// way) another candidate's cosine must be to count as a rival statement of
/// the same fact (`newer_rival`, `older_rival`).
pub const RIVAL_COSINE_BAND: f32 = 0.25;
/// Rivals are looked for among this many best candidates (by the fused
/// score before this stage).
pub const RIVAL_DEPTH: usize = 10;

/// The shipped model (`[retrieval.learned]`'s defaults): bias and weights
/// as `mnemo tune` fitted them over every set the project holds, both
/// embedding models (provenance: docs/decisions/0023-learned-stage.md).
pub const SHIPPED: (f32, &[(&str, f32)]) = (
    -4.3481,
    &[
        ("both_legs", -1.2446),
        ("decay", 0.0001),
        ("fused", 2.3575),
        ("in_named_time", 1.6375),
        ("lexical", 0.8012),
        ("lexical_of_best", 1.7975),
        ("lexical_rank", 1.0873),
        ("newer_rival", 0.0400),
        ("older_rival", -0.2225),
        ("recency", 0.2984),
        ("reference", -0.8962),
        ("told_after_named_time", 0.1795),
        ("vector", 1.3084),
        ("vector_gap", 1.0122),
        ("vector_over_background", -0.0014),
        ("vector_rank", 1.7284),
    ],
);

/// A fitted model: σ(bias + Σ weightᵢ · xᵢ).
#[derive(Clone, Debug, PartialEq)]
pub struct LinearModel {
    pub bias: f32,
    pub weights: Features,
}

impl LinearModel {
    /// The model from named weights (`[retrieval.learned]`); a name that is
    /// no feature is an error naming it. Absent features weigh 0.
    pub fn from_named(bias: f32, named: &BTreeMap<String, f32>) -> Result<Self, String> {
        let mut weights = [0.0; N];
        for (name, w) in named {
            let i = FEATURES.iter().position(|f| f == name).ok_or_else(|| {
                format!("unknown feature `{name}`; known: {}", FEATURES.join(", "))
            })?;
            if !w.is_finite() {
                return Err(format!("weight of `{name}` must be a finite number"));
            }
            weights[i] = *w;
        }
        if !bias.is_finite() {
            return Err("bias must be a finite number".into());
        }
        Ok(LinearModel { bias, weights })
    }

    /// The weights by name, for a policy file.
    pub fn named(&self) -> BTreeMap<String, f32> {
        FEATURES
            .iter()
            .zip(self.weights)
            .map(|(n, w)| (n.to_string(), w))
            .collect()
    }

    /// The linear score (log-odds of relevance).
    pub fn logit(&self, x: &Features) -> f32 {
        self.bias + self.weights.iter().zip(x).map(|(w, v)| w * v).sum::<f32>()
    }

    /// The probability of relevance.
    pub fn probability(&self, x: &Features) -> f32 {
        sigmoid(self.logit(x))
    }
}

pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// The stage's parameters: the model and the embedding model's scale.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedParams {
    pub model: LinearModel,
    /// The embedding model's cosine for unrelated text (0 of the scale)…
    pub unrelated_cosine: f32,
    /// …and for a close paraphrase (1 of the scale).
    pub paraphrase_cosine: f32,
}

/// 1/log₂(1 + rank): 1 at rank 1, 0.63 at 2, 0.29 at 10; 0 when unlisted.
fn rank_gain(rank: Option<usize>) -> f32 {
    rank.map_or(0.0, |r| 1.0 / ((1.0 + r as f32).log2()))
}

/// The features of every hit, in order. `hits` are all the query's fused
/// candidates (sorted best first by the fused score), as `ranking::rank`
/// left them; `when` is the time the query names, if any.
pub fn features(hits: &[Hit], params: &LearnedParams, when: Option<&TimeWindow>) -> Vec<Features> {
    if hits.is_empty() {
        return Vec::new();
    }
    let range = (params.paraphrase_cosine - params.unrelated_cosine).max(f32::EPSILON);
    let cosines: Vec<f32> = hits
        .iter()
        .filter_map(|h| h.breakdown.vector_similarity)
        .collect();
    let (lowest, best) = cosines
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), c| {
            (lo.min(*c), hi.max(*c))
        });
    let median = super::hit::median(&cosines);
    // A candidate the vector leg did not list scored at most its last; it
    // is taken as unrelated unless the last is lower still.
    let unlisted = lowest.min(params.unrelated_cosine);
    let cosine_of = |h: &Hit| {
        h.breakdown
            .vector_similarity
            .or((!cosines.is_empty()).then_some(unlisted))
    };
    let confidence = hits
        .first()
        .and_then(|h| h.breakdown.vector_confidence)
        .unwrap_or(1.0);
    let best_bm25 = hits
        .iter()
        .filter_map(|h| h.breakdown.bm25_score)
        .fold(0.0f32, f32::max);
    let (oldest, newest) = hits.iter().fold((i64::MAX, i64::MIN), |(lo, hi), h| {
        let t = h.memory.created_at.timestamp();
        (lo.min(t), hi.max(t))
    });
    let span = (newest - oldest).max(0) as f32;
    let rivals: Vec<usize> = (0..hits.len().min(RIVAL_DEPTH)).collect();
    hits.iter()
        .enumerate()
        .map(|(i, h)| {
            let b = &h.breakdown;
            let mut x = [0.0f32; N];
            x[0] = b.fused_score;
            if let Some(c) = cosine_of(h) {
                x[1] = confidence * ((c - params.unrelated_cosine) / range).clamp(-1.0, 2.0);
                x[2] = confidence * ((c - best) / range).clamp(-2.0, 0.0);
                x[3] = confidence * ((c - median.unwrap_or(c)) / range).clamp(-2.0, 2.0);
            }
            x[4] = confidence * rank_gain(b.vector_rank);
            if let Some(s) = b.bm25_score {
                let unit = b
                    .bm25_full_match_score
                    .filter(|f| *f > 0.0)
                    .map_or(best_bm25, |f| f.max(best_bm25));
                x[5] = if unit > 0.0 {
                    (s / unit).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                x[6] = if best_bm25 > 0.0 { s / best_bm25 } else { 0.0 };
            }
            x[7] = rank_gain(b.bm25_rank);
            x[8] = f32::from(u8::from(b.bm25_rank.is_some() && b.vector_rank.is_some()));
            let t = h.memory.created_at.timestamp();
            x[9] = if span > 0.0 {
                (t - oldest) as f32 / span
            } else {
                0.5
            };
            if let Some(c) = cosine_of(h) {
                let rival = |j: &usize| {
                    *j != i
                        && hits[*j].memory.owner() == h.memory.owner()
                        && cosine_of(&hits[*j])
                            .is_some_and(|d| (d - c).abs() <= RIVAL_COSINE_BAND * range)
                };
                let created = h.memory.created_at;
                x[10] = f32::from(u8::from(
                    rivals
                        .iter()
                        .any(|j| rival(j) && hits[*j].memory.created_at > created),
                ));
                x[11] = f32::from(u8::from(
                    rivals
                        .iter()
                        .any(|j| rival(j) && hits[*j].memory.created_at < created),
                ));
            }
            x[12] = b.decay_factor;
            x[13] = h.memory.importance - 0.5;
            if let Some(w) = when {
                let created = h.memory.created_at;
                let during = created >= w.start && created < w.end;
                x[14] = f32::from(u8::from(during));
                x[15] = f32::from(u8::from(!during && w.holds(created)));
            }
            x[16] = f32::from(u8::from(h.memory.tier == Tier::Reference));
            x[17] = f32::from(u8::from(h.memory.tier == Tier::Working));
            x
        })
        .collect()
}

/// Scores every hit with the model, sorts them by the new score (the
/// probability of relevance), keeps the best `keep`, and records in each
/// kept hit's breakdown what the model saw (only those: the breakdown's
/// maps are the stage's only allocations).
pub fn apply(
    mut hits: Vec<Hit>,
    params: &LearnedParams,
    when: Option<&TimeWindow>,
    keep: usize,
) -> Vec<Hit> {
    let xs = features(&hits, params, when);
    let mut scored: Vec<(Hit, Features)> = hits
        .drain(..)
        .zip(xs)
        .map(|(mut h, x)| {
            let relevance = params.model.probability(&x);
            h.score = relevance;
            h.breakdown.final_score = relevance;
            (h, x)
        })
        .collect();
    scored.sort_by(|(a, _), (b, _)| compare_hits(a, b));
    scored.truncate(keep);
    scored
        .into_iter()
        .map(|(mut h, x)| {
            h.breakdown.learned = Some(signals(&params.model, &x, h.score));
            h
        })
        .collect()
}

fn signals(model: &LinearModel, x: &Features, relevance: f32) -> LearnedSignals {
    LearnedSignals {
        features: FEATURES
            .iter()
            .zip(x)
            .map(|(n, v)| (n.to_string(), *v))
            .collect(),
        contributions: FEATURES
            .iter()
            .zip(x.iter().zip(model.weights))
            .filter(|(_, (v, w))| *v * w != 0.0)
            .map(|(n, (v, w))| (n.to_string(), v * w))
            .collect(),
        bias: model.bias,
        relevance,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use super::*;
    use crate::domain::Memory;

    const E5: (f32, f32) = (0.78, 0.92);

    fn params(weights: &[(&str, f32)], bias: f32) -> LearnedParams {
        let named = weights.iter().map(|(n, w)| (n.to_string(), *w)).collect();
        LearnedParams {
            model: LinearModel::from_named(bias, &named).unwrap(),
            unrelated_cosine: E5.0,
            paraphrase_cosine: E5.1,
        }
    }

    /// A hit of user `u` told `days_ago`, with a cosine and maybe a BM25 score.
    fn hit(
        text: &str,
        days_ago: i64,
        cosine: Option<(f32, usize)>,
        bm25: Option<(f32, usize)>,
    ) -> Hit {
        let now = Utc.with_ymd_and_hms(2025, 7, 1, 9, 0, 0).unwrap();
        let m = Memory::sample(
            Tier::LongTerm,
            Some("u"),
            text,
            now - Duration::days(days_ago),
        );
        let mut h = Hit::unranked(m, 0.5);
        h.breakdown.vector_similarity = cosine.map(|c| c.0);
        h.breakdown.vector_rank = cosine.map(|c| c.1);
        h.breakdown.bm25_score = bm25.map(|b| b.0);
        h.breakdown.bm25_rank = bm25.map(|b| b.1);
        h.breakdown.bm25_full_match_score = Some(4.0);
        h.breakdown.vector_confidence = Some(1.0);
        h
    }

    fn feature(x: &Features, name: &str) -> f32 {
        x[FEATURES.iter().position(|f| *f == name).unwrap()]
    }

    #[test]
    fn weights_are_named_and_unknown_names_refused() {
        let m = params(&[("vector", 2.0), ("recency", -0.5)], -1.0).model;
        assert_eq!(m.named()["vector"], 2.0);
        assert_eq!(m.named()["lexical"], 0.0);
        let bad = [("vectr".to_string(), 1.0)].into_iter().collect();
        let err = LinearModel::from_named(0.0, &bad).unwrap_err();
        assert!(err.contains("vectr"), "{err}");
        let nan = [("vector".to_string(), f32::NAN)].into_iter().collect();
        assert!(LinearModel::from_named(0.0, &nan).is_err());
    }

    #[test]
    fn features_are_on_the_models_scale() {
        let p = params(&[], 0.0);
        let hits = vec![
            hit("a paraphrase", 10, Some((0.92, 1)), None),
            hit("unrelated", 20, Some((0.78, 2)), Some((4.0, 1))),
            hit("only a word", 30, None, Some((1.0, 2))),
        ];
        let x = features(&hits, &p, None);
        assert!((feature(&x[0], "vector") - 1.0).abs() < 1e-5);
        assert!(feature(&x[1], "vector").abs() < 1e-5);
        assert_eq!(feature(&x[0], "vector_gap"), 0.0);
        // Not a vector candidate: at most the leg's last cosine.
        assert!(feature(&x[2], "vector").abs() < 1e-5);
        assert_eq!(feature(&x[1], "lexical"), 1.0);
        assert!((feature(&x[2], "lexical") - 0.25).abs() < 1e-6);
        assert_eq!(feature(&x[0], "vector_rank"), 1.0);
        assert_eq!(feature(&x[1], "both_legs"), 1.0);
        assert_eq!(feature(&x[0], "recency"), 1.0);
        assert_eq!(feature(&x[2], "recency"), 0.0);
    }

    #[test]
    fn a_newer_statement_of_the_same_fact_is_a_rival() {
        let p = params(&[], 0.0);
        let hits = vec![
            hit("I drive a Mazda", 300, Some((0.90, 1)), Some((3.0, 1))),
            hit(
                "Sold the Mazda; I drive an EV now",
                20,
                Some((0.89, 2)),
                Some((2.0, 2)),
            ),
            hit("The ward's printer is broken", 5, Some((0.80, 3)), None),
        ];
        let x = features(&hits, &p, None);
        assert_eq!(feature(&x[0], "newer_rival"), 1.0);
        assert_eq!(feature(&x[0], "older_rival"), 0.0);
        assert_eq!(feature(&x[1], "older_rival"), 1.0);
        assert_eq!(feature(&x[1], "newer_rival"), 0.0);
        // Far below the others: nobody's rival, and none of its own.
        assert_eq!(feature(&x[2], "older_rival"), 0.0);
    }

    #[test]
    fn a_named_time_marks_what_was_told_then_and_just_after() {
        let p = params(&[], 0.0);
        let now = Utc.with_ymd_and_hms(2025, 7, 1, 9, 0, 0).unwrap();
        let window =
            crate::domain::temporal::window_of("What did the user do last weekend?", now).unwrap();
        // Saturday 28 June (3 days ago), the Monday after (1 day ago), May.
        let hits = vec![
            hit("Sentosa", 3, Some((0.85, 1)), None),
            hit("movie", 1, Some((0.85, 2)), None),
            hit("repotting", 45, Some((0.85, 3)), None),
        ];
        let x = features(&hits, &p, Some(&window));
        assert_eq!(feature(&x[0], "in_named_time"), 1.0);
        assert_eq!(feature(&x[1], "in_named_time"), 0.0);
        assert_eq!(feature(&x[1], "told_after_named_time"), 1.0);
        assert_eq!(
            feature(&x[2], "in_named_time") + feature(&x[2], "told_after_named_time"),
            0.0
        );
    }

    #[test]
    fn the_stage_sorts_by_probability_and_explains_it() {
        let p = params(&[("vector", 4.0), ("lexical", 1.0)], -2.0);
        let hits = vec![
            hit("lexical only", 10, None, Some((4.0, 1))),
            hit("a paraphrase", 10, Some((0.92, 1)), None),
        ];
        let out = apply(hits, &p, None, usize::MAX);
        assert_eq!(out[0].memory.text, "a paraphrase");
        let l = out[0].breakdown.learned.as_ref().unwrap();
        assert!((l.relevance - sigmoid(2.0)).abs() < 1e-5);
        assert_eq!(out[0].score, l.relevance);
        assert_eq!(l.contributions["vector"], 4.0);
        assert!(out.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    }
}
