//! Bounded inputs with clear errors (issue 16): metadata size and depth, user
//! id characters, thread history pages, per-key rate limits, `Host` checks in
//! dev mode, a cheap `/readyz`, and — on a real socket — the header-read
//! timeout and hyper's own 414/431 in the JSON error shape.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use mnemo::api::{app, AppState, AuthMode};
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::policy::Policy;
use mnemo::Engine;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::api::{api, api_with, api_with_state, assert_error, call, send};
use crate::common::*;

#[tokio::test]
async fn metadata_over_its_size_or_depth_is_refused_naming_the_field() {
    let api = api().await;
    let big = json!({"user_id": "bob", "text": "t", "metadata": {"blob": "x".repeat(70_000)}});
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.agent),
        Some(big),
    )
    .await;
    assert_error(&r, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert_eq!(r.body["error"]["field"], "metadata", "{}", r.body);
    let mut deep = json!(1);
    for _ in 0..9 {
        deep = json!({ "d": deep });
    }
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.agent),
        Some(json!({"user_id": "bob", "text": "t", "metadata": deep})),
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(r.body["error"]["field"], "metadata");
    // Nothing was written.
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?user_id=bob",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(
        r.body["memories"].as_array().map(Vec::len),
        Some(0),
        "{}",
        r.body
    );
    // Within the limits it is stored; a PATCH is held to the same limits.
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.agent),
        Some(json!({"user_id": "bob", "text": "t", "metadata": {"a": {"b": [1, 2]}}})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["ids"][0].as_str().unwrap().to_string();
    let r = call(
        &api.app,
        Method::PATCH,
        &format!("/v1/memories/{id}"),
        Some(&api.agent),
        Some(json!({"metadata": {"blob": "x".repeat(70_000)}})),
    )
    .await;
    assert_error(&r, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
}

#[tokio::test]
async fn user_ids_keep_every_script_but_no_invisible_characters() {
    let api = api().await;
    for ok in ["李雷", "ann@example.com", "Ann Smith"] {
        let r = call(
            &api.app,
            Method::POST,
            "/v1/memories",
            Some(&api.agent),
            Some(json!({"user_id": ok, "text": "hello"})),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{ok}: {}", r.body);
    }
    for bad in [
        "ali\u{202E}ecnalab",
        "a\u{200B}b",
        "\u{FEFF}bob",
        "a\u{2066}b",
    ] {
        let r = call(
            &api.app,
            Method::POST,
            "/v1/memories",
            Some(&api.agent),
            Some(json!({"user_id": bad, "text": "hello"})),
        )
        .await;
        assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
        assert_eq!(r.body["error"]["field"], "user_id", "{bad:?}");
        let r = call(
            &api.app,
            Method::POST,
            "/v1/threads",
            Some(&api.agent),
            Some(json!({"user_id": bad})),
        )
        .await;
        assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    }
    // Data stored under such an id before the rule can still be erased.
    let r = call(
        &api.app,
        Method::DELETE,
        "/v1/users/a%E2%80%8Bb",
        Some(&api.agent),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn thread_history_comes_in_bounded_pages() {
    let api = api().await;
    let r = call(
        &api.app,
        Method::POST,
        "/v1/threads",
        Some(&api.ann),
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    for i in 0..5 {
        let r = call(
            &api.app,
            Method::POST,
            &format!("/v1/threads/{id}/messages"),
            Some(&api.ann),
            Some(json!({"role": "assistant", "content": format!("message {i}")})),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    let page = |q: String| {
        let app = api.app.clone();
        let key = api.ann.clone();
        let id = id.clone();
        async move {
            call(
                &app,
                Method::GET,
                &format!("/v1/threads/{id}{q}"),
                Some(&key),
                None,
            )
            .await
        }
    };
    let texts = |r: &crate::api::Reply| -> Vec<String> {
        r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    let all = page(String::new()).await;
    assert_eq!(texts(&all).len(), 5);
    assert!(all.body.get("next_before").is_none(), "{}", all.body);
    let first = page("?limit=2".into()).await;
    assert_eq!(texts(&first), ["message 3", "message 4"]);
    let before = first.body["next_before"].as_i64().unwrap();
    let second = page(format!("?limit=2&before={before}")).await;
    assert_eq!(texts(&second), ["message 1", "message 2"]);
    let before = second.body["next_before"].as_i64().unwrap();
    let last = page(format!("?limit=2&before={before}")).await;
    assert_eq!(texts(&last), ["message 0"]);
    assert!(last.body.get("next_before").is_none());
    for bad in ["?limit=0", "?limit=201", "?limit=x", "?lmit=2"] {
        let r = page(bad.into()).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
    }
}

#[tokio::test]
async fn a_key_over_its_rate_gets_429_with_retry_after() {
    let mut policy = Policy::default();
    policy.limits.requests_per_second_per_key = 0.5;
    policy.limits.burst_per_key = 2;
    let api = api_with(policy, AuthMode::Keys, None).await;
    let list = "/v1/memories?user_id=bob";
    for _ in 0..2 {
        let r = call(&api.app, Method::GET, list, Some(&api.agent), None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    let r = call(&api.app, Method::GET, list, Some(&api.agent), None).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    // The next token is two seconds away at half a token a second (a little
    // less if the requests above were slow).
    let retry: u64 = r.headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    // Per key: another key of the same tenant is not held back.
    let r = call(&api.app, Method::GET, list, Some(&api.admin), None).await;
    assert_eq!(r.status, StatusCode::OK);
    // Unauthenticated probes are not counted.
    let r = call(&api.app, Method::GET, "/healthz", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    // 0 turns it off.
    let mut policy = Policy::default();
    policy.limits.requests_per_second_per_key = 0.0;
    policy.limits.burst_per_key = 1;
    let api = api_with(policy, AuthMode::Keys, None).await;
    for _ in 0..5 {
        let r = call(&api.app, Method::GET, list, Some(&api.agent), None).await;
        assert_eq!(r.status, StatusCode::OK);
    }
}

async fn with_host(app: &axum::Router, host: &str) -> crate::api::Reply {
    let req = Request::builder()
        .uri("/v1/memories?user_id=bob")
        .header(header::HOST, host)
        .body(Body::empty())
        .unwrap();
    send(app, req).await
}

#[tokio::test]
async fn dev_mode_serves_loopback_hosts_only() {
    let api = api_with(Policy::default(), AuthMode::InsecureDev, None).await;
    for host in [
        "evil.example",
        "evil.example:8420",
        "192.168.1.10:8420",
        "localhost.evil.example",
    ] {
        let r = with_host(&api.app, host).await;
        assert_error(&r, StatusCode::FORBIDDEN, "forbidden");
    }
    for host in [
        "localhost",
        "localhost:8420",
        "127.0.0.1:8420",
        "[::1]:8420",
        "LOCALHOST",
    ] {
        let r = with_host(&api.app, host).await;
        assert_eq!(r.status, StatusCode::OK, "{host}: {}", r.body);
    }
    // With keys, the key is the protection: any host.
    let api = crate::api::api().await;
    let req = Request::builder()
        .uri("/v1/memories?user_id=bob")
        .header(header::HOST, "mnemo.internal:8420")
        .header(header::AUTHORIZATION, format!("Bearer {}", api.agent))
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&api.app, req).await.status, StatusCode::OK);
}

/// The hashing embedder, counting query embeddings.
struct CountingQueries(HashingEmbedder, Arc<AtomicUsize>);

impl mnemo::embed::Embedder for CountingQueries {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn embed_query(&self, text: &str) -> mnemo::Result<Vec<f32>> {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.embed_query(text)
    }
    fn embed_passages(&self, texts: &[&str]) -> mnemo::Result<Vec<Vec<f32>>> {
        self.0.embed_passages(texts)
    }
}

#[tokio::test]
async fn a_flood_of_readiness_probes_embeds_once() {
    let dir = tempfile::tempdir().unwrap();
    let queries = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(dir.path())
        .policy(crate::common::on_hashing_scale(
            mnemo::policy::Policy::default(),
        ))
        .embedder(Arc::new(CountingQueries(
            HashingEmbedder::new(64),
            queries.clone(),
        )))
        .clock(Arc::new(manual()))
        .build()
        .await
        .unwrap()
        .engine;
    let app = app(AppState::new(engine, AuthMode::Keys));
    let probes: Vec<_> = (0..64)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { call(&app, Method::GET, "/readyz", None, None).await })
        })
        .collect();
    for p in probes {
        let r = p.await.unwrap();
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(r.body["checks"]["embedder"], "ok");
    }
    assert_eq!(
        queries.load(Ordering::SeqCst),
        1,
        "one check served all 64 probes"
    );
}

// ----- a real socket --------------------------------------------------------

/// Serves a dev-mode API on 127.0.0.1 with a 1 s header-read timeout.
async fn socket() -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
    crate::api::Api,
) {
    let api = api_with_state(Policy::default(), AuthMode::InsecureDev, |s| s).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = mnemo::api::listen::ListenOptions {
        header_read_timeout: Duration::from_secs(1),
    };
    let server = tokio::spawn(mnemo::api::listen::serve(
        listener,
        api.app.clone(),
        options,
        async move {
            let _ = stopped.await;
        },
    ));
    (addr, stop, server, api)
}

/// Sends `request` and reads until the server closes (at most 10 s).
async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The server may answer (and close) before it has read everything.
    let _ = conn.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), conn.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn json_body(response: &str) -> Value {
    let (_, body) = response.split_once("\r\n\r\n").expect("a whole response");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[tokio::test]
async fn on_the_socket_parse_errors_are_json_and_slow_headers_are_cut_off() {
    let (addr, stop, server, _api) = socket().await;
    // A normal request.
    let ok = exchange(
        addr,
        b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    // A 100 KB URL: hyper's 414, in the JSON shape.
    let long = format!(
        "GET /v1/memories?user_id={} HTTP/1.1\r\nhost: localhost\r\n\r\n",
        "a".repeat(100_000)
    );
    let r = exchange(addr, long.as_bytes()).await;
    assert!(r.starts_with("HTTP/1.1 414"), "{r}");
    assert!(
        r.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{r}"
    );
    assert_eq!(json_body(&r)["error"]["code"], "payload_too_large");
    // More header fields than hyper takes (100): 431, in the JSON shape.
    // (Small ones: the server reads the whole request before it answers, so
    // the answer is not lost to a reset.)
    let fields: String = (0..150).map(|i| format!("x-h{i}: v\r\n")).collect();
    let big = format!("GET /healthz HTTP/1.1\r\nhost: localhost\r\n{fields}\r\n");
    let r = exchange(addr, big.as_bytes()).await;
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    assert_eq!(json_body(&r)["error"]["code"], "payload_too_large");
    // Garbage: 400, in the JSON shape.
    let r = exchange(addr, b"NOT HTTP AT ALL\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    assert_eq!(json_body(&r)["error"]["code"], "invalid_argument");
    // Unfinished headers: the server hangs up after the header-read timeout.
    let started = std::time::Instant::now();
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), conn.read_to_end(&mut buf)).await;
    assert!(closed.is_ok(), "a half-open connection stayed open");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "closed before the timeout: {:?}",
        started.elapsed()
    );
    // A connection that sends nothing at all is closed too.
    let started = std::time::Instant::now();
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(10), idle.read_to_end(&mut buf)).await;
    assert!(closed.is_ok(), "an idle connection stayed open");
    assert!(started.elapsed() < Duration::from_secs(5));
    // Graceful shutdown returns once the signal fires.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("serve returns after the signal")
        .unwrap();
}

#[tokio::test]
async fn openapi_states_the_new_statuses_and_parameters() {
    let api = crate::api::api().await;
    let r = call(&api.app, Method::GET, "/openapi.json", None, None).await;
    let paths = &r.body["paths"];
    let forget = &paths["/v1/users/{user_id}"]["delete"]["responses"];
    for status in ["200", "202", "429", "503"] {
        assert!(forget.get(status).is_some(), "DELETE /v1/users: {status}");
    }
    assert!(paths["/v1/threads"]["post"]["responses"]
        .get("409")
        .is_some());
    // Every authenticated operation documents 429; the probes do not.
    for (path, ops) in paths.as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            assert_eq!(
                op["responses"].get("429").is_some(),
                secured,
                "{method} {path}"
            );
        }
    }
    let params: Vec<&str> = paths["/v1/threads/{id}"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for name in ["id", "limit", "before", "include_compacted"] {
        assert!(params.contains(&name), "{params:?}");
    }
    let user_id = &r.body["components"]["schemas"]["MemoryInput"]["properties"]["user_id"];
    assert_eq!(user_id["maxLength"], 256, "{user_id}");
}

#[tokio::test]
async fn a_user_at_the_thread_quota_gets_409_quota_exceeded() {
    let mut policy = Policy::default();
    policy.limits.max_threads_per_user = 2;
    let api = api_with(policy, AuthMode::Keys, None).await;
    let create = |user: &'static str| {
        let app = api.app.clone();
        let key = api.agent.clone();
        async move {
            call(
                &app,
                Method::POST,
                "/v1/threads",
                Some(&key),
                Some(json!({"user_id": user})),
            )
            .await
        }
    };
    for _ in 0..2 {
        assert_eq!(create("bob").await.status, StatusCode::CREATED);
    }
    let r = create("bob").await;
    assert_error(&r, StatusCode::CONFLICT, "quota_exceeded");
    // Per user: another user is not held back.
    assert_eq!(create("carl").await.status, StatusCode::CREATED);
}
