//! The lexical layer's errors: what tantivy (or the index directory) said,
//! kept as the [`source`](std::error::Error::source), under the operation
//! that failed.

use std::path::PathBuf;

/// A failure of the lexical index. Internal to clients (a generic 500);
/// logged with its whole chain.
#[derive(Debug, thiserror::Error)]
pub enum LexicalError {
    /// tantivy refused or failed an operation.
    #[error("{context}")]
    Tantivy {
        context: &'static str,
        #[source]
        source: ::tantivy::TantivyError,
    },
    /// The index directory could not be opened.
    #[error("cannot open the index directory {}", dir.display())]
    OpenDirectory {
        dir: PathBuf,
        #[source]
        source: ::tantivy::directory::error::OpenDirectoryError,
    },
    /// Reading a column of the index failed.
    #[error("{context}")]
    Io {
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The writer thread stopped or panicked (its own error, if any, was
    /// returned to the call that hit it).
    #[error("{0}")]
    Writer(&'static str),
    /// A state the index cannot be in, or a failure with no underlying error.
    #[error("{0}")]
    Other(String),
}

impl LexicalError {
    pub fn tantivy(context: &'static str) -> impl FnOnce(::tantivy::TantivyError) -> Self {
        move |source| LexicalError::Tantivy { context, source }
    }
}
