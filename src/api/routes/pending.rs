//! Routes whose engine side has not landed yet. They authenticate and check
//! permissions like the real ones will, then say so plainly.
//!
//! TODO(context): route `POST /v1/context` to `crate::context::build_context`
//! once the lead's `src/context.rs` is on main.
//! TODO(reference): route the document routes to `Engine::ingest_document` /
//! `Engine::delete_document` once they are on main.
//! TODO(forget): implement `DELETE /v1/users/{user_id}` (erasure) in its issue.

use axum::extract::{Path, State};
use axum::response::Response;

use crate::api::auth::{require_admin, Auth};
use crate::api::error::{not_implemented, ErrorBody};
use crate::api::AppState;
use crate::domain::memory::validate_id;
use crate::error::{Error, Result};

/// Build the memory block for a prompt within a token budget.
/// Not yet available: answers 503 until context building lands.
#[utoipa::path(
    post, path = "/v1/context", tag = "context",
    responses(
        (status = 401, body = ErrorBody),
        (status = 503, description = "Not yet available on this server", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn context(State(_state): State<AppState>, Auth(_actor): Auth) -> Result<Response> {
    // TODO(context): parse ContextRequest and call build_context.
    Err(Error::Unavailable(
        "POST /v1/context is not yet available on this server".into(),
    ))
}

/// Ingest reference documents (admin). Not yet available: 503.
#[utoipa::path(
    post, path = "/v1/reference/documents", tag = "reference",
    responses(
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 503, description = "Not yet available on this server", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn ingest_document(
    State(_state): State<AppState>,
    Auth(actor): Auth,
) -> Result<Response> {
    require_admin(&actor, "write reference memory")?;
    // TODO(reference): Engine::ingest_document.
    Err(Error::Unavailable(
        "reference document ingestion is not yet available on this server".into(),
    ))
}

/// Delete a reference document and its chunks (admin). Not yet available: 503.
#[utoipa::path(
    delete, path = "/v1/reference/documents/{id}", tag = "reference",
    params(("id" = String, Path, description = "Document id")),
    responses(
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 503, description = "Not yet available on this server", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn delete_document(
    State(_state): State<AppState>,
    Auth(actor): Auth,
    Path(_id): Path<String>,
) -> Result<Response> {
    require_admin(&actor, "delete reference memory")?;
    // TODO(reference): Engine::delete_document.
    Err(Error::Unavailable(
        "reference document deletion is not yet available on this server".into(),
    ))
}

/// "Forget all my data": erase every memory of a user. Not implemented yet: 501.
#[utoipa::path(
    delete, path = "/v1/users/{user_id}", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user", body = ErrorBody),
        (status = 501, description = "Not implemented yet", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn forget_user(
    State(_state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
) -> Result<Response> {
    validate_id("user_id", &user_id)?;
    actor.user_for(Some(&user_id))?;
    // TODO(forget): erasure across store, indexes and caches (its own issue).
    Ok(not_implemented(
        "forgetting a user's data is not implemented yet; nothing was deleted",
    ))
}
