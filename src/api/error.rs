//! The one place where errors become HTTP responses.
//!
//! Every failure leaves as `{"error": {"code", "message", "field"?}}` with the
//! status of its [`ErrorCode`] (`ErrorCode::http_status` is the mapping).
//! Internal errors are logged here, once, with their whole source chain (a
//! route returns them and never logs them itself), and returned as a generic
//! message.
//! Axum's own rejections (malformed JSON, wrong types, unknown enum values,
//! bad query strings, oversized bodies) are turned into [`Error`]s by the
//! [`Json`] and [`Query`] extractors, and responses produced by layers with a
//! plain body (timeouts, 405) are rewritten by [`json_errors`]; hyper's own
//! answers to unparsable requests (400, 414, 431) are rewritten on the
//! connection by [`crate::api::listen`], so clients only ever see this one
//! shape. 414 and 431 carry the code `payload_too_large` (a size limit, like 413).

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{Chain, Error, ErrorCode};

/// The body of every error response.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// One of: invalid_argument, payload_too_large, not_found, conflict,
    /// quota_exceeded, unauthenticated, forbidden, rate_limited, overloaded,
    /// unavailable, bad_gateway, invalid_configuration, internal.
    pub code: String,
    pub message: String,
    /// The request field the error is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

fn code_str(code: ErrorCode) -> String {
    match serde_json::to_value(code) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "internal".into(),
    }
}

fn respond(status: StatusCode, code: String, message: String, field: Option<&str>) -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            code,
            message,
            field: field.map(str::to_string),
        },
    };
    (status, axum::Json(body)).into_response()
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let code = self.code();
        let status =
            StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if !self.is_user_error() {
            // In full (the chain down to the library's error), here only;
            // clients get a generic message.
            tracing::error!(error = %Chain(&self), code = ?code, "internal error");
            return respond(status, code_str(code), "internal error".into(), None);
        }
        let retry_after = match &self {
            Error::Overloaded {
                retry_after_secs, ..
            }
            | Error::RateLimited {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        };
        let message = match &self {
            // The variant's Display carries a prefix; the code already says it.
            Error::Invalid { message, .. }
            | Error::TooLarge { message, .. }
            | Error::Conflict(message)
            | Error::QuotaExceeded(message)
            | Error::Unauthenticated(message)
            | Error::Forbidden(message)
            | Error::Unavailable(message)
            | Error::Overloaded { message, .. }
            | Error::RateLimited { message, .. } => message.clone(),
            other => other.to_string(),
        };
        let mut response = respond(status, code_str(code), message, self.field());
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        if code == ErrorCode::Unauthenticated {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mnemo\""),
            );
        }
        response
    }
}

/// Field names a body error may name; anything else is reported as `body`.
const FIELDS: &[&str] = &[
    "memories",
    "tier",
    "user_id",
    "thread_id",
    "text",
    "kind",
    "importance",
    "confidence",
    "metadata",
    "expires_at",
    "refresh",
    "query",
    "top_k",
    "tiers",
    "filters",
    "include_pending",
    "explain",
    "created_after",
    "created_before",
    "messages",
    "model_context_tokens",
    "budget_fraction",
    "document_id",
    "title",
    "status",
    "cursor",
    "limit",
    "before",
    "include_compacted",
    "goal",
];

/// The innermost known field named in a serde path such as
/// `memories[0].tier: unknown variant ...`.
fn field_of(message: &str) -> &'static str {
    let path = message.split(": ").next().unwrap_or("");
    path.rsplit(['.', '['])
        .map(|seg| seg.trim_end_matches(']'))
        .find_map(|seg| FIELDS.iter().find(|f| **f == seg).copied())
        .unwrap_or("body")
}

impl From<JsonRejection> for Error {
    fn from(r: JsonRejection) -> Self {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Error::TooLarge {
                field: "body",
                message: "request body is over the size limit".into(),
            };
        }
        let message = match &r {
            JsonRejection::JsonDataError(e) => {
                // "Failed to deserialize the JSON body into the target type: <path>: <why>"
                let text = e.body_text();
                text.split_once("target type: ")
                    .map(|(_, rest)| rest.to_string())
                    .unwrap_or(text)
            }
            JsonRejection::JsonSyntaxError(_) => format!("malformed JSON: {}", r.body_text()),
            JsonRejection::MissingJsonContentType(_) => {
                "expected a JSON body with `Content-Type: application/json`".into()
            }
            _ => r.body_text(),
        };
        let field = match &r {
            JsonRejection::JsonDataError(_) => field_of(&message),
            _ => "body",
        };
        Error::Invalid { field, message }
    }
}

impl From<QueryRejection> for Error {
    fn from(r: QueryRejection) -> Self {
        let text = r.body_text();
        let message = text
            .split_once("query string: ")
            .map(|(_, rest)| rest.to_string())
            .unwrap_or(text);
        Error::Invalid {
            field: field_of(&message),
            message,
        }
    }
}

/// `axum::Json`, with rejections in the API's error shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let axum::Json(value) = axum::Json::<T>::from_request(req, state).await?;
        Ok(Json(value))
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// `axum::extract::Query`, with rejections in the API's error shape.
#[derive(Debug, Clone, Default)]
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Error;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let axum::extract::Query(value) =
            axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(Query(value))
    }
}

/// Rewrites error responses that do not carry the JSON error shape (made by
/// layers or by axum itself: timeouts, 404 for unknown paths, 405) into it.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (code, message) = match status {
        StatusCode::NOT_FOUND => (ErrorCode::NotFound, "no such route".to_string()),
        StatusCode::METHOD_NOT_ALLOWED => (
            ErrorCode::InvalidArgument,
            "method not allowed on this route".to_string(),
        ),
        StatusCode::SERVICE_UNAVAILABLE => (
            ErrorCode::Unavailable,
            "the request took too long and was abandoned".to_string(),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            ErrorCode::PayloadTooLarge,
            "request body is over the size limit".to_string(),
        ),
        StatusCode::URI_TOO_LONG => (
            ErrorCode::PayloadTooLarge,
            "the request URI is too long".to_string(),
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
            ErrorCode::PayloadTooLarge,
            "the request headers are too large".to_string(),
        ),
        s if s.is_server_error() => (ErrorCode::Internal, "internal error".to_string()),
        s => (
            ErrorCode::InvalidArgument,
            s.canonical_reason().unwrap_or("bad request").to_string(),
        ),
    };
    let mut out = respond(status, code_str(code), message, None);
    for name in [header::ALLOW, header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
        if let Some(v) = response.headers().get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_come_from_serde_paths() {
        assert_eq!(field_of("memories[0].tier: unknown variant `x`"), "tier");
        assert_eq!(field_of("top_k: invalid type"), "top_k");
        assert_eq!(field_of("whatever: nope"), "body");
    }

    #[test]
    fn rate_limited_is_429_with_retry_after() {
        let r = Error::RateLimited {
            message: "slow down".into(),
            retry_after_secs: 3,
        }
        .into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "3");
    }

    /// A `MakeWriter` collecting every log line.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn internal_errors_answer_generically_and_log_their_chain_once() {
        use crate::error::LexicalError;
        let root = ::tantivy::TantivyError::InvalidArgument("the root cause".into());
        let err: Error = LexicalError::tantivy("committing")(root).into();
        // The chain reaches tantivy's error.
        let last = std::iter::successors(Some(&err as &(dyn std::error::Error + 'static)), |e| {
            e.source()
        })
        .last()
        .unwrap();
        assert!(last.is::<::tantivy::TantivyError>(), "{last:?}");
        assert_eq!(
            err.to_string(),
            format!("lexical index error: committing: {last}")
        );
        assert!(err.to_string().contains("the root cause"));

        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let response = tracing::subscriber::with_default(subscriber, || err.into_response());
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"error": {"code": "internal", "message": "internal error"}})
        );
        let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        assert_eq!(logs.lines().count(), 1, "logged once: {logs}");
        assert!(
            logs.contains("lexical index error: committing: ") && logs.contains("the root cause"),
            "{logs}"
        );
    }

    #[test]
    fn user_errors_are_not_logged_and_keep_their_message() {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .finish();
        let r = tracing::subscriber::with_default(subscriber, || {
            Error::invalid("top_k", "must be at most 100").into_response()
        });
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert!(logs.0.lock().unwrap().is_empty());
    }

    #[test]
    fn overloaded_carries_retry_after() {
        let r = Error::Overloaded {
            message: "busy".into(),
            retry_after_secs: 2,
        }
        .into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
    }
}
