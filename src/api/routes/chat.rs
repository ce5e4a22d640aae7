//! `POST /v1/chat/completions`: an OpenAI-compatible proxy with memory. Any
//! OpenAI client gains memory by pointing its base URL at mnemo's `/v1`:
//!
//! 1. the user is the body's `user` (a user key's own user otherwise; an
//!    agent key must name one); an optional `X-Mnemo-Thread` header names the
//!    thread, which scopes retrieval second (its working memory);
//! 2. the memories for the last user message are packed by
//!    `Engine::build_context` within the policy's `context.budget_fraction` of the
//!    configured model's context window, and inserted as one system message
//!    after the caller's leading system message(s);
//! 3. the body goes upstream with every other field untouched except `model`,
//!    which becomes the configured model (the budget is computed for it);
//! 4. the answer comes back as it is: JSON, or the server-sent events of
//!    `stream: true` chunk by chunk. An upstream 4xx is forwarded with its
//!    body; a 5xx (after retries), a timeout or an unreachable endpoint is 502.
//!
//! Without a configured model the route answers 503 saying how to configure
//! one. Neither the messages nor the reply are logged.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::error::{Error, Result};
use crate::service::ContextRequest;

/// The optional thread header.
pub const THREAD_HEADER: HeaderName = HeaderName::from_static("x-mnemo-thread");
/// How many memories were injected (the response header).
pub const MEMORIES_HEADER: HeaderName = HeaderName::from_static("x-mnemo-memories");
/// Longest `X-Mnemo-Thread` value (a thread id).
pub const MAX_THREAD_ID_BYTES: usize = crate::domain::validate::MAX_ID_BYTES;

/// Why the proxy answers 503 without a model.
pub const NO_MODEL: &str = "no chat model is configured: set `base_url` and `model` in the \
`[llm]` section of the --config file, or MNEMO_LLM_BASE_URL and MNEMO_LLM_MODEL (see \
docs/guide/models-and-proxy.md)";

/// The text of a message's `content`: a string, or the `text` parts of an
/// array of content parts.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The last user message's text: what to find memories for.
fn last_user_text(messages: &[Value]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .and_then(content_text)
        .filter(|t| !t.trim().is_empty())
}

/// Where the memory block goes: after the leading system (or developer)
/// messages.
fn insertion_index(messages: &[Value]) -> usize {
    messages
        .iter()
        .take_while(|m| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("system") | Some("developer")
            )
        })
        .count()
}

fn thread_id(headers: &HeaderMap) -> Result<Option<String>> {
    let Some(value) = headers.get(&THREAD_HEADER) else {
        return Ok(None);
    };
    let id = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.len() <= MAX_THREAD_ID_BYTES)
        .ok_or_else(|| {
            Error::invalid(
                "thread_id",
                format!("the X-Mnemo-Thread header must be 1 to {MAX_THREAD_ID_BYTES} visible ASCII characters"),
            )
        })?;
    Ok(Some(id.to_string()))
}

/// OpenAI-compatible chat completions with the user's memories injected.
/// The body is the standard OpenAI one plus `user`; the answer is the
/// upstream's, streamed when `stream` is true.
#[utoipa::path(
    post, path = "/v1/chat/completions", tag = "chat",
    request_body(content = Object, description = "An OpenAI chat-completions body; `user` names the user (required with agent keys)"),
    params(("X-Mnemo-Thread" = Option<String>, Header, description = "Thread whose working memory is searched second")),
    responses(
        (status = 200, description = "The upstream's answer as it is: JSON, or server-sent events with `stream: true`; header `x-mnemo-memories` counts the injected memories"),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user", body = ErrorBody),
        (status = 429, description = "`rate_limited` (Retry-After): this key's rate limit, or the user's limits.model_calls_per_user_per_minute", body = ErrorBody),
        (status = 502, description = "The model endpoint is down, timed out or failed", body = ErrorBody),
        (status = 503, description = "No model is configured", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn chat_completions(
    State(state): State<AppState>,
    Auth(actor): Auth,
    headers: HeaderMap,
    Json(mut body): Json<Value>,
) -> Result<Response> {
    let model = state
        .chat_model
        .clone()
        .ok_or_else(|| Error::Unavailable(NO_MODEL.into()))?;
    let thread_id = thread_id(&headers)?;
    let requested = match body.get("user") {
        None | Some(Value::Null) => None,
        Some(Value::String(u)) if !u.trim().is_empty() => Some(u.clone()),
        Some(_) => {
            return Err(Error::invalid(
                "user_id",
                "`user` must be a non-empty string",
            ))
        }
    };
    let user = actor.user_for(requested.as_deref())?.ok_or_else(|| {
        Error::invalid(
            "user_id",
            "`user` is required: it names whose memories to use",
        )
    })?;
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| Error::invalid("messages", "`messages` must be a non-empty array"))?;

    let mut injected = 0;
    if let Some(query) = last_user_text(messages) {
        let block = state
            .engine
            .build_context(
                &actor,
                ContextRequest {
                    user_id: Some(user.clone()),
                    thread_id: thread_id.clone(),
                    query: Some(query),
                    messages: None,
                    model_context_tokens: model.context_tokens(),
                    budget_fraction: None,
                },
            )
            .await?;
        if !block.text.is_empty() {
            injected = block.memory_ids.len();
            let at = insertion_index(messages);
            if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
                messages.insert(at, json!({"role": "system", "content": block.text}));
            }
        }
    }
    tracing::debug!(
        thread_id = thread_id.as_deref().unwrap_or("-"),
        memories = injected,
        "proxying a chat completion"
    );
    // The proxy stores nothing of the conversation: a client that wants its
    // turns kept and compacted uses the threads API (`/v1/threads`).

    // Per-user model-call quota (quota.rs): 429 before the call.
    state.engine.model_calls().take(&actor.tenant_id, &user)?;
    let raw = model.forward(body).await?;
    let mut response = Response::new(Body::new(raw.body));
    *response.status_mut() = StatusCode::from_u16(raw.status).unwrap_or(StatusCode::BAD_GATEWAY);
    if let Some(ct) = raw
        .content_type
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        response.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    response
        .headers_mut()
        .insert(MEMORIES_HEADER, HeaderValue::from(injected));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_the_last_user_text() {
        let m = vec![
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": "first"}),
            json!({"role": "assistant", "content": "a"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "second"},
                {"type": "image_url", "image_url": {"url": "http://x"}},
                {"type": "text", "text": "part"}
            ]}),
        ];
        assert_eq!(last_user_text(&m).as_deref(), Some("second\npart"));
        assert_eq!(last_user_text(&m[..3]).as_deref(), Some("first"));
        assert_eq!(last_user_text(&m[..1]), None);
        assert_eq!(
            last_user_text(&[json!({"role": "user", "content": " "})]),
            None
        );
    }

    #[test]
    fn the_block_goes_after_the_leading_system_messages() {
        let sys = json!({"role": "system", "content": "s"});
        let dev = json!({"role": "developer", "content": "d"});
        let user = json!({"role": "user", "content": "u"});
        assert_eq!(insertion_index(std::slice::from_ref(&user)), 0);
        assert_eq!(insertion_index(&[sys.clone(), user.clone()]), 1);
        assert_eq!(insertion_index(&[sys.clone(), dev, user.clone(), sys]), 2);
    }

    #[test]
    fn thread_headers_are_validated() {
        let mut h = HeaderMap::new();
        assert_eq!(thread_id(&h).unwrap(), None);
        h.insert(&THREAD_HEADER, HeaderValue::from_static("t-1"));
        assert_eq!(thread_id(&h).unwrap().as_deref(), Some("t-1"));
        h.insert(&THREAD_HEADER, HeaderValue::from_static("  "));
        assert!(thread_id(&h).is_err());
        h.insert(
            &THREAD_HEADER,
            HeaderValue::from_str(&"x".repeat(300)).unwrap(),
        );
        assert!(thread_id(&h).is_err());
    }
}
