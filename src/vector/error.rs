//! The vector layer's errors: what the embedded engine (qdrant-edge), the
//! Qdrant server (qdrant-client) or the file system said, kept as the
//! [`source`](std::error::Error::source), under the operation that failed.

use std::path::PathBuf;

/// A library error kept as a source.
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failure of the vector index. Internal to clients (a generic 500);
/// logged with its whole chain.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    /// The embedded engine (qdrant-edge) refused or failed an operation, or
    /// the Qdrant client's runtime could not start.
    #[error("{context}")]
    Engine {
        context: String,
        #[source]
        source: BoxError,
    },
    /// The Qdrant server refused or failed a request.
    #[error("{context}")]
    Server {
        context: String,
        #[source]
        source: Box<qdrant_client::QdrantError>,
    },
    /// A file of the index could not be read, written or removed.
    #[error("{context} {}", path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Data or state the index cannot accept (wrong dimension, a malformed
    /// point, a panic of the engine), with no underlying error.
    #[error("{0}")]
    Invalid(String),
}

impl VectorError {
    /// The crate error for data or state the index cannot accept.
    pub fn invalid(message: impl Into<String>) -> crate::Error {
        VectorError::Invalid(message.into()).into()
    }

    /// The crate error for a file of the index.
    pub fn io(
        context: &'static str,
        path: &std::path::Path,
        source: std::io::Error,
    ) -> crate::Error {
        VectorError::Io {
            context,
            path: path.to_path_buf(),
            source,
        }
        .into()
    }
}
