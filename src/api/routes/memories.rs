//! `/v1/memories`: add, read, change, soft-delete, list and history.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json, Query};
use crate::api::AppState;
use crate::domain::{Kind, Memory, MemoryPatch, NewMemory, Status, Tier};
use crate::error::{Error, Result};
use crate::service::next_page;
use crate::store::{AuditEvent, ListQuery};

type Metadata = serde_json::Map<String, serde_json::Value>;

/// One memory to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryInput {
    /// Defaults to `long_term`.
    pub tier: Option<Tier>,
    /// Required for working and long-term memory (a user key fills in its own);
    /// absent for reference memory. 1–256 bytes of UTF-8, any script, no
    /// control, format (zero-width, bidi control) or separator characters.
    #[schema(min_length = 1, max_length = 256)]
    pub user_id: Option<String>,
    /// Required for working memory. Same characters as `user_id`.
    #[schema(min_length = 1, max_length = 256)]
    pub thread_id: Option<String>,
    /// At most `limits.max_text_bytes` bytes (policy; 32 KiB by default).
    pub text: String,
    pub kind: Option<Kind>,
    /// 0..=1; the policy default when absent.
    pub importance: Option<f32>,
    /// 0..=1; below the policy's threshold the memory is `pending`.
    pub confidence: Option<f32>,
    /// Any JSON object: at most `limits.max_metadata_bytes` bytes as compact
    /// JSON (64 KiB) and `limits.max_metadata_depth` levels deep (8; the
    /// object is level 1).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<MemoryInput> for NewMemory {
    fn from(m: MemoryInput) -> Self {
        NewMemory {
            tier: m.tier,
            user_id: m.user_id,
            thread_id: m.thread_id,
            kind: m.kind,
            text: m.text,
            importance: m.importance,
            confidence: m.confidence,
            expires_at: m.expires_at,
            metadata: m.metadata,
            ..Default::default()
        }
    }
}

/// Either `{"memories": [...]}` or one memory's fields at the top level;
/// `refresh: true` makes them searchable before the response.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddRequest {
    pub memories: Option<Vec<MemoryInput>>,
    #[serde(default)]
    pub refresh: bool,
    pub tier: Option<Tier>,
    pub user_id: Option<String>,
    pub thread_id: Option<String>,
    pub text: Option<String>,
    pub kind: Option<Kind>,
    pub importance: Option<f32>,
    pub confidence: Option<f32>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl AddRequest {
    fn into_items(self) -> Result<(Vec<NewMemory>, bool)> {
        let single_given = self.tier.is_some()
            || self.user_id.is_some()
            || self.thread_id.is_some()
            || self.text.is_some()
            || self.kind.is_some()
            || self.importance.is_some()
            || self.confidence.is_some()
            || self.metadata.is_some()
            || self.expires_at.is_some();
        match (self.memories, single_given) {
            (Some(_), true) => Err(Error::invalid(
                "memories",
                "give either `memories` or one memory's fields at the top level, not both",
            )),
            (Some(list), false) => Ok((list.into_iter().map(Into::into).collect(), self.refresh)),
            (None, _) => {
                let text = self.text.ok_or_else(|| {
                    Error::invalid("text", "text is required (or send `memories`: [...])")
                })?;
                let one = MemoryInput {
                    tier: self.tier,
                    user_id: self.user_id,
                    thread_id: self.thread_id,
                    text,
                    kind: self.kind,
                    importance: self.importance,
                    confidence: self.confidence,
                    metadata: self.metadata.unwrap_or_default(),
                    expires_at: self.expires_at,
                };
                Ok((vec![one.into()], self.refresh))
            }
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AddedMemory {
    /// The memory that holds the item: the new one, or the stored memory it
    /// reinforced or promoted.
    pub id: Uuid,
    pub tier: Tier,
    /// `pending` when confidence was below the policy's threshold.
    pub status: Status,
    /// What the write did with the item.
    pub outcome: AddOutcome,
    /// With `superseded`: the memory the item replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Uuid>,
}

/// What a write did with one item (the memory lifecycle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AddOutcome {
    /// Stored as a new memory.
    Created,
    /// The same fact was stored already: that memory was reinforced.
    Reinforced,
    /// The same fact was a pending candidate: it is now active.
    Promoted,
    /// Stored as a new memory replacing an earlier one (named, or a detected
    /// correction).
    Superseded,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AddResponse {
    /// In request order.
    pub ids: Vec<Uuid>,
    pub memories: Vec<AddedMemory>,
}

/// Add one or many memories. All are validated before any is written.
#[utoipa::path(
    post, path = "/v1/memories", tag = "memories",
    request_body = AddRequest,
    responses(
        (status = 201, description = "Stored (committed). Header `x-mnemo-indexed: false` when an index update failed after the commit: the memory is stored and becomes searchable when the repair loop has indexed it (seconds)", body = AddResponse),
        (status = 400, description = "Invalid input", body = ErrorBody),
        (status = 401, description = "Missing or invalid key", body = ErrorBody),
        (status = 403, description = "Another user's memory, or reference memory without an admin key", body = ErrorBody),
        (status = 409, description = "`conflict`: the user's data is being erased; or `quota_exceeded`: the user would hold more than limits.max_memories_per_user memories (nothing written)", body = ErrorBody),
        (status = 413, description = "Too many memories, text too long or metadata too large", body = ErrorBody),
        (status = 429, description = "Rate limited (Retry-After)", body = ErrorBody),
        (status = 503, description = "Overloaded (Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn add(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Json(body): Json<AddRequest>,
) -> Result<impl IntoResponse> {
    let (items, refresh) = body.into_items()?;
    let added = state.engine.remember(&actor, items, refresh).await?;
    let response = AddResponse {
        ids: added.iter().map(|r| r.memory.id).collect(),
        memories: added
            .iter()
            .map(|r| {
                use crate::service::Outcome;
                let (outcome, superseded) = match r.outcome {
                    Outcome::Created => (AddOutcome::Created, None),
                    Outcome::Reinforced => (AddOutcome::Reinforced, None),
                    Outcome::Promoted => (AddOutcome::Promoted, None),
                    Outcome::Superseded { old } => (AddOutcome::Superseded, Some(old)),
                };
                AddedMemory {
                    id: r.memory.id,
                    tier: r.memory.tier,
                    status: r.memory.status,
                    outcome,
                    superseded,
                }
            })
            .collect(),
    };
    Ok((StatusCode::CREATED, Json(response)))
}

pub(crate) fn parse_id(raw: &str) -> Result<Uuid> {
    Uuid::parse_str(raw).map_err(|_| Error::invalid("id", format!("`{raw}` is not a memory id")))
}

/// Read one memory.
#[utoipa::path(
    get, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = Memory),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such memory, or not visible to this key", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get_one(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<Memory>> {
    Ok(Json(state.engine.get(&actor, parse_id(&id)?).await?))
}

fn present<'de, D, T>(d: D) -> std::result::Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Some(Option::<T>::deserialize(d)?))
}

/// A change; absent fields are left as they are. `expires_at: null` clears
/// the expiry. A text change re-embeds and re-indexes the memory.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRequest {
    pub text: Option<String>,
    pub importance: Option<f32>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub expires_at: Option<Option<DateTime<Utc>>>,
    #[serde(default)]
    pub refresh: bool,
}

/// Change a memory's text, importance, metadata or expiry.
#[utoipa::path(
    patch, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    request_body = PatchRequest,
    responses(
        (status = 200, description = "The memory after the change", body = Memory),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Changed concurrently; read it again", body = ErrorBody),
        (status = 413, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn patch(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
    Json(body): Json<PatchRequest>,
) -> Result<Json<Memory>> {
    let id = parse_id(&id)?;
    if body.text.is_none()
        && body.importance.is_none()
        && body.metadata.is_none()
        && body.expires_at.is_none()
    {
        return Err(Error::invalid(
            "body",
            "nothing to change: give text, importance, metadata or expires_at",
        ));
    }
    let patch = MemoryPatch {
        text: body.text,
        importance: body.importance,
        metadata: body.metadata,
        expires_at: body.expires_at,
    };
    Ok(Json(
        state.engine.update(&actor, id, patch, body.refresh).await?,
    ))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeleteResponse {
    pub id: Uuid,
    pub status: Status,
}

/// Soft-delete a memory: gone from retrieval, kept with its history.
#[utoipa::path(
    delete, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = DeleteResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<DeleteResponse>> {
    let m = state.engine.delete(&actor, parse_id(&id)?).await?;
    Ok(Json(DeleteResponse {
        id: m.id,
        status: m.status,
    }))
}

/// Most memories one page may hold.
pub const MAX_PAGE: usize = 500;
const DEFAULT_PAGE: usize = 50;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Required with a user key (it is filled in); an agent or admin key
    /// without it lists every user of the tenant.
    pub user_id: Option<String>,
    pub tier: Option<Tier>,
    pub status: Option<Status>,
    pub thread_id: Option<String>,
    pub kind: Option<Kind>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// 1..=500, default 50.
    pub limit: Option<usize>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ListResponse {
    /// In creation order.
    pub memories: Vec<Memory>,
    /// Present when there may be more: pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// List memories, oldest first, with cursor pagination.
#[utoipa::path(
    get, path = "/v1/memories", tag = "memories",
    params(ListParams),
    responses(
        (status = 200, body = ListResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Query(p): Query<ListParams>,
) -> Result<Json<ListResponse>> {
    let limit = p.limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(Error::invalid(
            "limit",
            format!("limit must be between 1 and {MAX_PAGE}"),
        ));
    }
    let after = p
        .cursor
        .as_deref()
        .map(|c| Uuid::parse_str(c).map_err(|_| Error::invalid("cursor", "invalid cursor")))
        .transpose()?;
    let query = ListQuery {
        tenant_id: actor.tenant_id.clone(),
        user_id: p.user_id,
        tier: p.tier,
        status: p.status,
        thread_id: p.thread_id,
        kind: p.kind,
        document_id: None,
        after,
        limit: limit + 1,
    };
    let mut memories = state.engine.list(&actor, query).await?;
    let next_cursor = next_page(&mut memories, limit);
    Ok(Json(ListResponse {
        memories,
        next_cursor,
    }))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryResponse {
    /// Oldest first: what happened, by which key (`actor`), when.
    pub events: Vec<AuditEvent>,
}

/// Every change to a memory, by whom and when.
#[utoipa::path(
    get, path = "/v1/memories/{id}/history", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = HistoryResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn history(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<HistoryResponse>> {
    let events = state.engine.history(&actor, parse_id(&id)?).await?;
    Ok(Json(HistoryResponse { events }))
}
