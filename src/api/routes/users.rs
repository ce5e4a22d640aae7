//! `DELETE /v1/users/{user_id}`: "forget all my data". Erases every trace of
//! the user in the key's tenant from every store (irreversible); a user key
//! may only erase itself. `GET /v1/users/{user_id}/erasure` verifies it and
//! says how far a running erasure is.
//!
//! The DELETE records the intent and hands the erasure to a tracked task
//! ([`crate::Engine::start_erasure`]), then waits a short while
//! ([`crate::api::AppState::erasure_wait`], 1 s by default, `erasure_wait_secs`): done by then,
//! 200 with the receipt; otherwise 202 with the status URL (also in
//! `Location`). A client that disconnects, or the request timeout, never cuts
//! an erasure short; a second DELETE while one runs joins it.
//!
//! `GET …/erasure?files=true` (admin keys, embedded deployment) adds what
//! `mnemo verify-erasure` adds: a byte scan of every file of the data
//! directory for the user's id and owner key (`files`, see
//! [`crate::service::erasure::scan`]). It reads the whole data directory, so it costs
//! time proportional to its size (and the disk bandwidth); one scan runs at
//! a time per node (another answers 503 with `Retry-After`), off the async
//! runtime. In a PostgreSQL or Qdrant-server deployment the data directory
//! holds neither the store nor the vectors, so the scan would prove nothing
//! about them: `files=true` is refused there.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::auth::{require_admin, Auth};
use crate::api::error::{ErrorBody, Json, Query};
use crate::api::AppState;
use crate::error::{Error, Result};
use crate::service::erasure::{ErasureReceipt, ErasureStatus, ErasureVerification};

/// The data directory the file scan reads, and the one-scan-at-a-time gate.
pub struct ErasureFiles {
    data_dir: PathBuf,
    one_at_a_time: Arc<tokio::sync::Semaphore>,
}

impl ErasureFiles {
    pub fn new(data_dir: PathBuf) -> Self {
        ErasureFiles {
            data_dir,
            one_at_a_time: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct VerifyParams {
    /// Admin keys, embedded deployment: also scan every file of the data
    /// directory for the user's id and owner key (reads the whole directory;
    /// one scan at a time).
    #[serde(default)]
    pub files: bool,
}

/// An erasure still running when the DELETE answered (202).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErasureAccepted {
    pub user_id: String,
    /// Always `in_progress`.
    pub status: ErasureStatus,
    /// Where to follow it: `GET` answers `status: erased` once it is done.
    pub status_url: String,
}

/// Erase a user's memories, threads, history, index entries and cached
/// embeddings. Idempotent: a DELETE while the user's erasure runs joins it.
#[utoipa::path(
    delete, path = "/v1/users/{user_id}", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "Erased; the receipt counts what was removed", body = ErasureReceipt),
        (status = 202, description = "Recorded and running; it completes whatever the client does. \
            Follow `status_url` (also in `Location`)", body = ErasureAccepted),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user", body = ErrorBody),
        (status = 429, description = "Rate limited (Retry-After)", body = ErrorBody),
        (status = 503, description = "The erasure failed and stays recorded; it is retried automatically", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn forget_user(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
) -> Result<Response> {
    let job = state.engine.start_erasure(&actor, &user_id).await?;
    let user = job.user_id().to_string();
    match job.wait(Some(state.erasure_wait)).await? {
        Some(receipt) => Ok(Json(receipt).into_response()),
        None => {
            let status_url = format!("/v1/users/{}/erasure", encode_segment(&user));
            let location = HeaderValue::from_str(&status_url).ok();
            let body = ErasureAccepted {
                user_id: user,
                status: ErasureStatus::InProgress,
                status_url,
            };
            let mut response = (StatusCode::ACCEPTED, Json(body)).into_response();
            if let Some(l) = location {
                response.headers_mut().insert(header::LOCATION, l);
            }
            Ok(response)
        }
    }
}

/// Verify an erasure: what every store still holds of the user (all zero,
/// `erased: true`, `status: erased`, after `DELETE /v1/users/{user_id}`);
/// `status: in_progress` while it runs.
#[utoipa::path(
    get, path = "/v1/users/{user_id}/erasure", tag = "users",
    params(("user_id" = String, Path, description = "User id"), VerifyParams),
    responses(
        (status = 200, description = "Counts per store (and the file scan with `files=true`)", body = ErasureVerification),
        (status = 400, description = "Invalid input, or `files=true` where the data directory does not hold the stores", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user; `files=true` without an admin key", body = ErrorBody),
        (status = 429, description = "Rate limited (Retry-After)", body = ErrorBody),
        (status = 503, description = "`files=true` while another scan runs (Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn verify_erasure(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
    Query(params): Query<VerifyParams>,
) -> Result<Json<ErasureVerification>> {
    // Checked before the counts, so a refused scan costs nothing.
    let scan = if params.files {
        require_admin(&actor, "scan the data directory")?;
        let files = state.erasure_files.clone().ok_or_else(|| {
            Error::invalid(
                "files",
                "the file scan needs the embedded deployment (the SQLite store and the vector \
                 index in the data directory); run `mnemo verify-erasure` where the stores are",
            )
        })?;
        let permit = files
            .one_at_a_time
            .clone()
            .try_acquire_owned()
            .map_err(|_| Error::Overloaded {
                message: "another file scan of the data directory is running".into(),
                retry_after_secs: 5,
            })?;
        Some((files, permit))
    } else {
        None
    };
    let mut verification = state.engine.verify_erasure(&actor, &user_id).await?;
    verification.files = match scan {
        None => None,
        Some((files, permit)) => {
            let (tenant, user) = (actor.tenant_id.clone(), verification.user_id.clone());
            let report = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                crate::service::erasure::scan::scan_data_dir_for_user(
                    &files.data_dir,
                    &tenant,
                    &user,
                )
            })
            .await
            .map_err(|e| Error::internal(format!("file scan task failed: {e}")))??;
            Some(report)
        }
    };
    Ok(Json(verification))
}

/// Percent-encodes a path segment (everything but RFC 3986's unreserved
/// characters), so a status URL is valid whatever the user id holds.
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn status_urls_encode_the_user_id() {
        assert_eq!(super::encode_segment("ann"), "ann");
        assert_eq!(super::encode_segment("a b/c@d"), "a%20b%2Fc%40d");
        assert_eq!(super::encode_segment("李"), "%E6%9D%8E");
    }
}
