//! What a search decides once the legs have answered: the store's copy of
//! each candidate checked against the plan, the vector leg aligned across
//! scripts and cut, both legs fused, decay, importance and the named time
//! applied, the learned stage (or the second stage) scoring them, and the
//! best `window` kept. Pure: no I/O, no `await`; the service gathers, this
//! decides (`mod.rs`), and `mnemo tune` re-decides cached candidates.

use std::collections::HashMap;

use uuid::Uuid;

use super::plan::QueryPlan;
use crate::domain::ranking::{self, Candidates, Hit};
use crate::domain::rerank::{self, QueryTerms};
use crate::domain::temporal::TimeWindow;
use crate::domain::{learned, script, Memory};

/// What the legs returned, and what the query's text says.
#[derive(Clone, Debug, Default)]
pub struct Gathered {
    /// The lexical leg's candidates, best first.
    pub lexical: Candidates,
    /// The vector leg's candidates, best first, uncut.
    pub vector: Candidates,
    /// The store's copy of every candidate (not yet checked against the plan).
    pub memories: HashMap<Uuid, Memory>,
    /// The query as the lexical index reads it (`None`: leg not run).
    pub terms: Option<QueryTerms>,
    /// The share of the query's tokens the embedding model knows.
    pub vector_confidence: f32,
    /// The time the query names, resolved against its time.
    pub when: Option<TimeWindow>,
}

/// The vector leg's background cosine ([`ranking::background_cosine`]),
/// taken from the whole list, then the cut, if any.
fn background_then_cut(vector: &mut Candidates, asked: usize, cut: Option<f32>) -> Option<f32> {
    let nearest: Vec<f32> = vector.iter().map(|(_, s)| *s).collect();
    let background = ranking::background_cosine(&nearest, asked);
    if let Some(min) = cut {
        vector.retain(|(_, s)| *s >= min);
    }
    background
}

/// Raises each vector candidate in the other script than the query by the
/// model's cross-script shift (`[embedding.<model>] cross_script_shift_*`)
/// and sorts the list again; returns the shift of each raised candidate.
fn align_scripts(
    plan: &QueryPlan,
    vector: &mut Candidates,
    memories: &HashMap<Uuid, Memory>,
) -> HashMap<Uuid, f32> {
    let mut shifts = HashMap::new();
    let query_cjk = script::cjk_share(&plan.search_text);
    for (id, cosine) in vector.iter_mut() {
        let Some(m) = memories.get(id) else { continue };
        let shift = ranking::cross_script_shift(
            query_cjk,
            script::cjk_share(&m.text),
            plan.script_shift.0,
            plan.script_shift.1,
        );
        if shift > 0.0 {
            *cosine += shift;
            shifts.insert(*id, shift);
        }
    }
    vector.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    shifts
}

/// The ranked hits of a search, best first, at most `plan.window` of them.
/// `half_life` gives a memory's decay half-life in days; `analyze` is the
/// lexical analyser (for the second stage).
pub fn decide(
    plan: &QueryPlan,
    gathered: Gathered,
    half_life: impl Fn(&Memory) -> Option<f64>,
    analyze: impl Fn(&str) -> Vec<String>,
) -> Vec<Hit> {
    let Gathered {
        lexical,
        mut vector,
        mut memories,
        terms,
        vector_confidence,
        when,
    } = gathered;
    memories.retain(|_, m| plan.admits(m));
    let shifts = if plan.aligns_scripts() {
        align_scripts(plan, &mut vector, &memories)
    } else {
        HashMap::new()
    };
    let vector_background = background_then_cut(&mut vector, plan.candidates, plan.vector_cut);
    let scales = ranking::QueryScales {
        lexical_full_match: terms.as_ref().map(|t| t.full_match_score),
        vector_confidence,
        vector_background,
    };
    let params = &plan.params;
    let fused = ranking::fuse_scaled(&lexical, &vector, params.fusion, scales);
    // The learned stage scores every candidate, so ranking keeps them all.
    let keep = if params.learned.is_some() {
        usize::MAX
    } else {
        plan.window
    };
    let decay = |m: &Memory| if plan.decay { half_life(m) } else { None };
    let mut hits = ranking::rank(
        fused,
        memories,
        plan.now,
        params,
        decay,
        when.as_ref(),
        keep,
    );
    for hit in &mut hits {
        hit.breakdown.vector_script_shift = shifts.get(&hit.memory.id).copied();
    }
    if let Some(learned) = &params.learned {
        hits = learned::apply(hits, learned, when.as_ref(), plan.window);
    }
    match (&params.rerank, &terms) {
        (Some(r), Some(terms)) => rerank::rerank(hits, terms, analyze, r),
        _ => hits,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};
    use proptest::prelude::*;

    use super::*;
    use crate::domain::{Scope, Tier};
    use crate::policy::Policy;
    use crate::service::search::SearchRequest;

    fn plan(top_k: usize, learned: bool) -> QueryPlan {
        let mut policy = Policy::default();
        policy.retrieval.learned.enabled = learned;
        let now = Utc.with_ymd_and_hms(2025, 7, 1, 9, 0, 0).unwrap();
        let mut req = SearchRequest::new(Scope::user("alice"), "what does the user drink?");
        req.top_k = Some(top_k);
        QueryPlan::new(&req, &policy, now).unwrap().unwrap()
    }

    /// Candidates: (owner is alice?, cosine, bm25, days ago), each its own memory.
    fn gathered(cands: &[(bool, Option<f32>, Option<f32>, i64)]) -> Gathered {
        let now = Utc.with_ymd_and_hms(2025, 7, 1, 9, 0, 0).unwrap();
        let mut g = Gathered {
            vector_confidence: 1.0,
            ..Gathered::default()
        };
        for (i, (alice, cosine, bm25, days)) in cands.iter().enumerate() {
            let user = if *alice { "alice" } else { "bob" };
            let m = Memory::sample(
                Tier::LongTerm,
                Some(user),
                &format!("memory {i}"),
                now - Duration::days(*days),
            );
            if let Some(c) = cosine {
                g.vector.push((m.id, *c));
            }
            if let Some(b) = bm25 {
                g.lexical.push((m.id, *b));
            }
            g.memories.insert(m.id, m);
        }
        g.vector.sort_by(|a, b| b.1.total_cmp(&a.1));
        g.lexical.sort_by(|a, b| b.1.total_cmp(&a.1));
        g
    }

    fn candidates() -> impl Strategy<Value = Vec<(bool, Option<f32>, Option<f32>, i64)>> {
        prop::collection::vec(
            (
                prop::bool::weighted(0.8),
                prop::option::weighted(0.9, 0.6f32..0.99),
                prop::option::weighted(0.5, 0.1f32..12.0),
                0i64..800,
            ),
            0..40,
        )
    }

    proptest! {
        #[test]
        fn decisions_stay_in_scope_sorted_and_within_the_window(
            cands in candidates(),
            top_k in 1usize..20,
            learned in any::<bool>(),
        ) {
            let p = plan(top_k, learned);
            let g = gathered(&cands);
            let hits = decide(&p, g, |_| Some(180.0), |t| vec![t.to_string()]);
            prop_assert!(hits.len() <= p.window);
            prop_assert!(hits.iter().all(|h| h.memory.user_id.as_deref() == Some("alice")));
            prop_assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
            let mut ids: Vec<_> = hits.iter().map(|h| h.memory.id).collect();
            ids.sort();
            ids.dedup();
            prop_assert_eq!(ids.len(), hits.len());
            if learned {
                for h in &hits {
                    let l = h.breakdown.learned.as_ref().expect("every hit scored");
                    prop_assert!((0.0..=1.0).contains(&h.score));
                    prop_assert_eq!(h.score, l.relevance);
                }
            }
        }

        #[test]
        fn with_the_learned_stage_no_candidate_of_a_small_store_is_cut(
            cosines in prop::collection::vec(0.70f32..0.95, 1..5),
        ) {
            // A user with a few memories: every one comes back, however low
            // its cosine, best first (no similarity floor before fusion).
            let cands: Vec<_> = cosines.iter().map(|c| (true, Some(*c), None, 10)).collect();
            let hits = decide(&plan(10, true), gathered(&cands), |_| None, |t| vec![t.to_string()]);
            prop_assert_eq!(hits.len(), cosines.len());
            let best = cosines.iter().copied().fold(f32::MIN, f32::max);
            prop_assert_eq!(hits[0].breakdown.vector_similarity, Some(best));
        }
    }

    #[test]
    fn without_the_stage_the_models_floor_still_cuts() {
        let cands = [(true, Some(0.70), None, 10), (true, Some(0.90), None, 10)];
        let hits = decide(
            &plan(10, false),
            gathered(&cands),
            |_| None,
            |t| vec![t.to_string()],
        );
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].breakdown.vector_similarity, Some(0.90));
    }
}
