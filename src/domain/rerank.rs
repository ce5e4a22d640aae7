//! The second stage: cheap signals over the best fused candidates, after
//! decay and importance, before the cut to `top_k`. Pure: the service hands
//! it the query's analysed terms (with the lexical index's idf of each) and
//! the analyser to read the candidates' text with; nothing here knows tantivy.
//!
//! ```text
//! phrase    = Σ idf-weight of the query's adjacent term pairs found adjacent in the memory
//!             / Σ idf-weight of all its pairs            (pair weight = min idf of its terms)
//! duplicate = 1 when a newer candidate of the same owner matches exactly the same query
//!             terms, covering at least half the query's idf: an older statement of one fact
//! factor    = (1 + phrase_weight · phrase) · (1 − duplicate_weight · duplicate)
//! final     = fused · decay · importance · factor
//! ```
//!
//! The lexical index keeps no positions (`lexical/tantivy.rs`), so term
//! adjacency — "memory tiers", "下周三", "phone number" — is a signal BM25
//! does not have. Query-term coverage is not a separate signal: `absolute`
//! fusion's lexical leg already is the idf-weighted share of the query the
//! memory matched.

use std::collections::{HashMap, HashSet};

use super::hit::Hit;
pub use super::hit::RerankSignals;

/// The second stage's parameters (`[retrieval.rerank]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RerankParams {
    /// Candidates (best first, after decay and importance) the stage reorders.
    pub depth: usize,
    /// How much a full phrase match raises the score (0 = not at all).
    pub phrase_weight: f32,
    /// How much an older statement of one fact is lowered (0 = not at all).
    pub duplicate_weight: f32,
}

/// The query as the lexical index reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryTerms {
    /// The analysed tokens, in order, with repetitions.
    pub tokens: Vec<String>,
    /// The index's idf of each distinct token.
    pub idf: HashMap<String, f32>,
    /// The BM25 score of a full match: a document of average length holding
    /// each distinct query term once (Σ of their idf).
    pub full_match_score: f32,
}

fn weight(idf: &HashMap<String, f32>, t: &str) -> f32 {
    idf.get(t).copied().unwrap_or(0.0).max(0.0)
}

/// Adjacent pairs of `tokens` (a token repeated in place is no pair).
fn pairs(tokens: &[String]) -> impl Iterator<Item = (&str, &str)> {
    tokens
        .windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| (w[0].as_str(), w[1].as_str()))
}

/// The idf-weighted share of the query's adjacent pairs that `doc` holds
/// adjacent; 0 for a query of fewer than two terms.
pub fn phrase_share(query: &QueryTerms, doc: &[String]) -> f32 {
    let held: HashSet<(&str, &str)> = pairs(doc).collect();
    let (mut hit, mut all) = (0.0f32, 0.0f32);
    let mut seen = HashSet::new();
    for p in pairs(&query.tokens) {
        if !seen.insert(p) {
            continue;
        }
        let w = weight(&query.idf, p.0).min(weight(&query.idf, p.1));
        all += w;
        if held.contains(&p) {
            hit += w;
        }
    }
    if all > 0.0 {
        (hit / all).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Reorders the best `params.depth` of `hits` (sorted best first) by the
/// second stage's signals, recording them in each hit's breakdown, and
/// returns the hits sorted again. `analyze` is the lexical analyser.
pub fn rerank(
    mut hits: Vec<Hit>,
    query: &QueryTerms,
    analyze: impl Fn(&str) -> Vec<String>,
    params: &RerankParams,
) -> Vec<Hit> {
    let depth = params.depth.min(hits.len());
    if depth == 0 || query.tokens.is_empty() {
        return hits;
    }
    let query_set: HashSet<&str> = query.tokens.iter().map(String::as_str).collect();
    let query_idf: f32 = query_set.iter().map(|t| weight(&query.idf, t)).sum();
    // Per candidate: its tokens, and the query terms it holds.
    let read: Vec<(Vec<String>, Vec<&str>)> = hits[..depth]
        .iter()
        .map(|h| {
            let tokens = analyze(&h.memory.text);
            let doc: HashSet<&str> = tokens.iter().map(String::as_str).collect();
            let mut matched: Vec<&str> = query_set
                .iter()
                .copied()
                .filter(|t| doc.contains(t))
                .collect();
            matched.sort_unstable();
            (tokens, matched)
        })
        .collect();
    for i in 0..depth {
        let (tokens, matched) = &read[i];
        let phrase = phrase_share(query, tokens);
        let covered: f32 = matched.iter().map(|t| weight(&query.idf, t)).sum();
        let older_duplicate = !matched.is_empty()
            && query_idf > 0.0
            && covered >= 0.5 * query_idf
            && (0..depth).any(|j| {
                j != i
                    && read[j].1 == *matched
                    && hits[j].memory.owner() == hits[i].memory.owner()
                    && hits[j].memory.created_at > hits[i].memory.created_at
            });
        let factor = (1.0 + params.phrase_weight * phrase)
            * (1.0 - params.duplicate_weight * f32::from(u8::from(older_duplicate)));
        let h = &mut hits[i];
        h.score *= factor;
        h.breakdown.final_score = h.score;
        h.breakdown.rerank = Some(RerankSignals {
            phrase,
            older_duplicate,
            factor,
        });
    }
    super::hit::sort_hits(&mut hits[..depth]);
    hits
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use super::*;
    use crate::domain::{Memory, Tier};

    /// Whitespace words, lower-cased: the real analyser's shape for English.
    fn words(text: &str) -> Vec<String> {
        text.split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    }

    fn query(text: &str, idf: &[(&str, f32)]) -> QueryTerms {
        QueryTerms {
            tokens: words(text),
            idf: idf.iter().map(|(t, w)| (t.to_string(), *w)).collect(),
            full_match_score: 0.0,
        }
    }

    fn hit(user: &str, text: &str, days_ago: i64, score: f32) -> Hit {
        let now = Utc.with_ymd_and_hms(2025, 10, 1, 9, 0, 0).unwrap();
        Hit::unranked(
            Memory::sample(
                Tier::LongTerm,
                Some(user),
                text,
                now - Duration::days(days_ago),
            ),
            score,
        )
    }

    const ON: RerankParams = RerankParams {
        depth: 10,
        phrase_weight: 0.2,
        duplicate_weight: 0.1,
    };

    #[test]
    fn phrase_share_weighs_adjacent_pairs_by_their_rarer_term() {
        let q = query(
            "the memory tiers of mnemo",
            &[
                ("the", 0.1),
                ("memory", 2.0),
                ("tiers", 3.0),
                ("of", 0.1),
                ("mnemo", 1.0),
            ],
        );
        // Pairs: the·memory 0.1, memory·tiers 2.0, tiers·of 0.1, of·mnemo 0.1.
        let s = phrase_share(&q, &words("Mnemo has three memory tiers"));
        assert!((s - 2.0 / 2.3).abs() < 1e-6, "{s}");
        // The same words not adjacent hold only the minor pair "tiers of".
        let s = phrase_share(&q, &words("tiers of memory"));
        assert!((s - 0.1 / 2.3).abs() < 1e-6, "{s}");
        assert_eq!(phrase_share(&q, &words("nothing in common")), 0.0);
        // A one-term query has no pairs.
        assert_eq!(
            phrase_share(&query("tiers", &[("tiers", 3.0)]), &words("tiers")),
            0.0
        );
    }

    #[test]
    fn a_phrase_match_moves_up_and_the_breakdown_shows_the_stage() {
        let q = query("phone number", &[("phone", 2.0), ("number", 1.5)]);
        let hits = vec![
            hit("bob", "the number of the phone bill", 10, 0.50),
            hit("bob", "my phone number is 555", 10, 0.45),
        ];
        let out = rerank(hits, &q, words, &ON);
        assert_eq!(out[0].memory.text, "my phone number is 555");
        let b = &out[0].breakdown;
        let r = b.rerank.expect("signals recorded");
        assert_eq!(r.phrase, 1.0);
        assert!((r.factor - 1.2).abs() < 1e-6);
        assert!((b.final_score - 0.45 * 1.2).abs() < 1e-6);
        assert_eq!(out[0].score, b.final_score);
        assert_eq!(out[1].breakdown.rerank.unwrap().factor, 1.0);
    }

    #[test]
    fn of_two_statements_matching_the_same_terms_the_newer_wins() {
        let q = query(
            "who is my manager",
            &[("who", 0.5), ("is", 0.1), ("my", 0.2), ("manager", 3.0)],
        );
        let hits = vec![
            hit("alice", "my manager is tom", 200, 0.60),
            hit("alice", "tom left so my manager is priya", 60, 0.57),
            // Another user's statement never counts as newer.
            hit("dana", "my manager is tom", 1, 0.40),
        ];
        let out = rerank(hits, &q, words, &ON);
        assert_eq!(out[0].memory.text, "tom left so my manager is priya");
        let old = out
            .iter()
            .find(|h| {
                h.memory.text == "my manager is tom" && h.memory.user_id.as_deref() == Some("alice")
            })
            .unwrap();
        assert!(old.breakdown.rerank.unwrap().older_duplicate);
        let dana = out
            .iter()
            .find(|h| h.memory.user_id.as_deref() == Some("dana"))
            .unwrap();
        assert!(!dana.breakdown.rerank.unwrap().older_duplicate);
        // Matching only a minor share of the query's idf is no "same fact".
        let q = query(
            "who is my manager",
            &[("who", 0.5), ("is", 0.1), ("my", 0.2), ("manager", 3.0)],
        );
        let hits = vec![
            hit("alice", "my bike is red", 200, 0.60),
            hit("alice", "my car is blue", 60, 0.57),
        ];
        let out = rerank(hits, &q, words, &ON);
        assert!(out
            .iter()
            .all(|h| !h.breakdown.rerank.unwrap().older_duplicate));
    }

    #[test]
    fn only_the_window_is_touched_and_weights_of_zero_change_nothing() {
        let q = query("phone number", &[("phone", 2.0), ("number", 1.5)]);
        let hits: Vec<Hit> = (0..5)
            .map(|i| hit("bob", "my phone number", 10 + i, 1.0 - i as f32 * 0.1))
            .collect();
        let params = RerankParams { depth: 2, ..ON };
        let out = rerank(hits.clone(), &q, words, &params);
        assert!(out[..2].iter().all(|h| h.breakdown.rerank.is_some()));
        assert!(out[2..].iter().all(|h| h.breakdown.rerank.is_none()));
        let off = RerankParams {
            depth: 10,
            phrase_weight: 0.0,
            duplicate_weight: 0.0,
        };
        let out = rerank(hits.clone(), &q, words, &off);
        let ids = |h: &[Hit]| h.iter().map(|h| (h.memory.id, h.score)).collect::<Vec<_>>();
        assert_eq!(ids(&out), ids(&hits));
    }
}
