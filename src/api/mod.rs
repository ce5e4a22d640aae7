//! The HTTP API agents call: JSON under `/v1`, plus `/healthz`, `/readyz`,
//! `/metrics` and `/openapi.json`. [`app`] builds the whole `Router` from an
//! [`AppState`], so tests drive it without a socket (`tower::ServiceExt::oneshot`);
//! [`server`] binds it, and owns configuration and graceful shutdown.
//!
//! Layers, outermost first: request id (`x-request-id`, generated when absent)
//! → tracing span per request carrying that id (method, path, key id and
//! tenant; never bodies, so memory text never reaches the logs) → the id
//! copied to the response → [`error::json_errors`] (plain-body errors become
//! the JSON error shape) → timeout (503) → body size limit (413) → routes, each
//! wrapped by the metrics middleware (route template, status, latency).
//!
//! Threading: handlers are async on the tokio runtime; the engine moves
//! blocking work (embedding, index I/O) off it.

pub mod auth;
pub mod error;
pub mod listen;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod rate_limit;
pub mod routes;
pub mod server;
pub mod ui;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderName, Method, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{delete, get, post};
use axum::Router;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

pub use auth::AuthMode;
pub use metrics::Metrics;

use crate::agent::Agent;
pub use crate::config::serve::MAX_BODY_CAP;
use crate::error::Error;
use crate::llm::ChatModel;
use crate::policy::Policy;
use crate::Engine;

/// Size and time limits of HTTP requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
}

impl HttpLimits {
    /// `max_batch × max_text_bytes` (plus room for JSON), capped at 8 MiB;
    /// 30 s per request.
    pub fn from_policy(policy: &Policy) -> Self {
        HttpLimits {
            max_body_bytes: default_max_body_bytes(policy),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The policy-derived body limit: a full batch of maximal texts, with a
/// quarter more for the JSON around them, capped at [`MAX_BODY_CAP`].
pub fn default_max_body_bytes(policy: &Policy) -> usize {
    let l = &policy.limits;
    l.max_batch
        .saturating_mul(l.max_text_bytes)
        .saturating_add(l.max_batch.saturating_mul(l.max_text_bytes) / 4)
        .clamp(64 * 1024, MAX_BODY_CAP)
}

/// What every handler can reach. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub auth: AuthMode,
    pub metrics: Arc<Metrics>,
    pub limits: HttpLimits,
    /// Set on the first shutdown signal: `/readyz` turns 503 so load
    /// balancers stop sending traffic while in-flight requests finish.
    pub shutting_down: Arc<AtomicBool>,
    /// Background evaluations (`/v1/evals`).
    pub evals: routes::evals::SharedEvalJobs,
    /// The configured chat model, if any (turns answer 503 without one).
    pub chat_model: Option<Arc<dyn ChatModel>>,
    /// Threads, prompts and turns (`/v1/threads`).
    pub agent: Agent,
    /// How long `DELETE /v1/users/{user_id}` waits for the erasure before
    /// answering 202 with the status URL (the erasure goes on regardless).
    pub erasure_wait: Duration,
    /// Per-key rate limits from the policy (`None`: off).
    pub rate_limiter: Option<Arc<rate_limit::RateLimiter>>,
    /// The last successful readiness check, reused for a few seconds.
    pub readiness: Arc<routes::ops::Readiness>,
    /// The memory counts `/metrics` exports, reused between recounts.
    pub memory_counts: Arc<routes::ops::MemoryCounts>,
    /// Runs request-started background work (evaluations, export writers)
    /// on the node's runner (`AppState::with_tasks`).
    pub tasks: crate::runner::Spawner,
    /// The data directory `GET /v1/users/{user_id}/erasure?files=true` scans,
    /// set only when it holds every store (the embedded deployment).
    pub erasure_files: Option<Arc<routes::users::ErasureFiles>>,
}

/// The default of [`AppState::erasure_wait`].
pub const DEFAULT_ERASURE_WAIT: Duration = Duration::from_secs(1);

impl AppState {
    pub fn new(engine: Engine, auth: AuthMode) -> Self {
        let limits = HttpLimits::from_policy(engine.policy());
        let rate_limiter = rate_limit::RateLimiter::from_policy(engine.policy()).map(Arc::new);
        AppState {
            engine: engine.clone(),
            auth,
            metrics: Arc::new(Metrics::default()),
            limits,
            shutting_down: Arc::new(AtomicBool::new(false)),
            evals: Arc::new(routes::evals::EvalJobs::from_env(
                std::env::temp_dir().join("mnemo-evals"),
            )),
            chat_model: None,
            agent: Agent::new(engine, None),
            erasure_wait: DEFAULT_ERASURE_WAIT,
            rate_limiter,
            readiness: Default::default(),
            memory_counts: Default::default(),
            tasks: Default::default(),
            erasure_files: None,
        }
    }

    /// Lets admins ask verification for the file scan of `data_dir` (only
    /// where the data directory holds the store and both indexes).
    pub fn with_erasure_files(mut self, data_dir: Option<std::path::PathBuf>) -> Self {
        self.erasure_files = data_dir.map(|d| Arc::new(routes::users::ErasureFiles::new(d)));
        self
    }

    /// Sets how long a forget-all request waits before answering 202.
    pub fn with_erasure_wait(mut self, wait: Duration) -> Self {
        self.erasure_wait = wait;
        self
    }

    /// Sets the chat model turns use.
    pub fn with_chat_model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.agent = Agent::new(self.engine.clone(), Some(model.clone()));
        self.chat_model = Some(model);
        self
    }

    /// Replaces the agent loop (a custom extractor or summarizer).
    pub fn with_agent(mut self, agent: Agent) -> Self {
        self.chat_model = agent.model().cloned();
        self.agent = agent;
        self
    }

    /// Background work on the node's runner instead of a spawner of its own.
    pub fn with_tasks(mut self, tasks: crate::runner::Spawner) -> Self {
        self.tasks = tasks;
        self
    }

    /// Where `/v1/evals` finds sets and writes reports.
    pub fn with_evals(mut self, jobs: routes::evals::EvalJobs) -> Self {
        self.evals = Arc::new(jobs);
        self
    }

    pub fn with_limits(mut self, limits: HttpLimits) -> Self {
        self.limits = limits;
        self
    }
}

/// The OpenAPI 3.1 document, generated from the handlers' annotations.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Mnemo",
        description = "A memory service for AI agents: tiered memories, hybrid BM25 + vector retrieval. \
                       Authenticate with `Authorization: Bearer <key>` (keys from `mnemo keys create`)."
    ),
    paths(
        routes::memories::add,
        routes::memories::list,
        routes::memories::get_one,
        routes::memories::patch,
        routes::memories::delete,
        routes::memories::history,
        routes::review::confirm,
        routes::review::reject,
        routes::review::restore,
        routes::review::supersede,
        routes::search::search,
        routes::context::context,
        routes::threads::create,
        routes::threads::get,
        routes::threads::append,
        routes::threads::payload,
        routes::threads::prompt,
        routes::threads::turn,
        routes::chat::chat_completions,
        routes::reference::ingest_document,
        routes::reference::delete_document,
        routes::users::forget_user,
        routes::users::verify_erasure,
        routes::export::export,
        routes::export::import,
        routes::evals::start,
        routes::evals::get,
        routes::ops::healthz,
        routes::ops::readyz,
        routes::ops::metrics,
        routes::ops::openapi,
        routes::inspect::whoami,
        routes::inspect::users,
        routes::inspect::lineage,
        routes::inspect::policy,
        routes::inspect::evals,
        routes::inspect::keys,
        routes::inspect::create_key,
        routes::inspect::revoke_key,
        routes::inspect::jobs,
        routes::inspect::dry_run,
        routes::inspect::index,
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "memories", description = "Add, read, change, delete and list memories"),
        (name = "search", description = "Hybrid retrieval"),
        (name = "context", description = "Memory blocks for prompts"),
        (name = "threads", description = "Threads, prompts and turns of the agent loop"),
        (name = "chat", description = "OpenAI-compatible chat completions with memory"),
        (name = "reference", description = "Reference documents (admin)"),
        (name = "users", description = "Per-user data"),
        (name = "evaluation", description = "Retrieval evaluations (admin)"),
        (name = "operations", description = "Health, readiness, metrics"),
        (name = "inspector", description = "Who a key is, users, keys, jobs, index health, policy (the /ui page's reads)"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
        // Every authenticated operation may be rate limited (per key).
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let limited = ResponseBuilder::new()
            .description(
                "Rate limited: this key is over the policy's limits.requests_per_second_per_key \
                 (Retry-After says when to retry)",
            )
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build();
        let invalid = ResponseBuilder::new()
            .description("Invalid input: a malformed parameter or body (`invalid_argument`)")
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build();
        for item in openapi.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                if op.security.as_ref().is_some_and(|s| !s.is_empty()) {
                    op.responses
                        .responses
                        .entry("429".to_string())
                        .or_insert_with(|| limited.clone().into());
                }
                // Every operation with parameters or a body refuses a
                // malformed one (an unparsable id in the path, a bad query,
                // JSON that does not parse) with 400 `invalid_argument`,
                // before its handler runs.
                let takes_input = op.parameters.as_ref().is_some_and(|p| !p.is_empty())
                    || op.request_body.is_some();
                if takes_input {
                    op.responses
                        .responses
                        .entry("400".to_string())
                        .or_insert_with(|| invalid.clone().into());
                }
            }
        }
    }
}

/// Counts every routed request by method, route template and status.
async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    if let Some(route) = &route {
        tracing::Span::current().record("route", route.as_str());
    }
    // A write that committed but whose index update failed still succeeds;
    // the response says it is not searchable yet (the repair loop indexes
    // it within seconds).
    let (mut response, unindexed) = crate::service::repair::track(next.run(req)).await;
    if unindexed && response.status().is_success() {
        response
            .headers_mut()
            .insert(INDEXED, axum::http::HeaderValue::from_static("false"));
    }
    state.metrics.record_request(
        method.as_str(),
        route.as_deref().unwrap_or(metrics::UNMATCHED),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// In `--insecure-dev` mode (no keys), refuses requests whose `Host` is not
/// a loopback name (`localhost`, `127.0.0.1`, `[::1]`, any port), as `/mcp`
/// does: a web page cannot reach the keyless local admin by DNS rebinding,
/// since the browser sends the attacker's host name. Requests without a
/// `Host` (not from a browser) pass. With keys, any host is accepted.
async fn dev_host_check(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if state.auth == AuthMode::InsecureDev {
        let host = req
            .headers()
            .get(axum::http::header::HOST)
            .map(|h| h.to_str().unwrap_or("\u{0}"))
            .or_else(|| req.uri().authority().map(|a| a.as_str()));
        if let Some(host) = host {
            if !is_loopback_host(host) {
                return axum::response::IntoResponse::into_response(Error::Forbidden(
                    "in --insecure-dev mode only loopback host names (localhost, 127.0.0.1, [::1]) \
                     are served"
                        .into(),
                ));
            }
        }
    }
    next.run(req).await
}

/// Whether a `Host` value names this machine's loopback interface.
pub fn is_loopback_host(host: &str) -> bool {
    let Ok(authority) = host.parse::<axum::http::uri::Authority>() else {
        return false;
    };
    let name = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Paths no route matches: 404, counted under the `unmatched` route label.
async fn no_route(State(state): State<AppState>, method: Method, uri: Uri) -> Error {
    let status = crate::error::ErrorCode::NotFound.http_status();
    state
        .metrics
        .record_request(method.as_str(), metrics::UNMATCHED, status, Duration::ZERO);
    Error::not_found(format!("route {method} {}", uri.path()))
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// `x-mnemo-indexed: false` on a successful write whose store commit holds
/// but whose index update failed (see `repair.rs`).
pub const INDEXED: HeaderName = HeaderName::from_static("x-mnemo-indexed");

/// The whole API as a `Router`, ready to serve or to `oneshot` in tests.
pub fn app(state: AppState) -> Router {
    let limits = state.limits;
    let routes = Router::new()
        .route(
            "/v1/memories",
            post(routes::memories::add).get(routes::memories::list),
        )
        .route(
            "/v1/memories/{id}",
            get(routes::memories::get_one)
                .patch(routes::memories::patch)
                .delete(routes::memories::delete),
        )
        .route("/v1/memories/{id}/history", get(routes::memories::history))
        .route("/v1/memories/{id}/confirm", post(routes::review::confirm))
        .route("/v1/memories/{id}/reject", post(routes::review::reject))
        .route("/v1/memories/{id}/restore", post(routes::review::restore))
        .route(
            "/v1/memories/{id}/supersede",
            post(routes::review::supersede),
        )
        .route("/v1/search", post(routes::search::search))
        .route("/v1/context", post(routes::context::context))
        .route("/v1/threads", post(routes::threads::create))
        .route("/v1/threads/{id}", get(routes::threads::get))
        .route("/v1/threads/{id}/messages", post(routes::threads::append))
        .route(
            "/v1/threads/{id}/payloads/{payload_id}",
            get(routes::threads::payload),
        )
        .route("/v1/threads/{id}/prompt", post(routes::threads::prompt))
        .route("/v1/threads/{id}/turns", post(routes::threads::turn))
        .route("/v1/chat/completions", post(routes::chat::chat_completions))
        .route(
            "/v1/evals",
            post(routes::evals::start).get(routes::inspect::evals),
        )
        .route("/v1/evals/{id}", get(routes::evals::get))
        .route(
            "/v1/reference/documents",
            post(routes::reference::ingest_document),
        )
        .route(
            "/v1/reference/documents/{id}",
            delete(routes::reference::delete_document),
        )
        .route("/v1/users/{user_id}", delete(routes::users::forget_user))
        .route(
            "/v1/users/{user_id}/erasure",
            get(routes::users::verify_erasure),
        )
        .route("/v1/users/{user_id}/export", get(routes::export::export))
        .route(
            "/v1/users/{user_id}/import",
            post(routes::export::import)
                .layer(DefaultBodyLimit::max(routes::export::MAX_IMPORT_BYTES)),
        )
        .route("/v1/memories/{id}/lineage", get(routes::inspect::lineage))
        .route("/v1/whoami", get(routes::inspect::whoami))
        .route("/v1/users", get(routes::inspect::users))
        .route("/v1/policy", get(routes::inspect::policy))
        .route(
            "/v1/keys",
            get(routes::inspect::keys).post(routes::inspect::create_key),
        )
        .route("/v1/keys/{id}", delete(routes::inspect::revoke_key))
        .route("/v1/jobs", get(routes::inspect::jobs))
        .route("/v1/jobs/{name}/dry-run", post(routes::inspect::dry_run))
        .route("/v1/index", get(routes::inspect::index))
        .merge(ui::routes())
        .route("/healthz", get(routes::ops::healthz))
        .route("/readyz", get(routes::ops::readyz))
        .route("/metrics", get(routes::ops::metrics))
        .route("/openapi.json", get(routes::ops::openapi))
        .merge(mcp::routes(&state))
        .route_layer(middleware::from_fn_with_state(state.clone(), track))
        .fallback(no_route)
        .with_state(state.clone());

    let span = |req: &Request| {
        let id = req
            .headers()
            .get(&REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-");
        tracing::info_span!(
            "request",
            request_id = %id,
            method = %req.method(),
            // The matched route template, filled in by `track`: a raw path
            // holds user ids and thread ids, which logs never do.
            route = tracing::field::Empty,
            key_id = tracing::field::Empty,
            tenant = tracing::field::Empty,
        )
    };
    routes
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(span)
                        .on_request(())
                        .on_response(DefaultOnResponse::new().level(Level::INFO)),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(middleware::from_fn(error::json_errors))
                .layer(middleware::from_fn_with_state(
                    state.clone(),
                    dev_host_check,
                ))
                .layer(TimeoutLayer::with_status_code(
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    limits.request_timeout,
                )),
        )
}
