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
use mnemo::service::erasure::scan::{scan_dir, Needle, StoreFiles};
use serde_json::{json, Value};

use crate::over_http::{free_port, try_call as req, wait_ready, Http};

/// A `mnemo serve` child process, killed (SIGKILL) when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
}

impl Server {
    /// Stops the server as an operator would (SIGTERM: drain, commit,
    /// checkpoint) and waits for it to exit.
    pub(crate) fn stop(mut self) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(status.success());
        let exited = self.child.wait().unwrap();
        assert!(exited.success(), "mnemo serve exited with {exited}");
    }

    /// Polls `GET /v1/users/{user}/erasure` (what every store holds of the
    /// user) until `done` says so; panics after `within`.
    pub(crate) async fn until_footprint(
        &self,
        http: &Http,
        key: &str,
        user: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = Instant::now();
        loop {
            let url = format!("{}/v1/users/{user}/erasure", self.base);
            let (status, v) = req(http, Method::GET, &url, key, None).await.unwrap();
            assert_eq!(status, StatusCode::OK, "{v}");
            if done(&v) {
                return v;
            }
            assert!(
                started.elapsed() < within,
                "not reached within {within:?}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Every acknowledged (id, text) is retrievable with its text.
    pub(crate) async fn assert_present(
        &self,
        http: &Http,
        key: &str,
        run: usize,
        acked: &[(String, String)],
    ) {
        for (id, text) in acked {
            let url = format!("{}/v1/memories/{id}", self.base);
            let (status, body) = req(http, Method::GET, &url, key, None).await.unwrap();
            assert_eq!(
                status,
                StatusCode::OK,
                "run {run}: acknowledged {id} lost: {body}"
            );
            assert_eq!(body["text"], text.as_str(), "run {run}: {id} half-present");
        }
    }

    /// The user's search hits for `query` (top 5).
    pub(crate) async fn search(
        &self,
        http: &Http,
        key: &str,
        user: &str,
        query: &str,
    ) -> Vec<Value> {
        let url = format!("{}/v1/search", self.base);
        let body = json!({"user_id": user, "query": query, "top_k": 5});
        let (status, body) = req(http, Method::POST, &url, key, Some(body))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        body["hits"].as_array().unwrap().clone()
    }
}

/// The rows `sql` (one `?`: the user id) selects from a data directory's
/// SQLite store, read directly: what the store holds, not what the API serves.
pub(crate) async fn store_rows(data: &Path, sql: &str, user: &str) -> Vec<sqlx::sqlite::SqliteRow> {
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(data.join("mnemo.db"));
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let rows = sqlx::query(sql).bind(user).fetch_all(&pool).await.unwrap();
    pool.close().await;
    rows
}

/// Runs per kill -9 test: `MNEMO_KILL9_RUNS`, 2 by default (`make test`).
pub(crate) fn runs() -> usize {
    std::env::var("MNEMO_KILL9_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn serve(http: &Http, data: &Path, assets: &Path, log: &Path) -> Server {
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

pub(crate) fn admin_key(data: &Path) -> String {
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

/// One run: returns (acknowledged bystander writes, where the kill landed).
async fn one_run(run: usize, delay_ms: u64, http: &Http, assets: &Path) -> (usize, Phase) {
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
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = writer.await;
    let answered = delete.await.unwrap().map(|(status, _)| status);
    drop(server);
    let acked = acked.lock().unwrap().clone();

    // Restart: the erasure completes, every acknowledged write is there.
    let server = serve(http, &data, assets, &log).await;
    let now = server
        .until_footprint(http, &key, &victim, Duration::from_secs(120), |v| {
            v["erased"] == true || v["status"] == "not_erased"
        })
        .await;
    let phase = if now["status"] == "not_erased" {
        // Killed before the intent committed: the DELETE was never answered
        // and nothing was recorded, so the client retries it.
        assert_eq!(
            answered, None,
            "run {run}: an answered DELETE was forgotten: {now}"
        );
        let url = format!("{}/v1/users/{victim}", server.base);
        let (status, body) = req(http, Method::DELETE, &url, &key, None).await.unwrap();
        assert!(
            status == StatusCode::OK || status == StatusCode::ACCEPTED,
            "{body}"
        );
        server
            .until_footprint(http, &key, &victim, Duration::from_secs(120), |v| {
                v["erased"] == true
            })
            .await;
        Phase::BeforeIntent
    } else if answered == Some(StatusCode::OK) {
        Phase::Done
    } else {
        Phase::Resumed
    };
    server.assert_present(http, &key, run, &acked).await;
    // Searchable: the last acknowledged write (the one most at risk) and a
    // sample of the others, by their unique token.
    for (id, text) in acked.iter().rev().step_by(7.max(acked.len() / 5)).take(5) {
        let token = text.rsplit(' ').next().unwrap();
        let hits = server.search(http, &key, "bystander", token).await;
        assert!(
            hits.iter().any(|h| h["memory"]["id"] == id.as_str()),
            "run {run}: acknowledged {id} not searchable: {hits:?}"
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
    if let Ok(Some(k)) = mnemo::vector::PayloadKey::load(&data.join("vectors/users/payload.key")) {
        needles.push(Needle::text("thread_hash", &k.thread(&owner, &thread)));
    }
    let report = scan_dir(&data, &needles).unwrap();
    let residue: Vec<_> = report
        .hits
        .iter()
        .filter(|h| !(h.store == StoreFiles::Store && h.found == ["owner_key"]))
        .collect();
    if !residue.is_empty() {
        let kept = dir.keep();
        panic!(
            "run {run}: residue {residue:?} (data directory and server log kept in {})",
            kept.display()
        );
    }
    (acked.len(), phase)
}

/// Where the kill landed in the erasure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the intent committed (nothing recorded; the client retried).
    BeforeIntent,
    /// After the intent, before the receipt: resumed at the restart.
    Resumed,
    /// After the DELETE answered with the receipt.
    Done,
}

/// How long after the DELETE run `run` kills the server: `MNEMO_KILL9_DELAYS_MS`
/// (comma-separated, cycled) or a sweep over 20..420 ms, denser where the
/// erasure's last steps run (50..200 ms for 30 memories).
fn kill_delay_ms(run: usize) -> u64 {
    if let Ok(list) = std::env::var("MNEMO_KILL9_DELAYS_MS") {
        let delays: Vec<u64> = list
            .split(',')
            .filter_map(|d| d.trim().parse().ok())
            .collect();
        if !delays.is_empty() {
            return delays[run % delays.len()];
        }
    }
    if run % 2 == 1 {
        50 + (run as u64 * 23) % 150
    } else {
        20 + (run as u64 * 37) % 400
    }
}

#[tokio::test]
async fn kill_9_during_forget_all_and_writes_loses_nothing_and_leaves_no_residue() {
    let assets = crate::real_embedder::ensure_assets();
    let runs = runs();
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    let started = Instant::now();
    let mut acked_total = 0;
    let mut phases = Vec::new();
    for run in 0..runs {
        let delay = kill_delay_ms(run);
        let (acked, phase) = one_run(run, delay, &http, &assets).await;
        println!(
            "kill -9 run {run}: killed {delay} ms after the DELETE ({phase:?}), {acked} acknowledged \
             writes, all present, erasure complete, no residue"
        );
        acked_total += acked;
        phases.push(phase);
    }
    let count = |p: Phase| phases.iter().filter(|q| **q == p).count();
    println!(
        "kill -9: {runs} runs ({} before the intent, {} resumed after the restart, {} after the \
         receipt), {acked_total} acknowledged writes, 0 lost, every erasure completed, 0 residue \
         files ({:.0?})",
        count(Phase::BeforeIntent),
        count(Phase::Resumed),
        count(Phase::Done),
        started.elapsed()
    );
}
