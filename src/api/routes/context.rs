//! `POST /v1/context`: a memory block for a prompt, within a token budget.

use axum::extract::State;

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::domain::context::ContextBlock;
use crate::error::Result;
use crate::service::ContextRequest;

/// Build the memory block for a prompt: the user's relevant memories, packed
/// within `budget_fraction` of `model_context_tokens`.
#[utoipa::path(
    post, path = "/v1/context", tag = "context",
    request_body = ContextRequest,
    responses(
        (status = 200, body = ContextBlock),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user", body = ErrorBody),
        (status = 503, description = "Overloaded (Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn context(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Json(req): Json<ContextRequest>,
) -> Result<Json<ContextBlock>> {
    Ok(Json(state.engine.build_context(&actor, req).await?))
}
