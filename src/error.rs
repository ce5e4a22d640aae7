//! Errors. User errors (bad input, not found, conflicts, limits) are kept apart
//! from internal ones (storage, index, embedder failures): the former are
//! returned to callers as they are, the latter are logged in full and returned
//! as a generic message. [`ErrorCode`] is the one place that maps to HTTP.

use std::fmt;

use serde::Serialize;

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
    #[error("store error: {0}")]
    Store(#[from] sqlx::Error),
    #[error("store migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("lexical index error: {0}")]
    Lexical(String),
    #[error("vector index error: {0}")]
    Vector(String),
    #[error("embedder error: {0}")]
    Embedder(String),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The configured chat model's endpoint failed (down, timed out, or an
    /// answer that could not be used).
    #[error("model endpoint error: {0}")]
    Upstream(String),
    #[error("internal error: {0}")]
    Internal(String),
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
            | Error::Migrate(_)
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
