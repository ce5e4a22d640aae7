//! Chat models behind one trait. The agent loop (turns, compaction, the
//! model-based extractor) talks to [`ChatModel`]; the OpenAI-compatible client
//! implements it for any endpoint that speaks the protocol (OpenAI, vLLM,
//! Ollama, llama.cpp servers). Without a configured model the loop still
//! assembles prompts; the endpoints that need a model answer 503.

use async_trait::async_trait;

use crate::context::ChatMessage;
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
}
