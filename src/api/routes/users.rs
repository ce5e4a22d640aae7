//! `DELETE /v1/users/{user_id}`: "forget all my data". Erases every trace of
//! the user in the key's tenant from every store (irreversible); a user key
//! may only erase itself. `GET /v1/users/{user_id}/erasure` verifies it.

use axum::extract::{Path, State};

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::erasure::{ErasureReceipt, ErasureVerification};
use crate::error::Result;

/// Erase a user's memories, history, index entries and cached embeddings.
#[utoipa::path(
    delete, path = "/v1/users/{user_id}", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "Erased; the receipt counts what was removed", body = ErasureReceipt),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn forget_user(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
) -> Result<Json<ErasureReceipt>> {
    Ok(Json(state.engine.forget_user(&actor, &user_id).await?))
}

/// Verify an erasure: what every store still holds of the user (all zero,
/// `erased: true`, after `DELETE /v1/users/{user_id}`).
#[utoipa::path(
    get, path = "/v1/users/{user_id}/erasure", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "Counts per store", body = ErasureVerification),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn verify_erasure(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
) -> Result<Json<ErasureVerification>> {
    Ok(Json(state.engine.verify_erasure(&actor, &user_id).await?))
}
