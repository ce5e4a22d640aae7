//! `DELETE /v1/users/{user_id}`: "forget all my data". Erases every trace of
//! the user in the key's tenant from every store (irreversible); a user key
//! may only erase itself.

use axum::extract::{Path, State};

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::erasure::ErasureReceipt;
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
