//! The compaction summary a model writes: older turns (and the previous
//! summary) become `{text, open_todos, commitments}`, with open to-dos and
//! explicit commitments kept as fields so compaction never loses them.
//! [`Summary`] is shared with the deterministic extractive summary the
//! compaction code falls back to without a model.

use serde::Deserialize;

use super::json::{parse_object, text, texts};
use super::{ChatModel, CompletionOptions, LlmError};
use crate::domain::chat::ChatMessage;

/// Most characters of the summary text.
pub const MAX_SUMMARY_CHARS: usize = 8000;
/// Most items per list, and characters per item.
pub const MAX_ITEMS: usize = 50;
pub const MAX_ITEM_CHARS: usize = 500;

pub use crate::domain::thread::Summary;

/// Checks a model's summary: a non-empty text within [`MAX_SUMMARY_CHARS`],
/// at most [`MAX_ITEMS`] non-empty items of at most [`MAX_ITEM_CHARS`].
pub fn validated(s: Summary) -> Result<Summary, LlmError> {
    Ok(Summary {
        text: text("text", &s.text, MAX_SUMMARY_CHARS)?,
        open_todos: texts("open_todos", &s.open_todos, MAX_ITEMS, MAX_ITEM_CHARS)?,
        commitments: texts("commitments", &s.commitments, MAX_ITEMS, MAX_ITEM_CHARS)?,
    })
}

/// The shape a model must answer with (unknown fields are an error).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SummaryAnswer {
    text: String,
    #[serde(default)]
    open_todos: Vec<String>,
    #[serde(default)]
    commitments: Vec<String>,
}

const INSTRUCTIONS: &str = "You compact a conversation between a user and an assistant. \
Write a concise summary of the turns below, merged with the previous summary if one is given. \
Keep every open to-do and every explicit commitment (\"I will…\", \"remind me…\", promised follow-ups) \
as separate items; drop those that the turns show as done. \
Answer with one JSON object and nothing else: \
{\"text\": string, \"open_todos\": [string], \"commitments\": [string]}.";

/// Parses and validates a model's summary reply.
pub fn parse_summary(reply: &str) -> Result<Summary, LlmError> {
    let a = parse_object::<SummaryAnswer>(reply)?;
    validated(Summary {
        text: a.text,
        open_todos: a.open_todos,
        commitments: a.commitments,
    })
}

/// The messages asking a model for the summary.
pub fn summary_prompt(
    older_turns: &[ChatMessage],
    previous_summary: Option<&str>,
) -> Vec<ChatMessage> {
    let mut transcript = String::new();
    if let Some(p) = previous_summary.filter(|p| !p.trim().is_empty()) {
        transcript.push_str("Previous summary:\n");
        transcript.push_str(p);
        transcript.push_str("\n\n");
    }
    transcript.push_str("Turns to compact:\n");
    for t in older_turns {
        transcript.push_str(&format!("[{}] {}\n", t.role, t.content));
    }
    vec![
        ChatMessage {
            role: "system".into(),
            content: INSTRUCTIONS.into(),
        },
        ChatMessage {
            role: "user".into(),
            content: transcript,
        },
    ]
}

/// Asks `model` to summarise `older_turns` (oldest first) together with the
/// previous summary. An answer that is not a valid [`Summary`] is
/// [`LlmError::BadResponse`]; the caller then uses the extractive summary.
pub async fn summarize(
    model: &dyn ChatModel,
    older_turns: &[ChatMessage],
    previous_summary: Option<&str>,
) -> Result<Summary, LlmError> {
    let options = CompletionOptions {
        max_tokens: Some(1024),
        temperature: Some(0.0),
        json: true,
    };
    let reply = model
        .complete(&summary_prompt(older_turns, previous_summary), &options)
        .await?;
    parse_summary(&reply.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_summaries_parse() {
        let s = parse_summary(
            r#"{"text": " Trip to Kyoto planned. ", "open_todos": ["book the ryokan"], "commitments": ["send the train times"]}"#,
        )
        .unwrap();
        assert_eq!(s.text, "Trip to Kyoto planned.");
        assert_eq!(s.open_todos, ["book the ryokan"]);
        assert!(s.render().contains("Commitments:\n- send the train times"));
        let s = parse_summary("```json\n{\"text\": \"只聊了天气。\"}\n```").unwrap();
        assert!(s.open_todos.is_empty() && s.commitments.is_empty());
    }

    #[test]
    fn bad_summaries_are_refused() {
        for bad in [
            "I could not summarise this.",
            r#"{"text": ""}"#,
            r#"{"open_todos": []}"#,
            r#"{"text": "x", "extra": 1}"#,
            r#"{"text": "x", "open_todos": "book"}"#,
            r#"{"text": "x", "open_todos": [""]}"#,
            r#"{"text": 5}"#,
        ] {
            assert!(
                matches!(parse_summary(bad), Err(LlmError::BadResponse(_))),
                "{bad}"
            );
        }
        let long = format!(r#"{{"text": "{}"}}"#, "a".repeat(MAX_SUMMARY_CHARS + 1));
        assert!(parse_summary(&long).is_err());
        let many: Vec<String> = (0..=MAX_ITEMS).map(|i| format!("todo {i}")).collect();
        let json = serde_json::json!({"text": "x", "open_todos": many}).to_string();
        assert!(parse_summary(&json).is_err());
    }

    #[test]
    fn the_prompt_carries_the_previous_summary_and_the_turns() {
        let turns = [ChatMessage {
            role: "user".into(),
            content: "book it".into(),
        }];
        let p = summary_prompt(&turns, Some("earlier"));
        assert!(p[1].content.starts_with("Previous summary:\nearlier"));
        assert!(p[1].content.contains("[user] book it"));
        assert!(summary_prompt(&turns, None)[1]
            .content
            .starts_with("Turns to compact:"));
    }
}
