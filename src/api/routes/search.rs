//! `POST /v1/search`: hybrid retrieval within one user's scope.

use std::time::Instant;

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::auth::Auth;
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::domain::{Kind, Memory, Scope, ScoreBreakdown, Tier};
use crate::error::{Error, Result};
use crate::service::SearchRequest;

/// One kind or several.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum KindFilter {
    One(Kind),
    Many(Vec<Kind>),
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFilters {
    pub kind: Option<KindFilter>,
    /// Equality on metadata keys (all must match).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// Inclusive lower bound on `created_at`.
    pub created_after: Option<DateTime<Utc>>,
    /// Exclusive upper bound on `created_at`.
    pub created_before: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    /// Whose memories; a user key fills in its own.
    pub user_id: Option<String>,
    /// Working memory is searched only for this thread.
    pub thread_id: Option<String>,
    pub query: String,
    /// Default and maximum from the policy.
    pub top_k: Option<usize>,
    /// Default: every tier.
    pub tiers: Option<Vec<Tier>>,
    #[serde(default)]
    pub filters: SearchFilters,
    /// Also return memories awaiting confirmation.
    #[serde(default)]
    pub include_pending: bool,
    /// Include each hit's score breakdown.
    #[serde(default)]
    pub explain: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SearchHit {
    pub memory: Memory,
    pub score: f32,
    /// With `explain: true`: BM25, vector, fusion, decay and importance.
    /// The raw `bm25_score` and `bm25_full_match_score` only for admin keys
    /// (they read corpus statistics that span tenants).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<ScoreBreakdown>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SearchResponse {
    /// Best first.
    pub hits: Vec<SearchHit>,
    pub took_ms: f64,
    /// Time spent embedding the query.
    pub embed_ms: f64,
}

/// Search a user's memories (long-term, the thread's working memory, and the
/// tenant's reference memory).
#[utoipa::path(
    post, path = "/v1/search", tag = "search",
    request_body = SearchBody,
    responses(
        (status = 200, body = SearchResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "A user key searching another user", body = ErrorBody),
        (status = 503, description = "Overloaded (Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn search(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Json(body): Json<SearchBody>,
) -> Result<Json<SearchResponse>> {
    let user_id = actor
        .user_for(body.user_id.as_deref())?
        .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
    let scope = Scope {
        tenant_id: actor.tenant_id.clone(),
        user_id,
        thread_id: body.thread_id,
        tiers: body.tiers.unwrap_or_else(|| Tier::ALL.to_vec()),
        include_pending: body.include_pending,
        kinds: body.filters.kind.map(|k| match k {
            KindFilter::One(k) => vec![k],
            KindFilter::Many(ks) => ks,
        }),
    };
    let mut req = SearchRequest::new(scope, body.query);
    req.top_k = body.top_k;
    req.metadata = body.filters.metadata;
    req.created_after = body.filters.created_after;
    req.created_before = body.filters.created_before;
    let started = Instant::now();
    let result = state.engine.search(req).await?;
    state
        .metrics
        .record_search(started.elapsed(), &result.stages);
    let explain = body.explain;
    let admin = actor.admin;
    Ok(Json(SearchResponse {
        hits: result
            .hits
            .into_iter()
            .map(|h| SearchHit {
                memory: h.memory,
                score: h.score,
                breakdown: explain.then(|| {
                    if admin {
                        h.breakdown
                    } else {
                        h.breakdown.for_non_admin()
                    }
                }),
            })
            .collect(),
        took_ms: result.total_ms,
        embed_ms: result.embed_ms,
    }))
}
