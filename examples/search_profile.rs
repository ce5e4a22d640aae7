//! One search, end to end, stage by stage: query embedding, the lexical and
//! vector legs, fusion, hydration from the store, ranking, and the JSON of
//! the `POST /v1/search` response; in process, on one user's memories.
//!
//! ```text
//! MNEMO_ASSETS_DIR=/path/to/assets cargo run --example search_profile -- \
//!     --memories 10000 --queries 200
//! ```
//! The memories are LoCoMo turns (`--corpus`, cycled with a counter to
//! reach `--memories`), all of one user; the queries are LoCoMo questions.
//! Each query runs twice: *cold* (a new text, embedded) and *repeated* (the
//! query cache answers). Stage times are the engine's own (`SearchStages`);
//! "outside the embedder" is the search's total minus its embedding time.

use std::time::Instant;

use mnemo::api::routes::search::{SearchHit, SearchResponse};
use mnemo::domain::Actor;
use mnemo::domain::Scope;
use mnemo::embed::onnx::OnnxEmbedder;
use mnemo::service::{SearchRequest, SearchResult};
use mnemo::Engine;

#[path = "common/args.rs"]
mod args;
use args::value;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// The response body's JSON, as the route builds it.
fn json(r: SearchResult) -> usize {
    let body = SearchResponse {
        hits: r
            .hits
            .into_iter()
            .map(|h| SearchHit {
                memory: h.memory,
                score: h.score,
                breakdown: None,
            })
            .collect(),
        took_ms: r.total_ms,
        embed_ms: r.embed_ms,
    };
    serde_json::to_vec(&body).expect("serialisable").len()
}

#[derive(Default)]
struct Stages {
    cols: Vec<(&'static str, Vec<f64>)>,
}

impl Stages {
    fn push(&mut self, name: &'static str, ms: f64) {
        match self.cols.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(ms),
            None => self.cols.push((name, vec![ms])),
        }
    }

    fn print(&mut self, label: &str) {
        println!("{label}:");
        println!("| stage | p50 ms | p95 ms | mean ms |");
        println!("|---|---:|---:|---:|");
        for (name, v) in &mut self.cols {
            let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
            let (p50, p95) = (percentile(v, 0.5), percentile(v, 0.95));
            println!("| {name} | {p50:.2} | {p95:.2} | {mean:.2} |");
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let corpus = value("--corpus").unwrap_or("/work/shared/evaldata/locomo/corpus.jsonl".into());
    let queries_file =
        value("--queries-file").unwrap_or("/work/shared/evaldata/locomo/queries.jsonl".into());
    let n: usize = value("--memories")
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let q: usize = value("--queries")
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let assets = std::env::var_os("MNEMO_ASSETS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "assets".into());
    let policy = mnemo::policy::Policy::default();
    let embedder = OnnxEmbedder::for_policy(&assets, &policy)?;

    let (turns, _) = mnemo::cli::read_corpus(corpus.as_ref(), mnemo::cli::OnError::Skip)?;
    let user = "profile-user";
    let items: Vec<_> = (0..n)
        .map(|i| {
            let mut m = turns[i % turns.len()].clone();
            if i >= turns.len() {
                m.text = format!("{} ({})", m.text, i / turns.len());
            }
            m.user_id = Some(user.to_string());
            m
        })
        .collect();
    let queries: Vec<String> = std::fs::read_to_string(&queries_file)?
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .take(q)
        .collect();

    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path())
        .policy(policy)
        .embedder(embedder)
        .build()
        .await?
        .engine;
    let actor = Actor::local("profile");
    let t = Instant::now();
    mnemo::service::ingest::add_bulk(&engine, &actor, items, 256, |_| {}).await?;
    engine.commit().await?;
    engine.optimize().await?;
    println!(
        "{n} memories of one user ingested and optimised in {:.1} s; {} queries; load average {}",
        t.elapsed().as_secs_f64(),
        queries.len(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );

    for round in ["cold (embedded)", "repeated (query cache)"] {
        let mut s = Stages::default();
        for text in &queries {
            let t = Instant::now();
            let r = engine
                .search(SearchRequest::new(Scope::user(user), text.clone()))
                .await?;
            let search_ms = t.elapsed().as_secs_f64() * 1e3;
            let st = r.stages;
            let t = Instant::now();
            json(r);
            let json_ms = t.elapsed().as_secs_f64() * 1e3;
            s.push("embedding", st.embed_ms);
            s.push("lexical leg (concurrent with embedding)", st.lexical_ms);
            s.push("vector index search", st.vector_ms);
            s.push("fusion", st.fuse_ms);
            s.push("hydration (store)", st.hydrate_ms);
            s.push("ranking", st.rank_ms);
            s.push("JSON of the response", json_ms);
            s.push("search total (engine)", search_ms);
            s.push("outside the embedder", search_ms - st.embed_ms);
        }
        s.print(round);
    }
    engine.shutdown().await?;
    Ok(())
}
