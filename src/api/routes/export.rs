//! `GET /v1/users/{user_id}/export`: everything Mnemo holds of a user, as
//! JSON Lines ending with a manifest (see `crate::export`), streamed a page
//! at a time. `POST /v1/users/{user_id}/import` (admin): restores one.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::io::{AsyncRead, DuplexStream, ReadBuf};

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::error::{Error, Result};
use crate::service::export::ImportReport;

/// The largest import body (an export of a user with 10k memories and their
/// history is a few MB).
pub const MAX_IMPORT_BYTES: usize = 1 << 30;

/// Export a user's memories (every status) with their audit history,
/// threads, messages and tool payloads as JSON Lines; the last line is the
/// manifest (counts, sha256, schema_version, embedding model). A response
/// whose last line is not a manifest was cut short.
#[utoipa::path(
    get, path = "/v1/users/{user_id}/export", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "JSON Lines, manifest last", content_type = "application/x-ndjson", body = String),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key naming another user, or an agent key when the policy forbids", body = ErrorBody),
        (status = 409, description = "The user is being erased", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn export(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
) -> Result<Response> {
    state.engine.check_export(&actor, &user_id).await?;
    let (mut writer, reader) = tokio::io::duplex(256 * 1024);
    let engine = state.engine.clone();
    // On the node's runner (task `export`): shutdown cancels a writer whose
    // client is still reading, and the response ends without its manifest,
    // as for any failure (logged and counted by the runner).
    state.tasks.spawn("export", move |cancel| async move {
        tokio::select! {
            written = engine.export_user(&actor, &user_id, &mut writer) => written.map(drop),
            _ = cancel.cancelled() => Err(Error::Unavailable(
                "the server shut down during the export".into(),
            )),
        }
    });
    Ok((
        [(CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(Chunks(reader)),
    )
        .into_response())
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
pub struct ImportParams {
    /// Erase the user's existing data first (with a receipt) instead of
    /// refusing with 409.
    #[serde(default)]
    pub replace: bool,
}

/// Restore an export as this user of the key's tenant (admin keys only). The
/// file is verified whole first (manifest sha256 and counts): a bad file
/// writes nothing. Ids, statuses, versions, timestamps and histories are
/// kept; texts are embedded with this deployment's model and indexed.
#[utoipa::path(
    post, path = "/v1/users/{user_id}/import", tag = "users",
    params(("user_id" = String, Path, description = "User id"), ImportParams),
    request_body(content = String, content_type = "application/x-ndjson", description = "An export"),
    responses(
        (status = 200, description = "Imported", body = ImportReport),
        (status = 400, description = "Not a valid export (hash, counts, records)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 409, description = "The user has data (without replace), or is being erased", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn import(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
    Query(p): Query<ImportParams>,
    body: Bytes,
) -> Result<Json<ImportReport>> {
    Ok(Json(
        state
            .engine
            .import_user(&actor, Some(&user_id), &body, p.replace)
            .await?,
    ))
}

/// The read end of the export's pipe as a body stream.
struct Chunks(DuplexStream);

impl futures_core::Stream for Chunks {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut read = ReadBuf::new(&mut buf);
        match Pin::new(&mut self.0).poll_read(cx, &mut read) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) if read.filled().is_empty() => Poll::Ready(None),
            Poll::Ready(Ok(())) => Poll::Ready(Some(Ok(Bytes::copy_from_slice(read.filled())))),
        }
    }
}
