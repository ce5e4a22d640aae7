//! The embedding layer's errors: what ONNX Runtime (through fastembed) or
//! the tokenizer said, kept as the [`source`](std::error::Error::source),
//! under the operation that failed.

/// A library error kept as a source.
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failure of the embedder. Internal to clients (a generic 500); missing
/// assets are `Error::Unavailable` instead (503, the operator's to fix).
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model (ONNX Runtime, via fastembed) failed to load or run.
    #[error("{context}")]
    Model {
        context: String,
        #[source]
        source: BoxError,
    },
    /// The tokenizer refused a text.
    #[error("tokenizing failed")]
    Tokenizer(#[source] BoxError),
    /// The model answered something unusable (wrong count or dimension).
    #[error("{0}")]
    BadOutput(String),
}

/// The crate error for an unusable answer of the model.
pub fn bad_output(message: String) -> crate::Error {
    EmbedError::BadOutput(message).into()
}
