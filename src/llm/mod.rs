//! Chat models behind one trait. The agent loop (turns, compaction, the
//! model-based extractor) talks to [`ChatModel`]; the OpenAI-compatible client
//! implements it for any endpoint that speaks the protocol (OpenAI, vLLM,
//! Ollama, llama.cpp servers). Without a configured model the loop still
//! assembles prompts; the endpoints that need a model answer 503.
//!
//! - [`openai`]: the client ([`openai::OpenAiClient`]), retries and streaming.
//! - [`summary`]: the model-written compaction summary ([`summary::Summary`]).
//! - [`json`]: schema checks shared by the model's structured answers.

pub mod json;
pub mod openai;
pub mod summary;

use std::fmt;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;

use crate::domain::chat::ChatMessage;
use crate::error::Error;

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No model is configured (the message says which setting is missing).
    #[error("no chat model is configured: {0}")]
    NotConfigured(String),
    /// The endpoint could not be reached (after the bounded retries).
    #[error("the model endpoint is unreachable: {0}")]
    Unreachable(String),
    #[error("the model endpoint did not answer within {0} ms")]
    Timeout(u64),
    /// The endpoint answered with an error status.
    #[error("the model endpoint answered {status}: {message}")]
    Status { status: u16, message: String },
    /// The answer arrived but could not be used (not JSON, wrong schema).
    #[error("the model's answer could not be used: {0}")]
    BadResponse(String),
}

impl From<LlmError> for Error {
    fn from(e: LlmError) -> Self {
        match e {
            LlmError::NotConfigured(_) => Error::Unavailable(e.to_string()),
            _ => Error::Upstream(e.to_string()),
        }
    }
}

/// Per-call options.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompletionOptions {
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Ask for a JSON object (`response_format: {"type": "json_object"}`).
    pub json: bool,
}

/// A finished (non-streamed) completion.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub content: String,
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
}

/// An upstream answer passed through as it is (the proxy): status, content
/// type, and the body as a stream (server-sent events when streaming).
pub struct RawResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: UnsyncBoxBody<Bytes, LlmError>,
}

impl fmt::Debug for RawResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawResponse")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .finish_non_exhaustive()
    }
}

#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The model name sent upstream.
    fn model(&self) -> &str;
    /// The model's context window in tokens (the prompt budget's base).
    fn context_tokens(&self) -> usize;
    async fn complete(
        &self,
        messages: &[ChatMessage],
        options: &CompletionOptions,
    ) -> Result<Completion, LlmError>;

    /// Sends an OpenAI chat-completions request body as it is, except for
    /// `model` (the configured one), and returns the upstream answer
    /// unchanged, streamed or not. A 5xx (after the retries) is an error; any
    /// other status is returned for the caller to forward. Models that do not
    /// speak the wire protocol keep this default, which refuses.
    async fn forward(&self, body: serde_json::Value) -> Result<RawResponse, LlmError> {
        let _ = body;
        Err(LlmError::NotConfigured(format!(
            "the model `{}` cannot pass OpenAI requests through",
            self.model()
        )))
    }
}
