//! A ranked memory and why it scored what it did: the hit, its score
//! breakdown (with the signals each stage records in it), and the order of
//! hits. The lowest floor of ranking: `ranking`, `rerank`, `turns` and
//! `learned` all build on it, and it needs none of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::temporal::TemporalSignal;
use super::Memory;

/// Why a hit scored what it did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScoreBreakdown {
    /// The lexical leg's raw BM25 score (admin keys only: its idf is the
    /// whole index's, every tenant's, see [`ScoreBreakdown::for_non_admin`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bm25_score: Option<f32>,
    /// The lexical leg's rank (absent: not a BM25 candidate).
    pub bm25_rank: Option<usize>,
    /// The vector leg's raw cosine similarity and rank.
    pub vector_similarity: Option<f32>,
    pub vector_rank: Option<usize>,
    /// What each leg added to `fused_score` after normalisation within the
    /// query's candidates and weighting (they sum to `fused_score`).
    #[serde(default)]
    pub bm25_contribution: Option<f32>,
    #[serde(default)]
    pub vector_contribution: Option<f32>,
    pub fused_score: f32,
    /// `absolute` fusion's unit of the lexical leg: the BM25 score of a full
    /// match of the query (Σ idf over its terms). Admin keys only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bm25_full_match_score: Option<f32>,
    /// `absolute` fusion's confidence in the vector leg for this query (the
    /// share of its tokens the model knows), which multiplied its weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_confidence: Option<f32>,
    /// `absolute` fusion's background cosine for this query in its scope
    /// (the median of the vector index's nearest neighbours, present when
    /// the scope holds at least as many memories as the leg asked for):
    /// with the candidate floor, the vector leg's zero when above the
    /// model's `unrelated_cosine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_background: Option<f32>,
    /// How much `vector_similarity` was raised because the memory is in
    /// another script than the query (`[embedding.<model>]
    /// cross_script_shift_*`); `vector_similarity` includes it, the model's
    /// own cosine is the difference. Absent when 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_script_shift: Option<f32>,
    pub decay_factor: f32,
    pub importance_factor: f32,
    /// What the second stage saw and the factor it applied (absent: the hit
    /// was not in its window, or the stage is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankSignals>,
    /// The hit beside this turn in its conversation that lifted its score
    /// (absent: it holds its own score; `[retrieval.conversation]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<TurnContext>,
    /// The time the query named, and whether this memory was created then
    /// (absent: the query names no time, or `[retrieval.temporal]` is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal: Option<TemporalSignal>,
    /// The learned stage's features, what each added, and the probability
    /// of relevance it gave (absent: the stage is off; `domain::learned`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<LearnedSignals>,
    /// With the learned stage, its probability of relevance; without it,
    /// fused · decay · importance · temporal (· the second stage's factor);
    /// or the score a neighbouring turn lent it when that is higher.
    pub final_score: f32,
}

impl ScoreBreakdown {
    /// The breakdown as a key that is not admin sees it: without the figures
    /// that read the index's corpus statistics out directly. BM25's idf is
    /// computed over the whole index, every tenant's documents, so the raw
    /// `bm25_score` of a one-term query and the full-match score (Σ idf)
    /// give away how many documents anywhere hold a term — a rare term's
    /// presence in another tenant. Ranks, the normalised contributions and
    /// the final score stay (what remains through them: docs/design/lexical.md,
    /// "BM25 statistics and tenants").
    pub fn for_non_admin(self) -> Self {
        ScoreBreakdown {
            bm25_score: None,
            bm25_full_match_score: None,
            ..self
        }
    }
}

/// A ranked memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub memory: Memory,
    pub score: f32,
    pub breakdown: ScoreBreakdown,
}

impl Hit {
    /// A hit whose every factor is neutral (score = fused = final); for tests
    /// and callers that rank by other means.
    pub fn unranked(memory: Memory, score: f32) -> Self {
        Hit {
            memory,
            score,
            breakdown: ScoreBreakdown {
                bm25_score: None,
                bm25_rank: None,
                vector_similarity: None,
                vector_rank: None,
                bm25_contribution: None,
                vector_contribution: None,
                fused_score: score,
                bm25_full_match_score: None,
                vector_confidence: None,
                vector_background: None,
                vector_script_shift: None,
                decay_factor: 1.0,
                importance_factor: 1.0,
                rerank: None,
                context: None,
                temporal: None,
                learned: None,
                final_score: score,
            },
        }
    }
}

/// What the second stage saw in one hit (part of its `ScoreBreakdown`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RerankSignals {
    /// Share (idf-weighted) of the query's adjacent term pairs found
    /// adjacent in the memory, 0..=1.
    pub phrase: f32,
    /// A newer memory of the same owner matches the same query terms.
    pub older_duplicate: bool,
    /// The multiplier the stage applied to the score.
    pub factor: f32,
}

/// Why a hit holds its score through conversation context (part of its
/// `ScoreBreakdown`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TurnContext {
    /// The hit this turn is beside, which lent it its score.
    pub beside: Uuid,
    /// The score lent: `weight` × that hit's score.
    pub lent_score: f32,
}

/// What the stage saw in one hit and what each feature added to its
/// log-odds (part of its `ScoreBreakdown`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LearnedSignals {
    /// Each feature's value, by name.
    pub features: BTreeMap<String, f32>,
    /// weight × value, by name (features that add nothing are left out).
    pub contributions: BTreeMap<String, f32>,
    /// The model's bias (log-odds before any feature).
    pub bias: f32,
    /// σ(bias + Σ contributions): the hit's probability of relevance.
    pub relevance: f32,
}

/// Best first; at equal scores the hit the legs ranked higher together
/// ([`leg_ranks_tie_break`]), then the newer memory, then the smaller id.
pub fn sort_hits(hits: &mut [Hit]) {
    hits.sort_by(compare_hits);
}

/// The order of [`sort_hits`].
pub fn compare_hits(a: &Hit, b: &Hit) -> std::cmp::Ordering {
    // The tie-breaks only run for equal scores (`then_with` is lazy).
    b.score
        .total_cmp(&a.score)
        .then_with(|| {
            leg_ranks_tie_break(&b.breakdown).total_cmp(&leg_ranks_tie_break(&a.breakdown))
        })
        .then_with(|| b.memory.created_at.cmp(&a.memory.created_at))
        .then_with(|| a.memory.id.cmp(&b.memory.id))
}

/// What orders hits of equal score: Σ over the legs that listed the hit of
/// 1 / (60 + rank), reciprocal rank fusion. Scores tie where normalisation
/// clamped them — every vector candidate below the model's zero scores 0,
/// every cosine above its paraphrase level 1 — and the legs' own order
/// still holds what the clamp dropped (which of two weak matches is the
/// nearer). Without it such ties fell to recency and then to the ids' random
/// low bits.
fn leg_ranks_tie_break(b: &ScoreBreakdown) -> f32 {
    [b.bm25_rank, b.vector_rank]
        .into_iter()
        .flatten()
        .map(|rank| 1.0 / (60.0 + rank as f32))
        .sum()
}

/// The median of `scores` (`None` when empty).
pub(crate) fn median(scores: &[f32]) -> Option<f32> {
    let mut s = scores.to_vec();
    s.sort_by(f32::total_cmp);
    let n = s.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        }
    })
}
