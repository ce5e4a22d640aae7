//! Hybrid ranking: fuse the lexical and vector candidate lists, then weight by
//! time decay and importance. Pure functions over plain numbers; the service
//! feeds them candidates and memories, the policy feeds them parameters.
//!
//! ```text
//! fused      = RRF or weighted combination, normalised to 0..=1
//! decay      = floor + (1 - floor) · 0.5^(age / half_life)      (1 when no half-life)
//! importance = 1 + weight · (2 · importance - 1)                (1 at importance 0.5)
//! final      = fused · decay · importance
//! ```

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::Memory;

/// How the two candidate lists are combined.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum FusionMethod {
    /// Reciprocal rank fusion: Σ wᵢ / (k + rankᵢ). Scale-free, robust to
    /// score distributions that differ between legs.
    Rrf {
        k: f32,
        lexical_weight: f32,
        vector_weight: f32,
    },
    /// Normalised score combination: wₗ · bm25/max(bm25) + wᵥ · max(cos, 0).
    Weighted {
        lexical_weight: f32,
        vector_weight: f32,
    },
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
            } => (lexical_weight, vector_weight),
        }
    }
}

/// A candidate from one leg: a memory id and that leg's raw score, best first.
pub type Candidates = Vec<(Uuid, f32)>;

/// Everything ranking needs besides the candidates.
#[derive(Clone, Debug, PartialEq)]
pub struct RankingParams {
    pub fusion: FusionMethod,
    /// Lowest decay factor a very old memory can reach.
    pub decay_floor: f32,
    /// How strongly importance moves the score (0 = not at all).
    pub importance_weight: f32,
    /// Hits whose final score is below this are dropped.
    pub min_score: f32,
}

/// A fused candidate, before decay and importance.
#[derive(Clone, Debug, PartialEq)]
pub struct Fused {
    pub id: Uuid,
    pub bm25: Option<(f32, usize)>,
    pub vector: Option<(f32, usize)>,
    pub fused: f32,
}

/// Fuses two ranked candidate lists. Ranks are 1-based. The result is sorted
/// by fused score, ties broken by id for determinism.
pub fn fuse(lexical: &Candidates, vector: &Candidates, method: FusionMethod) -> Vec<Fused> {
    let mut by_id: HashMap<Uuid, Fused> = HashMap::with_capacity(lexical.len() + vector.len());
    for (rank, (id, score)) in lexical.iter().enumerate() {
        by_id
            .entry(*id)
            .or_insert_with(|| Fused::empty(*id))
            .bm25
            .get_or_insert((*score, rank + 1));
    }
    for (rank, (id, score)) in vector.iter().enumerate() {
        by_id
            .entry(*id)
            .or_insert_with(|| Fused::empty(*id))
            .vector
            .get_or_insert((*score, rank + 1));
    }
    let (wl, wv) = method.weights();
    // Normalise so that a hit ranked first (or best) by every active leg scores 1.
    let active_weight =
        (if lexical.is_empty() { 0.0 } else { wl }) + (if vector.is_empty() { 0.0 } else { wv });
    let max_bm25 = lexical.iter().map(|(_, s)| *s).fold(0.0f32, f32::max);
    for f in by_id.values_mut() {
        let raw = match method {
            FusionMethod::Rrf { k, .. } => {
                let l = f.bm25.map_or(0.0, |(_, r)| wl / (k + r as f32));
                let v = f.vector.map_or(0.0, |(_, r)| wv / (k + r as f32));
                (l + v) * (k + 1.0)
            }
            FusionMethod::Weighted { .. } => {
                let l = f.bm25.map_or(
                    0.0,
                    |(s, _)| if max_bm25 > 0.0 { s / max_bm25 } else { 0.0 },
                );
                let v = f.vector.map_or(0.0, |(s, _)| s.max(0.0));
                wl * l + wv * v
            }
        };
        f.fused = if active_weight > 0.0 {
            raw / active_weight
        } else {
            0.0
        };
    }
    let mut out: Vec<Fused> = by_id.into_values().collect();
    out.sort_by(|a, b| b.fused.total_cmp(&a.fused).then(a.id.cmp(&b.id)));
    out
}

impl Fused {
    fn empty(id: Uuid) -> Self {
        Fused {
            id,
            bm25: None,
            vector: None,
            fused: 0.0,
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

/// Why a hit scored what it did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScoreBreakdown {
    pub bm25_score: Option<f32>,
    pub bm25_rank: Option<usize>,
    pub vector_similarity: Option<f32>,
    pub vector_rank: Option<usize>,
    pub fused_score: f32,
    pub decay_factor: f32,
    pub importance_factor: f32,
    pub final_score: f32,
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
                fused_score: score,
                decay_factor: 1.0,
                importance_factor: 1.0,
                final_score: score,
            },
        }
    }
}

/// Applies decay and importance to fused candidates, drops those under the
/// threshold and returns the best `top_k`. `half_life` gives the half-life in
/// days for a memory (per tier and kind, from the policy).
pub fn rank(
    fused: Vec<Fused>,
    memories: &HashMap<Uuid, Memory>,
    now: DateTime<Utc>,
    params: &RankingParams,
    half_life: impl Fn(&Memory) -> Option<f64>,
    top_k: usize,
) -> Vec<Hit> {
    let mut hits: Vec<Hit> = fused
        .into_iter()
        .filter_map(|f| {
            let memory = memories.get(&f.id)?;
            let age_days = (now - memory.created_at).num_milliseconds() as f64 / 86_400_000.0;
            let decay = decay_factor(age_days, half_life(memory), params.decay_floor);
            let imp = importance_factor(memory.importance, params.importance_weight);
            let final_score = f.fused * decay * imp;
            (final_score >= params.min_score).then(|| Hit {
                memory: memory.clone(),
                score: final_score,
                breakdown: ScoreBreakdown {
                    bm25_score: f.bm25.map(|b| b.0),
                    bm25_rank: f.bm25.map(|b| b.1),
                    vector_similarity: f.vector.map(|v| v.0),
                    vector_rank: f.vector.map(|v| v.1),
                    fused_score: f.fused,
                    decay_factor: decay,
                    importance_factor: imp,
                    final_score,
                },
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.memory.created_at.cmp(&a.memory.created_at))
            .then(a.memory.id.cmp(&b.memory.id))
    });
    hits.truncate(top_k);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    const RRF: FusionMethod = FusionMethod::Rrf {
        k: 60.0,
        lexical_weight: 1.0,
        vector_weight: 1.0,
    };

    #[test]
    fn rrf_rewards_agreement_and_normalises_to_one() {
        let lex = vec![(id(1), 9.0), (id(2), 5.0)];
        let vec_ = vec![(id(1), 0.9), (id(3), 0.8)];
        let fused = fuse(&lex, &vec_, RRF);
        assert_eq!(fused[0].id, id(1));
        assert!((fused[0].fused - 1.0).abs() < 1e-6);
        assert_eq!(fused[0].bm25, Some((9.0, 1)));
        assert_eq!(fused[0].vector, Some((0.9, 1)));
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
}
