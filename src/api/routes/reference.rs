//! `/v1/reference/documents`: reference documents, chunked into reference
//! memory shared by every user of the tenant. Admin keys only (the engine
//! checks too).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::api::auth::{require_admin, Auth};
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::error::Result;
use crate::service::DocumentInput;

/// A document to ingest; the same `document_id` again replaces its chunks.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentBody {
    /// Stable id; generated when absent.
    pub document_id: Option<String>,
    pub title: Option<String>,
    pub text: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub importance: Option<f32>,
    pub created_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DocumentResponse {
    pub document_id: String,
    /// The reference memories the document was split into.
    pub chunk_ids: Vec<Uuid>,
    /// Chunks of an earlier version of the same document, now deleted.
    pub replaced_chunks: usize,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DocumentDeleted {
    pub document_id: String,
    pub deleted_chunks: usize,
}

/// Ingest one reference document (admin).
#[utoipa::path(
    post, path = "/v1/reference/documents", tag = "reference",
    request_body = DocumentBody,
    responses(
        (status = 201, body = DocumentResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 413, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn ingest_document(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Json(body): Json<DocumentBody>,
) -> Result<impl IntoResponse> {
    require_admin(&actor, "write reference memory")?;
    let receipt = state
        .engine
        .ingest_document(
            &actor,
            DocumentInput {
                document_id: body.document_id,
                title: body.title,
                text: body.text,
                metadata: body.metadata,
                importance: body.importance,
                created_at: body.created_at,
            },
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(DocumentResponse {
            document_id: receipt.document_id,
            chunk_ids: receipt.chunk_ids,
            replaced_chunks: receipt.replaced_chunks,
        }),
    ))
}

/// Delete a reference document and its chunks (admin).
#[utoipa::path(
    delete, path = "/v1/reference/documents/{id}", tag = "reference",
    params(("id" = String, Path, description = "Document id")),
    responses(
        (status = 200, body = DocumentDeleted),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn delete_document(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<DocumentDeleted>> {
    require_admin(&actor, "delete reference memory")?;
    let deleted_chunks = state.engine.delete_document(&actor, &id).await?;
    Ok(Json(DocumentDeleted {
        document_id: id,
        deleted_chunks,
    }))
}
