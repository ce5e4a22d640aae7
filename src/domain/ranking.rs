//! Hybrid ranking: fuse the lexical and vector candidate lists, then weight by
//! time decay and importance. Pure functions over plain numbers; the service
//! feeds them candidates and memories, the policy feeds them parameters.
//!
//! ```text
//! fused      = Σ over legs of wᵢ · normᵢ(score) / Σ active wᵢ           (0..=1)
//!              normᵢ: dbsf    clamp((s - (μ - 3σ)) / 6σ, 0, 1)   μ, σ of the leg's candidates
//!                     min_max (s - min) / (max - min)             over the leg's candidates
//!                     calibrated bm25 / max(bm25), clamp((cos - u) / (1 - u), 0, 1)
//!                             u = the model's query–unrelated-text cosine (per model)
//!                     weighted bm25 / max(bm25), raw max(cos, 0)  (calibrated with u = 0)
//!                     rrf     (k + 1) / (k + rank)                ranks only
//!                     absolute bm25 / max(full(q), best bm25),    full = Σ idf over q's terms (a full match)
//!                             clamp((cos - u) / (p - u), 0, 1)    u, p = the model's unrelated / paraphrase cosine
//!                             u raised to the candidates' median cosine (candidate floor)
//!                             vector weight × c, c = share of q's tokens the model knows
//! decay      = floor + (1 - floor) · 0.5^(age / half_life)      (1 when no half-life)
//! importance = 1 + weight · (2 · importance - 1)                (1 at importance 0.5)
//! final      = fused · decay · importance   (· the second stage's factor, `rerank.rs`)
//!              then raised to a share of a neighbouring turn's score (`turns.rs`)
//! ```
//!
//! `dbsf` and `min_max` are *scale-free* within a query: an affine change of
//! one leg's scores (a model whose unrelated texts score 0.7 instead of 0.0,
//! a BM25 whose scores grow with the corpus) leaves the fused order
//! unchanged, which `weighted` does not (it adds a raw cosine to a
//! normalised BM25). They also stretch a leg that cannot tell its
//! candidates apart over the whole 0..1. `calibrated` is scale-free across
//! models instead: the cosine is measured against the model's own level for
//! unrelated texts, so a shift of the model's cosines moves its calibration
//! with it, and a leg without signal stays flat.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Memory;

pub use super::hit::{compare_hits, sort_hits, Hit, ScoreBreakdown};

/// How the two candidate lists are combined.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum FusionMethod {
    /// Reciprocal rank fusion: Σ wᵢ / (k + rankᵢ). Scale-free, robust to
    /// score distributions that differ between legs; ignores score gaps.
    Rrf {
        k: f32,
        lexical_weight: f32,
        vector_weight: f32,
    },
    /// Normalised score combination: wₗ · bm25/max(bm25) + wᵥ · max(cos, 0).
    /// Not scale-free: the cosine enters raw, so a model whose cosines are
    /// compressed (e5: unrelated texts at 0.7–0.8) leaves the order to BM25.
    Weighted {
        lexical_weight: f32,
        vector_weight: f32,
    },
    /// Distribution-based score fusion (as Qdrant's `dbsf`): each leg's
    /// scores mapped from mean ± 3 standard deviations of that leg's
    /// candidates onto 0..1, clamped.
    Dbsf {
        lexical_weight: f32,
        vector_weight: f32,
    },
    /// Each leg's scores mapped from its candidates' min..max onto 0..1.
    MinMax {
        lexical_weight: f32,
        vector_weight: f32,
    },
    /// `weighted` with the cosine calibrated for the model:
    /// wₗ · bm25/max(bm25) + wᵥ · clamp((cos − u) / (1 − u), 0, 1), where `u`
    /// is the model's typical cosine between a query and an unrelated text
    /// (`[embedding.<model>] unrelated_cosine`). Scale-free across models
    /// (the calibration moves with the model), and a leg that cannot tell
    /// candidates apart (MiniLM on Chinese: every cosine ≈ 0.99) is not
    /// stretched into noise, as per-query normalisation would.
    Calibrated {
        lexical_weight: f32,
        vector_weight: f32,
        unrelated_cosine: f32,
    },
    /// Both legs on an absolute, query-relative scale, so that a weak match
    /// stays low whatever the other candidates score:
    /// - BM25 as the share of a full match it reached, bm25 / Σ over the
    ///   query's terms of idf, the score of a document of average length
    ///   holding each query term once ([`QueryScales`]); when a candidate
    ///   scores above a full match (a term repeated, a short text: BM25
    ///   reaches (k1 + 1) times it), the unit is that best score instead,
    ///   so strong matches keep their order rather than all tying at 1;
    ///   the top lexical hit of a query that shares one common word with the
    ///   memories is near 0, not 1 as with bm25/max(bm25);
    /// - the cosine anchored at both ends by the model, 0 at its typical
    ///   cosine for unrelated text (`unrelated_cosine`) and 1 at the cosine
    ///   of a close paraphrase (`paraphrase_cosine`);
    /// - the vector weight multiplied by the leg's confidence for this
    ///   query, the share of its tokens the model's vocabulary knows (a
    ///   model that reads Chinese as `[UNK]` gets no say on a Chinese query).
    Absolute {
        lexical_weight: f32,
        vector_weight: f32,
        unrelated_cosine: f32,
        paraphrase_cosine: f32,
        /// Raise the vector leg's zero to the query's background cosine in
        /// its scope ([`QueryScales::vector_background`]) when that is higher
        /// (memories that all share a topic, as the turns of one conversation
        /// do).
        candidate_floor: bool,
    },
}

/// What fusion knows about the query beyond its candidates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueryScales {
    /// The BM25 score of a full match of the query in this index (Σ over its
    /// distinct terms of idf: a document of average length holding each
    /// once); `None` when the index cannot say, and then `absolute` falls
    /// back to bm25/max(bm25).
    pub lexical_full_match: Option<f32>,
    /// How far the vector leg can be trusted on this query's text, 0..=1: the
    /// share of the query's tokens the embedding model knows.
    pub vector_confidence: f32,
    /// The cosine of the query with the memories around it in this scope:
    /// the median of the vector index's nearest neighbours when the index
    /// returned as many as it was asked for ([`background_cosine`]), before
    /// any similarity cut; `None` when the scope holds fewer (then every
    /// memory in scope is a candidate and the model's `unrelated_cosine` is
    /// the zero). `absolute` with the candidate floor raises the vector
    /// leg's zero to it.
    pub vector_background: Option<f32>,
}

impl Default for QueryScales {
    fn default() -> Self {
        QueryScales {
            lexical_full_match: None,
            vector_confidence: 1.0,
            vector_background: None,
        }
    }
}

impl FusionMethod {
    fn weights(self) -> (f32, f32) {
        match self {
            FusionMethod::Rrf {
                lexical_weight,
                vector_weight,
                ..
            }
            | FusionMethod::Weighted {
                lexical_weight,
                vector_weight,
            }
            | FusionMethod::Dbsf {
                lexical_weight,
                vector_weight,
            }
            | FusionMethod::MinMax {
                lexical_weight,
                vector_weight,
            }
            | FusionMethod::Calibrated {
                lexical_weight,
                vector_weight,
                ..
            }
            | FusionMethod::Absolute {
                lexical_weight,
                vector_weight,
                ..
            } => (lexical_weight, vector_weight),
        }
    }

    /// The policy name of the method (`[retrieval.fusion] method`).
    pub fn name(self) -> &'static str {
        match self {
            FusionMethod::Rrf { .. } => "rrf",
            FusionMethod::Weighted { .. } => "weighted",
            FusionMethod::Dbsf { .. } => "dbsf",
            FusionMethod::MinMax { .. } => "min_max",
            FusionMethod::Calibrated { .. } => "calibrated",
            FusionMethod::Absolute { .. } => "absolute",
        }
    }
}

/// A candidate from one leg: a memory id and that leg's raw score, best first.
pub type Candidates = Vec<(Uuid, f32)>;

/// Everything ranking needs besides the candidates.
#[derive(Clone, Debug, PartialEq)]
pub struct RankingParams {
    pub fusion: FusionMethod,
    /// The lexical leg searches the query without its stop words
    /// (`lexical::analyzer::query_tokens`).
    pub query_stop_words: bool,
    /// Both legs read a question about "the user" in the user's own first
    /// person (`super::perspective`).
    pub perspective: bool,
    /// The learned stage over every candidate (`None`: off; then the vector
    /// leg keeps the model's `min_vector_similarity` cut and the score is
    /// the product below).
    pub learned: Option<super::learned::LearnedParams>,
    /// Lowest decay factor a very old memory can reach.
    pub decay_floor: f32,
    /// How strongly importance moves the score (0 = not at all).
    pub importance_weight: f32,
    /// Hits whose final score is below this are dropped.
    pub min_score: f32,
    /// The second stage over the best candidates (`None`: off).
    pub rerank: Option<super::rerank::RerankParams>,
    /// Conversation context: the best hits lend their neighbouring turns a
    /// score (`None`: off).
    pub context: Option<super::turns::TurnContextParams>,
    /// A time the query names favours the memories created then (`None`:
    /// off; [`super::temporal`]).
    pub temporal: Option<super::temporal::TemporalParams>,
}

/// One leg's view of a fused candidate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LegScore {
    /// The leg's raw score (BM25, or cosine similarity).
    pub raw: f32,
    /// 1-based rank within the leg.
    pub rank: usize,
    /// The share of the fused score this leg gave: wᵢ · normᵢ / Σ active w.
    pub contribution: f32,
}

/// A fused candidate, before decay and importance.
#[derive(Clone, Debug, PartialEq)]
pub struct Fused {
    pub id: Uuid,
    pub bm25: Option<LegScore>,
    pub vector: Option<LegScore>,
    /// Σ of the legs' contributions, 0..=1.
    pub fused: f32,
    /// The query's scales fusion used (the same for every candidate).
    pub scales: QueryScales,
}

/// Scores mapped onto 0..1 by mean ± 3σ (sample standard deviation) of the
/// list, clamped. A list of fewer than two scores, or of equal scores, has no
/// spread: every score maps to 0.5 (the middle of the distribution).
pub fn dbsf_normalise(scores: &[f32]) -> Vec<f32> {
    let n = scores.len();
    if n < 2 {
        return vec![0.5; n];
    }
    let mean = scores.iter().map(|s| f64::from(*s)).sum::<f64>() / n as f64;
    let var = scores
        .iter()
        .map(|s| (f64::from(*s) - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    let sd = var.sqrt();
    if sd.is_nan() || sd <= f64::EPSILON * mean.abs().max(1.0) {
        return vec![0.5; n];
    }
    let low = mean - 3.0 * sd;
    scores
        .iter()
        .map(|s| ((f64::from(*s) - low) / (6.0 * sd)).clamp(0.0, 1.0) as f32)
        .collect()
}

/// Scores mapped onto 0..1 by the list's min..max. Equal scores (or one
/// score) have no spread: every score maps to 1 (each is the list's best).
pub fn min_max_normalise(scores: &[f32]) -> Vec<f32> {
    let (min, max) = scores
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(*s), hi.max(*s))
        });
    let spread = max - min;
    if spread.is_nan() || spread <= f32::EPSILON * max.abs().max(1.0) {
        return vec![1.0; scores.len()];
    }
    scores
        .iter()
        .map(|s| ((s - min) / spread).clamp(0.0, 1.0))
        .collect()
}

/// The background cosine of a query in its scope ([`QueryScales::
/// vector_background`]): the median of the `nearest` cosines the vector index
/// returned (best first, before any similarity cut) when it returned all
/// `asked` for. A scope with fewer memories than that has no background to
/// estimate: its median would be one of the few memories there, maybe the
/// one the query is about (a user with one matching memory would see its
/// cosine cancel itself).
pub fn background_cosine(nearest: &[f32], asked: usize) -> Option<f32> {
    (asked > 0 && nearest.len() >= asked)
        .then(|| super::hit::median(nearest))
        .flatten()
}

/// How much a vector candidate's cosine is raised for being in the other
/// script than the question (`[embedding.<model>] cross_script_shift_*`):
/// the model's gap between same-script and cross-script unrelated pairs,
/// times the memory's share of the other script. The question's script is
/// its majority.
pub fn cross_script_shift(
    query_cjk_share: f32,
    memory_cjk_share: f32,
    cjk_query: f32,
    latin_query: f32,
) -> f32 {
    if query_cjk_share > 0.5 {
        cjk_query * (1.0 - memory_cjk_share)
    } else {
        latin_query * memory_cjk_share
    }
}

/// One leg's candidates normalised onto 0..1 by `method`, in list order.
fn normalise_leg(
    candidates: &Candidates,
    method: FusionMethod,
    lexical: bool,
    scales: QueryScales,
) -> Vec<f32> {
    let scores: Vec<f32> = candidates.iter().map(|(_, s)| *s).collect();
    match method {
        FusionMethod::Absolute { .. }
            if lexical && scales.lexical_full_match.is_some_and(|m| m > 0.0) =>
        {
            // A cap at the full match would tie every candidate above it at
            // 1, and the vector leg alone — noise where the model does not
            // read the language — would order them.
            let full = scales.lexical_full_match.unwrap_or(1.0);
            let best = scores.iter().copied().fold(0.0f32, f32::max);
            let unit = full.max(best);
            scores.iter().map(|s| (s / unit).clamp(0.0, 1.0)).collect()
        }
        FusionMethod::Absolute {
            unrelated_cosine: u,
            paraphrase_cosine: p,
            candidate_floor,
            ..
        } if !lexical => {
            let zero = match scales.vector_background {
                Some(background) if candidate_floor => u.max(background),
                _ => u,
            };
            scores
                .iter()
                .map(|s| ((s - zero) / (p - u).max(f32::EPSILON)).clamp(0.0, 1.0))
                .collect()
        }
        FusionMethod::Rrf { k, .. } => (1..=scores.len())
            .map(|rank| (k + 1.0) / (k + rank as f32))
            .collect(),
        FusionMethod::Weighted { .. }
        | FusionMethod::Calibrated { .. }
        | FusionMethod::Absolute { .. }
            if lexical =>
        {
            let max = scores.iter().copied().fold(0.0f32, f32::max);
            scores
                .iter()
                .map(|s| if max > 0.0 { s / max } else { 0.0 })
                .collect()
        }
        FusionMethod::Weighted { .. } => scores.iter().map(|s| s.max(0.0)).collect(),
        FusionMethod::Calibrated {
            unrelated_cosine: u,
            ..
        }
        | FusionMethod::Absolute {
            unrelated_cosine: u,
            ..
        } => scores
            .iter()
            .map(|s| ((s - u) / (1.0 - u).max(f32::EPSILON)).clamp(0.0, 1.0))
            .collect(),
        FusionMethod::Dbsf { .. } => dbsf_normalise(&scores),
        FusionMethod::MinMax { .. } => min_max_normalise(&scores),
    }
}

/// Fuses two ranked candidate lists (best first; ranks are 1-based). Each
/// leg is normalised within this query's candidates, weighted, and divided by
/// the weight of the legs that returned anything, so that a candidate best in
/// every active leg scores 1. Sorted by fused score, ties broken by id.
pub fn fuse(lexical: &Candidates, vector: &Candidates, method: FusionMethod) -> Vec<Fused> {
    fuse_scaled(lexical, vector, method, QueryScales::default())
}

/// [`fuse`] with what the indexes and the embedder know about the query
/// ([`QueryScales`]); only `absolute` reads them.
pub fn fuse_scaled(
    lexical: &Candidates,
    vector: &Candidates,
    method: FusionMethod,
    scales: QueryScales,
) -> Vec<Fused> {
    let (wl, mut wv) = method.weights();
    if matches!(method, FusionMethod::Absolute { .. }) {
        wv *= scales.vector_confidence.clamp(0.0, 1.0);
    }
    let active_weight =
        (if lexical.is_empty() { 0.0 } else { wl }) + (if vector.is_empty() { 0.0 } else { wv });
    let share = |w: f32, norm: f32| {
        if active_weight > 0.0 {
            w * norm / active_weight
        } else {
            0.0
        }
    };
    let mut by_id: HashMap<Uuid, Fused> = HashMap::with_capacity(lexical.len() + vector.len());
    for (is_lexical, list, w) in [(true, lexical, wl), (false, vector, wv)] {
        let norms = normalise_leg(list, method, is_lexical, scales);
        for (rank, ((id, raw), norm)) in list.iter().zip(norms).enumerate() {
            let f = by_id
                .entry(*id)
                .or_insert_with(|| Fused::empty(*id, scales));
            let slot = if is_lexical {
                &mut f.bm25
            } else {
                &mut f.vector
            };
            // A leg lists an id once; if it repeats, the first (best) counts.
            slot.get_or_insert(LegScore {
                raw: *raw,
                rank: rank + 1,
                contribution: share(w, norm),
            });
        }
    }
    let mut out: Vec<Fused> = by_id
        .into_values()
        .map(|mut f| {
            f.fused =
                f.bm25.map_or(0.0, |l| l.contribution) + f.vector.map_or(0.0, |l| l.contribution);
            f
        })
        .collect();
    out.sort_by(|a, b| b.fused.total_cmp(&a.fused).then(a.id.cmp(&b.id)));
    out
}

impl Fused {
    fn empty(id: Uuid, scales: QueryScales) -> Self {
        Fused {
            id,
            bm25: None,
            vector: None,
            fused: 0.0,
            scales,
        }
    }
}

/// Exponential decay with a floor. `half_life_days = None` means no decay.
pub fn decay_factor(age_days: f64, half_life_days: Option<f64>, floor: f32) -> f32 {
    match half_life_days {
        Some(h) if h > 0.0 => {
            let age = age_days.max(0.0);
            let d = 0.5f64.powf(age / h) as f32;
            floor + (1.0 - floor) * d
        }
        _ => 1.0,
    }
}

/// Importance as a multiplier centred on 1 at importance 0.5.
pub fn importance_factor(importance: f32, weight: f32) -> f32 {
    1.0 + weight * (2.0 * importance.clamp(0.0, 1.0) - 1.0)
}

/// Applies decay, importance and the query's time window (`when`, with
/// `params.temporal`) to fused candidates, drops those under the threshold
/// and returns the best `top_k`. `half_life` gives the half-life in days for
/// a memory (per tier and kind, from the policy).
pub fn rank(
    fused: Vec<Fused>,
    mut memories: HashMap<Uuid, Memory>,
    now: DateTime<Utc>,
    params: &RankingParams,
    half_life: impl Fn(&Memory) -> Option<f64>,
    when: Option<&super::temporal::TimeWindow>,
    top_k: usize,
) -> Vec<Hit> {
    let absolute = matches!(params.fusion, FusionMethod::Absolute { .. });
    let when = params.temporal.zip(when);
    let mut hits: Vec<Hit> = fused
        .into_iter()
        .filter_map(|f| {
            // Each id is fused once, so its memory moves into its hit.
            let memory = memories.remove(&f.id)?;
            let age_days = (now - memory.created_at).num_milliseconds() as f64 / 86_400_000.0;
            let decay = decay_factor(age_days, half_life(&memory), params.decay_floor);
            let imp = importance_factor(memory.importance, params.importance_weight);
            let temporal = when.map(|(t, window)| {
                super::temporal::TemporalSignal::of(window, memory.created_at, t.weight)
            });
            let final_score = f.fused * decay * imp * temporal.as_ref().map_or(1.0, |t| t.factor);
            (final_score >= params.min_score).then(|| Hit {
                memory,
                score: final_score,
                breakdown: ScoreBreakdown {
                    bm25_score: f.bm25.map(|b| b.raw),
                    bm25_rank: f.bm25.map(|b| b.rank),
                    vector_similarity: f.vector.map(|v| v.raw),
                    vector_rank: f.vector.map(|v| v.rank),
                    bm25_contribution: f.bm25.map(|b| b.contribution),
                    vector_contribution: f.vector.map(|v| v.contribution),
                    fused_score: f.fused,
                    bm25_full_match_score: absolute
                        .then_some(f.scales.lexical_full_match)
                        .flatten(),
                    vector_confidence: absolute.then_some(f.scales.vector_confidence),
                    vector_background: absolute.then_some(f.scales.vector_background).flatten(),
                    vector_script_shift: None,
                    decay_factor: decay,
                    importance_factor: imp,
                    rerank: None,
                    context: None,
                    temporal,
                    learned: None,
                    final_score,
                },
            })
        })
        .collect();
    sort_hits(&mut hits);
    hits.truncate(top_k);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::hit::median;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    const RRF: FusionMethod = FusionMethod::Rrf {
        k: 60.0,
        lexical_weight: 1.0,
        vector_weight: 1.0,
    };

    /// `absolute` on a toy model (unrelated 0.5, paraphrase 0.9), no floor.
    const ABSOLUTE: FusionMethod = FusionMethod::Absolute {
        lexical_weight: 1.0,
        vector_weight: 1.0,
        unrelated_cosine: 0.5,
        paraphrase_cosine: 0.9,
        candidate_floor: false,
    };

    #[test]
    fn absolute_keeps_the_order_of_matches_above_a_full_match() {
        let method = ABSOLUTE;
        let flat = |f: &[Fused], n: u128| f.iter().find(|x| x.id == id(n)).unwrap().fused;
        let scales = QueryScales {
            lexical_full_match: Some(10.0),
            ..QueryScales::default()
        };
        // Two candidates above a full match, the weaker with a slightly
        // better cosine: BM25's order holds, the unit is the best score.
        let lexical = vec![(id(1), 20.0), (id(2), 12.0), (id(3), 5.0)];
        let vector = vec![(id(2), 0.52), (id(1), 0.51), (id(3), 0.51)];
        let fused = fuse_scaled(&lexical, &vector, method, scales);
        assert_eq!(fused[0].id, id(1));
        let lexical_share = |n: u128| {
            fused
                .iter()
                .find(|x| x.id == id(n))
                .unwrap()
                .bm25
                .unwrap()
                .contribution
        };
        assert!((lexical_share(1) - 0.5).abs() < 1e-6);
        assert!((lexical_share(2) - 0.3).abs() < 1e-6);
        assert!((lexical_share(3) - 0.125).abs() < 1e-6);
        // No candidate reaches a full match: the full match stays the unit,
        // so a weak best match stays weak.
        let weak = fuse_scaled(&vec![(id(1), 4.0)], &Vec::new(), method, scales);
        assert!((flat(&weak, 1) - 0.4).abs() < 1e-6);
    }

    #[test]
    fn a_memory_in_the_other_script_is_raised_by_its_share_of_it() {
        use crate::domain::script::cjk_share;
        assert_eq!(cjk_share("我对花生过敏"), 1.0);
        assert_eq!(cjk_share("I am allergic to peanuts"), 0.0);
        assert_eq!(cjk_share("12345 !!"), 0.5);
        // One Latin word among Chinese words keeps the text mostly Chinese.
        let mixed = cjk_share("我们公司开会都用飞书，不用 Zoom");
        assert!(mixed > 0.9 && mixed < 1.0, "{mixed}");
        let (zh_q, en_q) = (
            cjk_share("我对什么过敏"),
            cjk_share("What am I allergic to?"),
        );
        // A Chinese question: English memories get the whole shift, Chinese none.
        assert!((cross_script_shift(zh_q, 0.0, 0.09, 0.05) - 0.09).abs() < 1e-6);
        assert_eq!(cross_script_shift(zh_q, 1.0, 0.09, 0.05), 0.0);
        // An English question: Chinese memories get the other shift.
        assert!((cross_script_shift(en_q, 1.0, 0.09, 0.05) - 0.05).abs() < 1e-6);
        assert_eq!(cross_script_shift(en_q, 0.0, 0.09, 0.05), 0.0);
        // A mixed memory, in proportion.
        let half = cross_script_shift(en_q, 0.5, 0.09, 0.05);
        assert!((half - 0.025).abs() < 1e-6);
    }

    /// Fusion alone: no decay, importance, second stage, context or time.
    fn plain_params(fusion: FusionMethod) -> RankingParams {
        RankingParams {
            fusion,
            query_stop_words: true,
            perspective: false,
            learned: None,
            decay_floor: 1.0,
            importance_weight: 0.0,
            min_score: 0.0,
            rerank: None,
            context: None,
            temporal: None,
        }
    }

    #[test]
    fn clamped_ties_keep_the_legs_order() {
        // Three vector candidates below the model's zero (all fused 0) and
        // one above: the tied three come out in the leg's order, whatever
        // their ids and ages.
        let method = ABSOLUTE;
        let vector = vec![(id(9), 0.8), (id(3), 0.45), (id(1), 0.40), (id(2), 0.35)];
        let fused = fuse(&Vec::new(), &vector, method);
        let now = Utc::now();
        let memories: HashMap<Uuid, Memory> = vector
            .iter()
            .enumerate()
            .map(|(i, (id, _))| {
                // The weakest is the newest: recency must not reorder them.
                let at = now - chrono::Duration::days(10 - i as i64);
                let mut m = Memory::sample(crate::domain::Tier::LongTerm, Some("u"), "text", at);
                m.id = *id;
                (*id, m)
            })
            .collect();
        let params = plain_params(method);
        let hits = rank(fused, memories, now, &params, |_| None, None, 10);
        let order: Vec<Uuid> = hits.iter().map(|h| h.memory.id).collect();
        assert_eq!(order, [id(9), id(3), id(1), id(2)]);
        assert!(hits[1..].iter().all(|h| h.score == 0.0));
    }

    #[test]
    fn a_named_time_lifts_the_memories_told_then() {
        use crate::domain::temporal::{window_of, TemporalParams};
        // Two equally good matches, one told in June, one in September.
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2023, 10, 24, 12, 0, 0).unwrap();
        let vector = vec![(id(1), 0.9), (id(2), 0.9)];
        let fused = fuse(&Vec::new(), &vector, ABSOLUTE);
        let told = |n: u128, month: u32| {
            let at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2023, month, 10, 9, 0, 0).unwrap();
            let mut m = Memory::sample(crate::domain::Tier::LongTerm, Some("u"), "camping", at);
            m.id = id(n);
            (id(n), m)
        };
        let memories: HashMap<Uuid, Memory> = [told(1, 9), told(2, 6)].into_iter().collect();
        let mut params = RankingParams {
            temporal: Some(TemporalParams { weight: 0.5 }),
            ..plain_params(ABSOLUTE)
        };
        let june = window_of("when did she go camping in June?", now).unwrap();
        let hits = rank(
            fused.clone(),
            memories.clone(),
            now,
            &params,
            |_| None,
            Some(&june),
            10,
        );
        assert_eq!(hits[0].memory.id, id(2), "the June memory first");
        let t = hits[0].breakdown.temporal.as_ref().unwrap();
        assert!(t.in_window);
        assert_eq!(t.factor, 1.5);
        assert!((hits[0].score - 1.5 * hits[1].score).abs() < 1e-6);
        assert_eq!(hits[1].breakdown.temporal.as_ref().unwrap().factor, 1.0);
        // Off: no signal, no factor.
        params.temporal = None;
        let hits = rank(fused, memories, now, &params, |_| None, Some(&june), 10);
        assert!(hits.iter().all(|h| h.breakdown.temporal.is_none()));
        assert_eq!(hits[0].score, hits[1].score);
    }

    #[test]
    fn rrf_rewards_agreement_and_normalises_to_one() {
        let lex = vec![(id(1), 9.0), (id(2), 5.0)];
        let vec_ = vec![(id(1), 0.9), (id(3), 0.8)];
        let fused = fuse(&lex, &vec_, RRF);
        assert_eq!(fused[0].id, id(1));
        assert!((fused[0].fused - 1.0).abs() < 1e-6);
        assert_eq!(fused[0].bm25.map(|l| (l.raw, l.rank)), Some((9.0, 1)));
        assert_eq!(fused[0].vector.map(|l| (l.raw, l.rank)), Some((0.9, 1)));
        // id(2) and id(3) are each second in one leg: equal scores, ordered by id.
        assert_eq!(fused[1].id, id(2));
        assert_eq!(fused[1].fused, fused[2].fused);
    }

    #[test]
    fn one_empty_leg_still_normalises() {
        let fused = fuse(&vec![(id(7), 3.0)], &vec![], RRF);
        assert!((fused[0].fused - 1.0).abs() < 1e-6);
        let w = FusionMethod::Weighted {
            lexical_weight: 0.5,
            vector_weight: 0.5,
        };
        let fused = fuse(&vec![], &vec![(id(7), 0.6), (id(8), -0.2)], w);
        assert!((fused[0].fused - 0.6).abs() < 1e-6);
        assert_eq!(fused[1].fused, 0.0);
    }

    #[test]
    fn weighted_fusion_uses_scores_not_ranks() {
        let w = FusionMethod::Weighted {
            lexical_weight: 0.5,
            vector_weight: 0.5,
        };
        let lex = vec![(id(1), 10.0), (id(2), 9.9)];
        let vec_ = vec![(id(2), 0.9), (id(1), 0.1)];
        let fused = fuse(&lex, &vec_, w);
        assert_eq!(fused[0].id, id(2));
    }

    #[test]
    fn decay_halves_at_the_half_life_above_the_floor() {
        assert_eq!(decay_factor(0.0, Some(30.0), 0.0), 1.0);
        assert!((decay_factor(30.0, Some(30.0), 0.0) - 0.5).abs() < 1e-6);
        assert!((decay_factor(30.0, Some(30.0), 0.2) - 0.6).abs() < 1e-6);
        assert!((decay_factor(1e6, Some(30.0), 0.2) - 0.2).abs() < 1e-6);
        assert_eq!(decay_factor(1e6, None, 0.2), 1.0);
        // A memory from the future (clock skew) is not boosted.
        assert_eq!(decay_factor(-5.0, Some(30.0), 0.0), 1.0);
    }

    #[test]
    fn importance_is_neutral_at_one_half() {
        assert_eq!(importance_factor(0.5, 0.3), 1.0);
        assert!((importance_factor(1.0, 0.3) - 1.3).abs() < 1e-6);
        assert!((importance_factor(0.0, 0.3) - 0.7).abs() < 1e-6);
        assert_eq!(importance_factor(0.9, 0.0), 1.0);
    }

    const DBSF: FusionMethod = FusionMethod::Dbsf {
        lexical_weight: 1.0,
        vector_weight: 1.0,
    };
    const MIN_MAX: FusionMethod = FusionMethod::MinMax {
        lexical_weight: 1.0,
        vector_weight: 1.0,
    };
    const WEIGHTED: FusionMethod = FusionMethod::Weighted {
        lexical_weight: 1.0,
        vector_weight: 1.0,
    };

    #[test]
    fn dbsf_maps_three_sigma_onto_the_unit_interval() {
        // mean 2, sample sd 1: 2 ± 3 → 0..1.
        let n = dbsf_normalise(&[1.0, 2.0, 3.0]);
        for (got, want) in n.iter().zip([2.0 / 6.0, 0.5, 4.0 / 6.0]) {
            assert!((got - want).abs() < 1e-6, "{n:?}");
        }
        // An outlier beyond 3σ is clamped; nothing leaves 0..1.
        let mut scores = vec![0.0f32; 30];
        scores.push(100.0);
        let n = dbsf_normalise(&scores);
        assert_eq!(n[30], 1.0);
        assert!(n.iter().all(|v| (0.0..=1.0).contains(v)));
        // No spread: the middle.
        assert_eq!(dbsf_normalise(&[0.8]), vec![0.5]);
        assert_eq!(dbsf_normalise(&[0.8, 0.8]), vec![0.5, 0.5]);
        assert!(dbsf_normalise(&[]).is_empty());
    }

    #[test]
    fn min_max_spans_the_unit_interval() {
        assert_eq!(min_max_normalise(&[4.0, 3.0, 2.0]), vec![1.0, 0.5, 0.0]);
        assert_eq!(min_max_normalise(&[0.7]), vec![1.0]);
        assert_eq!(min_max_normalise(&[0.7, 0.7]), vec![1.0, 1.0]);
    }

    /// The issue's case: e5-like cosines (0.78–0.84) beside BM25 scores. The
    /// vector leg clearly prefers id 2, BM25 mildly prefers id 1.
    fn compressed_cosines() -> (Candidates, Candidates) {
        let lex = vec![(id(1), 12.0), (id(2), 10.0), (id(3), 2.0), (id(4), 1.0)];
        let vec_ = vec![(id(2), 0.84), (id(1), 0.79), (id(3), 0.785), (id(4), 0.78)];
        (lex, vec_)
    }

    fn calibrated(u: f32) -> FusionMethod {
        FusionMethod::Calibrated {
            lexical_weight: 1.0,
            vector_weight: 1.0,
            unrelated_cosine: u,
        }
    }

    #[test]
    fn weighted_fusion_lets_bm25_decide_when_cosines_are_compressed() {
        let (lex, vec_) = compressed_cosines();
        assert_eq!(fuse(&lex, &vec_, WEIGHTED)[0].id, id(1));
        for method in [DBSF, MIN_MAX, calibrated(0.75)] {
            let fused = fuse(&lex, &vec_, method);
            assert_eq!(fused[0].id, id(2), "{}", method.name());
        }
    }

    #[test]
    fn contributions_sum_to_the_fused_score_and_keep_raw_scores() {
        let (lex, vec_) = compressed_cosines();
        for method in [RRF, WEIGHTED, DBSF, MIN_MAX, calibrated(0.75)] {
            for f in fuse(&lex, &vec_, method) {
                let sum = f.bm25.unwrap().contribution + f.vector.unwrap().contribution;
                assert!((sum - f.fused).abs() < 1e-6, "{}", method.name());
                assert!((0.0..=1.0 + 1e-6).contains(&f.fused), "{}", method.name());
            }
        }
        let f = fuse(&lex, &vec_, DBSF);
        let two = f.iter().find(|f| f.id == id(2)).unwrap();
        assert_eq!(two.bm25.map(|l| (l.raw, l.rank)), Some((10.0, 2)));
        assert_eq!(two.vector.map(|l| (l.raw, l.rank)), Some((0.84, 1)));
    }

    #[test]
    fn a_candidate_of_one_leg_gets_nothing_from_the_other() {
        let lex = vec![(id(1), 5.0), (id(2), 1.0)];
        let vec_ = vec![(id(3), 0.9), (id(2), 0.2)];
        for method in [DBSF, MIN_MAX] {
            let fused = fuse(&lex, &vec_, method);
            let one = fused.iter().find(|f| f.id == id(1)).unwrap();
            assert!(one.vector.is_none());
            assert_eq!(one.fused, one.bm25.unwrap().contribution);
        }
    }

    #[test]
    fn calibration_maps_the_unrelated_level_to_zero_and_keeps_a_flat_leg_flat() {
        let c = calibrated(0.75);
        let lex = vec![(id(1), 3.0), (id(2), 1.0)];
        let vec_ = vec![(id(2), 0.875), (id(1), 0.7)];
        let f = fuse(&lex, &vec_, c);
        let two = f.iter().find(|f| f.id == id(2)).unwrap();
        assert!(
            (two.vector.unwrap().contribution - 0.25).abs() < 1e-6,
            "(0.875-0.75)/0.25/2"
        );
        let one = f.iter().find(|f| f.id == id(1)).unwrap();
        assert_eq!(
            one.vector.unwrap().contribution,
            0.0,
            "below the unrelated level"
        );
        // A leg that gives every candidate ≈ the same cosine (MiniLM on
        // Chinese) leaves BM25's order alone, where DBSF would stretch the
        // differences in the fourth decimal into the whole 0..1.
        let lex = vec![(id(1), 10.0), (id(2), 9.0), (id(3), 8.0)];
        let flat = vec![(id(3), 0.9903), (id(2), 0.9902), (id(1), 0.9901)];
        let order = |m| {
            fuse(&lex, &flat, m)
                .iter()
                .map(|f| f.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(order(calibrated(0.1)), vec![id(1), id(2), id(3)]);
        let spread = |m| {
            let c: Vec<f32> = fuse(&lex, &flat, m)
                .iter()
                .map(|f| f.vector.unwrap().contribution)
                .collect();
            c.iter().copied().fold(f32::MIN, f32::max) - c.iter().copied().fold(f32::MAX, f32::min)
        };
        assert!(spread(calibrated(0.1)) < 1e-3);
        assert!(spread(DBSF) > 0.1);
        // Today's weighted fusion is calibration at 0.
        let (lex, vec_) = compressed_cosines();
        assert_eq!(
            scores_of(&fuse(&lex, &vec_, calibrated(0.0))),
            scores_of(&fuse(&lex, &vec_, WEIGHTED))
        );
    }

    fn absolute(u: f32, p: f32) -> FusionMethod {
        FusionMethod::Absolute {
            lexical_weight: 1.0,
            vector_weight: 1.0,
            unrelated_cosine: u,
            paraphrase_cosine: p,
            candidate_floor: false,
        }
    }

    fn scales(lexical_full_match: f32, vector_confidence: f32) -> QueryScales {
        QueryScales {
            lexical_full_match: Some(lexical_full_match),
            vector_confidence,
            vector_background: None,
        }
    }

    #[test]
    fn absolute_fusion_keeps_a_weak_lexical_match_low() {
        // The zh_paraphrase case: the memory that answers shares no word with
        // the query (vector only, cos 0.88 with e5); a distractor shares one
        // common word (BM25 2.0 of an attainable 20) and is unrelated to the
        // vector leg (0.80). bm25/max gives the distractor 1.0 and the win.
        let lex = vec![(id(1), 2.0)];
        let vec_ = vec![(id(2), 0.88), (id(1), 0.80)];
        assert_eq!(fuse(&lex, &vec_, calibrated(0.78))[0].id, id(1));
        let f = fuse_scaled(&lex, &vec_, absolute(0.78, 0.92), scales(20.0, 1.0));
        assert_eq!(f[0].id, id(2));
        let one = f.iter().find(|f| f.id == id(1)).unwrap();
        assert!(
            (one.bm25.unwrap().contribution - 0.05).abs() < 1e-6,
            "2/20/2"
        );
        // The paraphrase cosine is the vector leg's 1: (0.92-0.78)/0.14 = 1.
        let f = fuse_scaled(
            &vec![],
            &vec![(id(3), 0.92)],
            absolute(0.78, 0.92),
            scales(20.0, 1.0),
        );
        assert!((f[0].fused - 1.0).abs() < 1e-5);
        // A strong lexical match still wins over a middling cosine.
        let lex = vec![(id(1), 16.0)];
        let vec_ = vec![(id(2), 0.84), (id(1), 0.79)];
        let f = fuse_scaled(&lex, &vec_, absolute(0.78, 0.92), scales(20.0, 1.0));
        assert_eq!(f[0].id, id(1));
    }

    #[test]
    fn a_vector_leg_that_cannot_read_the_query_loses_its_say() {
        // MiniLM on Chinese: cosines ≈ 0.5–0.99 whatever the text, most tokens
        // [UNK]. With confidence 0 the order is BM25's and the fused score is
        // the lexical share alone; with 1 the vector leg would decide.
        let lex = vec![(id(1), 10.0), (id(2), 5.0)];
        let vec_ = vec![(id(2), 0.99), (id(1), 0.5)];
        let m = absolute(0.1, 0.8);
        assert_eq!(fuse_scaled(&lex, &vec_, m, scales(20.0, 1.0))[0].id, id(2));
        let f = fuse_scaled(&lex, &vec_, m, scales(20.0, 0.0));
        assert_eq!(f[0].id, id(1));
        assert!(
            (f[0].fused - 0.5).abs() < 1e-6,
            "10/20, the lexical leg alone"
        );
        assert_eq!(f[0].vector.unwrap().contribution, 0.0);
        // Without an index scale, the lexical leg falls back to bm25/max.
        let f = fuse_scaled(&lex, &vec![], m, QueryScales::default());
        assert!((f[0].fused - 1.0).abs() < 1e-6);
    }

    #[test]
    fn the_candidate_floor_lifts_the_zero_to_the_background_median() {
        // Turns of one conversation: every nearest neighbour sits above the
        // model's unrelated level (0.1). The floor takes their median (0.4)
        // as the zero; without it the shared topic counts as evidence.
        let vec_ = vec![
            (id(1), 0.6),
            (id(2), 0.45),
            (id(3), 0.4),
            (id(4), 0.35),
            (id(5), 0.3),
        ];
        let floor = FusionMethod::Absolute {
            lexical_weight: 1.0,
            vector_weight: 1.0,
            unrelated_cosine: 0.1,
            paraphrase_cosine: 0.8,
            candidate_floor: true,
        };
        let cosines: Vec<f32> = vec_.iter().map(|(_, s)| *s).collect();
        let full = QueryScales {
            vector_background: background_cosine(&cosines, 5),
            ..scales(1.0, 1.0)
        };
        assert_eq!(full.vector_background, Some(0.4));
        let f = fuse_scaled(&vec![], &vec_, floor, full);
        let of = |f: &[Fused], i| f.iter().find(|x| x.id == id(i)).unwrap().fused;
        assert!((of(&f, 1) - 0.2 / 0.7).abs() < 1e-6);
        assert_eq!(of(&f, 3), 0.0);
        assert_eq!(of(&f, 5), 0.0);
        let plain = fuse_scaled(&vec![], &vec_, absolute(0.1, 0.8), full);
        assert!((of(&plain, 3) - 0.3 / 0.7).abs() < 1e-6);
        // A scope with fewer memories than the leg asked for has no
        // background: every memory there is a candidate, and the median
        // would be one of them (a user's only matching memory would cancel
        // itself). The model's level stays the zero.
        assert_eq!(background_cosine(&cosines, 6), None);
        assert_eq!(background_cosine(&cosines[..1], 50), None);
        let few = fuse_scaled(&vec![], &vec_[..1].to_vec(), floor, scales(1.0, 1.0));
        assert!((of(&few, 1) - 0.5 / 0.7).abs() < 1e-6);
        // A background below the model's level leaves its zero alone.
        let low = vec![(id(1), 0.3), (id(2), 0.05), (id(3), 0.0)];
        let low_scales = QueryScales {
            vector_background: background_cosine(&[0.3, 0.05, 0.0], 3),
            ..scales(1.0, 1.0)
        };
        let f = fuse_scaled(&vec![], &low, floor, low_scales);
        assert!((of(&f, 1) - 0.2 / 0.7).abs() < 1e-6);
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0]), Some(2.0));
    }

    fn scores_of(f: &[Fused]) -> Vec<(Uuid, f32)> {
        f.iter().map(|f| (f.id, f.fused)).collect()
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn leg(max_len: usize) -> impl Strategy<Value = Vec<(u8, f32)>> {
            prop::collection::vec((0u8..40, 0.0f32..1.0), 0..max_len)
        }

        /// Distinct ids, sorted best first, as a leg returns them.
        fn candidates(raw: Vec<(u8, f32)>) -> Candidates {
            let mut seen = std::collections::HashSet::new();
            let mut c: Candidates = raw
                .into_iter()
                .filter(|(i, _)| seen.insert(*i))
                .map(|(i, s)| (id(u128::from(i)), s))
                .collect();
            c.sort_by(|a, b| b.1.total_cmp(&a.1));
            c
        }

        fn scores(f: &[Fused]) -> HashMap<Uuid, f32> {
            f.iter().map(|f| (f.id, f.fused)).collect()
        }

        proptest! {
            /// The scale-free methods give every candidate the same fused
            /// score (hence the same order) when one leg's scores go through
            /// s ↦ a·s + b, a > 0: a model with compressed or shifted cosines,
            /// or BM25 on a bigger corpus.
            #[test]
            fn scale_free_methods_ignore_an_affine_change_of_a_leg(
                lex in leg(30), vec_ in leg(30),
                a in 0.05f32..20.0, b in -5.0f32..5.0, which in any::<bool>(),
            ) {
                let (lex, vec_) = (candidates(lex), candidates(vec_));
                let warp = |c: &Candidates| -> Candidates {
                    c.iter().map(|(i, s)| (*i, a * s + b)).collect()
                };
                let (lex2, vec2) = if which { (warp(&lex), vec_.clone()) } else { (lex.clone(), warp(&vec_)) };
                for method in [DBSF, MIN_MAX, RRF] {
                    let before = scores(&fuse(&lex, &vec_, method));
                    let after = scores(&fuse(&lex2, &vec2, method));
                    prop_assert_eq!(before.len(), after.len());
                    for (i, s) in &before {
                        prop_assert!((s - after[i]).abs() < 2e-3,
                            "{}: {} → {}", method.name(), s, after[i]);
                    }
                }
            }

            /// `calibrated` is invariant when the model's cosines move by
            /// c ↦ 1 − a·(1 − c) (a compressed model, cosines still ≤ 1) and
            /// its calibration moves with them.
            #[test]
            fn calibrated_fusion_moves_with_the_models_calibration(
                lex in leg(30), vec_ in leg(30), a in 0.05f32..1.0, u in 0.0f32..0.5,
            ) {
                let (lex, vec_) = (candidates(lex), candidates(vec_));
                let squeeze = |c: f32| 1.0 - a * (1.0 - c);
                let vec2: Candidates = vec_.iter().map(|(i, s)| (*i, squeeze(*s))).collect();
                let before = scores(&fuse(&lex, &vec_, calibrated(u)));
                let after = scores(&fuse(&lex, &vec2, calibrated(squeeze(u))));
                prop_assert_eq!(before.len(), after.len());
                for (i, s) in &before {
                    prop_assert!((s - after[i]).abs() < 2e-3, "{} → {}", s, after[i]);
                }
            }

            #[test]
            fn fused_scores_stay_in_the_unit_interval_and_sorted(
                lex in leg(30), vec_ in leg(30), wl in 0.0f32..3.0, wv in 0.01f32..3.0, c in 0.0f32..=1.0,
            ) {
                let (lex, vec_) = (candidates(lex), candidates(vec_));
                for method in [
                    FusionMethod::Calibrated { lexical_weight: wl, vector_weight: wv, unrelated_cosine: 0.7 },
                    FusionMethod::Absolute { lexical_weight: wl, vector_weight: wv, unrelated_cosine: 0.1, paraphrase_cosine: 0.8, candidate_floor: false },
                    FusionMethod::Absolute { lexical_weight: wl, vector_weight: wv, unrelated_cosine: 0.1, paraphrase_cosine: 0.8, candidate_floor: true },
                    FusionMethod::Dbsf { lexical_weight: wl, vector_weight: wv },
                    FusionMethod::MinMax { lexical_weight: wl, vector_weight: wv },
                    FusionMethod::Weighted { lexical_weight: wl, vector_weight: wv },
                    FusionMethod::Rrf { k: 10.0, lexical_weight: wl, vector_weight: wv },
                ] {
                    let fused = fuse_scaled(&lex, &vec_, method, QueryScales { lexical_full_match: Some(0.5), vector_confidence: c, vector_background: None });
                    let ids: std::collections::HashSet<Uuid> =
                        lex.iter().chain(&vec_).map(|(i, _)| *i).collect();
                    prop_assert_eq!(fused.len(), ids.len());
                    for w in fused.windows(2) {
                        prop_assert!(w[0].fused >= w[1].fused);
                    }
                    for f in &fused {
                        prop_assert!((0.0..=1.0 + 1e-5).contains(&f.fused), "{}: {}", method.name(), f.fused);
                    }
                }
            }
        }

        #[test]
        fn weighted_fusion_is_not_scale_free() {
            // The counter-example the property above would find for
            // `weighted`: compressing the cosines into 0.78..0.84 flips the
            // order, because the cosine enters raw.
            let lex = vec![(id(1), 12.0), (id(2), 10.0)];
            let vec_ = vec![(id(2), 0.6), (id(1), 0.1)];
            assert_eq!(fuse(&lex, &vec_, WEIGHTED)[0].id, id(2));
            let squeezed: Candidates = vec_.iter().map(|(i, s)| (*i, 0.78 + 0.1 * s)).collect();
            assert_eq!(fuse(&lex, &squeezed, WEIGHTED)[0].id, id(1));
            assert_eq!(
                fuse(&lex, &squeezed, DBSF)[0].id,
                fuse(&lex, &vec_, DBSF)[0].id
            );
        }
    }
}
