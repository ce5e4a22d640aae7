//! Compaction: older turns of a thread become its summary (text, open to-dos,
//! commitments), so the working memory stays within the model's window.
//!
//! The decision is pure ([`decide`]): compact when the uncompacted history
//! exceeds `compact_above_fraction` of the window, or the thread has been idle
//! for `compact_idle_secs`; never within `compaction_cooldown_secs` of the
//! last compaction; never the newest `keep_last_turns` messages (nor the
//! pinned goal, which is not a message); and only a prefix of messages whose
//! extraction has completed ([`compactable_prefix`]) — so extraction always
//! reads raw messages, and the store re-checks it in the same transaction
//! that marks them compacted.
//!
//! [`Summarizer`] writes the summary: [`ExtractiveSummarizer`] here
//! (deterministic, offline, English and Chinese), a model-written one when a
//! model is configured.

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use regex::Regex;

use crate::agent::prompt::MESSAGE_OVERHEAD;
use crate::domain::thread::{Message, MessageRole, Summary};
use crate::domain::tokens::TokenCounter;
use crate::error::Result;
use crate::policy::AgentPolicy;

/// Writes a thread's new summary from the previous one and the messages
/// being compacted (oldest first).
#[async_trait]
pub trait Summarizer: Send + Sync {
    async fn summarize(&self, previous: &Summary, messages: &[Message]) -> Result<Summary>;
    /// Whether `summarize` calls the chat model (counted against the user's
    /// `limits.model_calls_per_user_per_minute`, `quota.rs`).
    fn calls_model(&self) -> bool {
        false
    }
}

/// Why a compaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The history is over `compact_above_fraction` of the window.
    Tokens,
    /// The thread has been idle for `compact_idle_secs`.
    Idle,
}

/// What [`decide`] concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Compact(Trigger),
    /// Within the cooldown of the last compaction.
    Cooldown,
    /// No trigger fired, or nothing old enough to compact.
    NotNeeded,
}

/// The tokens the uncompacted history costs in a prompt.
pub fn history_tokens(messages: &[Message], counter: &dyn TokenCounter) -> usize {
    messages
        .iter()
        .map(|m| counter.count(&m.content) + MESSAGE_OVERHEAD)
        .sum()
}

/// Whether to compact a thread now.
#[allow(clippy::too_many_arguments)]
pub fn decide(
    policy: &AgentPolicy,
    now: DateTime<Utc>,
    last_activity_at: DateTime<Utc>,
    last_compacted_at: Option<DateTime<Utc>>,
    uncompacted: usize,
    history_tokens: usize,
    window: usize,
) -> Decision {
    if uncompacted <= policy.keep_last_turns {
        return Decision::NotNeeded;
    }
    let cooldown = Duration::seconds(policy.compaction_cooldown_secs as i64);
    if last_compacted_at.is_some_and(|at| now - at < cooldown) {
        return Decision::Cooldown;
    }
    if history_tokens as f64 > policy.compact_above_fraction * window as f64 {
        return Decision::Compact(Trigger::Tokens);
    }
    if now - last_activity_at >= Duration::seconds(policy.compact_idle_secs as i64) {
        return Decision::Compact(Trigger::Idle);
    }
    Decision::NotNeeded
}

/// The messages a compaction may take: the oldest ones, up to (not
/// including) the newest `keep`, stopping at the first whose extraction has
/// not completed.
pub fn compactable_prefix(messages: &[Message], keep: usize) -> &[Message] {
    let older = &messages[..messages.len().saturating_sub(keep)];
    let n = older
        .iter()
        .take_while(|m| m.extraction_state.is_complete())
        .count();
    &older[..n]
}

/// Most items kept in each summary list, and characters in its text (the
/// oldest go first).
const MAX_ITEMS: usize = 20;
const MAX_TEXT_CHARS: usize = 2000;
/// Characters kept of one message's gist.
const GIST_CHARS: usize = 200;

static TODO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(todo|to-do|to do:|we need to|i need to|you need to|need to|remind me|don't forget|do not forget|must|should still|still have to|next step)\b|待办|需要|记得|别忘了|提醒我|还要|必须")
        .expect("valid to-do pattern")
});

static COMMITMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(i will|i'll|we will|we'll|i promise|i commit to|i am going to|i'm going to|let me)\b|我会|我们会|我保证|我答应|我承诺|我来")
        .expect("valid commitment pattern")
});

fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n' | ';' | '；') {
            out.push(std::mem::take(&mut current));
        }
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn clip(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(chars).collect();
        s.push('…');
        s
    }
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.iter().any(|i| i == &item) {
        list.push(item);
    }
    if list.len() > MAX_ITEMS {
        list.remove(0);
    }
}

/// A deterministic, extractive summary: the gist (first sentence) of each
/// user and assistant message, tool results as their one-line summary, and
/// every sentence with a to-do cue ("TODO", "we need to", "remind me",
/// "待办", "需要", "记得"…) or a commitment cue ("I will", "I'll", "我会",
/// "我保证"…) kept as fields. Appends to the previous summary; the oldest
/// text and items go first when over the caps.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExtractiveSummarizer;

impl ExtractiveSummarizer {
    pub fn summarize_now(&self, previous: &Summary, messages: &[Message]) -> Summary {
        let mut out = previous.clone();
        let mut lines: Vec<String> = out
            .text
            .lines()
            .map(str::to_string)
            .filter(|l| !l.trim().is_empty())
            .collect();
        for m in messages {
            let gist = match (&m.tool, m.role) {
                (Some(tool), _) => {
                    format!("tool {}: {} — {}", tool.name, tool.status, tool.summary)
                }
                (None, role) => {
                    let first = sentences(&m.content).into_iter().next().unwrap_or_default();
                    format!("{}: {}", role.as_str(), first)
                }
            };
            lines.push(clip(&gist, GIST_CHARS));
            if m.role == MessageRole::Tool {
                continue;
            }
            for s in sentences(&m.content) {
                let s = clip(&s, GIST_CHARS);
                if TODO.is_match(&s) {
                    push_unique(&mut out.open_todos, s);
                } else if COMMITMENT.is_match(&s) {
                    push_unique(&mut out.commitments, s);
                }
            }
        }
        let mut total: usize = lines.iter().map(|l| l.chars().count() + 1).sum();
        while total > MAX_TEXT_CHARS && lines.len() > 1 {
            total -= lines[0].chars().count() + 1;
            lines.remove(0);
        }
        out.text = lines.join("\n");
        out
    }
}

#[async_trait]
impl Summarizer for ExtractiveSummarizer {
    async fn summarize(&self, previous: &Summary, messages: &[Message]) -> Result<Summary> {
        Ok(self.summarize_now(previous, messages))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::thread::ExtractionState;
    use chrono::TimeZone;
    use uuid::Uuid;

    fn msg(seq: i64, role: MessageRole, content: &str, state: ExtractionState) -> Message {
        Message {
            seq,
            thread_id: Uuid::nil(),
            tenant_id: "t".into(),
            user_id: "u".into(),
            role,
            content: content.into(),
            tool: None,
            created_at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
            extraction_state: state,
            compacted: false,
        }
    }

    #[test]
    fn triggers_and_cooldown() {
        let p = AgentPolicy::default();
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let just = t0;
        // Over 70% of the window: compact at once.
        assert_eq!(
            decide(&p, t0, just, None, 10, 701, 1000),
            Decision::Compact(Trigger::Tokens)
        );
        assert_eq!(
            decide(&p, t0, just, None, 10, 700, 1000),
            Decision::NotNeeded
        );
        // Idle for 5 minutes.
        let later = t0 + Duration::seconds(300);
        assert_eq!(
            decide(&p, later, just, None, 10, 10, 1000),
            Decision::Compact(Trigger::Idle)
        );
        assert_eq!(
            decide(&p, later - Duration::seconds(1), just, None, 10, 10, 1000),
            Decision::NotNeeded
        );
        // Within 10 minutes of the last compaction: nothing, whatever fires.
        assert_eq!(
            decide(
                &p,
                t0 + Duration::seconds(599),
                just,
                Some(t0),
                10,
                5000,
                1000
            ),
            Decision::Cooldown
        );
        assert_eq!(
            decide(
                &p,
                t0 + Duration::seconds(600),
                just,
                Some(t0),
                10,
                5000,
                1000
            ),
            Decision::Compact(Trigger::Tokens)
        );
        // Nothing older than the kept turns.
        assert_eq!(
            decide(&p, later, just, None, 3, 5000, 1000),
            Decision::NotNeeded
        );
    }

    #[test]
    fn the_prefix_stops_at_the_kept_turns_and_at_pending_extraction() {
        use ExtractionState::*;
        let ms: Vec<Message> = [Done, Skipped, Done, Pending, Done, Done, Done, Skipped]
            .iter()
            .enumerate()
            .map(|(i, s)| msg(i as i64 + 1, MessageRole::User, "x", *s))
            .collect();
        assert_eq!(compactable_prefix(&ms, 3).len(), 3);
        assert_eq!(compactable_prefix(&ms[4..], 3).len(), 1);
        assert!(compactable_prefix(&ms[..3], 3).is_empty());
    }

    #[test]
    fn extractive_summary_keeps_todos_and_commitments_in_both_languages() {
        use ExtractionState::Done;
        let ms = vec![
            msg(
                1,
                MessageRole::User,
                "We are planning the Kyoto trip. We need to book the ryokan by Friday.",
                Done,
            ),
            msg(
                2,
                MessageRole::Assistant,
                "Sure. I will send you three options tomorrow.",
                Done,
            ),
            msg(
                3,
                MessageRole::User,
                "记得帮我订机票。我会把护照号码发给你。",
                Done,
            ),
            msg(4, MessageRole::User, "Thanks, that's all.", Done),
        ];
        let s = ExtractiveSummarizer.summarize_now(&Summary::default(), &ms);
        assert_eq!(
            s.open_todos,
            vec!["We need to book the ryokan by Friday.", "记得帮我订机票。"]
        );
        assert_eq!(
            s.commitments,
            vec![
                "I will send you three options tomorrow.",
                "我会把护照号码发给你。"
            ]
        );
        assert!(
            s.text.starts_with("user: We are planning the Kyoto trip."),
            "{}",
            s.text
        );
        assert_eq!(s.text.lines().count(), 4);
        // A second compaction appends and keeps the earlier fields.
        let more = vec![msg(
            5,
            MessageRole::User,
            "Remind me to pack an adapter.",
            Done,
        )];
        let s2 = ExtractiveSummarizer.summarize_now(&s, &more);
        assert_eq!(s2.open_todos.len(), 3);
        assert_eq!(s2.commitments, s.commitments);
        assert!(s2.text.ends_with("user: Remind me to pack an adapter."));
        // Deterministic.
        assert_eq!(s2, ExtractiveSummarizer.summarize_now(&s, &more));
    }
}
