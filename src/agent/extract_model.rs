//! The model-based extractor: a configured chat model reads the user's turn
//! and answers `{"memories": [{"text", "kind", "confidence", "correction"}]}`,
//! validated against that schema (unknown fields refused; kinds a user
//! memory can have — preference, fact, event, instruction; confidence in
//! 0..=1; text non-empty and within the limits). Invalid output is
//! [`LlmError::BadResponse`], never a panic.
//!
//! [`ModelExtractor::extract_with_model`] is the async call. The synchronous
//! [`Extractor`] impl is a thin adapter for the current trait: on a
//! multi-threaded tokio runtime it blocks in place on the model call; on any
//! model failure, or without such a runtime, it falls back to the rule
//! extractor, so extraction never stops because the model is down or
//! answered badly (a warning names the error, never the text).

use std::sync::Arc;

use serde::Deserialize;

use super::extract::{Candidate, Extractor, RuleExtractor};
use crate::domain::chat::ChatMessage;
use crate::domain::Kind;
use crate::llm::json::{parse_object, text};
use crate::llm::{ChatModel, CompletionOptions, LlmError};

/// Most candidates one turn may yield.
pub const MAX_CANDIDATES: usize = 20;
/// Most characters of one candidate's text.
pub const MAX_CANDIDATE_CHARS: usize = 1000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Output {
    memories: Vec<RawCandidate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCandidate {
    text: String,
    kind: Kind,
    confidence: f64,
    #[serde(default)]
    correction: bool,
}

const INSTRUCTIONS: &str = "You extract long-term memories about the user from the user's message: \
stable preferences, stable facts about the user, standing instructions to the assistant, \
and corrections of something said before. Ignore questions, small talk, one-off requests \
and anything about other people unless it is a stable fact the user states about themselves. \
Write each memory as a short self-contained sentence in the message's language. \
confidence is between 0 and 1: below 0.6 when the user hedges (maybe, might, 可能). \
kind is one of \"preference\", \"fact\", \"event\", \"instruction\". \
correction is true when the message corrects an earlier statement. \
Answer with one JSON object and nothing else: \
{\"memories\": [{\"text\": string, \"kind\": string, \"confidence\": number, \"correction\": boolean}]}; \
{\"memories\": []} when there is nothing to remember.";

/// Parses and validates a model's extraction reply.
pub fn parse_candidates(reply: &str) -> Result<Vec<Candidate>, LlmError> {
    let out: Output = parse_object(reply)?;
    if out.memories.len() > MAX_CANDIDATES {
        return Err(LlmError::BadResponse(format!(
            "{} memories, more than {MAX_CANDIDATES}",
            out.memories.len()
        )));
    }
    out.memories
        .into_iter()
        .map(|c| {
            if !matches!(
                c.kind,
                Kind::Preference | Kind::Fact | Kind::Event | Kind::Instruction
            ) {
                return Err(LlmError::BadResponse(format!(
                    "kind `{}` is not a kind of user memory",
                    c.kind
                )));
            }
            if !(c.confidence.is_finite() && (0.0..=1.0).contains(&c.confidence)) {
                return Err(LlmError::BadResponse(format!(
                    "confidence {} is not between 0 and 1",
                    c.confidence
                )));
            }
            Ok(Candidate {
                text: text("text", &c.text, MAX_CANDIDATE_CHARS)?,
                kind: c.kind,
                confidence: c.confidence as f32,
                correction: c.correction,
            })
        })
        .collect()
}

/// Candidates from a configured chat model.
#[derive(Clone)]
pub struct ModelExtractor {
    model: Arc<dyn ChatModel>,
}

impl ModelExtractor {
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        ModelExtractor { model }
    }

    /// Asks the model for the candidates of one user message.
    pub async fn extract_with_model(&self, user_message: &str) -> Result<Vec<Candidate>, LlmError> {
        let messages = [
            ChatMessage {
                role: "system".into(),
                content: INSTRUCTIONS.into(),
            },
            ChatMessage {
                role: "user".into(),
                content: user_message.into(),
            },
        ];
        let options = CompletionOptions {
            max_tokens: Some(1024),
            temperature: Some(0.0),
            json: true,
        };
        let reply = self.model.complete(&messages, &options).await?;
        parse_candidates(&reply.content)
    }
}

/// Falls back to the rules when the model fails or answers badly: a
/// message is never left unread because the model was down.
#[async_trait::async_trait]
impl Extractor for ModelExtractor {
    fn calls_model(&self) -> bool {
        true
    }

    async fn extract(&self, user_message: &str) -> crate::error::Result<Vec<Candidate>> {
        match self.extract_with_model(user_message).await {
            Ok(candidates) => Ok(candidates),
            Err(e) => {
                tracing::warn!(error = %e, "model extraction failed; using the rules");
                Ok(RuleExtractor.candidates(user_message))
            }
        }
    }
}

/// The compaction summary written by the configured model
/// ([`crate::llm::summary::summarize`]); the compaction falls back to the
/// extractive summary when it fails.
#[derive(Clone)]
pub struct ModelSummarizer {
    model: Arc<dyn ChatModel>,
}

impl ModelSummarizer {
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        ModelSummarizer { model }
    }
}

#[async_trait::async_trait]
impl crate::agent::compaction::Summarizer for ModelSummarizer {
    fn calls_model(&self) -> bool {
        true
    }

    async fn summarize(
        &self,
        previous: &crate::domain::thread::Summary,
        messages: &[crate::domain::thread::Message],
    ) -> crate::error::Result<crate::domain::thread::Summary> {
        let turns: Vec<ChatMessage> = messages
            .iter()
            .map(|m| ChatMessage {
                role: m.role.as_str().to_string(),
                content: m.content.clone(),
            })
            .collect();
        let previous = previous.render();
        Ok(crate::llm::summary::summarize(self.model.as_ref(), &turns, Some(&previous)).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Completion;
    use async_trait::async_trait;

    #[test]
    fn good_outputs_become_candidates() {
        let c = parse_candidates(
            r#"{"memories": [
                {"text": " The user prefers green tea ", "kind": "preference", "confidence": 0.9, "correction": false},
                {"text": "用户的办公室在里昂", "kind": "fact", "confidence": 0.8, "correction": true},
                {"text": "Answer in French", "kind": "instruction", "confidence": 1}
            ]}"#,
        )
        .unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].text, "The user prefers green tea");
        assert_eq!((c[0].kind, c[0].correction), (Kind::Preference, false));
        assert_eq!((c[1].kind, c[1].correction), (Kind::Fact, true));
        assert!((c[1].confidence - 0.8).abs() < 1e-6);
        assert!(!c[2].correction, "correction defaults to false");
        assert!(parse_candidates("{\"memories\": []}").unwrap().is_empty());
        let fenced = "```json\n{\"memories\": [{\"text\": \"x y\", \"kind\": \"event\", \"confidence\": 0.5}]}\n```";
        assert_eq!(parse_candidates(fenced).unwrap()[0].kind, Kind::Event);
    }

    #[test]
    fn bad_outputs_are_refused() {
        let one = |item: &str| format!("{{\"memories\": [{item}]}}");
        let bad = [
            "".to_string(),
            "Nothing to remember.".into(),
            "{\"memories\": {}}".into(),
            "{\"memory\": []}".into(),
            "{\"memories\": [], \"note\": 1}".into(),
            one(r#"{"text": "x", "kind": "preference"}"#),
            one(r#"{"text": "x", "kind": "mood", "confidence": 0.5}"#),
            one(r#"{"text": "x", "kind": "document", "confidence": 0.5}"#),
            one(r#"{"text": "x", "kind": "fact", "confidence": 1.5}"#),
            one(r#"{"text": "x", "kind": "fact", "confidence": -0.1}"#),
            one(r#"{"text": "x", "kind": "fact", "confidence": "high"}"#),
            one(r#"{"text": "  ", "kind": "fact", "confidence": 0.5}"#),
            one(r#"{"text": "x", "kind": "fact", "confidence": 0.5, "source": "chat"}"#),
            one(&format!(
                r#"{{"text": "{}", "kind": "fact", "confidence": 0.5}}"#,
                "a".repeat(MAX_CANDIDATE_CHARS + 1)
            )),
        ];
        for b in &bad {
            assert!(
                matches!(parse_candidates(b), Err(LlmError::BadResponse(_))),
                "{b}"
            );
        }
        let many: Vec<String> = (0..=MAX_CANDIDATES)
            .map(|i| format!(r#"{{"text": "fact {i}", "kind": "fact", "confidence": 0.7}}"#))
            .collect();
        assert!(parse_candidates(&format!("{{\"memories\": [{}]}}", many.join(","))).is_err());
    }

    /// Answers every call with the same content.
    struct Canned(&'static str);

    #[async_trait]
    impl ChatModel for Canned {
        fn model(&self) -> &str {
            "canned"
        }
        fn context_tokens(&self) -> usize {
            4096
        }
        async fn complete(
            &self,
            _: &[ChatMessage],
            options: &CompletionOptions,
        ) -> Result<Completion, LlmError> {
            assert!(options.json);
            Ok(Completion {
                content: self.0.into(),
                prompt_tokens: None,
                completion_tokens: None,
            })
        }
    }

    #[tokio::test]
    async fn the_extractor_uses_the_model_and_falls_back_to_the_rules() {
        let good = ModelExtractor::new(Arc::new(Canned(
            r#"{"memories": [{"text": "The user lives in Lyon", "kind": "fact", "confidence": 0.9}]}"#,
        )));
        let got = good.extract("I live in Lyon.").await.unwrap();
        assert_eq!(got[0].text, "The user lives in Lyon");
        let bad = ModelExtractor::new(Arc::new(Canned("not json")));
        assert!(bad.extract_with_model("I prefer tea.").await.is_err());
        // The rule extractor's own candidate, text as the user wrote it.
        assert_eq!(
            bad.extract("I prefer tea.").await.unwrap()[0].text,
            "I prefer tea"
        );
    }

    #[tokio::test]
    async fn the_summarizer_uses_the_model_and_refuses_a_bad_answer() {
        use crate::agent::compaction::Summarizer;
        use crate::domain::thread::Summary;
        let good = ModelSummarizer::new(Arc::new(Canned(
            r#"{"text": "Trip planned.", "open_todos": ["book the hotel"], "commitments": []}"#,
        )));
        let s = good.summarize(&Summary::default(), &[]).await.unwrap();
        assert_eq!(s.open_todos, vec!["book the hotel".to_string()]);
        let bad = ModelSummarizer::new(Arc::new(Canned(r#"{"text": "x", "mood": 1}"#)));
        assert!(bad.summarize(&Summary::default(), &[]).await.is_err());
    }
}
