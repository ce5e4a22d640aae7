//! Counting tokens the way the target model does (a real BPE), for every
//! budget: the memory block, prompt assembly, compaction triggers.

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;
use utoipa::ToSchema;

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
