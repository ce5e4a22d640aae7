//! Operations: liveness, readiness, Prometheus metrics and the OpenAPI document.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::auth::{require_admin, Auth, AuthMode};
use crate::api::error::{ErrorBody, Json};
use crate::api::metrics::{Gauges, MEMORY_COUNTS_MAX_AGE, OPENMETRICS_TEXT, PROMETHEUS_TEXT};
use crate::api::AppState;
use crate::domain::{Status, Tier};
use crate::error::Result;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`, `ready` or `not_ready`.
    pub status: String,
    /// Per component (`store`, `indexes`, `embedder`): `ok` or what is wrong.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<String, String>,
    /// `/readyz` only: how far the index repair loop is behind the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_lag: Option<crate::service::repair::IndexLag>,
    /// `/readyz` only: what is degraded without making the node unready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<ReadyDetails>,
}

/// `/readyz`'s details: conditions an operator should see that do not take
/// the node out of rotation.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReadyDetails {
    /// The store's upkeep: SQLite WAL checkpoints that gave up within their
    /// time bound (`last_checkpoint_complete: false` while the last one
    /// did), and erasure purges that fell back to a whole-database VACUUM.
    pub store: crate::store::UpkeepStatus,
}

/// `/readyz` is 503 when the oldest change the repair loop has not applied
/// yet waited longer than this (the indexes are failing).
pub const READY_MAX_INDEX_LAG_SECS: f64 = 60.0;

/// The store's memory counts by tier and status, as `/metrics` last read
/// them. Counting groups every row of `memories` (on the 1M benchmark's
/// SQLite deployment: 1.75 s on a cold page cache, 0.41 s warm), and
/// Prometheus scrapes every 15–60 s with a 10 s timeout by default, so
/// only the first scrape after start waits for a count. Every later one
/// answers from the last count at once and, when that is older than
/// `max_age`, starts one recount in the background on the node's runner
/// (never two at a time); the next scrape after it ends exports it.
/// `mnemo_memory_counts_age_seconds` tells how old the exported counts are.
pub struct MemoryCounts {
    max_age: Duration,
    /// The last count and when it was taken; the lock is held across the
    /// first count, so the scrapes that arrive meanwhile wait for it.
    last: tokio::sync::Mutex<Option<Counted>>,
    recounting: AtomicBool,
}

#[derive(Clone)]
struct Counted {
    at: Instant,
    counts: Arc<Vec<(Tier, Status, u64)>>,
}

impl Counted {
    fn now(counts: Vec<(Tier, Status, u64)>) -> Self {
        Counted {
            at: Instant::now(),
            counts: Arc::new(counts),
        }
    }
}

impl Default for MemoryCounts {
    fn default() -> Self {
        Self::with_max_age(MEMORY_COUNTS_MAX_AGE)
    }
}

impl MemoryCounts {
    /// Counts older than `max_age` are recounted (tests use zero).
    pub fn with_max_age(max_age: Duration) -> Self {
        MemoryCounts {
            max_age,
            last: Default::default(),
            recounting: AtomicBool::new(false),
        }
    }

    /// The last counts and their age; the first call counts.
    async fn get(
        self: &Arc<Self>,
        state: &AppState,
    ) -> Result<(Arc<Vec<(Tier, Status, u64)>>, Duration)> {
        let last = {
            let mut last = self.last.lock().await;
            match &*last {
                Some(counted) => counted.clone(),
                None => {
                    let counted = Counted::now(state.engine.memory_counts().await?);
                    *last = Some(counted.clone());
                    counted
                }
            }
        };
        let age = last.at.elapsed();
        if age >= self.max_age && !self.recounting.swap(true, Ordering::AcqRel) {
            let (this, engine) = (Arc::clone(self), state.engine.clone());
            state
                .tasks
                .spawn("memory-recount", move |cancel| async move {
                    let counted = tokio::select! {
                        counted = engine.memory_counts() => counted,
                        () = cancel.cancelled() => Ok(Vec::new()),
                    };
                    if let (Ok(counts), false) = (&counted, cancel.is_cancelled()) {
                        *this.last.lock().await = Some(Counted::now(counts.clone()));
                    }
                    this.recounting.store(false, Ordering::Release);
                    counted.map(|_| ())
                });
        }
        Ok((last.counts, age))
    }
}

/// The process is alive.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        checks: BTreeMap::new(),
        index_lag: None,
        details: None,
    })
}

/// How long a successful readiness check is reused: probes are
/// unauthenticated, and each full check embeds a text.
pub const READY_CACHE: Duration = Duration::from_secs(5);

/// The last successful readiness check. Probes run one check at a time
/// (the others wait for it and reuse its result), so a flood of probes costs
/// one embedding per [`READY_CACHE`], not one each.
#[derive(Default)]
pub struct Readiness {
    last_ok: tokio::sync::Mutex<Option<Instant>>,
}

/// The store answers, the indexes are open (reconciled at start) and the
/// embedder embeds (checked at most every 5 s; a success is reused in
/// between); 503 while shutting down. `index_lag` says how far the index
/// repair loop is behind the store (feed changes not applied yet, how long
/// the oldest has waited, the last failed repair); 503 when the oldest has
/// waited more than 60 s.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    let mut checks = {
        let mut last_ok = state.readiness.last_ok.lock().await;
        if last_ok.is_some_and(|t| t.elapsed() < READY_CACHE) {
            ["store", "indexes", "embedder"]
                .into_iter()
                .map(|c| (c.to_string(), "ok".to_string()))
                .collect()
        } else {
            let checks = check_components(&state).await;
            *last_ok = checks.values().all(|v| v == "ok").then(Instant::now);
            checks
        }
    };
    // Atomics only: no store or index work per probe.
    let lag = state.engine.repair_status().lag();
    if lag.seconds > READY_MAX_INDEX_LAG_SECS {
        checks.insert(
            "indexes".to_string(),
            format!(
                "{} changes not applied for {:.0} s (last failure: {})",
                lag.changes,
                lag.seconds,
                lag.last_failure.as_deref().unwrap_or("none")
            ),
        );
    }
    let shutting_down = state.shutting_down.load(Ordering::Relaxed);
    if shutting_down {
        checks.insert("server".to_string(), "shutting down".to_string());
    }
    let ready = !shutting_down && checks.values().all(|v| v == "ok");
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Health {
        status: if ready { "ready" } else { "not_ready" }.into(),
        checks,
        index_lag: Some(lag),
        details: Some(ReadyDetails {
            store: state.engine.store().upkeep(),
        }),
    };
    (status, Json(body)).into_response()
}

/// One full check of the store, the indexes and the embedder.
async fn check_components(state: &AppState) -> BTreeMap<String, String> {
    let mut checks = BTreeMap::new();
    let store = match state.engine.store_ready().await {
        Ok(_) => "ok".to_string(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness: store check failed");
            "store query failed".to_string()
        }
    };
    checks.insert("store".to_string(), store);
    // The engine exists only after both indexes opened and were reconciled.
    checks.insert("indexes".to_string(), "ok".to_string());
    let embedder = state.engine.embedder().clone();
    let embedded = tokio::task::spawn_blocking(move || embedder.embed_query("ready")).await;
    let embedder = match embedded {
        Ok(Ok(_)) => "ok".to_string(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: embedder check failed");
            "embedding failed".to_string()
        }
        Err(_) => "embedding task failed".to_string(),
    };
    checks.insert("embedder".to_string(), embedder);
    checks
}

/// Prometheus exposition: the text format 0.0.4, or OpenMetrics 1.0 with
/// `Accept: application/openmetrics-text`. Needs an admin key (any tenant)
/// unless the server runs in `--insecure-dev` mode; counts are global, not
/// per tenant.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses(
        (status = 200, description = "Prometheus text format (or OpenMetrics)", body = String, content_type = "text/plain"),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub async fn metrics(
    State(state): State<AppState>,
    Auth(actor): Auth,
    headers: HeaderMap,
) -> Result<Response> {
    if state.auth == AuthMode::Keys {
        require_admin(&actor, "read metrics")?;
    }
    let (counts, counts_age) = state.memory_counts.get(&state).await?;
    let gauges = Gauges {
        // Every tier and status, zeros included: a series that vanishes
        // reads as "unknown", not as "none".
        memories: Tier::ALL
            .iter()
            .flat_map(|t| Status::ALL.iter().map(move |s| (*t, *s)))
            .map(|(t, s)| {
                let n = counts
                    .iter()
                    .filter(|(tier, status, _)| (*tier, *status) == (t, s))
                    .map(|(_, _, n)| n)
                    .sum();
                (t.to_string(), s.to_string(), n)
            })
            .collect(),
        memory_counts_age: counts_age,
        embedding_queue_depth: state.engine.embedding_queue_depth(),
        active_api_keys: Some(state.engine.keys().count_active_api_keys().await?),
        jobs: job_gauges(&state).await?,
        index_feed: match crate::service::cluster::applied_position() {
            Some(applied) => Some((state.engine.feed().change_feed_head().await?, applied)),
            None => None,
        },
        store_upkeep: state.engine.store().upkeep(),
    };
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let content_type = if openmetrics {
        OPENMETRICS_TEXT
    } else {
        PROMETHEUS_TEXT
    };
    Ok((
        [(header::CONTENT_TYPE, content_type)],
        state.metrics.render(&gauges, openmetrics),
    )
        .into_response())
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "OpenAPI 3.1 document", body = Object)))]
pub async fn openapi(State(state): State<AppState>) -> Result<Response> {
    let doc = crate::api::openapi::document(state.engine.policy())?;
    Ok(Json(doc).into_response())
}

/// The lifecycle jobs' last runs, from their lease rows in the store.
async fn job_gauges(state: &AppState) -> Result<Vec<crate::api::metrics::JobGauge>> {
    let now = chrono::Utc::now();
    let mut out = Vec::new();
    for job in crate::jobs::JobName::ALL {
        let Some(s) = state.engine.job_store().job_state(job.as_str()).await? else {
            out.push(crate::api::metrics::JobGauge {
                job: job.as_str().into(),
                ..Default::default()
            });
            continue;
        };
        let stats = s.last_stats.unwrap_or_default();
        out.push(crate::api::metrics::JobGauge {
            job: job.as_str().into(),
            running: s.holder.is_some() && s.lease_expires_at.is_some_and(|e| e > now),
            last_completed_unix: s
                .last_completed_at
                .map(|t| t.timestamp_millis() as f64 / 1e3),
            last_elapsed_secs: stats["elapsed_ms"].as_f64().map(|ms| ms / 1e3),
            last_counts: stats["counts"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    Ok(out)
}
