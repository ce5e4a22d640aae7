//! Does one user's erasure stall the others? One user with N memories (each
//! with its audit event and cached embedding) is erased with
//! `Engine::forget_user` while another user adds one memory at a time in a
//! loop; prints that user's write latency (p50 / p99 / max) before and
//! during the erasure, and the time of a second erasure of the same user.
//!
//! ```text
//! cargo run --example erasure_stall -- --memories 20000
//! cargo run --example erasure_stall -- --memories 20000 --database-url "$(scripts/test-postgres.sh)"
//! cargo run --example erasure_stall -- --memories 20000 --others 100000
//! ```
//! `--others N` first stores N memories of a third user (the deployment's
//! size: SQLite's erasure ends with a purge that reads every page). The
//! engine's "user erased" log line gives each step's time (`purge_ms`: the
//! store's file purge).
//! On PostgreSQL it works in a schema of its own (`erasure_stall_<pid>`),
//! dropped at the end. The hashing embedder stands in for the model: erasure
//! embeds nothing, and the writer's embedding is not what is measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo::domain::Actor;
use mnemo::domain::{NewMemory, Tier};
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::store::MemoryStore;
use mnemo::Engine;

#[path = "common/args.rs"]
mod args;
use args::value;

#[path = "common/seed.rs"]
mod seed;

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(mut ms: Vec<f64>) -> String {
    ms.sort_by(f64::total_cmp);
    format!(
        "n={} p50={:.1} ms p99={:.1} ms max={:.1} ms",
        ms.len(),
        pct(&ms, 0.5),
        pct(&ms, 0.99),
        ms.last().copied().unwrap_or(f64::NAN)
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "mnemo::service::erasure=info,mnemo::store=info",
        ))
        .init();
    let n: usize = value("--memories").map_or(20_000, |v| v.parse().unwrap());
    let others: usize = value("--others").map_or(0, |v| v.parse().unwrap());
    let dir = tempfile::tempdir()?;
    let mut schema = None;
    let store: Arc<dyn MemoryStore> = match value("--database-url") {
        Some(url) => {
            let name = format!("erasure_stall_{}", std::process::id());
            let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await?;
            sqlx::query(&format!("CREATE SCHEMA {name}"))
                .execute(&mut admin)
                .await?;
            let sep = if url.contains('?') { '&' } else { '?' };
            let scoped = format!("{url}{sep}options=-c%20search_path%3D{name}");
            schema = Some((admin, name));
            Arc::new(mnemo::store::postgres::PgStore::open(&scoped, 10).await?)
        }
        None => {
            Arc::new(mnemo::store::sqlite::SqliteStore::open(&dir.path().join("mnemo.db")).await?)
        }
    };
    let engine = Engine::builder(dir.path())
        .store(store)
        .embedder(Arc::new(HashingEmbedder::new(384)))
        .build()
        .await?
        .engine;
    let actor = Actor::local("bench");
    // The victim's rows straight into the store (memories, audit events,
    // cached embeddings): erasure's store step is what other users' writes
    // could wait for; set-up through the engine would embed and index 20k
    // texts first.
    let started = Instant::now();
    let store = engine.store().clone();
    let now = chrono::Utc::now();
    let rows = (0..others)
        .step_by(2000)
        .map(|s| ("other", s, others))
        .chain((0..n).step_by(2000).map(|s| ("victim", s, n)));
    for (user, start, total) in rows {
        let batch =
            seed::insert_memories(store.as_ref(), user, start..(start + 2000).min(total), now)
                .await?;
        let cache: Vec<(String, Vec<f32>)> = batch
            .iter()
            .map(|m| (mnemo::store::text_hash(&m.text), vec![0.1; 384]))
            .collect();
        let owner = mnemo::store::CacheOwner {
            tenant_id: "default".into(),
            user_id: Some(user.into()),
        };
        store
            .cache_embeddings(&owner, "bench", &cache, None)
            .await?;
    }
    println!(
        "set-up: {n} memories (and {others} of another user) in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let write = |i: usize| {
        let engine = engine.clone();
        let actor = actor.clone();
        async move {
            let t = Instant::now();
            engine
                .add(
                    &actor,
                    vec![NewMemory {
                        tier: Some(Tier::LongTerm),
                        user_id: Some("bystander".into()),
                        text: format!("bystander note {i}"),
                        ..Default::default()
                    }],
                    false,
                )
                .await
                .unwrap();
            t.elapsed().as_secs_f64() * 1e3
        }
    };
    // Baseline: 3 s of the other user's writes alone.
    let mut before = Vec::new();
    let t = Instant::now();
    let mut i = 0;
    while t.elapsed() < Duration::from_secs(3) {
        before.push(write(i).await);
        i += 1;
    }
    println!("other user's writes, alone:         {}", summary(before));

    let erasing = {
        let engine = engine.clone();
        let actor = actor.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            let r = engine.forget_user(&actor, "victim").await;
            (r, t.elapsed())
        })
    };
    let mut during = Vec::new();
    // (ms since the erasure started, the write's ms): where the slow ones
    // fall against the log's step times (`store_ms`, then `purge_ms`).
    let mut slowest = Vec::new();
    let erasure_started = Instant::now();
    while !erasing.is_finished() {
        let at = erasure_started.elapsed().as_secs_f64() * 1e3;
        let ms = write(i).await;
        during.push(ms);
        slowest.push((at, ms));
        i += 1;
    }
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(5);
    let (receipt, took) = erasing.await?;
    let receipt = receipt?;
    println!("other user's writes, during erasure: {}", summary(during));
    let slowest: Vec<String> = slowest
        .iter()
        .map(|(at, ms)| format!("{ms:.0} ms at {at:.0}"))
        .collect();
    println!(
        "  slowest (started ms after the erasure): {}",
        slowest.join(", ")
    );
    println!(
        "erasure: {} memories, {} audit events, {} cached embeddings in {:.0} ms",
        receipt.erased.memories,
        receipt.erased.audit_events,
        receipt.erased.cached_embeddings,
        took.as_secs_f64() * 1e3
    );
    let t = Instant::now();
    let again = engine.forget_user(&actor, "victim").await?;
    println!(
        "second erasure of the same user: {} memories in {:.0} ms",
        again.erased.memories,
        t.elapsed().as_secs_f64() * 1e3
    );
    engine.shutdown().await?;
    drop(engine);
    if let Some((mut admin, name)) = schema {
        sqlx::query(&format!("DROP SCHEMA {name} CASCADE"))
            .execute(&mut admin)
            .await?;
    }
    Ok(())
}
