//! Fault tests against the real binary: `mnemo serve` (ONNX embedder) is
//! killed with SIGKILL while a forget-all runs and while another user's
//! writes stream in, then restarted on the same data directory. After the
//! restart the erasure has completed, no file under the data directory holds
//! the erased user's texts, thread ids (raw or hashed) or owner key (except
//! the store's content-free tombstone), and every write the server
//! acknowledged before the kill is retrievable and searchable.
//!
//! `make test` runs `MNEMO_KILL9_RUNS` runs (default 2); the bar is ≥ 20:
//! `MNEMO_KILL9_RUNS=20 cargo test --test integration kill9 -- --nocapture`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use mnemo::domain::Owner;
use mnemo::erasure_scan::{scan_dir, Needle, StoreFiles};
use serde_json::{json, Value};

use crate::over_http::{free_port, try_call as req, wait_ready, Http};

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn serve(http: &Http, data: &Path, assets: &Path, log: &Path) -> Server {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(data)
        .arg("--assets-dir")
        .arg(assets)
        .env("MNEMO_LOG", "info")
        .stdout(Stdio::null())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap(),
        )
        .spawn()
        .unwrap();
    let mut server = Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    wait_ready(
        http,
        &server.base,
        &mut server.child,
        log,
        Duration::from_secs(300),
    )
    .await;
    server
}

fn admin_key(data: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args([
            "keys",
            "create",
            "--tenant",
            "default",
            "--role",
            "admin",
            "--data-dir",
        ])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// One run: returns (acknowledged bystander writes, kill delay in ms).
async fn one_run(run: usize, http: &Http, assets: &Path) -> (usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let key = admin_key(&data);
    let mut server = serve(http, &data, assets, &log).await;
    let victim = format!("victim-k9-{run}");
    let marker = format!("zqkill{run}x");
    let thread = format!("thread-k9-secret-{run}");
    let victim_mems: Vec<Value> = (0..30)
        .map(|i| {
            let mut m = json!({"user_id": victim, "text": format!("{marker} note {i} about sailing boats")});
            if i % 3 == 0 {
                m["tier"] = json!("working");
                m["thread_id"] = json!(thread);
            }
            m
        })
        .collect();
    let (status, body) = req(
        http,
        Method::POST,
        &format!("{}/v1/memories", server.base),
        &key,
        Some(json!({"memories": victim_mems, "refresh": true})),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // A bystander's writes stream in while the erasure starts; the process
    // is killed at a varying point.
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let writer = {
        let (http, base, key, acked) = (
            http.clone(),
            server.base.clone(),
            key.clone(),
            acked.clone(),
        );
        tokio::spawn(async move {
            for i in 0.. {
                let text = format!("bystander {run} fact {i} zqby{run}n{i}");
                let Some((status, body)) = req(
                    &http,
                    Method::POST,
                    &format!("{base}/v1/memories"),
                    &key,
                    Some(json!({"memories": [{"user_id": "bystander", "text": text}]})),
                )
                .await
                else {
                    return;
                };
                if status == StatusCode::CREATED {
                    let id = body["ids"][0].as_str().unwrap().to_string();
                    acked.lock().unwrap().push((id, text));
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let delete = {
        let (http, url, key) = (
            http.clone(),
            format!("{}/v1/users/{victim}", server.base),
            key.clone(),
        );
        tokio::spawn(async move { req(&http, Method::DELETE, &url, &key, None).await })
    };
    let delay_ms = 20 + (run as u64 * 37) % 400;
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = writer.await;
    let _ = delete.await;
    drop(server);
    let acked = acked.lock().unwrap().clone();

    // Restart: the erasure completes, every acknowledged write is there.
    let server = serve(http, &data, assets, &log).await;
    let started = Instant::now();
    loop {
        let (status, body) = req(
            http,
            Method::GET,
            &format!("{}/v1/users/{victim}/erasure", server.base),
            &key,
            None,
        )
        .await
        .unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["erased"] == true {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "run {run}: erasure not complete 120 s after restart: {body}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for (id, text) in &acked {
        let (status, body) = req(
            http,
            Method::GET,
            &format!("{}/v1/memories/{id}", server.base),
            &key,
            None,
        )
        .await
        .unwrap();
        assert_eq!(
            status,
            StatusCode::OK,
            "run {run}: acknowledged {id} lost: {body}"
        );
        assert_eq!(
            body["text"],
            text.as_str(),
            "run {run}: nothing half-present"
        );
    }
    // Searchable: the last acknowledged write (the one most at risk) and a
    // sample of the others, by their unique token.
    for (id, text) in acked.iter().rev().step_by(7.max(acked.len() / 5)).take(5) {
        let token = text.rsplit(' ').next().unwrap();
        let (status, body) = req(
            http,
            Method::POST,
            &format!("{}/v1/search", server.base),
            &key,
            Some(json!({"user_id": "bystander", "query": token, "top_k": 5})),
        )
        .await
        .unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        let hits = body["hits"].as_array().unwrap();
        assert!(
            hits.iter().any(|h| h["memory"]["id"] == id.as_str()),
            "run {run}: acknowledged {id} not searchable: {body}"
        );
    }
    drop(server);

    // No file holds the victim's texts, thread id or owner key.
    let owner = Owner::user("default", &victim);
    let mut needles = vec![
        Needle::text("text", &marker),
        Needle::text("thread", &thread),
        Needle::text("user_id", &victim),
        Needle::text("owner_key", owner.as_str()),
    ];
    if let Ok(Some(k)) = mnemo::vector::PayloadKey::load(&data.join("vectors/payload.key")) {
        needles.push(Needle::text("thread_hash", &k.thread(&owner, &thread)));
    }
    let report = scan_dir(&data, &needles).unwrap();
    let residue: Vec<_> = report
        .hits
        .iter()
        .filter(|h| !(h.store == StoreFiles::Store && h.found == ["owner_key"]))
        .collect();
    if !residue.is_empty() {
        let kept = std::env::temp_dir().join(format!("mnemo-kill9-run{run}.log"));
        let _ = std::fs::copy(&log, &kept);
        panic!(
            "run {run}: residue {residue:?} (server log kept in {})",
            kept.display()
        );
    }
    (acked.len(), delay_ms)
}

#[tokio::test]
async fn kill_9_during_forget_all_and_writes_loses_nothing_and_leaves_no_residue() {
    let assets = crate::real_embedder::ensure_assets();
    let runs: usize = std::env::var("MNEMO_KILL9_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    let started = Instant::now();
    let mut acked_total = 0;
    for run in 0..runs {
        let (acked, delay) = one_run(run, &http, &assets).await;
        println!("kill -9 run {run}: killed {delay} ms into the erasure, {acked} acknowledged writes, all present");
        acked_total += acked;
    }
    println!(
        "kill -9: {runs} runs, {acked_total} acknowledged writes, 0 lost, every erasure completed, 0 residue files ({:.0?})",
        started.elapsed()
    );
}
