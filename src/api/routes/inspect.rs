//! Routes the memory inspector (`/ui`) needs that no other area had: who a
//! key is, the users of a tenant, a memory's supersede chain, past
//! evaluation reports, API keys, the lifecycle jobs with a dry-run preview,
//! index health and the policy in force. Any client may call them; they go
//! through the same [`Auth`] and the same engine calls as every other route,
//! so the page has no privileged path of its own.
//!
//! Authorisation, route by route:
//! - `whoami`, `policy`, `lineage`: any key (lineage shows only what the key
//!   may read, like `GET /v1/memories/{id}`).
//! - `users`: a user key sees itself; an agent or admin key the users of its
//!   tenant.
//! - `evals` (listing), `keys`, `jobs`, `index`: admin keys, and only their
//!   own tenant's keys and memories. Job counters and index sizes are
//!   process-wide (as on `/metrics`); a dry run's listed changes are cut to
//!   the admin's tenant.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::api::auth::{require_admin, Auth, AuthMode};
use crate::api::error::{ErrorBody, Json, Query};
use crate::api::routes::memories::parse_id;
use crate::api::AppState;
use crate::domain::Actor;
use crate::domain::Memory;
use crate::error::{Error, Result};
use crate::jobs::JobName;
use crate::store::{ApiKey, ListQuery, Role};

/// Who the presented key is.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WhoAmI {
    pub key_id: String,
    pub tenant_id: String,
    /// `admin`, `agent` or `user`: a key bound to a user acts as `user`.
    pub role: String,
    /// The user a bound key acts for.
    pub user_id: Option<String>,
    /// The server runs with `--insecure-dev` (keyless requests act as admin).
    pub insecure_dev: bool,
}

fn role_of(actor: &Actor) -> &'static str {
    match (actor.admin, &actor.user_id) {
        (true, _) => "admin",
        (false, Some(_)) => "user",
        (false, None) => "agent",
    }
}

/// The presented key's tenant, role and user.
#[utoipa::path(
    get, path = "/v1/whoami", tag = "inspector",
    responses((status = 200, body = WhoAmI), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn whoami(State(state): State<AppState>, Auth(actor): Auth) -> Json<WhoAmI> {
    Json(WhoAmI {
        role: role_of(&actor).into(),
        key_id: actor.id,
        tenant_id: actor.tenant_id,
        user_id: actor.user_id,
        insecure_dev: state.auth == AuthMode::InsecureDev,
    })
}

/// Memories one `GET /v1/users` call reads at most.
pub const USERS_SCAN_BUDGET: usize = 5_000;
const SCAN_PAGE: usize = 500;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsersParams {
    /// `next_cursor` of the previous call: the scan goes on from there.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UserEntry {
    pub user_id: String,
    /// Memories of this user in the part of the store this call read.
    pub memories_seen: u64,
    /// The user has an API key of its own.
    pub has_key: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UsersResponse {
    /// Sorted by user id.
    pub users: Vec<UserEntry>,
    /// Present when the tenant holds more memories than one call reads
    /// (`USERS_SCAN_BUDGET`): pass it as `cursor` to find further users.
    pub next_cursor: Option<String>,
    /// Memories read by this call.
    pub scanned: usize,
}

fn note_user<'a>(seen: &'a mut BTreeMap<String, UserEntry>, user: &str) -> &'a mut UserEntry {
    seen.entry(user.to_string()).or_insert_with(|| UserEntry {
        user_id: user.to_string(),
        memories_seen: 0,
        has_key: false,
    })
}

/// The users this key may see: a user key itself; an agent or admin key the
/// users of its tenant (from their memories, read in id pages, and from the
/// tenant's user keys).
#[utoipa::path(
    get, path = "/v1/users", tag = "inspector",
    params(UsersParams),
    responses(
        (status = 200, body = UsersResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn users(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Query(p): Query<UsersParams>,
) -> Result<Json<UsersResponse>> {
    let mut seen: BTreeMap<String, UserEntry> = BTreeMap::new();
    if let Some(u) = &actor.user_id {
        note_user(&mut seen, u);
        return Ok(Json(UsersResponse {
            users: seen.into_values().collect(),
            next_cursor: None,
            scanned: 0,
        }));
    }
    let mut after = p
        .cursor
        .as_deref()
        .map(|c| Uuid::parse_str(c).map_err(|_| Error::invalid("cursor", "invalid cursor")))
        .transpose()?;
    if after.is_none() {
        for key in tenant_keys(&state, &actor).await? {
            if let (Some(u), None) = (&key.user_id, key.revoked_at) {
                note_user(&mut seen, u).has_key = true;
            }
        }
    }
    let mut scanned = 0;
    let mut next_cursor = None;
    loop {
        let page = state
            .engine
            .list(
                &actor,
                ListQuery {
                    after,
                    limit: SCAN_PAGE,
                    ..Default::default()
                },
            )
            .await?;
        scanned += page.len();
        for m in &page {
            if let Some(u) = &m.user_id {
                note_user(&mut seen, u).memories_seen += 1;
            }
        }
        after = page.last().map(|m| m.id);
        if page.len() < SCAN_PAGE {
            break;
        }
        if scanned >= USERS_SCAN_BUDGET {
            next_cursor = after.map(|a| a.to_string());
            break;
        }
    }
    Ok(Json(UsersResponse {
        users: seen.into_values().collect(),
        next_cursor,
        scanned,
    }))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LineageResponse {
    /// Every version of the fact this key may read, oldest first: what it
    /// replaced, the memory itself, what replaced it.
    pub memories: Vec<Memory>,
}

/// A memory's supersede chain.
#[utoipa::path(
    get, path = "/v1/memories/{id}/lineage", tag = "memories",
    params(("id" = Uuid, Path, description = "Memory id")),
    responses(
        (status = 200, body = LineageResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn lineage(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<LineageResponse>> {
    let memories = state.engine.lineage(&actor, parse_id(&id)?).await?;
    Ok(Json(LineageResponse { memories }))
}

/// The policy in force, as JSON and as the TOML a policy file would hold.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PolicyResponse {
    #[schema(value_type = Object)]
    pub policy: serde_json::Value,
    pub toml: String,
}

/// The memory policy in force (read-only).
#[utoipa::path(
    get, path = "/v1/policy", tag = "inspector",
    responses((status = 200, body = PolicyResponse), (status = 401, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn policy(
    State(state): State<AppState>,
    Auth(_actor): Auth,
) -> Result<Json<PolicyResponse>> {
    let p = state.engine.policy();
    Ok(Json(PolicyResponse {
        policy: serde_json::to_value(p).map_err(Error::internal)?,
        toml: toml::to_string(p).map_err(Error::internal)?,
    }))
}

// ----- evaluations -------------------------------------------------------

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EvalRunSummary {
    pub set: String,
    pub preset: String,
    pub queries: usize,
    /// Metric → value (nDCG@10, recall@k, MRR@10, …).
    #[schema(value_type = Object)]
    pub metrics: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EvalReportSummary {
    pub id: Uuid,
    /// When `report.json` was written.
    pub finished_at: Option<DateTime<Utc>>,
    pub runs: Vec<EvalRunSummary>,
    #[schema(value_type = Object)]
    pub comparisons: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EvalsResponse {
    /// Newest first.
    pub reports: Vec<EvalReportSummary>,
    /// Set names `POST /v1/evals` accepts (directories under the evaluation root).
    pub sets: Vec<String>,
}

/// Most past reports listed.
const MAX_REPORTS: usize = 50;

fn read_report(dir: &std::path::Path, id: Uuid) -> Option<EvalReportSummary> {
    let path = dir.join("report.json");
    let finished_at = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    let runs = report["runs"]
        .as_array()?
        .iter()
        .map(|r| EvalRunSummary {
            set: r["set"].as_str().unwrap_or_default().to_string(),
            preset: r["preset"].as_str().unwrap_or_default().to_string(),
            queries: r["queries"].as_u64().unwrap_or(0) as usize,
            metrics: r["metrics"].clone(),
        })
        .collect();
    Some(EvalReportSummary {
        id,
        finished_at,
        runs,
        // Without the per-query deltas, which can be thousands of rows.
        comparisons: report["comparisons"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        serde_json::json!({
                            "set": c["set"], "a": c["a"], "b": c["b"],
                            "queries": c["queries"], "confidence": c["confidence"],
                            "metrics": c["metrics"],
                        })
                    })
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn list_reports(out_dir: &std::path::Path) -> Vec<EvalReportSummary> {
    let Ok(entries) = std::fs::read_dir(out_dir) else {
        return Vec::new();
    };
    let mut ids: Vec<Uuid> = entries
        .filter_map(|e| Uuid::parse_str(&e.ok()?.file_name().to_string_lossy()).ok())
        .collect();
    // UUID v7: newest first.
    ids.sort_unstable();
    ids.reverse();
    ids.into_iter()
        .filter_map(|id| read_report(&out_dir.join(id.to_string()), id))
        .take(MAX_REPORTS)
        .collect()
}

fn list_sets(root: &std::path::Path) -> Vec<String> {
    let mut sets: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_string_lossy().into_owned();
            (e.path().join("queries.jsonl").is_file() && !name.starts_with('.')).then_some(name)
        })
        .collect();
    sets.sort();
    sets
}

/// Past evaluation reports (from the server's report directory, newest
/// first) and the sets an evaluation can run on (admin).
#[utoipa::path(
    get, path = "/v1/evals", tag = "evaluation",
    responses(
        (status = 200, body = EvalsResponse),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn evals(
    State(state): State<AppState>,
    Auth(actor): Auth,
) -> Result<Json<EvalsResponse>> {
    require_admin(&actor, "read evaluations")?;
    let jobs = state.evals.clone();
    let (reports, sets) = tokio::task::spawn_blocking(move || {
        (list_reports(&jobs.out_dir), list_sets(&jobs.sets_root))
    })
    .await
    .map_err(Error::internal)?;
    Ok(Json(EvalsResponse { reports, sets }))
}

// ----- API keys ------------------------------------------------------------

/// A stored key as the API shows it: never the secret or its hash.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyView {
    pub id: String,
    pub tenant_id: String,
    pub user_id: Option<String>,
    /// `admin`, `agent` or `user`.
    pub role: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<&ApiKey> for KeyView {
    fn from(k: &ApiKey) -> Self {
        KeyView {
            id: k.id.clone(),
            tenant_id: k.tenant_id.clone(),
            user_id: k.user_id.clone(),
            role: k.role.as_str().into(),
            created_at: k.created_at,
            revoked_at: k.revoked_at,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeysResponse {
    /// The tenant's keys, revoked ones included, oldest first.
    pub keys: Vec<KeyView>,
}

async fn tenant_keys(state: &AppState, actor: &Actor) -> Result<Vec<ApiKey>> {
    Ok(state
        .engine
        .keys()
        .list_api_keys()
        .await?
        .into_iter()
        .filter(|k| k.tenant_id == actor.tenant_id)
        .collect())
}

/// The tenant's API keys (admin).
#[utoipa::path(
    get, path = "/v1/keys", tag = "inspector",
    responses(
        (status = 200, body = KeysResponse),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn keys(State(state): State<AppState>, Auth(actor): Auth) -> Result<Json<KeysResponse>> {
    require_admin(&actor, "manage keys")?;
    let keys = tenant_keys(&state, &actor).await?;
    Ok(Json(KeysResponse {
        keys: keys.iter().map(KeyView::from).collect(),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    /// `admin`, `agent` or `user`.
    pub role: String,
    /// Required for `user` keys, optional for `agent`, refused for `admin`.
    pub user_id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedKey {
    pub key: KeyView,
    /// The secret, shown this once: only its SHA-256 is stored.
    pub secret: String,
}

/// Create a key in the admin's own tenant; the secret is in this response only.
#[utoipa::path(
    post, path = "/v1/keys", tag = "inspector",
    request_body = CreateKey,
    responses(
        (status = 201, body = CreatedKey),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn create_key(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Json(body): Json<CreateKey>,
) -> Result<impl IntoResponse> {
    require_admin(&actor, "manage keys")?;
    let role = Role::parse(&body.role)
        .ok_or_else(|| Error::invalid("role", "role must be admin, agent or user"))?;
    let user = body.user_id.as_deref().filter(|u| !u.is_empty());
    let now = state.engine.clock().now();
    let (key, secret) =
        crate::service::keys::create(state.engine.keys(), &actor.tenant_id, user, role, now)
            .await?;
    tracing::info!(key_id = %key.id, role = role.as_str(), "API key created");
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            key: KeyView::from(&key),
            secret,
        }),
    ))
}

/// Revoke a key of the admin's own tenant (it stops authenticating at once).
#[utoipa::path(
    delete, path = "/v1/keys/{id}", tag = "inspector",
    params(("id" = String, Path, description = "Key id")),
    responses(
        (status = 200, body = KeyView),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, description = "No unrevoked key with this id in the tenant", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn revoke_key(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<String>,
) -> Result<Json<KeyView>> {
    require_admin(&actor, "manage keys")?;
    let missing = || Error::not_found(format!("key {id}"));
    let key = tenant_keys(&state, &actor)
        .await?
        .into_iter()
        .find(|k| k.id == id && k.revoked_at.is_none())
        .ok_or_else(missing)?;
    let now = state.engine.clock().now();
    if !state.engine.keys().revoke_api_key(&key.id, now).await? {
        return Err(missing());
    }
    tracing::info!(key_id = %key.id, "API key revoked");
    let mut view = KeyView::from(&key);
    view.revoked_at = Some(now);
    Ok(Json(view))
}

// ----- lifecycle jobs, index health -----------------------------------------

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct JobView {
    /// `ttl-sweep` or `weekly-cleanup`.
    pub job: String,
    pub interval_secs: u64,
    /// A runner holds an unexpired lease.
    pub running: bool,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_completed_at: Option<DateTime<Utc>>,
    /// Before any run has completed: when the first run is due (the weekly
    /// cleanup records it at the service's first start, one interval later);
    /// `null` when not recorded.
    pub first_due_at: Option<DateTime<Utc>>,
    /// The last run's counters (`scanned`, `counts`, `elapsed_ms`, …);
    /// `null` before the first run.
    #[schema(value_type = Option<Object>)]
    pub last_stats: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct JobsResponse {
    pub jobs: Vec<JobView>,
}

fn interval_secs(state: &AppState, job: JobName) -> u64 {
    let p = state.engine.policy();
    match job {
        JobName::TtlSweep => p.lifecycle.sweep_interval_secs,
        JobName::WeeklyCleanup => u64::from(p.cleanup.interval_days) * 86_400,
    }
}

/// The lifecycle jobs and their last runs (admin; runs cover every tenant).
#[utoipa::path(
    get, path = "/v1/jobs", tag = "inspector",
    responses(
        (status = 200, body = JobsResponse),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn jobs(State(state): State<AppState>, Auth(actor): Auth) -> Result<Json<JobsResponse>> {
    require_admin(&actor, "read jobs")?;
    let now = Utc::now();
    let mut jobs = Vec::new();
    for job in JobName::ALL {
        let s = state.engine.job_store().job_state(job.as_str()).await?;
        jobs.push(JobView {
            job: job.as_str().into(),
            interval_secs: interval_secs(&state, job),
            running: s
                .as_ref()
                .is_some_and(|s| s.holder.is_some() && s.lease_expires_at.is_some_and(|e| e > now)),
            lease_expires_at: s.as_ref().and_then(|s| s.lease_expires_at),
            last_completed_at: s.as_ref().and_then(|s| s.last_completed_at),
            first_due_at: s
                .as_ref()
                .filter(|s| s.last_completed_at.is_none())
                .and_then(|s| s.first_due_at),
            last_stats: s.and_then(|s| s.last_stats),
        });
    }
    Ok(Json(JobsResponse { jobs }))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PreviewChange {
    pub id: Uuid,
    pub action: String,
    pub detail: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DryRunResponse {
    pub job: String,
    /// Memories read, in every tenant.
    pub scanned: u64,
    /// Action → memories it would change, in every tenant.
    #[schema(value_type = Object)]
    pub counts: BTreeMap<String, u64>,
    pub elapsed_ms: u64,
    /// The listed changes that concern this tenant (a dry run lists at most
    /// 1,000 changes in all).
    pub changes: Vec<PreviewChange>,
}

/// What a job would do now, without taking its lease or writing anything (admin).
#[utoipa::path(
    post, path = "/v1/jobs/{name}/dry-run", tag = "inspector",
    params(("name" = String, Path, description = "`ttl-sweep` or `weekly-cleanup`")),
    responses(
        (status = 200, body = DryRunResponse),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn dry_run(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(name): Path<String>,
) -> Result<Json<DryRunResponse>> {
    require_admin(&actor, "preview jobs")?;
    let job: JobName = name.parse()?;
    let stats = crate::jobs::run(&state.engine, job, true).await?;
    let ids: Vec<Uuid> = stats.changes.iter().map(|c| c.id).collect();
    let visible = state.engine.store().get_many(&ids).await?;
    let changes = stats
        .changes
        .iter()
        .filter(|c| visible.get(&c.id).is_some_and(|m| actor.can_read(m)))
        .map(|c| PreviewChange {
            id: c.id,
            action: c.action.into(),
            detail: c.detail.clone(),
        })
        .collect();
    Ok(Json(DryRunResponse {
        job: stats.job.into(),
        scanned: stats.scanned,
        counts: stats
            .counts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        elapsed_ms: stats.elapsed_ms,
        changes,
    }))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct IndexHealth {
    pub embedding_model: String,
    /// Memories the indexes should hold (active and pending, every tenant).
    pub store_indexed: u64,
    pub lexical_docs: u64,
    pub vector_points: u64,
    /// `store_indexed − lexical_docs` (positive: the lexical index is behind).
    pub lexical_lag: i64,
    /// `store_indexed − vector_points`.
    pub vector_lag: i64,
    /// Texts waiting for an embedding slot.
    pub embedding_queue_depth: u64,
    /// The store's change-feed position (clustered mode follows it).
    pub change_feed_head: i64,
    /// Memories by tier and status, every tenant.
    #[schema(value_type = Object)]
    pub memories: BTreeMap<String, BTreeMap<String, u64>>,
}

/// Index health and lag against the store (admin; process-wide, as `/metrics`).
#[utoipa::path(
    get, path = "/v1/index", tag = "inspector",
    responses(
        (status = 200, body = IndexHealth),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn index(State(state): State<AppState>, Auth(actor): Auth) -> Result<Json<IndexHealth>> {
    require_admin(&actor, "read index health")?;
    let stats = state.engine.stats().await?;
    let mut memories: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut store_indexed = 0;
    for (tier, status, n) in &stats.store.by_tier_status {
        memories
            .entry(tier.to_string())
            .or_default()
            .insert(status.to_string(), *n);
        if status.is_indexed() {
            store_indexed += n;
        }
    }
    let lexical_docs = stats.lexical_docs as u64;
    let vector_points = stats.vector_points as u64;
    Ok(Json(IndexHealth {
        embedding_model: stats.embedding_model,
        store_indexed,
        lexical_docs,
        vector_points,
        lexical_lag: store_indexed as i64 - lexical_docs as i64,
        vector_lag: store_indexed as i64 - vector_points as i64,
        embedding_queue_depth: state.engine.embedding_queue_depth() as u64,
        change_feed_head: state.engine.feed().change_feed_head().await?,
        memories,
    }))
}
