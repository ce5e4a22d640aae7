//! The memory block injected into a model's prompt: ranked memories, at most a
//! policy share (default 10%) of the model's context window, counted with a
//! real tokenizer, filled by per-tier quotas, de-duplicated, each labelled with
//! tier, kind and date, under a line framing them as background to be ignored
//! when irrelevant. The HTTP `/v1/context` route, MCP `get_context` and the
//! agent loop's prompt assembly all use [`build_context`].

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::ranking::Hit;
use crate::domain::{Scope, Tier};
use crate::error::{Error, Result};
use crate::policy::ContextPolicy;
use crate::service::{Actor, Engine, SearchRequest};

/// The framing line of every non-empty memory block.
pub const FRAMING: &str = "Background memories (possibly outdated or irrelevant: use them only if they help with the current request, otherwise ignore them):";

/// Counts tokens the way the target model does.
pub trait TokenCounter: Send + Sync {
    fn count(&self, text: &str) -> usize;
}

/// Which BPE to count with; `cl100k_base` by default (GPT-3.5/4-era models and
/// a fair estimate for most others), `o200k_base` for newer OpenAI models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tokenizer {
    #[default]
    Cl100kBase,
    O200kBase,
}

impl Tokenizer {
    fn bpe(self) -> &'static CoreBPE {
        match self {
            Tokenizer::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Tokenizer::O200kBase => tiktoken_rs::o200k_base_singleton(),
        }
    }
}

impl TokenCounter for Tokenizer {
    fn count(&self, text: &str) -> usize {
        self.bpe().encode_with_special_tokens(text).len()
    }
}

/// A chat message, as agents send them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    /// Required unless the key is bound to a user.
    pub user_id: Option<String>,
    pub thread_id: Option<String>,
    /// What to find memories for; or give `messages`.
    pub query: Option<String>,
    /// The conversation so far; the last user message becomes the query.
    pub messages: Option<Vec<ChatMessage>>,
    /// The model's context window, in tokens.
    pub model_context_tokens: usize,
    /// Share of the window the memory block may use (policy default 0.10).
    pub budget_fraction: Option<f64>,
}

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
    let mut seen = HashSet::new();
    let mut taken: Vec<&Hit> = Vec::new();
    let mut text = String::new();
    let mut tokens = 0;
    for hit in hits {
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

/// Builds the memory block for a request: validates, searches the user's
/// tiers (working memory when a thread is given), and packs the hits.
pub async fn build_context(
    engine: &Engine,
    actor: &Actor,
    req: ContextRequest,
) -> Result<ContextBlock> {
    let policy = engine.policy();
    if !(256..=10_000_000).contains(&req.model_context_tokens) {
        return Err(Error::invalid(
            "model_context_tokens",
            "model_context_tokens must be between 256 and 10000000",
        ));
    }
    let fraction = req
        .budget_fraction
        .unwrap_or(policy.context.budget_fraction);
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(Error::invalid(
            "budget_fraction",
            "budget_fraction must be greater than 0 and at most 1",
        ));
    }
    let query = match (&req.query, &req.messages) {
        (Some(q), _) => q.clone(),
        (None, Some(messages)) => messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .or(messages.last())
            .map(|m| m.content.clone())
            .ok_or_else(|| Error::invalid("messages", "messages must not be empty"))?,
        (None, None) => {
            return Err(Error::invalid("query", "give a query or messages"));
        }
    };
    let user = actor
        .user_for(req.user_id.as_deref())?
        .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
    let mut scope = Scope::user(user);
    scope.tenant_id = actor.tenant_id.clone();
    scope.thread_id = req.thread_id.clone();
    let c = &policy.context;
    let mut search = SearchRequest::new(scope, query);
    search.top_k = Some(
        (c.max_long_term + c.max_working + c.max_reference + 10).min(policy.retrieval.max_top_k),
    );
    let hits = engine.search(search).await?.hits;
    let budget = budget_tokens(req.model_context_tokens, fraction);
    Ok(pack(&hits, budget, c, &policy.context.tokenizer))
}

#[cfg(test)]
mod tests {
    use super::*;
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
