//! Review of candidate memories and corrections: confirm or reject a pending
//! candidate, restore a soft-deleted one, supersede a memory with a corrected
//! text. Each is one engine call (`service/review.rs`), audited there.
//! Pending candidates are listed with `GET /v1/memories?status=pending`.

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json};
use crate::api::routes::memories::parse_id;
use crate::api::AppState;
use crate::domain::Memory;
use crate::error::Result;

/// Confirm a pending candidate: it becomes active.
#[utoipa::path(
    post, path = "/v1/memories/{id}/confirm", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = Memory),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Not a pending candidate", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn confirm(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<Memory>> {
    Ok(Json(state.engine.confirm(&actor, parse_id(&id)?).await?))
}

/// Reject a pending candidate: it is soft-deleted (restorable).
#[utoipa::path(
    post, path = "/v1/memories/{id}/reject", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = Memory),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Not a pending candidate", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn reject(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<Memory>> {
    Ok(Json(state.engine.reject(&actor, parse_id(&id)?).await?))
}

/// Restore a soft-deleted, archived or expired memory to active.
#[utoipa::path(
    post, path = "/v1/memories/{id}/restore", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = Memory),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Nothing to restore", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn restore(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<Memory>> {
    Ok(Json(state.engine.restore(&actor, parse_id(&id)?).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SupersedeRequest {
    /// The corrected statement.
    pub text: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SupersedeResponse {
    /// The new memory.
    pub memory: Memory,
    /// The memory it replaced, now `superseded`.
    pub superseded: Uuid,
}

/// Replace a memory with a corrected text: the old one becomes `superseded`,
/// linked to its successor; history shows both.
#[utoipa::path(
    post, path = "/v1/memories/{id}/supersede", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    request_body = SupersedeRequest,
    responses(
        (status = 200, body = SupersedeResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn supersede(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
    Json(body): Json<SupersedeRequest>,
) -> Result<Json<SupersedeResponse>> {
    let id = parse_id(&id)?;
    let done = state.engine.supersede(&actor, id, body.text).await?;
    Ok(Json(SupersedeResponse {
        memory: done.memory,
        superseded: id,
    }))
}
