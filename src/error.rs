//! Errors. User errors (bad input, not found, conflicts, limits) are kept apart
//! from internal ones (storage, index, embedder failures): the former are
//! returned to callers as they are, the latter are logged in full and returned
//! as a generic message. [`ErrorCode`] is the one place that maps to HTTP.
//!
//! Each layer has its own error, holding what its library said as the
//! [`source`](std::error::Error::source): [`StoreError`] (sqlx),
//! [`LexicalError`] (tantivy), [`VectorError`] (qdrant-edge,
//! qdrant-client, files), [`EmbedError`] (ONNX Runtime, tokenizers). The
//! crate [`Error`] wraps them with `#[from]`, so `?` works across layers
//! (and `?` on a `sqlx::Error` still gives `Error::Store`). An internal
//! error's `Display` is its whole chain (`lexical index error: committing:
//! <tantivy's message>`, see [`Chain`]), so every log line that shows one
//! carries the root cause; `source()` walks the same chain for code.

use std::fmt;

use serde::Serialize;

pub use crate::embed::EmbedError;
pub use crate::lexical::LexicalError;
pub use crate::store::StoreError;
pub use crate::vector::VectorError;

/// The source a layer error keeps when its library's error type is not one
/// type (fastembed, tokenizers, qdrant-edge).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A field failed validation.
    #[error("invalid {field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    /// A field is over its size limit.
    #[error("{message}")]
    TooLarge {
        field: &'static str,
        message: String,
    },
    #[error("{what} not found")]
    NotFound { what: String },
    /// The request conflicts with the current state (e.g. a running turn).
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Too much concurrent work; retry after the given seconds.
    #[error("overloaded: {message}")]
    Overloaded {
        message: String,
        retry_after_secs: u64,
    },
    /// The key sent more requests than the policy allows
    /// (`[limits] requests_per_second_per_key`, `burst_per_key`) or the user
    /// is at a quota; retry after the given seconds.
    #[error("rate limited: {message}")]
    RateLimited {
        message: String,
        retry_after_secs: u64,
    },
    /// The user is at a quota of the policy (`[limits] max_threads_per_user`):
    /// nothing is written until something is deleted or the quota raised.
    #[error("quota exceeded: {0}")]
    QuotaExceeded(String),
    /// A component is not ready or not configured (model assets missing, no LLM).
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The policy file or configuration is invalid.
    #[error("configuration error in `{key}`: {message}")]
    Config { key: String, message: String },
    #[error("store error: {}", Chain(.0))]
    Store(#[from] StoreError),
    #[error("lexical index error: {}", Chain(.0))]
    Lexical(#[from] LexicalError),
    #[error("vector index error: {}", Chain(.0))]
    Vector(#[from] VectorError),
    #[error("embedder error: {}", Chain(.0))]
    Embedder(#[from] EmbedError),
    #[error("I/O error: {}", Chain(.0))]
    Io(#[from] std::io::Error),
    /// The configured chat model's endpoint failed (down, timed out, or an
    /// answer that could not be used).
    #[error("model endpoint error: {0}")]
    Upstream(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Store(StoreError::Sqlx(e))
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Store(StoreError::Direct(e))
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Error::Store(StoreError::Migrate(e))
    }
}

/// Displays an error and every source under it: `a: b: c`. An [`Error`]
/// in the chain already displays the rest of it, so the walk stops there
/// (no cause is printed twice); `main` prints anyhow's chain the same way.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut next = Some(self.0);
        let mut first = true;
        while let Some(e) = next {
            if !first {
                f.write_str(": ")?;
            }
            write!(f, "{e}")?;
            first = false;
            next = if e.is::<Error>() { None } else { e.source() };
        }
        Ok(())
    }
}

impl Error {
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Error::Invalid {
            field,
            message: message.into(),
        }
    }

    pub fn not_found(what: impl fmt::Display) -> Self {
        Error::NotFound {
            what: what.to_string(),
        }
    }

    pub fn internal(message: impl fmt::Display) -> Self {
        Error::Internal(message.to_string())
    }

    /// The field a user error is about, when there is one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Error::Invalid { field, .. } | Error::TooLarge { field, .. } => Some(field),
            _ => None,
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Invalid { .. } => ErrorCode::InvalidArgument,
            Error::TooLarge { .. } => ErrorCode::PayloadTooLarge,
            Error::NotFound { .. } => ErrorCode::NotFound,
            Error::Conflict(_) => ErrorCode::Conflict,
            Error::Unauthenticated(_) => ErrorCode::Unauthenticated,
            Error::Forbidden(_) => ErrorCode::Forbidden,
            Error::Overloaded { .. } => ErrorCode::Overloaded,
            Error::RateLimited { .. } => ErrorCode::RateLimited,
            Error::QuotaExceeded(_) => ErrorCode::QuotaExceeded,
            Error::Unavailable(_) => ErrorCode::Unavailable,
            Error::Config { .. } => ErrorCode::InvalidConfiguration,
            Error::Upstream(_) => ErrorCode::BadGateway,
            Error::Store(_)
            | Error::Lexical(_)
            | Error::Vector(_)
            | Error::Embedder(_)
            | Error::Io(_)
            | Error::Internal(_) => ErrorCode::Internal,
        }
    }

    /// Whether the caller caused it (and may see the message as it is).
    pub fn is_user_error(&self) -> bool {
        self.code() != ErrorCode::Internal
    }
}

/// The closed set of error codes clients see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidArgument,
    PayloadTooLarge,
    NotFound,
    Conflict,
    /// A per-user quota of the policy is reached (409).
    QuotaExceeded,
    Unauthenticated,
    Forbidden,
    RateLimited,
    Overloaded,
    Unavailable,
    /// The model endpoint behind a turn or the proxy failed.
    BadGateway,
    InvalidConfiguration,
    Internal,
}

impl ErrorCode {
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidArgument => 400,
            ErrorCode::Unauthenticated => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::Conflict | ErrorCode::QuotaExceeded => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::InvalidConfiguration => 422,
            ErrorCode::RateLimited => 429,
            ErrorCode::Overloaded | ErrorCode::Unavailable => 503,
            ErrorCode::Internal => 500,
            ErrorCode::BadGateway => 502,
        }
    }
}
