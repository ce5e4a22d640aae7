//! Conversation context: a hit that is a turn of a conversation brings the
//! turns beside it. A question's evidence is often split over adjacent
//! turns ("What did you paint?" / "A sunrise, last week"), and the turn that
//! shares the question's words is not always the one that answers it.
//!
//! A conversation is the memories of one owner sharing a `thread_id` (working
//! memory always has one; a long-term memory may record one), in id order,
//! which is creation order (`service/write.rs`, `uuid_at`). After ranking,
//! each of the best `depth` hits lends its turn before and after a score:
//!
//! ```text
//! lent(n)  = weight · score(h)      for n beside h, h among the best `depth` hits
//! score(n) = max(score(n), max lent(n))     (a turn not yet a candidate enters with its lent score)
//! ```
//!
//! With `weight` < 1 a turn never passes the hit that lent to it; it can
//! only pass hits that scored less than that share of the hit. Lending does
//! not chain: only the ranked hits lend, not the turns they brought.
//!
//! At index time a turn is also embedded with the end of the turn before it
//! ([`passage_input`], `[indexing] embed_previous_turn`): "Melanie: which
//! painting did you finish?" then travels with "Caroline: a sunrise over the
//! lake" into the vector leg. Only the turn *before*: it exists when the turn
//! is written, so no vector has to change when a later turn arrives.

use std::collections::HashMap;

use uuid::Uuid;

use super::hit::Hit;
pub use super::hit::TurnContext;
use super::Memory;

/// The most of the previous turn a passage carries, in characters: its end,
/// so that the memory's own text keeps most of the model's window (the
/// embedder truncates from the end; MiniLM reads 256 tokens).
pub const PREVIOUS_TURN_CHARS: usize = 512;

/// What the vector leg embeds for a memory: its text, after the end of the
/// previous turn of its conversation when there is one.
pub fn passage_input<'a>(text: &'a str, previous: Option<&str>) -> std::borrow::Cow<'a, str> {
    match previous.map(str::trim).filter(|p| !p.is_empty()) {
        None => std::borrow::Cow::Borrowed(text),
        Some(p) => {
            let skip = p.chars().count().saturating_sub(PREVIOUS_TURN_CHARS);
            let start = p.char_indices().nth(skip).map_or(0, |(i, _)| i);
            std::borrow::Cow::Owned(format!("{}\n{text}", &p[start..]))
        }
    }
}

/// The stage's parameters (`[retrieval.conversation]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TurnContextParams {
    /// Best hits whose neighbouring turns are brought in.
    pub depth: usize,
    /// The share of a hit's score its neighbours are lent (0..1).
    pub weight: f32,
}

/// A memory's neighbours in its conversation (the store finds them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnsBeside {
    pub id: Uuid,
    pub before: Option<Uuid>,
    pub after: Option<Uuid>,
}

/// The ids of the turns beside the best `params.depth` of `hits` that are
/// not hits yet: what the caller must read from the store.
pub fn missing_turns(
    hits: &[Hit],
    beside: &[TurnsBeside],
    params: &TurnContextParams,
) -> Vec<Uuid> {
    let have: std::collections::HashSet<Uuid> = hits.iter().map(|h| h.memory.id).collect();
    let lenders: std::collections::HashSet<Uuid> = hits
        .iter()
        .take(params.depth)
        .map(|h| h.memory.id)
        .collect();
    let mut out: Vec<Uuid> = beside
        .iter()
        .filter(|b| lenders.contains(&b.id))
        .flat_map(|b| [b.before, b.after])
        .flatten()
        .filter(|id| !have.contains(id))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Lends the best `params.depth` hits' scores to the turns beside them
/// (`turns` holds those that are not hits yet, already checked against the
/// query's scope) and returns the hits sorted again, best first. A turn
/// that was not a hit enters only with a lent score of at least
/// `min_score` (the policy's `retrieval.min_score`, as for any hit).
pub fn lend_to_turns(
    mut hits: Vec<Hit>,
    beside: &[TurnsBeside],
    mut turns: HashMap<Uuid, Memory>,
    params: &TurnContextParams,
    min_score: f32,
) -> Vec<Hit> {
    let depth = params.depth.min(hits.len());
    if depth == 0 || params.weight <= 0.0 {
        return hits;
    }
    let sides: HashMap<Uuid, &TurnsBeside> = beside.iter().map(|b| (b.id, b)).collect();
    // The best loan per turn, from the ranked hits only (no chaining).
    let mut loans: HashMap<Uuid, TurnContext> = HashMap::new();
    for h in &hits[..depth] {
        let Some(b) = sides.get(&h.memory.id) else {
            continue;
        };
        let lent = TurnContext {
            beside: h.memory.id,
            lent_score: params.weight * h.score,
        };
        for n in [b.before, b.after].into_iter().flatten() {
            let best = loans.entry(n).or_insert(lent);
            if lent.lent_score > best.lent_score {
                *best = lent;
            }
        }
    }
    for h in hits.iter_mut() {
        if let Some(loan) = loans.remove(&h.memory.id) {
            if loan.lent_score > h.score {
                h.score = loan.lent_score;
                h.breakdown.final_score = loan.lent_score;
                h.breakdown.context = Some(loan);
            }
        }
    }
    for (id, loan) in loans {
        if loan.lent_score < min_score {
            continue;
        }
        let Some(memory) = turns.remove(&id) else {
            continue; // out of the query's scope, or gone
        };
        let mut hit = Hit::unranked(memory, loan.lent_score);
        hit.breakdown.fused_score = 0.0;
        hit.breakdown.context = Some(loan);
        hits.push(hit);
    }
    super::hit::sort_hits(&mut hits);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Tier;
    use chrono::{TimeZone, Utc};

    fn memory(n: u128) -> Memory {
        let at = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
        let mut m = Memory::sample(Tier::LongTerm, Some("u"), &format!("turn {n}"), at);
        m.id = Uuid::from_u128(n);
        m
    }

    fn hits(scores: &[(u128, f32)]) -> Vec<Hit> {
        scores
            .iter()
            .map(|&(n, s)| Hit::unranked(memory(n), s))
            .collect()
    }

    fn beside(id: u128, before: Option<u128>, after: Option<u128>) -> TurnsBeside {
        TurnsBeside {
            id: Uuid::from_u128(id),
            before: before.map(Uuid::from_u128),
            after: after.map(Uuid::from_u128),
        }
    }

    fn order(h: &[Hit]) -> Vec<(u128, f32)> {
        h.iter().map(|h| (h.memory.id.as_u128(), h.score)).collect()
    }

    const P: TurnContextParams = TurnContextParams {
        depth: 2,
        weight: 0.5,
    };

    #[test]
    fn a_turn_beside_a_strong_hit_enters_below_it() {
        let ranked = hits(&[(10, 1.0), (20, 0.8), (30, 0.3)]);
        let sides = [beside(10, Some(9), Some(11))];
        assert_eq!(
            missing_turns(&ranked, &sides, &P),
            vec![Uuid::from_u128(9), Uuid::from_u128(11)]
        );
        let turns = HashMap::from([(Uuid::from_u128(11), memory(11))]); // 9 is out of scope
                                                                        // Under the policy's min_score a turn does not enter.
        let none = lend_to_turns(ranked.clone(), &sides, turns.clone(), &P, 0.6);
        assert_eq!(order(&none), vec![(10, 1.0), (20, 0.8), (30, 0.3)]);
        let out = lend_to_turns(ranked, &sides, turns, &P, 0.0);
        assert_eq!(
            order(&out),
            vec![(10, 1.0), (20, 0.8), (11, 0.5), (30, 0.3)]
        );
        let lent = out[2].breakdown.context.unwrap();
        assert_eq!((lent.beside, lent.lent_score), (Uuid::from_u128(10), 0.5));
        assert_eq!(out[2].breakdown.fused_score, 0.0);
        assert!(out[0].breakdown.context.is_none());
    }

    #[test]
    fn a_weaker_hit_is_lifted_but_never_lowered_and_loans_do_not_chain() {
        // 30 is beside 10 and ranks under half of it: lifted. 20 is beside
        // 10 too but already above the loan: unchanged. 30's own neighbour
        // (40) gets nothing: 30 is below the depth, and lent-to turns do not
        // lend.
        let ranked = hits(&[(10, 1.0), (20, 0.9), (30, 0.1)]);
        let sides = [
            beside(10, Some(20), Some(30)),
            beside(20, None, Some(10)),
            beside(30, Some(10), Some(40)),
        ];
        assert!(missing_turns(&ranked, &sides, &P).is_empty());
        let out = lend_to_turns(ranked, &sides, HashMap::new(), &P, 0.0);
        assert_eq!(order(&out), vec![(10, 1.0), (20, 0.9), (30, 0.5)]);
        assert!(out[1].breakdown.context.is_none());
        assert_eq!(out[2].breakdown.final_score, 0.5);
    }

    #[test]
    fn a_turn_between_two_hits_takes_the_larger_loan() {
        let ranked = hits(&[(10, 1.0), (12, 0.6)]);
        let sides = [beside(10, None, Some(11)), beside(12, Some(11), None)];
        let turns = HashMap::from([(Uuid::from_u128(11), memory(11))]);
        let out = lend_to_turns(ranked, &sides, turns, &P, 0.0);
        assert_eq!(order(&out), vec![(10, 1.0), (12, 0.6), (11, 0.5)]);
        assert_eq!(
            out[2].breakdown.context.unwrap().beside,
            Uuid::from_u128(10)
        );
    }

    #[test]
    fn a_passage_carries_the_end_of_the_previous_turn() {
        assert_eq!(passage_input("B: yes", None), "B: yes");
        assert_eq!(passage_input("B: yes", Some("  ")), "B: yes");
        assert_eq!(passage_input("B: yes", Some("A: tea?")), "A: tea?\nB: yes");
        let long: String = "好".repeat(PREVIOUS_TURN_CHARS) + "茶吗";
        let got = passage_input("B: 是", Some(&long));
        assert_eq!(got.chars().count(), PREVIOUS_TURN_CHARS + 1 + 4);
        assert!(got.starts_with('好') && got.ends_with("茶吗\nB: 是"));
    }

    #[test]
    fn zero_weight_or_depth_changes_nothing() {
        let ranked = hits(&[(10, 1.0), (20, 0.2)]);
        let sides = [beside(10, None, Some(20))];
        for p in [
            TurnContextParams {
                depth: 0,
                weight: 0.5,
            },
            TurnContextParams {
                depth: 2,
                weight: 0.0,
            },
        ] {
            let out = lend_to_turns(ranked.clone(), &sides, HashMap::new(), &p, 0.0);
            assert_eq!(order(&out), order(&ranked));
        }
    }
}
