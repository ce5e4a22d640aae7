//! `/v1/evals`: retrieval evaluations for data teams, run in the background
//! on the server's own embedder (admin keys only). Sets are named relative to
//! the server's evaluation root (`MNEMO_EVAL_ROOT`, default `./eval_sets`), so
//! a request can never point the server at arbitrary paths. One evaluation
//! runs at a time (they are CPU-bound); reports are written to
//! `<data dir>/evals/<id>/` (`report.json`, `report.md`, `report.html`) and
//! the status is kept in memory (a restart forgets running evaluations).
//! An evaluation runs on the node's runner (`AppState::tasks`, task
//! `evaluation` at `/metrics`): shutdown cancels it (it is marked failed,
//! no report is written) and waits for it to return.

use std::collections::HashMap;
use std::path::{Component, Path as FsPath, PathBuf};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::api::auth::{require_admin, Auth};
use crate::api::error::{ErrorBody, Json};
use crate::api::AppState;
use crate::error::{Error, Result};
use crate::eval::{EvalConfig, Preset, Variant};

/// Where evaluation sets are looked up and reports are written.
#[derive(Debug)]
pub struct EvalJobs {
    pub sets_root: PathBuf,
    pub out_dir: PathBuf,
    jobs: Mutex<HashMap<Uuid, EvalJob>>,
}

impl EvalJobs {
    pub fn new(sets_root: PathBuf, out_dir: PathBuf) -> Self {
        EvalJobs {
            sets_root,
            out_dir,
            jobs: Mutex::new(HashMap::new()),
        }
    }

    /// Sets from `MNEMO_EVAL_ROOT` (default `./eval_sets`), reports under `out_dir`.
    pub fn from_env(out_dir: PathBuf) -> Self {
        let root = std::env::var_os("MNEMO_EVAL_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("eval_sets"));
        EvalJobs::new(root, out_dir)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvalStatus {
    Running,
    Succeeded,
    Failed,
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct EvalJob {
    pub id: Uuid,
    pub status: EvalStatus,
    pub sets: Vec<String>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// `report.json`'s content once succeeded.
    #[schema(value_type = Object)]
    pub report: Option<serde_json::Value>,
    /// Where the reports were written on the server.
    pub out_dir: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalRequest {
    /// Set directories, relative to the server's evaluation root.
    pub sets: Vec<String>,
    /// Built-in presets (default: all five).
    #[serde(default)]
    pub presets: Vec<String>,
    /// Dotted path into corpus lines for group-level metrics.
    pub group_by: Option<String>,
    /// Recall cut-offs (default 1, 5, 10, 20).
    pub k: Option<Vec<usize>>,
    /// Two labels to compare (default: the first two runs).
    pub compare: Option<[String; 2]>,
}

fn resolve(root: &FsPath, name: &str) -> Result<PathBuf> {
    let rel = FsPath::new(name);
    if name.is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(Error::invalid(
            "sets",
            format!("`{name}` must be a plain path relative to the evaluation root"),
        ));
    }
    let dir = root.join(rel);
    if !dir.is_dir() {
        return Err(Error::invalid(
            "sets",
            format!("no evaluation set `{name}` under the evaluation root"),
        ));
    }
    Ok(dir)
}

/// Start an evaluation in the background (admin).
#[utoipa::path(
    post, path = "/v1/evals", tag = "evaluation",
    request_body = EvalRequest,
    responses(
        (status = 202, body = EvalJob),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin key", body = ErrorBody),
        (status = 409, description = "An evaluation is already running", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn start(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Json(body): Json<EvalRequest>,
) -> Result<impl IntoResponse> {
    require_admin(&actor, "run evaluations")?;
    let jobs = state.evals.clone();
    if body.sets.is_empty() {
        return Err(Error::invalid("sets", "at least one set is required"));
    }
    let dirs = body
        .sets
        .iter()
        .map(|s| resolve(&jobs.sets_root, s))
        .collect::<Result<Vec<_>>>()?;
    let mut variants = body
        .presets
        .iter()
        .map(|p| {
            Preset::parse(p)
                .map(Variant::Preset)
                .map_err(|e| Error::invalid("presets", e.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    if variants.is_empty() {
        variants = Preset::ALL.into_iter().map(Variant::Preset).collect();
    }
    let mut config = EvalConfig::new(dirs, state.engine.embedder().clone());
    config.variants = variants;
    config.group_by = body.group_by;
    if let Some(k) = body.k {
        if k.is_empty() || k.iter().any(|&k| k == 0 || k > 1000) {
            return Err(Error::invalid("k", "k must be 1 to 1000"));
        }
        config.ks = k;
    }
    config.compare = body.compare.map(|[a, b]| vec![(a, b)]).unwrap_or_default();
    config.policy = state.engine.policy().clone();
    config.cache_dir = Some(jobs.out_dir.join("cache"));

    let id = Uuid::now_v7();
    let job = EvalJob {
        id,
        status: EvalStatus::Running,
        sets: body.sets,
        started_at: Utc::now(),
        finished_at: None,
        error: None,
        report: None,
        out_dir: None,
    };
    {
        let mut all = jobs.jobs.lock();
        if all.values().any(|j| j.status == EvalStatus::Running) {
            return Err(Error::Conflict("an evaluation is already running".into()));
        }
        all.insert(id, job.clone());
    }
    let out = jobs.out_dir.join(id.to_string());
    state.tasks.spawn("evaluation", move |cancel| async move {
        let result = tokio::select! {
            run = crate::eval::run(config, &()) => match run {
                Ok(report) => report
                    .write(&out)
                    .map(|_| serde_json::to_value(&report).ok())
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
            _ = cancel.cancelled() => Err("cancelled: the server shut down".to_string()),
        };
        let failure = result.as_ref().err().cloned();
        let mut all = jobs.jobs.lock();
        if let Some(job) = all.get_mut(&id) {
            job.finished_at = Some(Utc::now());
            match result {
                Ok(report) => {
                    job.status = EvalStatus::Succeeded;
                    job.report = report;
                    job.out_dir = Some(out.display().to_string());
                }
                Err(e) => {
                    job.status = EvalStatus::Failed;
                    job.error = Some(e);
                }
            }
        }
        match failure {
            None => Ok(()),
            Some(e) => Err(Error::internal(format!("evaluation {id} failed: {e}"))),
        }
    });
    Ok((StatusCode::ACCEPTED, Json(job)))
}

/// An evaluation's status, and its report once done (admin).
#[utoipa::path(
    get, path = "/v1/evals/{id}", tag = "evaluation",
    params(("id" = Uuid, Path, description = "Evaluation id")),
    responses(
        (status = 200, body = EvalJob),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    Auth(actor): Auth,
    Path(id): Path<Uuid>,
) -> Result<Json<EvalJob>> {
    require_admin(&actor, "read evaluations")?;
    state
        .evals
        .jobs
        .lock()
        .get(&id)
        .cloned()
        .map(Json)
        .ok_or_else(|| Error::not_found(format!("evaluation {id}")))
}

pub type SharedEvalJobs = Arc<EvalJobs>;
