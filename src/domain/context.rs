//! The memory block injected into a model's prompt: ranked memories, at most a
//! policy share (default 10%) of the model's context window, counted with a
//! real tokenizer, filled by per-tier quotas, de-duplicated, each labelled with
//! tier, kind and date, under a line framing them as background to be ignored
//! when irrelevant. Pure: [`pack`] takes ranked hits, a budget and a token
//! counter. The search that feeds it is `Engine::build_context`
//! (`service/context.rs`); the agent loop's prompt assembly packs too.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::ranking::Hit;
use crate::domain::tokens::TokenCounter;
use crate::domain::Tier;
use crate::policy::ContextPolicy;

/// The framing line of every non-empty memory block.
pub const FRAMING: &str = "Background memories (possibly outdated or irrelevant: use them only if they help with the current request, otherwise ignore them):";

/// One memory in the block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ContextMemory {
    pub id: Uuid,
    pub tier: Tier,
    pub kind: crate::domain::Kind,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub score: f32,
    pub text: String,
}

/// A ready-to-inject memory block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ContextBlock {
    /// The block's text; empty when no memory fits or none is relevant.
    pub text: String,
    /// Tokens of `text`; never more than `budget_tokens`.
    pub tokens: usize,
    pub budget_tokens: usize,
    pub memory_ids: Vec<Uuid>,
    pub memories: Vec<ContextMemory>,
}

fn render_line(hit: &Hit) -> String {
    let m = &hit.memory;
    let text: String = m.text.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "- [{} · {} · {}] {}",
        m.tier,
        m.kind,
        m.created_at.format("%Y-%m-%d"),
        text
    )
}

fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Packs ranked hits into a block of at most `budget` tokens: hits are taken
/// in rank order within per-tier quotas, duplicates (same normalised text)
/// dropped; a hit that does not fit is skipped so that a smaller one after it
/// may still fit. The whole text is re-counted, so BPE merges across lines can
/// never push it over the budget.
pub fn pack(
    hits: &[Hit],
    budget: usize,
    quotas: &ContextPolicy,
    counter: &dyn TokenCounter,
) -> ContextBlock {
    let quota = |tier: Tier| match tier {
        Tier::LongTerm => quotas.max_long_term,
        Tier::Working => quotas.max_working,
        Tier::Reference => quotas.max_reference,
    };
    // With the learned stage every score is a probability of relevance, and
    // what is too weak to show a model stays out (`min_relevance`); the
    // search itself always returns its best candidates.
    let scored = hits.iter().any(|h| h.breakdown.learned.is_some());
    let relevant = |h: &&Hit| !scored || h.score >= quotas.min_relevance;
    let mut seen = HashSet::new();
    let mut taken: Vec<&Hit> = Vec::new();
    let mut text = String::new();
    let mut tokens = 0;
    for hit in hits.iter().filter(relevant) {
        let tier = hit.memory.tier;
        if taken.iter().filter(|h| h.memory.tier == tier).count() >= quota(tier) {
            continue;
        }
        if !seen.insert(normalise(&hit.memory.text)) {
            continue;
        }
        let candidate = if taken.is_empty() {
            format!("{FRAMING}\n{}", render_line(hit))
        } else {
            format!("{text}\n{}", render_line(hit))
        };
        let n = counter.count(&candidate);
        if n <= budget {
            text = candidate;
            tokens = n;
            taken.push(hit);
        }
    }
    ContextBlock {
        text,
        tokens,
        budget_tokens: budget,
        memory_ids: taken.iter().map(|h| h.memory.id).collect(),
        memories: taken
            .iter()
            .map(|h| ContextMemory {
                id: h.memory.id,
                tier: h.memory.tier,
                kind: h.memory.kind,
                created_at: h.memory.created_at,
                score: h.score,
                text: h.memory.text.clone(),
            })
            .collect(),
    }
}

/// The token budget of the memory block for a window and fraction.
pub fn budget_tokens(model_context_tokens: usize, fraction: f64) -> usize {
    (model_context_tokens as f64 * fraction).floor() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::tokens::Tokenizer;
    use crate::domain::Memory;
    use chrono::{TimeZone, Utc};
    use proptest::prelude::*;

    fn hit(tier: Tier, text: &str, score: f32) -> Hit {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let user = (tier != Tier::Reference).then_some("u");
        Hit::unranked(Memory::sample(tier, user, text, t), score)
    }

    #[test]
    fn labels_frames_and_dedups() {
        let hits = vec![
            hit(Tier::LongTerm, "The user prefers green tea", 0.9),
            hit(Tier::LongTerm, "the user  prefers green tea", 0.8),
            hit(Tier::Reference, "Shop opens at 9", 0.7),
        ];
        let block = pack(
            &hits,
            1000,
            &ContextPolicy::default(),
            &Tokenizer::Cl100kBase,
        );
        assert_eq!(block.memory_ids.len(), 2);
        assert!(block.text.starts_with(FRAMING));
        assert!(block
            .text
            .contains("- [long_term · fact · 2026-03-01] The user prefers green tea"));
        assert_eq!(block.tokens, Tokenizer::Cl100kBase.count(&block.text));
    }

    #[test]
    fn quotas_cap_each_tier() {
        let hits: Vec<Hit> = (0..10)
            .map(|i| {
                hit(
                    Tier::LongTerm,
                    &format!("fact number {i}"),
                    1.0 - i as f32 / 100.0,
                )
            })
            .collect();
        let quotas = ContextPolicy {
            max_long_term: 3,
            ..ContextPolicy::default()
        };
        let block = pack(&hits, 10_000, &quotas, &Tokenizer::Cl100kBase);
        assert_eq!(block.memory_ids.len(), 3);
        assert_eq!(block.memory_ids[0], hits[0].memory.id);
    }

    #[test]
    fn a_budget_too_small_for_anything_gives_an_empty_block() {
        let hits = vec![hit(Tier::LongTerm, "The user prefers green tea", 0.9)];
        let block = pack(&hits, 10, &ContextPolicy::default(), &Tokenizer::Cl100kBase);
        assert_eq!((block.text.as_str(), block.tokens), ("", 0));
        assert!(block.memory_ids.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn never_exceeds_the_budget(
            texts in prop::collection::vec("[a-zA-Z0-9 ,.咖啡机我的]{1,300}", 0..30),
            window in 256usize..20_000,
            fraction in 0.01f64..0.5,
        ) {
            let hits: Vec<Hit> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| hit(Tier::ALL[i % 3], t, 1.0))
                .collect();
            let budget = budget_tokens(window, fraction);
            let block = pack(&hits, budget, &ContextPolicy::default(), &Tokenizer::Cl100kBase);
            prop_assert!(block.tokens <= budget);
            prop_assert_eq!(block.tokens, Tokenizer::Cl100kBase.count(&block.text));
        }
    }
}
