//! Threads of the agent loop: create, append messages, read the working
//! memory, assemble a prompt (no model call), run a turn (with the
//! configured model). A thread of another user is 404, like a missing one.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use uuid::Uuid;

use crate::agent::threads::{
    AppendMessage, CreateThread, HistoryPage, PromptRequest, PromptResponse, ThreadView, TurnReply,
    TurnRequest,
};
use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json, Query};
use crate::api::AppState;
use crate::domain::thread::{Message, Thread};
use crate::error::Result;

/// Start a thread for a user, with an optional pinned goal.
#[utoipa::path(
    post, path = "/v1/threads", tag = "threads",
    request_body = CreateThread,
    responses(
        (status = 201, description = "Created", body = Thread),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user", body = ErrorBody),
        (status = 409, description = "`conflict`: the user's data is being erased (retry when the erasure has completed); \
            `quota_exceeded`: the user has limits.max_threads_per_user threads", body = ErrorBody),
        (status = 413, description = "goal over limits.max_text_bytes", body = ErrorBody),
        (status = 429, description = "Rate limited (Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Json(req): Json<CreateThread>,
) -> Result<(StatusCode, Json<Thread>)> {
    let thread = state.agent.create_thread(&actor, req).await?;
    Ok((StatusCode::CREATED, Json(thread)))
}

/// The thread's working memory: pinned goal, summary, and one page of its
/// messages (the newest `limit`, default and at most 200; `before` pages
/// back, `include_compacted` through the whole history).
#[utoipa::path(
    get, path = "/v1/threads/{id}", tag = "threads",
    params(("id" = Uuid, Path, description = "Thread id"), HistoryPage),
    responses(
        (status = 200, body = ThreadView),
        (status = 400, description = "limit outside 1..=200, or an unknown parameter", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 429, description = "Rate limited (Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<Uuid>,
    Query(page): Query<HistoryPage>,
) -> Result<Json<ThreadView>> {
    Ok(Json(state.agent.view_page(&actor, id, &page).await?))
}

/// Append a message (agents running their own model). Tool results are kept
/// as a compact summary with a pointer to the full payload. A user message
/// schedules extraction of candidate memories.
#[utoipa::path(
    post, path = "/v1/threads/{id}/messages", tag = "threads",
    params(("id" = Uuid, Path, description = "Thread id")),
    request_body = AppendMessage,
    responses(
        (status = 201, description = "Stored", body = Message),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 413, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn append(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<Uuid>,
    Json(req): Json<AppendMessage>,
) -> Result<(StatusCode, Json<Message>)> {
    let message = state.agent.append(&actor, id, req).await?;
    Ok((StatusCode::CREATED, Json(message)))
}

/// A tool result's full payload.
#[utoipa::path(
    get, path = "/v1/threads/{id}/payloads/{payload_id}", tag = "threads",
    params(
        ("id" = Uuid, Path, description = "Thread id"),
        ("payload_id" = Uuid, Path, description = "Payload id from a tool summary"),
    ),
    responses(
        (status = 200, description = "The payload as stored"),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn payload(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path((id, payload_id)): Path<(Uuid, Uuid)>,
) -> Result<Json<serde_json::Value>> {
    Ok(Json(state.agent.payload(&actor, id, payload_id).await?))
}

/// Assemble the prompt for the next message without calling a model: system
/// instructions, pinned goal, summary, memories (within the budget share of
/// `model_context_tokens`), recent turns and the message, with a token
/// breakdown. Nothing is stored.
#[utoipa::path(
    post, path = "/v1/threads/{id}/prompt", tag = "threads",
    params(("id" = Uuid, Path, description = "Thread id")),
    request_body = PromptRequest,
    responses(
        (status = 200, body = PromptResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 503, description = "Overloaded (Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn prompt(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<Uuid>,
    Json(req): Json<PromptRequest>,
) -> Result<Json<PromptResponse>> {
    Ok(Json(state.agent.prompt(&actor, id, req).await?.into()))
}

/// Run a turn with the configured model: the user's message is stored first
/// (and kept if the model fails), then the reply; extraction follows in the
/// background.
#[utoipa::path(
    post, path = "/v1/threads/{id}/turns", tag = "threads",
    params(("id" = Uuid, Path, description = "Thread id")),
    request_body = TurnRequest,
    responses(
        (status = 200, body = TurnReply),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "A turn is already running in this thread", body = ErrorBody),
        (status = 429, description = "`rate_limited` (Retry-After): this key's rate limit, or the user's limits.model_calls_per_user_per_minute (the user's message is stored)", body = ErrorBody),
        (status = 502, description = "The model endpoint failed", body = ErrorBody),
        (status = 503, description = "No model configured", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn turn(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<Uuid>,
    Json(req): Json<TurnRequest>,
) -> Result<Json<TurnReply>> {
    Ok(Json(state.agent.turn(&actor, id, req).await?))
}
