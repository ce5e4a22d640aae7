//! Prompt assembly for one turn, without calling a model:
//!
//! ```text
//! system instructions
//! pinned goal            (never dropped, never compacted)
//! thread summary
//! memory block           (≤ budget_fraction × window tokens, see context::pack)
//! older turns            (newest first, while they fit)
//! last 3 turns           (always whole)
//! the user's message
//! ```
//!
//! Every part is counted with the same tokenizer; chat formatting costs
//! [`MESSAGE_OVERHEAD`] tokens per message. The result says where the tokens
//! went, so agents running their own model can see and trust the budget.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::chat::{ChatMessage, ALWAYS_KEPT_TURNS};
use crate::domain::context::pack;
use crate::domain::ranking::Hit;
use crate::domain::tokens::TokenCounter;
use crate::policy::ContextPolicy;

/// Tokens a chat message costs besides its content (role and delimiters, as
/// in OpenAI's accounting for chat models).
pub const MESSAGE_OVERHEAD: usize = 4;

/// Everything a prompt is assembled from.
#[derive(Clone, Debug)]
pub struct PromptInput<'a> {
    pub instructions: &'a str,
    pub goal: Option<&'a str>,
    pub summary: Option<&'a str>,
    /// The thread's turns so far, oldest first (tool results already compacted).
    pub history: &'a [ChatMessage],
    pub message: &'a str,
    /// Ranked memories for this turn, best first.
    pub hits: &'a [Hit],
    pub model_context_tokens: usize,
    pub budget_fraction: f64,
    /// Share of the window left free for the model's reply.
    pub reply_reserve_fraction: f64,
}

/// Where the prompt's tokens went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokenBreakdown {
    pub total: usize,
    pub system: usize,
    pub goal: usize,
    pub summary: usize,
    pub history: usize,
    pub message: usize,
    pub memories: usize,
    pub budget_memories: usize,
}

/// An assembled prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Prompt {
    pub messages: Vec<ChatMessage>,
    pub tokens: TokenBreakdown,
    pub memory_ids: Vec<Uuid>,
    /// Older turns left out because they did not fit (compaction should
    /// summarise them).
    pub dropped_turns: usize,
}

fn cost(counter: &dyn TokenCounter, content: &str) -> usize {
    counter.count(content) + MESSAGE_OVERHEAD
}

fn system(content: String) -> ChatMessage {
    ChatMessage {
        role: "system".into(),
        content,
    }
}

/// Assembles the prompt. The memory block never exceeds
/// `floor(model_context_tokens × budget_fraction)` tokens; the goal and the
/// last [`ALWAYS_KEPT_TURNS`] turns are always present, even when the window
/// is too small for them (then `tokens.total` exceeds the window, which the
/// caller can detect; compaction exists to prevent it).
pub fn assemble(
    input: &PromptInput<'_>,
    quotas: &ContextPolicy,
    counter: &dyn TokenCounter,
) -> Prompt {
    let budget_memories =
        crate::domain::context::budget_tokens(input.model_context_tokens, input.budget_fraction);
    let block = pack(input.hits, budget_memories, quotas, counter);

    let mut t = TokenBreakdown {
        budget_memories,
        ..Default::default()
    };
    let mut head = vec![system(input.instructions.to_string())];
    t.system = cost(counter, input.instructions);
    if let Some(goal) = input.goal.filter(|g| !g.trim().is_empty()) {
        let content = format!("Pinned goal of this conversation: {goal}");
        t.goal = cost(counter, &content);
        head.push(system(content));
    }
    if let Some(summary) = input.summary.filter(|s| !s.trim().is_empty()) {
        let content = format!("Summary of the conversation so far:\n{summary}");
        t.summary = cost(counter, &content);
        head.push(system(content));
    }
    if !block.text.is_empty() {
        // The block itself is within budget; its message overhead is counted
        // in the total, not against the memory budget.
        t.memories = block.tokens;
        head.push(system(block.text.clone()));
    }
    let user = ChatMessage {
        role: "user".into(),
        content: input.message.to_string(),
    };
    t.message = cost(counter, input.message);

    let fixed = t.system
        + t.goal
        + t.summary
        + t.memories
        + if t.memories > 0 { MESSAGE_OVERHEAD } else { 0 }
        + t.message;
    let usable = ((input.model_context_tokens as f64) * (1.0 - input.reply_reserve_fraction))
        .floor() as usize;
    let n = input.history.len();
    let kept_from = n.saturating_sub(ALWAYS_KEPT_TURNS);
    let mut history_tokens: usize = input.history[kept_from..]
        .iter()
        .map(|m| cost(counter, &m.content))
        .sum();
    let mut first = kept_from;
    while first > 0 {
        let c = cost(counter, &input.history[first - 1].content);
        if fixed + history_tokens + c > usable {
            break;
        }
        history_tokens += c;
        first -= 1;
    }
    t.history = history_tokens;
    t.total = fixed + history_tokens;

    let mut messages = head;
    messages.extend(input.history[first..].iter().cloned());
    messages.push(user);
    Prompt {
        messages,
        tokens: t,
        memory_ids: block.memory_ids,
        dropped_turns: first,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::tokens::Tokenizer;
    use crate::domain::{Memory, Tier};
    use chrono::Utc;
    use proptest::prelude::*;

    fn hit(text: String, tier: Tier) -> Hit {
        Hit::unranked(Memory::sample(tier, Some("u"), &text, Utc::now()), 1.0)
    }

    fn turn(i: usize, text: &str) -> ChatMessage {
        ChatMessage {
            role: if i.is_multiple_of(2) {
                "user"
            } else {
                "assistant"
            }
            .into(),
            content: format!("turn {i}: {text}"),
        }
    }

    #[test]
    fn order_and_breakdown_add_up() {
        let history: Vec<ChatMessage> = (0..6).map(|i| turn(i, "hello there")).collect();
        let hits = vec![hit("The user prefers green tea".into(), Tier::LongTerm)];
        let input = PromptInput {
            instructions: "You are a helpful assistant.",
            goal: Some("Plan a trip to Kyoto"),
            summary: Some("The user wants a quiet hotel."),
            history: &history,
            message: "What should I drink there?",
            hits: &hits,
            model_context_tokens: 8192,
            budget_fraction: 0.10,
            reply_reserve_fraction: 0.25,
        };
        let p = assemble(&input, &ContextPolicy::default(), &Tokenizer::Cl100kBase);
        let roles: Vec<&str> = p.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles[..4], ["system", "system", "system", "system"]);
        assert!(p.messages[1].content.contains("Kyoto"));
        assert!(p.messages[3].content.contains("green tea"));
        assert_eq!(
            p.messages.last().unwrap().content,
            "What should I drink there?"
        );
        assert_eq!(p.dropped_turns, 0);
        assert_eq!(p.memory_ids, vec![hits[0].memory.id]);
        let counted: usize = p
            .messages
            .iter()
            .map(|m| Tokenizer::Cl100kBase.count(&m.content) + MESSAGE_OVERHEAD)
            .sum();
        assert_eq!(p.tokens.total, counted);
        assert_eq!(p.tokens.budget_memories, 819);
    }

    #[test]
    fn older_turns_are_dropped_first_and_the_last_three_kept() {
        let long = "word ".repeat(200);
        let history: Vec<ChatMessage> = (0..10).map(|i| turn(i, &long)).collect();
        let input = PromptInput {
            instructions: "Be brief.",
            goal: None,
            summary: None,
            history: &history,
            message: "next?",
            hits: &[],
            model_context_tokens: 1200,
            budget_fraction: 0.10,
            reply_reserve_fraction: 0.0,
        };
        let p = assemble(&input, &ContextPolicy::default(), &Tokenizer::Cl100kBase);
        assert!(p.dropped_turns > 0 && p.dropped_turns <= 7);
        assert!(p.tokens.total <= 1200);
        // Greedy from the newest: the next older turn would not have fitted.
        let next = &history[p.dropped_turns - 1].content;
        assert!(p.tokens.total + Tokenizer::Cl100kBase.count(next) + MESSAGE_OVERHEAD > 1200);
        assert_eq!(p.messages[1].content, history[p.dropped_turns].content);
        for kept in &history[7..] {
            assert!(p.messages.iter().any(|m| m.content == kept.content));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn memories_never_exceed_the_fraction_and_goal_and_last_turns_stay(
            memories in prop::collection::vec("[a-z ]{1,200}", 0..25),
            turns in prop::collection::vec("[a-z 我的咖啡]{0,400}", 0..15),
            window in 256usize..16_000,
            fraction in 0.01f64..0.3,
        ) {
            let hits: Vec<Hit> = memories.iter().enumerate()
                .map(|(i, t)| hit(t.clone(), Tier::ALL[i % 3])).collect();
            let history: Vec<ChatMessage> = turns.iter().enumerate().map(|(i, t)| turn(i, t)).collect();
            let input = PromptInput {
                instructions: "You are helpful.",
                goal: Some("the pinned goal"),
                summary: None,
                history: &history,
                message: "hi",
                hits: &hits,
                model_context_tokens: window,
                budget_fraction: fraction,
                reply_reserve_fraction: 0.2,
            };
            let p = assemble(&input, &ContextPolicy::default(), &Tokenizer::Cl100kBase);
            prop_assert!(p.tokens.memories <= (window as f64 * fraction).floor() as usize);
            prop_assert!(p.messages.iter().any(|m| m.content.contains("the pinned goal")));
            for m in history.iter().rev().take(ALWAYS_KEPT_TURNS) {
                prop_assert!(p.messages.iter().any(|x| x.content == m.content));
            }
        }
    }
}
