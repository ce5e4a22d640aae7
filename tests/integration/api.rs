//! The HTTP API without a socket: `app(state)` driven with `oneshot`, on real
//! backends in a temporary directory with the hashing embedder. Every route's
//! happy path, each error status, and the auth matrix. The last test starts
//! the real binary on a free port with the real embedder.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::response::IntoResponse;
use axum::Router;
use http_body_util::BodyExt;
use mnemo::api::{app, AppState, AuthMode, HttpLimits};
use mnemo::policy::Policy;
use mnemo::store::Role;
use mnemo::{Engine, Error};
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::common::*;

pub(crate) struct Api {
    pub(crate) app: Router,
    pub(crate) engine: Engine,
    /// Tenant `acme`.
    pub(crate) admin: String,
    pub(crate) agent: String,
    /// Bound to user `ann` in `acme`.
    pub(crate) ann: String,
    /// An agent of tenant `globex`.
    pub(crate) globex: String,
    _dir: tempfile::TempDir,
}

pub(crate) async fn key(engine: &Engine, tenant: &str, user: Option<&str>, role: Role) -> String {
    mnemo::service::keys::create(engine.store().as_ref(), tenant, user, role, t0())
        .await
        .unwrap()
        .1
}

pub(crate) async fn api_with(policy: Policy, mode: AuthMode, limits: Option<HttpLimits>) -> Api {
    api_with_state(policy, mode, |state| match limits {
        Some(l) => state.with_limits(l),
        None => state,
    })
    .await
}

/// An API whose state `adjust` may change (a chat model, limits).
pub(crate) async fn api_with_state(
    policy: Policy,
    mode: AuthMode,
    adjust: impl FnOnce(AppState) -> AppState,
) -> Api {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(dir.path(), Arc::new(manual()), policy).await;
    let state = adjust(AppState::new(engine.clone(), mode));
    Api {
        app: app(state),
        admin: key(&engine, "acme", None, Role::Admin).await,
        agent: key(&engine, "acme", None, Role::Agent).await,
        ann: key(&engine, "acme", Some("ann"), Role::User).await,
        globex: key(&engine, "globex", None, Role::Agent).await,
        engine,
        _dir: dir,
    }
}

pub(crate) async fn api() -> Api {
    api_with(Policy::default(), AuthMode::Keys, None).await
}

pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
}

impl Reply {
    pub(crate) fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    fn field(&self) -> &str {
        self.body["error"]["field"].as_str().unwrap_or("")
    }
}

pub(crate) async fn send(app: &Router, req: Request<Body>) -> Reply {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Reply {
        status,
        headers,
        body,
    }
}

pub(crate) async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Reply {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(k) = key {
        req = req.header(header::AUTHORIZATION, format!("Bearer {k}"));
    }
    let req = match body {
        Some(b) => req
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string())),
        None => req.body(Body::empty()),
    };
    send(app, req.unwrap()).await
}

async fn raw(app: &Router, method: Method, uri: &str, key: &str, body: &str) -> Reply {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    send(app, req).await
}

/// Adds one memory and returns its id.
async fn add(api: &Api, key: &str, body: Value) -> String {
    let key = (!key.is_empty()).then_some(key);
    let r = call(&api.app, Method::POST, "/v1/memories", key, Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["ids"][0].as_str().unwrap().to_string()
}

pub(crate) fn assert_error(r: &Reply, status: StatusCode, code: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.code(), code, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().is_some(), "{}", r.body);
}

#[tokio::test]
async fn memories_add_get_patch_history_list_delete() {
    let api = api().await;
    // A single object and a batch.
    let id = add(
        &api,
        &api.agent,
        json!({"user_id": "bob", "text": "Bob keeps a sourdough starter named Bubbles", "kind": "fact",
               "importance": 0.8, "metadata": {"source": "chat"}, "refresh": true}),
    )
    .await;
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.agent),
        Some(json!({"memories": [
            {"user_id": "bob", "text": "Bob likes green tea"},
            {"user_id": "bob", "tier": "working", "thread_id": "t1", "text": "Bob asked about trains"},
            {"user_id": "bob", "text": "Bob might move to Lyon", "confidence": 0.1}
        ], "refresh": true})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["ids"].as_array().unwrap().len(), 3);
    assert_eq!(r.body["memories"][2]["status"], "pending");
    assert!(r.headers.contains_key("x-request-id"));

    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories/{id}"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body["text"],
        "Bob keeps a sourdough starter named Bubbles"
    );
    assert_eq!(r.body["metadata"]["source"], "chat");
    assert_eq!(r.body["version"], 1);

    let r = call(
        &api.app,
        Method::PATCH,
        &format!("/v1/memories/{id}"),
        Some(&api.agent),
        Some(json!({"text": "Bob keeps a rye starter named Bubbles", "importance": 0.9, "refresh": true})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["version"], 2);
    assert_eq!(r.body["text"], "Bob keeps a rye starter named Bubbles");

    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories/{id}/history"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let events = r.body["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["action"], "create");
    assert_eq!(events[1]["action"], "update");
    assert!(events[1]["actor"].as_str().unwrap().starts_with("key_"));

    // Pagination: 4 memories of bob, pages of 3.
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?user_id=bob&limit=3",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["memories"].as_array().unwrap().len(), 3);
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories?user_id=bob&limit=3&cursor={cursor}"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.body["memories"].as_array().unwrap().len(), 1);
    assert!(r.body["next_cursor"].is_null());
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?user_id=bob&tier=working&thread_id=t1",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.body["memories"].as_array().unwrap().len(), 1);
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?user_id=bob&status=pending",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.body["memories"].as_array().unwrap().len(), 1);

    let r = call(
        &api.app,
        Method::DELETE,
        &format!("/v1/memories/{id}"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], "deleted");
    let r = call(
        &api.app,
        Method::POST,
        "/v1/search",
        Some(&api.agent),
        Some(json!({"user_id": "bob", "query": "rye starter Bubbles"})),
    )
    .await;
    assert!(r.body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["memory"]["id"] != id.as_str()));
}

/// BM25's idf spans every tenant's documents, so the raw score (and the
/// full-match score, Σ idf) would tell a key how many documents anywhere
/// hold a term: only admin keys see them (issue 16).
#[tokio::test]
async fn explain_shows_raw_bm25_only_to_admin_keys() {
    let api = api().await;
    add(
        &api,
        &api.ann,
        json!({"text": "Ann collects zanzibarite crystals", "refresh": true}),
    )
    .await;
    let explain = |key: String| {
        let app = api.app.clone();
        async move {
            let body = json!({"user_id": "ann", "query": "zanzibarite crystals", "explain": true});
            let r = call(&app, Method::POST, "/v1/search", Some(&key), Some(body)).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            r.body["hits"][0]["breakdown"].clone()
        }
    };
    for key in [api.ann.clone(), api.agent.clone()] {
        let b = explain(key).await;
        assert!(b["bm25_rank"].is_number(), "{b}");
        assert!(b["bm25_contribution"].is_number(), "{b}");
        assert!(b["final_score"].is_number(), "{b}");
        let fields = b.as_object().unwrap();
        assert!(!fields.contains_key("bm25_score"), "{b}");
        assert!(!fields.contains_key("bm25_full_match_score"), "{b}");
    }
    let b = explain(api.admin.clone()).await;
    assert!(b["bm25_score"].as_f64().unwrap() > 0.0, "{b}");
}

#[tokio::test]
async fn search_filters_and_explain() {
    let api = api().await;
    let tea = add(
        &api,
        &api.agent,
        json!({"user_id": "bob", "text": "Bob prefers green tea", "kind": "preference",
               "metadata": {"topic": "drinks"}, "refresh": true}),
    )
    .await;
    add(
        &api,
        &api.agent,
        json!({"user_id": "bob", "text": "Bob drank black tea in 2019", "kind": "event", "refresh": true}),
    )
    .await;
    let search = |body: Value| {
        call(
            &api.app,
            Method::POST,
            "/v1/search",
            Some(&api.agent),
            Some(body),
        )
    };
    let r = search(json!({"user_id": "bob", "query": "green tea", "explain": true})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["hits"][0]["memory"]["id"], tea.as_str());
    assert!(r.body["hits"][0]["breakdown"]["final_score"].is_number());
    let r = search(json!({"user_id": "bob", "query": "tea"})).await;
    assert!(r.body["hits"][0].get("breakdown").is_none());
    assert_eq!(r.body["hits"].as_array().unwrap().len(), 2);
    let r = search(json!({"user_id": "bob", "query": "tea", "filters": {"kind": "event"}})).await;
    assert_eq!(r.body["hits"].as_array().unwrap().len(), 1);
    let r = search(
        json!({"user_id": "bob", "query": "tea", "filters": {"kind": ["event", "preference"]}}),
    )
    .await;
    assert_eq!(r.body["hits"].as_array().unwrap().len(), 2);
    let r = search(
        json!({"user_id": "bob", "query": "tea", "filters": {"metadata": {"topic": "drinks"}}}),
    )
    .await;
    assert_eq!(r.body["hits"].as_array().unwrap().len(), 1);
    let r = search(json!({"user_id": "bob", "query": "tea", "top_k": 1, "tiers": ["long_term"],
                          "filters": {"created_after": "2025-01-01T00:00:00Z", "created_before": "2030-01-01T00:00:00Z"}}))
    .await;
    assert_eq!(r.body["hits"].as_array().unwrap().len(), 1);
    let r = search(json!({"user_id": "bob", "query": "tea", "filters": {"created_before": "2020-01-01T00:00:00Z"}})).await;
    assert_eq!(r.body["hits"].as_array().unwrap().len(), 0);
    // Errors.
    assert_error(
        &search(json!({"user_id": "bob", "query": "  "})).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
    );
    let r = search(json!({"query": "tea"})).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.field(), "user_id");
    let r = search(json!({"user_id": "bob", "query": "tea", "top_k": 100000})).await;
    assert_eq!(r.field(), "top_k");
    let r = search(json!({"user_id": "bob", "query": "tea", "tiers": ["episodic"]})).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.field(), "tiers");
}

#[tokio::test]
async fn body_and_parameter_errors_have_the_error_shape() {
    let api = api().await;
    let post = |body: &'static str| raw(&api.app, Method::POST, "/v1/memories", &api.agent, body);
    let r = post("{not json").await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    let r = post(r#"{"user_id": "bob", "text": 5}"#).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.field(), "text");
    let r = post(r#"{"user_id": "bob", "text": "x", "tier": "episodic"}"#).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.field(), "tier");
    let r = post(r#"{"memories": [{"user_id": "bob", "text": "x", "tier": "nope"}]}"#).await;
    assert_eq!(r.field(), "tier", "{}", r.body);
    let r = post(r#"{"user_id": "bob", "text": "x", "colour": "red"}"#).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    let r = post(r#"{"memories": [], "text": "x"}"#).await;
    assert_eq!(r.field(), "memories");
    let r = post(r#"{"memories": []}"#).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    let r = post(r#"{"user_id": "bob"}"#).await;
    assert_eq!(r.field(), "text");
    let r = post(r#"{"user_id": "bob", "text": "   "}"#).await;
    assert_eq!(r.field(), "text");
    let r = post(r#"{"user_id": "bob", "text": "x", "importance": 3}"#).await;
    assert_eq!(r.field(), "importance");
    let r = post(r#"{"tier": "working", "user_id": "bob", "text": "x"}"#).await;
    assert_eq!(r.field(), "thread_id");
    // Missing content type.
    let req = Request::builder()
        .method(Method::POST)
        .uri("/v1/memories")
        .header(header::AUTHORIZATION, format!("Bearer {}", api.agent))
        .body(Body::from(r#"{"user_id":"bob","text":"x"}"#))
        .unwrap();
    assert_error(
        &send(&api.app, req).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
    );
    // Text over the policy limit: 413 naming the field.
    let long = "a".repeat(Policy::default().limits.max_text_bytes + 1);
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.agent),
        Some(json!({"user_id": "bob", "text": long})),
    )
    .await;
    assert_error(&r, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert_eq!(r.field(), "text");
    // Path and query parameters.
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories/not-a-uuid",
        Some(&api.agent),
        None,
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.field(), "id");
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?limit=0",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.field(), "limit");
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?cursor=zzz",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.field(), "cursor");
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?tier=episodic",
        Some(&api.agent),
        None,
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.field(), "tier");
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?limit=abc",
        Some(&api.agent),
        None,
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    // Patch.
    let id = add(
        &api,
        &api.agent,
        json!({"user_id": "bob", "text": "Bob is here"}),
    )
    .await;
    let uri = format!("/v1/memories/{id}");
    let r = call(
        &api.app,
        Method::PATCH,
        &uri,
        Some(&api.agent),
        Some(json!({})),
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    let r = call(
        &api.app,
        Method::PATCH,
        &uri,
        Some(&api.agent),
        Some(json!({"tier": "reference"})),
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    let r = call(
        &api.app,
        Method::PATCH,
        &uri,
        Some(&api.agent),
        Some(json!({"expires_at": "2030-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["expires_at"], "2030-01-01T00:00:00Z");
    let r = call(
        &api.app,
        Method::PATCH,
        &uri,
        Some(&api.agent),
        Some(json!({"expires_at": null})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["expires_at"].is_null());
    // Not found: unknown memory, unknown route; wrong method.
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories/{}", uuid::Uuid::now_v7()),
        Some(&api.agent),
        None,
    )
    .await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let r = call(&api.app, Method::GET, "/v1/nothing", Some(&api.agent), None).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let r = call(&api.app, Method::PUT, "/v1/search", Some(&api.agent), None).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.code(), "invalid_argument");
}

#[tokio::test]
async fn body_size_limit_gives_413() {
    let limits = HttpLimits {
        max_body_bytes: 2048,
        request_timeout: std::time::Duration::from_secs(30),
    };
    let api = api_with(Policy::default(), AuthMode::Keys, Some(limits)).await;
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.agent),
        Some(json!({"user_id": "bob", "text": "b".repeat(4096)})),
    )
    .await;
    assert_error(&r, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    // Too many memories in one request (policy limits.max_batch).
    let mut policy = Policy::default();
    policy.limits.max_batch = 2;
    let api = api_with(policy, AuthMode::Keys, None).await;
    let items: Vec<Value> = (0..3)
        .map(|i| json!({"user_id": "bob", "text": format!("m{i}")}))
        .collect();
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.agent),
        Some(json!({"memories": items})),
    )
    .await;
    assert_error(&r, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert_eq!(r.field(), "memories");
}

#[tokio::test]
async fn auth_matrix() {
    let api = api().await;
    let bob_mem = add(
        &api,
        &api.agent,
        json!({"user_id": "bob", "text": "Bob's secret plan", "refresh": true}),
    )
    .await;
    // A user key adds for itself without naming the user.
    let ann_mem = add(
        &api,
        &api.ann,
        json!({"text": "Ann's own note", "refresh": true}),
    )
    .await;
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories/{ann_mem}"),
        Some(&api.ann),
        None,
    )
    .await;
    assert_eq!(r.body["user_id"], "ann");

    // Missing, malformed, unknown, revoked keys: 401 with WWW-Authenticate.
    for key in [None, Some("garbage"), Some("mnemo_0000")] {
        let r = call(
            &api.app,
            Method::GET,
            &format!("/v1/memories/{bob_mem}"),
            key,
            None,
        )
        .await;
        assert_error(&r, StatusCode::UNAUTHORIZED, "unauthenticated");
        assert!(r.headers.contains_key(header::WWW_AUTHENTICATE));
    }
    let req = Request::builder()
        .uri("/v1/memories")
        .header(header::AUTHORIZATION, "Basic abc")
        .body(Body::empty())
        .unwrap();
    assert_error(
        &send(&api.app, req).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    );
    let doomed = key(&api.engine, "acme", None, Role::Agent).await;
    let id = api
        .engine
        .store()
        .list_api_keys()
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.secret_sha256 == mnemo::service::keys::hash_secret(&doomed))
        .unwrap()
        .id;
    assert_eq!(
        call(&api.app, Method::GET, "/v1/memories", Some(&doomed), None)
            .await
            .status,
        StatusCode::OK
    );
    api.engine.store().revoke_api_key(&id, t0()).await.unwrap();
    let r = call(&api.app, Method::GET, "/v1/memories", Some(&doomed), None).await;
    assert_error(&r, StatusCode::UNAUTHORIZED, "unauthenticated");

    // A user key cannot read, change, list, search or add for another user.
    let bob_uri = format!("/v1/memories/{bob_mem}");
    assert_error(
        &call(&api.app, Method::GET, &bob_uri, Some(&api.ann), None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(
            &api.app,
            Method::PATCH,
            &bob_uri,
            Some(&api.ann),
            Some(json!({"text": "mine now"})),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(&api.app, Method::DELETE, &bob_uri, Some(&api.ann), None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(
            &api.app,
            Method::GET,
            &format!("{bob_uri}/history"),
            Some(&api.ann),
            None,
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(
        &call(
            &api.app,
            Method::GET,
            "/v1/memories?user_id=bob",
            Some(&api.ann),
            None,
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(
            &api.app,
            Method::POST,
            "/v1/search",
            Some(&api.ann),
            Some(json!({"user_id": "bob", "query": "secret plan"})),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(
            &api.app,
            Method::POST,
            "/v1/memories",
            Some(&api.ann),
            Some(json!({"user_id": "bob", "text": "x"})),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    // Its own listing and search see only its own memories.
    let r = call(&api.app, Method::GET, "/v1/memories", Some(&api.ann), None).await;
    let listed = r.body["memories"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], ann_mem.as_str());
    let r = call(
        &api.app,
        Method::POST,
        "/v1/search",
        Some(&api.ann),
        Some(json!({"query": "secret plan note"})),
    )
    .await;
    assert!(r.body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["memory"]["user_id"] == "ann"));

    // An agent key stays in its tenant: the same user id elsewhere is another user.
    assert_error(
        &call(&api.app, Method::GET, &bob_uri, Some(&api.globex), None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    add(
        &api,
        &api.globex,
        json!({"user_id": "bob", "text": "Globex bob likes plans too", "refresh": true}),
    )
    .await;
    let r = call(
        &api.app,
        Method::POST,
        "/v1/search",
        Some(&api.globex),
        Some(json!({"user_id": "bob", "query": "secret plan"})),
    )
    .await;
    let hits = r.body["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|h| h["memory"]["tenant_id"] == "globex"),
        "{}",
        r.body
    );
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories",
        Some(&api.globex),
        None,
    )
    .await;
    assert!(r.body["memories"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["tenant_id"] == "globex"));

    // Only admin keys write reference memory; everyone in the tenant reads it.
    let reference =
        json!({"tier": "reference", "text": "Refunds take five business days", "refresh": true});
    assert_error(
        &call(
            &api.app,
            Method::POST,
            "/v1/memories",
            Some(&api.agent),
            Some(reference.clone()),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(
            &api.app,
            Method::POST,
            "/v1/memories",
            Some(&api.ann),
            Some(reference.clone()),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    let ref_id = add(&api, &api.admin, reference).await;
    let r = call(
        &api.app,
        Method::POST,
        "/v1/search",
        Some(&api.ann),
        Some(json!({"query": "refunds business days"})),
    )
    .await;
    assert_eq!(
        r.body["hits"][0]["memory"]["id"],
        ref_id.as_str(),
        "{}",
        r.body
    );
    let ref_uri = format!("/v1/memories/{ref_id}");
    assert_error(
        &call(
            &api.app,
            Method::PATCH,
            &ref_uri,
            Some(&api.agent),
            Some(json!({"importance": 1.0})),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(&api.app, Method::DELETE, &ref_uri, Some(&api.ann), None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(&api.app, Method::GET, &ref_uri, Some(&api.globex), None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    // Reference documents: admin only.
    let doc = json!({"document_id": "refunds", "title": "Refunds", "text": "Refunds are paid back to the original card."});
    assert_error(
        &call(
            &api.app,
            Method::POST,
            "/v1/reference/documents",
            Some(&api.agent),
            Some(doc.clone()),
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(
            &api.app,
            Method::DELETE,
            "/v1/reference/documents/refunds",
            Some(&api.ann),
            None,
        )
        .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );

    // Metrics are admin-only.
    assert_error(
        &call(&api.app, Method::GET, "/metrics", Some(&api.agent), None).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    );
    assert_error(
        &call(&api.app, Method::GET, "/metrics", None, None).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    );
    let r = call(&api.app, Method::GET, "/metrics", Some(&api.admin), None).await;
    assert_eq!(r.status, StatusCode::OK);
    let text = r.body.as_str().unwrap();
    assert!(
        text.contains(
            "mnemo_http_requests_total{method=\"POST\",route=\"/v1/memories\",status=\"201\"}"
        ),
        "{text}"
    );
    assert!(text.contains("mnemo_http_request_duration_seconds_bucket"));
    assert!(text.contains("mnemo_search_duration_seconds_count"));
    assert!(text.contains("mnemo_memories{tier=\"long_term\",status=\"active\"}"));
    assert!(text.contains("mnemo_embedding_queue_depth 0"));
    assert!(text.contains("mnemo_job_running{job=\"ttl-sweep\"} 0"));
    assert!(!text.contains("mnemo_job_last_completed_timestamp_seconds{job=\"ttl-sweep\"}"));
    // After a run, its outcome is exported.
    mnemo::jobs::run(&api.engine, mnemo::jobs::JobName::TtlSweep, false)
        .await
        .unwrap();
    let r = call(&api.app, Method::GET, "/metrics", Some(&api.admin), None).await;
    let text = r.body.as_str().unwrap();
    assert!(
        text.contains("mnemo_job_last_completed_timestamp_seconds{job=\"ttl-sweep\"}"),
        "{text}"
    );
    assert!(text.contains("mnemo_job_last_run_duration_seconds{job=\"ttl-sweep\"}"));
    // Memory text never appears in metrics.
    assert!(!text.contains("secret plan"));
}

/// The long-term active count `/metrics` exports.
fn long_term_active(r: &Reply) -> u64 {
    let text = r.body.as_str().unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("mnemo_memories{tier=\"long_term\",status=\"active\"} "))
        .unwrap_or_else(|| panic!("no long-term active count in {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// `/metrics` reuses the last memory count (a count groups every row of
/// `memories`) and, once it is older than its limit, recounts in the
/// background: a scrape never waits for a count but the first.
#[tokio::test]
async fn metrics_reuse_the_memory_count_and_recount_in_the_background() {
    use mnemo::api::routes::ops::MemoryCounts;
    let scrape = |api: &Api| {
        let (app, admin) = (api.app.clone(), api.admin.clone());
        async move { call(&app, Method::GET, "/metrics", Some(&admin), None).await }
    };
    let memory = json!({"user_id": "bob", "text": "Bob prefers green tea"});

    // Within the limit (30 s): the count of the first scrape, and its age.
    let api = api().await;
    assert_eq!(long_term_active(&scrape(&api).await), 0);
    add(&api, &api.agent, memory.clone()).await;
    let r = scrape(&api).await;
    assert_eq!(
        long_term_active(&r),
        0,
        "the count is reused within its limit"
    );
    assert!(r
        .body
        .as_str()
        .unwrap()
        .contains("mnemo_memory_counts_age_seconds "));

    // Past the limit: the scrape answers at once and a recount follows.
    let api = api_with_state(Policy::default(), AuthMode::Keys, |mut s| {
        s.memory_counts = Arc::new(MemoryCounts::with_max_age(std::time::Duration::ZERO));
        s
    })
    .await;
    assert_eq!(long_term_active(&scrape(&api).await), 0);
    add(&api, &api.agent, memory).await;
    let mut counted = 0;
    for _ in 0..200 {
        counted = long_term_active(&scrape(&api).await);
        if counted == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(counted, 1, "a background recount exports the new memory");
}

#[tokio::test]
async fn context_reference_documents_and_forget() {
    let api = api().await;
    add(
        &api,
        &api.agent,
        json!({"user_id": "bob", "text": "Bob prefers green tea", "refresh": true}),
    )
    .await;
    // Context: a block within the budget.
    let r = call(
        &api.app,
        Method::POST,
        "/v1/context",
        Some(&api.agent),
        Some(
            json!({"user_id": "bob", "query": "what does bob drink", "model_context_tokens": 8000}),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(
        r.body["text"].as_str().unwrap().contains("green tea"),
        "{}",
        r.body
    );
    assert!(r.body["tokens"].as_u64().unwrap() <= r.body["budget_tokens"].as_u64().unwrap());
    let r = call(
        &api.app,
        Method::POST,
        "/v1/context",
        Some(&api.agent),
        Some(json!({"user_id": "bob", "messages": [{"role": "user", "content": "tea?"}], "model_context_tokens": 8000})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = call(
        &api.app,
        Method::POST,
        "/v1/context",
        Some(&api.agent),
        Some(json!({"user_id": "bob", "query": "x", "model_context_tokens": 1})),
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.field(), "model_context_tokens");
    let r = call(
        &api.app,
        Method::POST,
        "/v1/context",
        Some(&api.ann),
        Some(json!({"user_id": "bob", "query": "x", "model_context_tokens": 8000})),
    )
    .await;
    assert_error(&r, StatusCode::FORBIDDEN, "forbidden");
    assert_error(
        &call(&api.app, Method::POST, "/v1/context", None, None).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    );

    // Reference documents: ingest, found by a user's search, delete.
    let r = call(
        &api.app,
        Method::POST,
        "/v1/reference/documents",
        Some(&api.admin),
        Some(json!({"document_id": "refunds", "title": "Refunds", "text": "Refunds are paid back to the original card within five business days."})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["document_id"], "refunds");
    assert!(!r.body["chunk_ids"].as_array().unwrap().is_empty());
    let r = call(
        &api.app,
        Method::POST,
        "/v1/search",
        Some(&api.ann),
        Some(json!({"query": "refunds original card"})),
    )
    .await;
    assert_eq!(
        r.body["hits"][0]["memory"]["tier"], "reference",
        "{}",
        r.body
    );
    let r = call(
        &api.app,
        Method::POST,
        "/v1/reference/documents",
        Some(&api.admin),
        Some(json!({"text": ""})),
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    let r = call(
        &api.app,
        Method::DELETE,
        "/v1/reference/documents/refunds",
        Some(&api.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["deleted_chunks"].as_u64().unwrap() >= 1);
    let r = call(
        &api.app,
        Method::DELETE,
        "/v1/reference/documents/refunds",
        Some(&api.admin),
        None,
    )
    .await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");

    // Forget: a user key only itself; an agent any user of its tenant.
    let ann_mem = add(
        &api,
        &api.ann,
        json!({"text": "Ann's diary", "refresh": true}),
    )
    .await;
    let r = call(
        &api.app,
        Method::DELETE,
        "/v1/users/bob",
        Some(&api.ann),
        None,
    )
    .await;
    assert_error(&r, StatusCode::FORBIDDEN, "forbidden");
    let r = call(
        &api.app,
        Method::DELETE,
        "/v1/users/ann",
        Some(&api.ann),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["user_id"], "ann");
    assert_eq!(r.body["erased"]["memories"], 1);
    assert_eq!(r.body["erased"]["api_keys"], 1);
    // Her key went with her: it no longer authenticates.
    let r = call(
        &api.app,
        Method::GET,
        "/v1/users/ann/erasure",
        Some(&api.ann),
        None,
    )
    .await;
    assert_error(&r, StatusCode::UNAUTHORIZED, "unauthenticated");
    let r = call(
        &api.app,
        Method::GET,
        "/v1/users/ann/erasure",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["erased"], true);
    assert_eq!(
        (
            r.body["memories"].as_u64(),
            r.body["vectors"].as_u64(),
            r.body["api_keys"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    assert!(r.body["last_erasure_at"].is_string());
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories/{ann_mem}"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let r = call(
        &api.app,
        Method::DELETE,
        "/v1/users/bob",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?user_id=bob",
        Some(&api.agent),
        None,
    )
    .await;
    assert!(r.body["memories"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn health_readiness_request_ids_and_dev_mode() {
    let api = api_with(Policy::default(), AuthMode::InsecureDev, None).await;
    let r = call(&api.app, Method::GET, "/healthz", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"], "ok");
    let r = call(&api.app, Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["checks"]["store"], "ok");
    assert_eq!(r.body["checks"]["embedder"], "ok");
    // A request id is generated, or the client's is kept.
    let req = Request::builder()
        .uri("/healthz")
        .header("x-request-id", "abc-123")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&api.app, req).await.headers["x-request-id"], "abc-123");
    // Dev mode: no key needed; acts as the default tenant's admin.
    let id = add(
        &api,
        "",
        json!({"tier": "reference", "text": "Dev reference"}),
    )
    .await;
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories/{id}"),
        None,
        None,
    )
    .await;
    assert_eq!(r.body["tenant_id"], "default");
    let r = call(&api.app, Method::GET, "/metrics", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    // A key that is presented is still checked.
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories",
        Some("mnemo_bad"),
        None,
    )
    .await;
    assert_error(&r, StatusCode::UNAUTHORIZED, "unauthenticated");
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories",
        Some(&api.globex),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
}

/// Statuses the API never produces from a request here are checked on the
/// mapping itself, which every handler goes through.
#[test]
fn every_error_status_maps_once() {
    let cases: Vec<(Error, u16, &str)> = vec![
        (Error::invalid("text", "x"), 400, "invalid_argument"),
        (Error::Unauthenticated("x".into()), 401, "unauthenticated"),
        (Error::Forbidden("x".into()), 403, "forbidden"),
        (Error::not_found("x"), 404, "not_found"),
        (Error::Conflict("x".into()), 409, "conflict"),
        (
            Error::TooLarge {
                field: "text",
                message: "x".into(),
            },
            413,
            "payload_too_large",
        ),
        (
            Error::Config {
                key: "k".into(),
                message: "x".into(),
            },
            422,
            "invalid_configuration",
        ),
        (
            Error::Overloaded {
                message: "x".into(),
                retry_after_secs: 3,
            },
            503,
            "overloaded",
        ),
        (Error::Unavailable("x".into()), 503, "unavailable"),
        (Error::internal("secret detail"), 500, "internal"),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (err, status, code) in cases {
        let overloaded = matches!(err, Error::Overloaded { .. });
        let res = err.into_response();
        assert_eq!(res.status().as_u16(), status);
        if overloaded {
            assert_eq!(res.headers()[header::RETRY_AFTER], "3");
        }
        let bytes = rt.block_on(res.into_body().collect()).unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], code);
        assert!(!body.to_string().contains("secret detail"));
    }
    assert_eq!(mnemo::ErrorCode::RateLimited.http_status(), 429);
}

#[tokio::test]
async fn openapi_documents_every_route() {
    let api = api().await;
    let r = call(&api.app, Method::GET, "/openapi.json", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body["openapi"].as_str().unwrap().starts_with("3.1"));
    let routes = [
        ("post", "/v1/memories"),
        ("get", "/v1/memories"),
        ("get", "/v1/memories/{id}"),
        ("patch", "/v1/memories/{id}"),
        ("delete", "/v1/memories/{id}"),
        ("get", "/v1/memories/{id}/history"),
        ("post", "/v1/memories/{id}/confirm"),
        ("post", "/v1/memories/{id}/reject"),
        ("post", "/v1/memories/{id}/restore"),
        ("post", "/v1/memories/{id}/supersede"),
        ("post", "/v1/search"),
        ("post", "/v1/context"),
        ("post", "/v1/chat/completions"),
        ("post", "/v1/reference/documents"),
        ("delete", "/v1/reference/documents/{id}"),
        ("delete", "/v1/users/{user_id}"),
        ("get", "/v1/users/{user_id}/erasure"),
        ("get", "/v1/users/{user_id}/export"),
        ("post", "/v1/users/{user_id}/import"),
        ("post", "/v1/threads"),
        ("get", "/v1/threads/{id}"),
        ("post", "/v1/threads/{id}/messages"),
        ("get", "/v1/threads/{id}/payloads/{payload_id}"),
        ("post", "/v1/threads/{id}/prompt"),
        ("post", "/v1/threads/{id}/turns"),
        ("post", "/v1/evals"),
        ("get", "/v1/evals/{id}"),
        ("get", "/healthz"),
        ("get", "/readyz"),
        ("get", "/metrics"),
        ("get", "/openapi.json"),
        ("get", "/v1/whoami"),
        ("get", "/v1/users"),
        ("get", "/v1/memories/{id}/lineage"),
        ("get", "/v1/policy"),
        ("get", "/v1/evals"),
        ("get", "/v1/keys"),
        ("post", "/v1/keys"),
        ("delete", "/v1/keys/{id}"),
        ("get", "/v1/jobs"),
        ("post", "/v1/jobs/{name}/dry-run"),
        ("get", "/v1/index"),
    ];
    let paths = r.body["paths"].as_object().unwrap();
    for (method, path) in routes {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing from OpenAPI"
        );
    }
    // And every documented operation is routed (the fallback would say "no such route").
    let mut documented = 0;
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            documented += 1;
            let uri = path
                .replace("{id}", &uuid::Uuid::now_v7().to_string())
                .replace("{user_id}", "ann");
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let r = call(&api.app, m, &uri, Some(&api.admin), None).await;
            let routed = !(r.status == StatusCode::NOT_FOUND
                && r.body["error"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("route "))
                && r.status != StatusCode::METHOD_NOT_ALLOWED;
            assert!(
                routed,
                "{method} {path} is documented but not routed: {}",
                r.body
            );
        }
    }
    assert_eq!(
        documented,
        routes.len(),
        "undocumented or unexpected operations"
    );
    assert!(r.body["components"]["securitySchemes"]["bearer"].is_object());
}

// ----- the real binary ------------------------------------------------------

mod binary {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use axum::http::{Method, StatusCode};
    use serde_json::json;

    use crate::over_http::{call as req, free_port, http, wait_ready};

    /// The server child, killed if the test ends before it stops it (a
    /// failed assertion used to leave `mnemo serve` running).
    struct KillOnDrop(std::process::Child);

    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            if matches!(self.0.try_wait(), Ok(None)) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
    }

    /// A user with one, three memories gets the answer first for a plain
    /// paraphrase that shares no word with it, and the context block holds
    /// it (issue 51: the vector leg's floor used to leave them nothing).
    #[tokio::test]
    async fn small_stores_get_the_answer_first_over_http() {
        let dir = tempfile::tempdir().unwrap();
        let (_child, base, key, http) = start_server(dir.path()).await;
        let add = |user: &str, texts: &[&str]| json!({"memories": texts.iter().map(|t| json!({"user_id": user, "text": t})).collect::<Vec<_>>(), "refresh": true});
        let bob = [
            "I'm allergic to peanuts",
            "My sister lives in Lisbon",
            "I work as a nurse on night shifts",
        ];
        let (status, body) = req(
            &http,
            Method::POST,
            &format!("{base}/v1/memories"),
            &key,
            Some(add("bob", &bob)),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, body) = req(
            &http,
            Method::POST,
            &format!("{base}/v1/memories"),
            &key,
            Some(add("alice", &["Alice prefers green tea"])),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        for (user, query, answer) in [
            ("bob", "food the user cannot eat", bob[0]),
            ("bob", "what is the user's job", bob[2]),
            ("alice", "drinks", "Alice prefers green tea"),
        ] {
            let (status, body) = req(
                &http,
                Method::POST,
                &format!("{base}/v1/search"),
                &key,
                Some(json!({"user_id": user, "query": query, "explain": true})),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["hits"][0]["memory"]["text"], answer, "{query}: {body}");
            let relevance = body["hits"][0]["breakdown"]["learned"]["relevance"].as_f64();
            assert!(relevance.is_some_and(|r| r > 0.0 && r < 1.0), "{body}");
        }
        let (status, body) = req(
            &http,
            Method::POST,
            &format!("{base}/v1/context"),
            &key,
            Some(json!({"user_id": "alice", "query": "drinks", "model_context_tokens": 8000})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            body["text"].as_str().unwrap().contains("green tea"),
            "{body}"
        );
    }

    /// The `--config` file as the real binary reads it: a typo in a key
    /// stops the start with exit 1, naming the file and the key.
    #[test]
    fn serve_refuses_an_unknown_config_key_naming_it() {
        let bin = env!("CARGO_BIN_EXE_mnemo");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnemo.toml");
        std::fs::write(&path, "listen = \"127.0.0.1:0\"\nlisten_adress = \"x\"\n").unwrap();
        let out = Command::new(bin)
            .arg("serve")
            .arg("--config")
            .arg(&path)
            .env_remove("MNEMO_CONFIG")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("mnemo.toml: listen_adress`") && err.contains("unknown key"),
            "{err}"
        );
        // A file value the validation refuses is named by its key too.
        std::fs::write(&path, "erasure_wait_secs = 100\n").unwrap();
        let out = Command::new(bin)
            .args(["serve", "--config"])
            .arg(&path)
            .env_remove("MNEMO_CONFIG")
            .env_remove("MNEMO_ERASURE_WAIT_SECS")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("erasure_wait_secs"), "{err}");
        assert!(err.contains("must be below request_timeout_secs"), "{err}");
    }

    /// A real `mnemo serve` on the default model in `dir`, with an agent key
    /// created first by `mnemo keys create`: (server, base URL, key, client).
    async fn start_server(
        dir: &std::path::Path,
    ) -> (KillOnDrop, String, String, crate::over_http::Http) {
        let assets = crate::real_embedder::ensure_assets();
        let bin = env!("CARGO_BIN_EXE_mnemo");
        let data = dir.join("data");
        let out = Command::new(bin)
            .args([
                "keys",
                "create",
                "--tenant",
                "default",
                "--role",
                "agent",
                "--data-dir",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert!(key.starts_with("mnemo_"));

        let port = free_port();
        let log_path = dir.join("serve.log");
        let mut child = KillOnDrop(
            Command::new(bin)
                .args([
                    "serve",
                    "--log-format",
                    "json",
                    "--listen",
                    &format!("127.0.0.1:{port}"),
                    "--data-dir",
                ])
                .arg(&data)
                .arg("--assets-dir")
                .arg(&assets)
                .env("MNEMO_LOG", "info")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log_path).unwrap())
                .spawn()
                .unwrap(),
        );
        let base = format!("http://127.0.0.1:{port}");
        let http = http();
        wait_ready(
            &http,
            &base,
            &mut child.0,
            &log_path,
            Duration::from_secs(180),
        )
        .await;
        (child, base, key, http)
    }

    #[tokio::test]
    async fn serve_binary_add_search_context_delete_over_http() {
        let dir = tempfile::tempdir().unwrap();
        let (mut child, base, key, http) = start_server(dir.path()).await;
        let log_path = dir.path().join("serve.log");
        let secret_text = "The user prefers green tea";
        let (status, body) = req(
            &http,
            Method::POST,
            &format!("{base}/v1/memories"),
            &key,
            Some(json!({"memories": [
                {"user_id": "u1", "text": secret_text},
                {"user_id": "u1", "text": "The user's car is a blue hatchback"}
            ], "refresh": true})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let tea = body["ids"][0].as_str().unwrap().to_string();

        let search =
            json!({"user_id": "u1", "query": "what drink does the user like", "explain": true});
        let (status, body) = req(
            &http,
            Method::POST,
            &format!("{base}/v1/search"),
            &key,
            Some(search.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["hits"][0]["memory"]["id"], tea.as_str(), "{body}");
        assert!(
            body["hits"][0]["breakdown"]["vector_similarity"]
                .as_f64()
                .unwrap()
                > 0.3
        );

        let (status, body) = req(
            &http,
            Method::POST,
            &format!("{base}/v1/context"),
            &key,
            Some(json!({"user_id": "u1", "query": "what does the user like to drink", "model_context_tokens": 8000})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            body["text"].as_str().unwrap().contains("green tea"),
            "{body}"
        );

        let (status, body) = req(
            &http,
            Method::DELETE,
            &format!("{base}/v1/memories/{tea}"),
            &key,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (_, body) = req(
            &http,
            Method::POST,
            &format!("{base}/v1/search"),
            &key,
            Some(search),
        )
        .await;
        assert!(body["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["memory"]["id"] != tea.as_str()));

        // A user id in the path (here a verification of a user who never
        // was) must not reach the logs: they name the route template.
        let private_id = "private-user-7c41e9";
        let (status, _) = req(
            &http,
            Method::GET,
            &format!("{base}/v1/users/{private_id}/erasure"),
            &key,
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);

        // Graceful shutdown on SIGTERM: exits 0 after committing.
        let killed = Command::new("kill")
            .args(["-TERM", &child.0.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.0.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "server did not stop within 60 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let log = std::fs::read_to_string(&log_path).unwrap();
        assert!(status.success(), "exit {status}: {log}");
        assert!(log.contains("stopped"), "{log}");
        assert!(
            log.contains("request_id"),
            "request ids in log lines: {log}"
        );
        assert!(
            !log.contains(secret_text),
            "memory text leaked into the logs"
        );
        assert!(!log.contains(private_id), "a user id leaked into the logs");
        assert!(
            log.contains("/v1/users/{user_id}/erasure"),
            "request logs name the route template: {log}"
        );
    }
}

#[tokio::test]
async fn evals_run_in_the_background_for_admins_only() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(dir.path(), Arc::new(manual()), Policy::default()).await;
    let root = crate::common::repo_root().join("eval_sets");
    // The evaluation runs on a runner, as under `mnemo serve` (the node's).
    let runner = mnemo::runner::Runner::new();
    let state = AppState::new(engine.clone(), AuthMode::Keys)
        .with_evals(mnemo::api::routes::evals::EvalJobs::new(
            root,
            dir.path().join("evals"),
        ))
        .with_tasks(runner.spawner());
    let app = app(state);
    let admin = key(&engine, "acme", None, Role::Admin).await;
    let agent = key(&engine, "acme", None, Role::Agent).await;
    let body = json!({"sets": ["reference_knowledge"], "presets": ["bm25"]});

    let r = call(
        &app,
        Method::POST,
        "/v1/evals",
        Some(&agent),
        Some(body.clone()),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    for bad in ["../eval_sets", "/etc", "no_such_set", ""] {
        let r = call(
            &app,
            Method::POST,
            "/v1/evals",
            Some(&admin),
            Some(json!({"sets": [bad]})),
        )
        .await;
        assert_eq!(
            (r.status, r.field()),
            (StatusCode::BAD_REQUEST, "sets"),
            "{bad}"
        );
    }
    let r = call(
        &app,
        Method::POST,
        "/v1/evals",
        Some(&admin),
        Some(json!({"sets": ["reference_knowledge"], "presets": ["best"]})),
    )
    .await;
    assert_eq!((r.status, r.field()), (StatusCode::BAD_REQUEST, "presets"));

    let r = call(&app, Method::POST, "/v1/evals", Some(&admin), Some(body)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    assert_eq!(r.body["status"], "running");
    let id = r.body["id"].as_str().unwrap().to_string();
    let uri = format!("/v1/evals/{id}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let done = loop {
        let r = call(&app, Method::GET, &uri, Some(&admin), None).await;
        assert_eq!(r.status, StatusCode::OK);
        if r.body["status"] != "running" {
            break r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "evaluation did not finish"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(done.body["status"], "succeeded", "{:?}", done.body);
    let run = &done.body["report"]["runs"][0];
    assert_eq!(run["set"], "reference_knowledge");
    assert_eq!(run["preset"], "bm25");
    let ndcg = run["metrics"]["ndcg@10"].as_f64().unwrap();
    assert!(ndcg > 0.0 && ndcg <= 1.0);
    let out = std::path::PathBuf::from(done.body["out_dir"].as_str().unwrap());
    assert!(out.join("report.html").is_file());
    let r = call(
        &app,
        Method::GET,
        &format!("/v1/evals/{}", uuid::Uuid::now_v7()),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Counted with the other background work, and done by stop.
    let metrics = app
        .clone()
        .oneshot(
            Request::get("/metrics")
                .header("authorization", format!("Bearer {admin}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let text = String::from_utf8(
        metrics
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    assert!(
        text.contains("mnemo_task_runs_total{task=\"evaluation\"}"),
        "{text}"
    );
    let spawner = runner.spawner();
    runner.stop().await;
    assert_eq!(spawner.running(), 0);
}

#[tokio::test]
async fn review_confirm_reject_restore_supersede() {
    let api = api().await;
    let body = json!({"user_id": "ann", "text": "Ann might adopt a cat", "confidence": 0.3, "refresh": true});
    let pending = add(&api, &api.agent, body).await;
    let search = json!({"user_id": "ann", "query": "adopt a cat"});
    let hits = |r: &Reply| r.body["hits"].as_array().map_or(0, Vec::len);
    let r = call(
        &api.app,
        Method::POST,
        "/v1/search",
        Some(&api.agent),
        Some(search.clone()),
    )
    .await;
    assert_eq!(hits(&r), 0, "pending is not searchable");
    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{pending}/confirm"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::OK, Some("active"))
    );
    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{pending}/confirm"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CONFLICT,
        "only a pending candidate can be confirmed"
    );
    let r = call(
        &api.app,
        Method::POST,
        "/v1/search",
        Some(&api.agent),
        Some(search),
    )
    .await;
    assert_eq!(hits(&r), 1);

    let other = add(
        &api,
        &api.agent,
        json!({"user_id": "ann", "text": "Ann may learn Dutch", "confidence": 0.3}),
    )
    .await;
    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{other}/reject"),
        Some(&api.ann),
        None,
    )
    .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::OK, Some("deleted"))
    );
    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{other}/restore"),
        Some(&api.ann),
        None,
    )
    .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::OK, Some("active"))
    );
    // Another tenant's key sees none of it.
    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{other}/restore"),
        Some(&api.globex),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{pending}/supersede"),
        Some(&api.agent),
        Some(json!({"text": "Ann adopted a dog instead"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let new_id = r.body["memory"]["id"].as_str().unwrap().to_string();
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/memories/{pending}"),
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.body["status"], "superseded");
    assert_eq!(r.body["superseded_by"], new_id.as_str());
    let r = call(
        &api.app,
        Method::POST,
        &format!("/v1/memories/{pending}/supersede"),
        Some(&api.agent),
        Some(json!({"text": ""})),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}
