//! Talking to a real `mnemo serve` process over HTTP: the client, a free
//! loopback port, one JSON request, and waiting for `/readyz`. Shared by the
//! tests that run the binary (`api::binary`, `kill9`, `qdrant_serve`).

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

pub type Http = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

pub fn http() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One request with a Bearer key and an optional JSON body; `None` when the
/// connection failed (a server being killed), the body `Null` when not JSON.
pub async fn try_call(
    http: &Http,
    method: Method,
    url: &str,
    key: &str,
    body: Option<Value>,
) -> Option<(StatusCode, Value)> {
    let mut b = Request::builder()
        .method(method)
        .uri(url)
        .header("authorization", format!("Bearer {key}"));
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    let body = body.map(|v| Bytes::from(v.to_string())).unwrap_or_default();
    let res = http.request(b.body(Full::new(body)).unwrap()).await.ok()?;
    let status = res.status();
    let bytes = res.into_body().collect().await.ok()?.to_bytes();
    Some((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// As [`try_call`], panicking (with the URL) when the connection fails.
pub async fn call(
    http: &Http,
    method: Method,
    url: &str,
    key: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    try_call(http, method, url, key, body)
        .await
        .unwrap_or_else(|| panic!("{url}: the request failed"))
}

/// Waits until `{base}/readyz` answers 200; panics with the server's log
/// when the process exits first or `within` passes.
pub async fn wait_ready(http: &Http, base: &str, child: &mut Child, log: &Path, within: Duration) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "mnemo serve exited early ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        let ready = http
            .request(
                Request::get(format!("{base}/readyz"))
                    .body(Full::new(Bytes::new()))
                    .unwrap(),
            )
            .await
            .map(|r| r.status() == StatusCode::OK)
            .unwrap_or(false);
        if ready {
            return;
        }
        assert!(
            started.elapsed() < within,
            "server not ready in {within:?}: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
