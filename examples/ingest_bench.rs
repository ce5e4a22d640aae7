//! Bulk-ingest benchmark: the embedder's own batch rate against a whole
//! ingest on every core, on the same texts (a corpus in the eval-set format,
//! e.g. LoCoMo turns), and what a bulk ingest does to searches running
//! meanwhile.
//!
//! ```text
//! MNEMO_ASSETS_DIR=/path/to/assets cargo run --example ingest_bench -- \
//!     --corpus /work/shared/evaldata/locomo/corpus.jsonl --texts 3000 \
//!     --model all-minilm-l6-v2
//! ```
//! Rows, in one process, one after the other:
//! - **embedder, 1 session**: one session, one intra-op thread, batches of
//!   32 in file order: the model's batch rate, the figure ingest is held to
//!   (per core);
//! - the same texts sorted by length (1 session), on 2 sessions of one
//!   thread, and on 1 session of 2 intra-op threads: which parallelism wins;
//! - **ingest, before**: the previous path (`Engine::add` per batch of 256,
//!   each embedding its batches of 32 one after the other on one session at
//!   a time, in file order);
//! - **ingest, after**: `mnemo::service::ingest::add_bulk` (what `mnemo ingest` and
//!   `mnemo eval` run) with the default pool: texts sorted by length, one
//!   bulk session per core, the next batch embedded while this one is
//!   written;
//! - the same with a search every 50 ms during the ingest, with the reserved
//!   query session and without it (queries sharing the bulk sessions).
//!
//! Each ingest starts from an empty data directory and ends after the commit
//! (as `mnemo ingest` reports it). CPU seconds are the process's (user +
//! system, from /proc/self/stat).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mnemo::domain::Actor;
use mnemo::domain::{NewMemory, Scope};
use mnemo::embed::assets::{self, AssetPaths};
use mnemo::embed::onnx::{default_pool_size, EmbedderOptions, OnnxEmbedder};
use mnemo::embed::Embedder;
use mnemo::service::{Engine, SearchRequest};

#[path = "common/args.rs"]
mod args;
use args::value;

fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The embedding path before this change: batches of 32 in the caller's
/// order, one after the other (one session at a time).
struct Serial(Arc<OnnxEmbedder>);

impl Embedder for Serial {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn embed_query(&self, text: &str) -> mnemo::Result<Vec<f32>> {
        self.0.embed_query(text)
    }
    fn embed_passages(&self, texts: &[&str]) -> mnemo::Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(32) {
            // A chunk of 32 is one batch of the embedder: no sorting across
            // batches, one session.
            out.extend(self.0.embed_passages(chunk)?);
        }
        Ok(out)
    }
}

struct Measure {
    label: String,
    secs: f64,
    cpu: f64,
    n: usize,
    /// Cores the run may use (1 for one session of one thread).
    cores: usize,
}

impl Measure {
    fn rate(&self) -> f64 {
        self.n as f64 / self.secs
    }
}

fn timed(label: &str, n: usize, cores: usize, f: impl FnOnce()) -> Measure {
    let (t, c) = (Instant::now(), cpu_secs());
    f();
    Measure {
        label: label.to_string(),
        secs: t.elapsed().as_secs_f64(),
        cpu: cpu_secs() - c,
        n,
        cores,
    }
}

fn load(
    paths: &AssetPaths,
    model: &'static assets::ModelSpec,
    pool_size: usize,
    threads: usize,
    query_sessions: usize,
) -> OnnxEmbedder {
    let options = EmbedderOptions {
        model,
        pool_size,
        threads_per_session: threads,
        query_sessions,
        query_cache_size: 0,
        ..EmbedderOptions::default()
    };
    OnnxEmbedder::load(paths, options).expect("the model loads (run `mnemo setup`)")
}

/// Searches every 50 ms until `stop`; returns (embed ms, total ms) per search.
async fn search_meanwhile(engine: Engine, user: String, stop: Arc<AtomicBool>) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let queries = [
        "what did we talk about yesterday",
        "where did she go on holiday",
    ];
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        // A new text each time: the query cache is off anyway.
        let q = format!("{} {i}", queries[i % 2]);
        let mut req = SearchRequest::new(Scope::user(&user), q);
        req.record_access = false;
        if let Ok(r) = engine.search(req).await {
            out.push((r.embed_ms, r.total_ms));
        }
        i += 1;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    out
}

async fn ingest(
    embedder: Arc<dyn Embedder>,
    items: &[NewMemory],
    pipelined: bool,
    search_user: Option<&str>,
) -> anyhow::Result<(Measure, Vec<(f64, f64)>)> {
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path())
        .embedder(embedder)
        .build()
        .await?
        .engine;
    let actor = Actor::local("bench");
    let stop = Arc::new(AtomicBool::new(false));
    let searches = search_user.map(|u| {
        tokio::spawn(search_meanwhile(
            engine.clone(),
            u.to_string(),
            stop.clone(),
        ))
    });
    let (t, c) = (Instant::now(), cpu_secs());
    if pipelined {
        mnemo::service::ingest::add_bulk(&engine, &actor, items.to_vec(), 256, |_| {}).await?;
    } else {
        for chunk in items.chunks(256) {
            engine.add(&actor, chunk.to_vec(), false).await?;
        }
    }
    engine.commit().await?;
    let m = Measure {
        label: String::new(),
        secs: t.elapsed().as_secs_f64(),
        cpu: cpu_secs() - c,
        n: items.len(),
        cores: mnemo::embed::onnx::default_pool_size(),
    };
    stop.store(true, Ordering::Relaxed);
    let lat = match searches {
        Some(h) => h.await?,
        None => Vec::new(),
    };
    engine.shutdown().await?;
    Ok((m, lat))
}

fn latency_line(label: &str, lat: &[(f64, f64)]) {
    let mut embed: Vec<f64> = lat.iter().map(|l| l.0).collect();
    let mut total: Vec<f64> = lat.iter().map(|l| l.1).collect();
    embed.sort_by(f64::total_cmp);
    total.sort_by(f64::total_cmp);
    println!(
        "| {label} | {} | {:.1} / {:.1} | {:.1} / {:.1} |",
        lat.len(),
        percentile(&embed, 0.5),
        percentile(&embed, 0.95),
        percentile(&total, 0.5),
        percentile(&total, 0.95),
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let corpus = value("--corpus").unwrap_or("/work/shared/evaldata/locomo/corpus.jsonl".into());
    let n: usize = value("--texts")
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let model = value("--model")
        .map(|m| assets::model_by_name(&m).expect("a model name of `mnemo setup`"))
        .unwrap_or(assets::default_model());
    let assets_dir = std::env::var_os("MNEMO_ASSETS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "assets".into());
    let paths = AssetPaths::new(&assets_dir);
    let (mut items, _) = mnemo::cli::read_corpus(corpus.as_ref(), mnemo::cli::OnError::Skip)?;
    items.truncate(n);
    let n = items.len();
    let texts: Vec<&str> = items.iter().map(|m| m.text.as_str()).collect();
    let cores = default_pool_size();
    let search_user = items.iter().find_map(|m| m.user_id.clone());
    println!(
        "model {}, {n} texts from {corpus} (mean {:.0} bytes), {cores} cores, load average {}",
        model.name,
        texts.iter().map(|t| t.len()).sum::<usize>() as f64 / n.max(1) as f64,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );

    let mut rows = Vec::new();
    let warm: Vec<&str> = texts.iter().take(32).copied().collect();
    {
        let one = load(&paths, model, 1, 1, 0);
        one.embed_passages(&warm)?;
        rows.push(timed(
            "embedder, 1 session, batches of 32, file order",
            n,
            1,
            || {
                for chunk in texts.chunks(32) {
                    one.embed_passages(chunk).unwrap();
                }
            },
        ));
        rows.push(timed("embedder, 1 session, sorted by length", n, 1, || {
            one.embed_passages(&texts).unwrap();
        }));
    }
    {
        let two = load(&paths, model, 2, 1, 0);
        two.embed_passages(&warm)?;
        rows.push(timed(
            "embedder, 2 sessions × 1 thread, sorted",
            n,
            2,
            || {
                two.embed_passages(&texts).unwrap();
            },
        ));
    }
    {
        let intra = load(&paths, model, 1, 2, 0);
        intra.embed_passages(&warm)?;
        rows.push(timed(
            "embedder, 1 session × 2 threads, sorted",
            n,
            2,
            || {
                intra.embed_passages(&texts).unwrap();
            },
        ));
    }
    let base = rows[0].rate();

    let shared = Arc::new(load(&paths, model, cores, 1, 1));
    let (mut before, _) = ingest(Arc::new(Serial(shared.clone())), &items, false, None).await?;
    before.label = "ingest, before (serial add, batches of 32 in file order)".into();
    rows.push(before);
    let (mut after, _) = ingest(shared.clone(), &items, true, None).await?;
    after.label = format!("ingest, after (add_bulk, {cores} bulk sessions, pipelined)");
    rows.push(after);
    drop(shared);

    // On a shared machine wall time mostly measures the neighbours; CPU
    // time (what the process got) is the steadier ratio.
    let base_cpu = rows[0].n as f64 / rows[0].cpu;
    println!(
        "| run | passages | wall s | passages/s | per core | % of embedder batch rate | CPU s \
         | passages per CPU s | % of embedder's |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let per_core = r.rate() / r.cores as f64;
        let per_cpu = r.n as f64 / r.cpu;
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.0} | {:.0}% | {:.1} | {:.0} | {:.0}% |",
            r.label,
            r.n,
            r.secs,
            r.rate(),
            per_core,
            100.0 * per_core / base,
            r.cpu,
            per_cpu,
            100.0 * per_cpu / base_cpu
        );
    }

    if let Some(user) = search_user.as_deref() {
        println!();
        println!("searches every 50 ms during an ingest (search user = the corpus's first user):");
        println!("| query sessions | searches | embed ms p50 / p95 | search ms p50 / p95 |");
        println!("|---|---:|---:|---:|");
        for (label, reserved) in [("1 reserved", 1), ("0 (shared with bulk)", 0)] {
            let e = Arc::new(load(&paths, model, cores, 1, reserved));
            let (m, lat) = ingest(e, &items, true, Some(user)).await?;
            latency_line(&format!("{label}, ingest {:.0}/s", m.rate()), &lat);
        }
    }
    Ok(())
}
