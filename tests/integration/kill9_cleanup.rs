//! Fault test against the real binary: the weekly cleanup, run on demand
//! with `mnemo jobs run weekly-cleanup`, is killed with SIGKILL at varied
//! points of its batches, then run again.
//!
//! The policy makes it soft-delete every long-term memory below importance
//! 0.5 (`cleanup.min_importance = 0.5`, `cleanup.unaccessed_days = 0`) in
//! batches of 10, with a 2 s lease. After the kill the lease expires, the
//! second run completes and deletes exactly the memories the first did not
//! (idempotent and resumable), every memory is in the state the lifecycle
//! allows (below the floor: `deleted` with one delete event; above:
//! `active`, untouched), and once `mnemo serve` is up the store and both
//! indexes agree (only the active memories are indexed, each found by its
//! text; no deleted one is).
//!
//! `make test` runs `MNEMO_KILL9_RUNS` runs (default 2):
//! `MNEMO_KILL9_RUNS=20 cargo test --test integration kill9_cleanup -- --nocapture`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::Row as _;

use crate::kill9::{admin_key, runs, serve, store_rows};
use crate::over_http::{http, try_call as req, Http};

const USER: &str = "keeper";
const MEMORIES: usize = 240;
const POLICY: &str = "[cleanup]\nmin_importance = 0.5\nunaccessed_days = 0\n\n[jobs]\nbatch_size = 10\nlease_secs = 2\n";

fn text(run: usize, i: usize) -> String {
    const TOPICS: [&str; 6] = [
        "likes hiking in the hills",
        "owns a grey cat named Ash",
        "studies Portuguese on weekday evenings",
        "drives an old blue van",
        "volunteers at the library",
        "grows chili peppers on the balcony",
    ];
    format!("keeper {} zqc{run}k{i}m", TOPICS[i % TOPICS.len()])
}

/// Memory `i` is below the cleanup's floor when even.
fn doomed(i: usize) -> bool {
    i.is_multiple_of(2)
}

fn job(data: &Path, assets: &Path, policy: &Path, dry_run: bool) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.args(["jobs", "run", "weekly-cleanup", "--json", "--data-dir"])
        .arg(data)
        .arg("--assets-dir")
        .arg(assets)
        .arg("--policy")
        .arg(policy);
    if dry_run {
        c.arg("--dry-run");
    }
    c
}

/// (text, status, delete events) of the user's memories.
async fn states(data: &Path) -> Vec<(String, String, i64)> {
    store_rows(
        data,
        "SELECT m.text, m.status, \
         (SELECT COUNT(*) FROM audit_events a WHERE a.memory_id = m.id AND a.action = 'delete') \
         FROM memories m WHERE m.user_id = ?",
        USER,
    )
    .await
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .collect()
}

async fn deleted_now(data: &Path) -> usize {
    states(data)
        .await
        .iter()
        .filter(|s| s.1 == "deleted")
        .count()
}

/// Runs the job to completion, waiting out a dead run's lease.
fn run_to_completion(data: &Path, assets: &Path, policy: &Path) -> Value {
    let started = Instant::now();
    loop {
        let out = job(data, assets, policy, false).output().unwrap();
        if out.status.success() {
            return serde_json::from_slice(&out.stdout).unwrap();
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("already running") && started.elapsed() < Duration::from_secs(30),
            "weekly-cleanup failed: {err}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// One run: (deleted by the killed run, deleted by the second run, whether
/// the kill landed mid-run).
async fn one_run(run: usize, http: &Http, assets: &Path) -> (usize, u64, bool) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let key = admin_key(&data);
    let server = serve(http, &data, assets, &log).await;
    for start in (0..MEMORIES).step_by(60) {
        let batch: Vec<Value> = (start..start + 60)
            .map(|i| {
                json!({"user_id": USER, "tier": "long_term", "text": text(run, i),
                       "importance": if doomed(i) { 0.2 } else { 0.9 }})
            })
            .collect();
        let (status, body) = req(
            http,
            Method::POST,
            &format!("{}/v1/memories", server.base),
            &key,
            Some(json!({"memories": batch})),
        )
        .await
        .unwrap();
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    server.stop();

    let dry = job(&data, assets, &policy, true).output().unwrap();
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let dry: Value = serde_json::from_slice(&dry.stdout).unwrap();
    let expected = (0..MEMORIES).filter(|i| doomed(*i)).count() as u64;
    assert_eq!(dry["counts"]["delete"], expected, "dry run: {dry}");

    // Killed once it has deleted `threshold` memories (0: at a fixed delay).
    let threshold = [1, 30, 70, 0, 100][run % 5];
    let mut child = job(&data, assets, &policy, false)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let spawned = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let due = if threshold == 0 {
            spawned.elapsed() > Duration::from_millis(400 + 150 * run as u64 % 1500)
        } else {
            deleted_now(&data).await >= threshold
        };
        if due {
            break;
        }
        assert!(
            spawned.elapsed() < Duration::from_secs(120),
            "the job never started deleting"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let finished_alone = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    child.wait().unwrap();
    let first = deleted_now(&data).await;
    let mid_run = !finished_alone && first > 0 && (first as u64) < expected;

    // The second run does the rest, and only the rest.
    let second = run_to_completion(&data, assets, &policy);
    assert_eq!(
        second["counts"]["delete"].as_u64().unwrap_or(0),
        expected - first as u64,
        "run {run}: second run {second}"
    );
    let again = run_to_completion(&data, assets, &policy);
    assert_eq!(
        again["counts"]["delete"].as_u64().unwrap_or(0),
        0,
        "{again}"
    );

    // Every memory in a state the lifecycle allows.
    let states = states(&data).await;
    assert_eq!(states.len(), MEMORIES, "run {run}");
    for i in 0..MEMORIES {
        let t = text(run, i);
        let (_, status, deletes) = states.iter().find(|s| s.0 == t).unwrap();
        if doomed(i) {
            assert_eq!(
                (status.as_str(), *deletes),
                ("deleted", 1),
                "run {run}: memory {i}"
            );
        } else {
            assert_eq!(
                (status.as_str(), *deletes),
                ("active", 0),
                "run {run}: memory {i}"
            );
        }
    }

    // Store and indexes agree: only the active memories are indexed.
    let server = serve(http, &data, assets, &log).await;
    let kept = MEMORIES as u64 - expected;
    let v = server
        .until_footprint(http, &key, USER, Duration::from_secs(60), |v| {
            v["lexical_docs"] == kept && v["vectors"] == kept
        })
        .await;
    assert_eq!(v["memories"], MEMORIES as u64, "run {run}: {v}");
    for i in (0..MEMORIES).step_by(7) {
        let t = text(run, i);
        let token = t.rsplit(' ').next().unwrap();
        let found = server
            .search(http, &key, USER, token)
            .await
            .iter()
            .any(|h| h["memory"]["text"] == t.as_str());
        assert_eq!(found, !doomed(i), "run {run}: memory {i}");
    }
    server.stop();
    (
        first,
        second["counts"]["delete"].as_u64().unwrap_or(0),
        mid_run,
    )
}

#[tokio::test]
async fn kill_9_during_the_weekly_cleanup_resumes_idempotently() {
    let assets = crate::real_embedder::ensure_assets();
    let runs = runs();
    let http = http();
    let started = Instant::now();
    let mut mid = 0;
    for run in 0..runs {
        let (first, second, mid_run) = one_run(run, &http, &assets).await;
        println!(
            "kill -9 cleanup run {run}: killed run deleted {first}, second run {second}{}",
            if mid_run { " (killed mid-run)" } else { "" }
        );
        mid += usize::from(mid_run);
    }
    // The point is the kill inside the batches: most runs must land there.
    assert!(mid * 2 >= runs, "only {mid} of {runs} kills landed mid-run");
    println!(
        "kill -9 cleanup: {runs} runs, {mid} killed mid-run, every second run completed the rest \
         exactly ({:.0?})",
        started.elapsed()
    );
}
