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

use crate::api::auth::{require_admin, Auth};
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::error::{Error, Result};
use crate::service::export::{ImportOptions, ImportReport};

/// The largest import body (an export of a user with 10k memories and their
/// history is a few MB). Read only once the key is known to be an admin's:
/// any other key is refused before a byte of the body is read.
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
    /// Import a user who was erased (forget-all) instead of refusing with
    /// 409: the data comes back, deliberately.
    #[serde(default)]
    pub allow_erased: bool,
}

/// Restore an export as this user of the key's tenant (admin keys only; any
/// other key is refused before the body is read). The file is verified
/// whole first (manifest sha256 and counts, every record's columns as the
/// write path checks them, references within the file, no id of another
/// user or tenant): a bad file writes nothing. A user who was erased is
/// refused unless `allow_erased=true`. Ids, statuses, versions, timestamps
/// and histories are kept, and each memory's history gains an `import`
/// event; texts are embedded with this deployment's model and indexed.
#[utoipa::path(
    post, path = "/v1/users/{user_id}/import", tag = "users",
    params(("user_id" = String, Path, description = "User id"), ImportParams),
    request_body(content = String, content_type = "application/x-ndjson", description = "An export"),
    responses(
        (status = 200, description = "Imported", body = ImportReport),
        (status = 400, description = "Not a valid export (hash, counts, records, references)", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 409, description = "The user has data (without replace), is being erased, was erased (without allow_erased), \
            or the file names an id that exists under another user or tenant", body = ErrorBody),
        (status = 413, description = "Over 1 GiB", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn import(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(user_id): Path<String>,
    Query(p): Query<ImportParams>,
    body: Body,
) -> Result<Json<ImportReport>> {
    // Before the body: a non-admin key must not make the server buffer up
    // to `MAX_IMPORT_BYTES` only to be refused.
    require_admin(&actor, "import users' data")?;
    let body = axum::body::to_bytes(body, MAX_IMPORT_BYTES)
        .await
        .map_err(|e| {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if too_large {
                Error::TooLarge {
                    field: "body",
                    message: format!("an import body is at most {MAX_IMPORT_BYTES} bytes"),
                }
            } else {
                Error::invalid("body", format!("the import body could not be read: {e}"))
            }
        })?;
    Ok(Json(
        state
            .engine
            .import_user(
                &actor,
                Some(&user_id),
                &body,
                ImportOptions {
                    replace: p.replace,
                    allow_erased: p.allow_erased,
                },
            )
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
