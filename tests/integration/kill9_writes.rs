//! Fault test against the real binary: `mnemo serve` (ONNX embedder) is
//! killed with SIGKILL while a client streams `POST /v1/memories` batches
//! and single writes, then restarted on the same data directory.
//!
//! What the API promises and this checks exactly: a 201 means committed, so
//! every acknowledged id is retrievable (`GET`, same text) and searchable by
//! its text after the restart; a request is one transaction ("all are
//! validated before any is written"), so of every request sent, acknowledged
//! or not, the store holds all of its memories or none; and the store and
//! both indexes agree (the writer's memories in the store = its documents in
//! the lexical index = its points in the vector index) once the repair loop
//! has had its time: nothing half-present.
//!
//! `make test` runs `MNEMO_KILL9_RUNS` runs (default 2):
//! `MNEMO_KILL9_RUNS=20 cargo test --test integration kill9_writes -- --nocapture`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::kill9::{admin_key, runs, serve, store_rows};
use crate::over_http::{http, try_call as req, Http};

const USER: &str = "streamer";
const TOPICS: [&str; 8] = [
    "prefers green tea in the morning",
    "is training for a marathon in spring",
    "keeps a vegetable garden with tomatoes",
    "reads science fiction novels on trains",
    "plays the cello in a small orchestra",
    "works remotely from a mountain village",
    "collects old maps of coastal cities",
    "bakes sourdough bread every weekend",
];

/// The text of memory `j` of request `i` in run `run`: a unique token
/// (searchable as a word) and a unique number, so that no write is taken for
/// a restatement of another (reinforcement needs the same numbers).
fn text(run: usize, i: usize, j: usize) -> String {
    let n = i * 100 + j;
    format!(
        "user {} item {n} zqw{run}n{n}m",
        TOPICS[(i * 3 + j) % TOPICS.len()]
    )
}

/// One request sent: its texts, and the ids when it was acknowledged.
#[derive(Clone, Debug, Default)]
struct Sent {
    texts: Vec<String>,
    ids: Option<Vec<String>>,
    /// Answered 503 or 429.
    refused: bool,
}

/// How long after the first write run `run` kills the server.
fn kill_delay_ms(run: usize) -> u64 {
    150 + (run as u64 * 397) % 2500
}

async fn one_run(run: usize, http: &Http, assets: &Path) -> (usize, usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let key = admin_key(&data);
    let mut server = serve(http, &data, assets, &log).await;

    let sent: Arc<Mutex<Vec<Sent>>> = Arc::default();
    let writer = {
        let (http, base, key, sent) =
            (http.clone(), server.base.clone(), key.clone(), sent.clone());
        tokio::spawn(async move {
            for i in 0.. {
                // Every fourth request a single write (top-level fields),
                // the others batches of 1..=24.
                let n = if i % 4 == 3 { 1 } else { 1 + (i * 7) % 24 };
                let texts: Vec<String> = (0..n).map(|j| text(run, i, j)).collect();
                let body = if i % 4 == 3 {
                    json!({"user_id": USER, "text": texts[0]})
                } else {
                    json!({"memories": texts.iter().map(|t| json!({"user_id": USER, "text": t})).collect::<Vec<_>>()})
                };
                sent.lock().unwrap().push(Sent {
                    texts,
                    ..Sent::default()
                });
                let Some((status, body)) = req(
                    &http,
                    Method::POST,
                    &format!("{base}/v1/memories"),
                    &key,
                    Some(body),
                )
                .await
                else {
                    return;
                };
                if status != StatusCode::CREATED {
                    // Shed load or rate limited: nothing written.
                    assert!(
                        status == StatusCode::SERVICE_UNAVAILABLE
                            || status == StatusCode::TOO_MANY_REQUESTS,
                        "{status} {body}"
                    );
                    sent.lock().unwrap()[i].refused = true;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                let ids: Vec<String> = body["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
                assert_eq!(ids.len(), n, "{body}");
                sent.lock().unwrap()[i].ids = Some(ids);
            }
        })
    };
    let delay_ms = kill_delay_ms(run);
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    writer.await.unwrap();
    drop(server);
    let sent = sent.lock().unwrap().clone();
    let acked: Vec<(String, String)> = sent
        .iter()
        .filter_map(|s| {
            s.ids
                .as_ref()
                .map(|ids| ids.iter().cloned().zip(s.texts.clone()))
        })
        .flatten()
        .collect();

    let server = serve(http, &data, assets, &log).await;
    // Every acknowledged write is there, whole.
    server.assert_present(http, &key, run, &acked).await;
    // The store and the indexes agree once the repair loop had its time.
    let counts = server
        .until_footprint(http, &key, USER, Duration::from_secs(60), |v| {
            v["memories"] == v["lexical_docs"] && v["memories"] == v["vectors"]
        })
        .await;
    let stored = counts["memories"].as_u64().unwrap() as usize;
    assert!(stored >= acked.len(), "run {run}: {counts}");
    // Searchable by its text: every write of the last three acknowledged
    // requests (the ones most at risk) and a sample of the others.
    let last: Vec<&(String, String)> = {
        let mut tail = Vec::new();
        for s in sent.iter().rev().filter(|s| s.ids.is_some()).take(3) {
            let ids = s.ids.as_ref().unwrap();
            tail.extend(acked.iter().filter(|(id, _)| ids.contains(id)));
        }
        tail
    };
    let sample = acked.iter().step_by(1.max(acked.len() / 15));
    for (id, text) in last.into_iter().chain(sample) {
        let token = text.rsplit(' ').next().unwrap();
        let hits = server.search(http, &key, USER, token).await;
        assert!(
            hits.iter().any(|h| h["memory"]["id"] == id.as_str()),
            "run {run}: acknowledged {id} not searchable: {hits:?}"
        );
    }
    drop(server);

    // All or nothing per request, acknowledged or not (the store read
    // directly: the API shows only what it serves).
    let present = stored_texts(&data).await;
    assert_eq!(present.len(), stored, "run {run}");
    let mut unacked_whole = 0;
    for (i, s) in sent.iter().enumerate() {
        let here = s.texts.iter().filter(|t| present.contains_key(*t)).count();
        assert!(
            here == 0 || here == s.texts.len(),
            "run {run}: request {i} partly stored ({here} of {})",
            s.texts.len()
        );
        if s.ids.is_some() {
            assert_eq!(here, s.texts.len(), "run {run}: request {i}");
        } else if s.refused {
            assert_eq!(here, 0, "run {run}: refused request {i} stored");
        } else if here > 0 {
            // Committed, and the answer was lost with the process.
            unacked_whole += 1;
        }
    }
    assert!(
        unacked_whole <= 1,
        "run {run}: only the request in flight may be unanswered"
    );
    (acked.len(), sent.len(), delay_ms)
}

/// The writer's memory texts in the store, with their status.
async fn stored_texts(data: &Path) -> HashMap<String, String> {
    use sqlx::Row as _;
    store_rows(
        data,
        "SELECT text, status FROM memories WHERE user_id = ?",
        USER,
    )
    .await
    .iter()
    .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
    .collect()
}

#[tokio::test]
async fn kill_9_during_bulk_writes_loses_no_acknowledged_write_and_leaves_nothing_half_present() {
    let assets = crate::real_embedder::ensure_assets();
    let runs = runs();
    let http = http();
    let started = Instant::now();
    let (mut acked_total, mut sent_total) = (0, 0);
    for run in 0..runs {
        let (acked, sent, delay) = one_run(run, &http, &assets).await;
        println!(
            "kill -9 bulk run {run}: killed {delay} ms into the writes, {sent} requests sent, \
             {acked} memories acknowledged, all present and searchable"
        );
        acked_total += acked;
        sent_total += sent;
    }
    println!(
        "kill -9 bulk: {runs} runs, {sent_total} requests, {acked_total} acknowledged memories, \
         0 lost, 0 partly stored ({:.0?})",
        started.elapsed()
    );
}
