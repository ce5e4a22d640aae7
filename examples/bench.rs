//! Engine benchmark: ingest rate with real embeddings, and in-process search
//! latency for one user with N long-term memories plus M reference memories,
//! lexical-only (no query embedding) and hybrid (with query embedding).
//!
//! ```text
//! cargo run --release --example bench -- --memories 10000 --reference 50000 --queries 300
//! ```
//! Needs model assets (`mnemo setup`). Prints a table; writes nothing else
//! outside a temporary directory.
//!
//! `--qdrant-url http://127.0.0.1:6334` puts the vectors on a Qdrant server
//! or cluster (a fresh collection, dropped at the end; `--qdrant-shards N
//! --qdrant-replication-factor N` set its layout) instead of the embedded
//! index, and `--hashing 384` swaps the model for the hashing embedder, so
//! that a 100k comparison of the two vector backends costs no model time:
//!
//! ```text
//! cargo run --release --example bench -- --memories 100000 --reference 0 --hashing 384
//! cargo run --release --example bench -- --memories 100000 --reference 0 --hashing 384 \
//!     --qdrant-url http://127.0.0.1:6334 --qdrant-shards 3 --qdrant-replication-factor 2
//! ```

use std::sync::Arc;
use std::time::Instant;

use mnemo::domain::Actor;
use mnemo::domain::{NewMemory, Scope, Tier};
use mnemo::embed::onnx::OnnxEmbedder;
use mnemo::policy::Policy;
use mnemo::service::{Legs, SearchRequest};
use mnemo::Engine;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "common/args.rs"]
mod args;
use args::number;

const SUBJECTS: &[&str] = &[
    "the user",
    "my sister",
    "the team",
    "our landlord",
    "the dentist",
    "my manager",
    "the kids",
    "the neighbour",
    "my partner",
    "the client",
];
const VERBS: &[&str] = &[
    "prefers",
    "booked",
    "cancelled",
    "mentioned",
    "asked about",
    "bought",
    "forgot",
    "enjoys",
    "dislikes",
    "scheduled",
];
const OBJECTS: &[&str] = &[
    "green tea",
    "a flight to Lisbon",
    "the quarterly report",
    "oat milk",
    "a new laptop",
    "the piano lesson",
    "vegetarian food",
    "a dentist appointment",
    "the gym membership",
    "a trip to Kyoto",
    "the car insurance",
    "running shoes",
    "the book club",
    "a table for four",
    "the electricity bill",
    "jazz concerts",
    "the project deadline",
    "sourdough bread",
    "a standing desk",
    "the summer holiday",
];
const WHEN: &[&str] = &[
    "on Monday",
    "last week",
    "every morning",
    "next month",
    "in the evening",
    "at the weekend",
    "before the meeting",
    "after work",
    "yesterday",
    "in spring",
];

fn sentence(rng: &mut StdRng, serial: usize) -> String {
    format!(
        "{} {} {} {} (note {serial})",
        SUBJECTS[rng.random_range(0..SUBJECTS.len())],
        VERBS[rng.random_range(0..VERBS.len())],
        OBJECTS[rng.random_range(0..OBJECTS.len())],
        WHEN[rng.random_range(0..WHEN.len())],
    )
}

fn text_arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let memories = number("--memories", 10_000);
    let reference = number("--reference", 50_000);
    let queries = number("--queries", 300);
    let assets = std::env::var_os("MNEMO_ASSETS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "assets".into());
    let embedder: Arc<dyn mnemo::embed::Embedder> = match number("--hashing", 0) {
        0 => OnnxEmbedder::for_policy(&assets, &Policy::default())?,
        dim => Arc::new(mnemo::embed::hashing::HashingEmbedder::new(dim)),
    };
    let vectors = match text_arg("--qdrant-url") {
        None => mnemo::vector::VectorBackend::Embedded,
        Some(url) => {
            let mut config = mnemo::vector::QdrantServerConfig::new(url);
            config.collection = format!("mnemo_bench_{}", uuid::Uuid::new_v4().simple());
            let layout = |name| Some(number(name, 0) as u32).filter(|n| *n > 0);
            config.layout.shard_number = layout("--qdrant-shards");
            config.layout.replication_factor = layout("--qdrant-replication-factor");
            mnemo::vector::VectorBackend::Server(config)
        }
    };
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path())
        .embedder(embedder.clone())
        .vectors(vectors.clone())
        .build()
        .await?
        .engine;
    println!(
        "vectors: {}",
        match &vectors {
            mnemo::vector::VectorBackend::Server(c) => format!(
                "Qdrant server {} (shards {:?}, replication {:?})",
                c.url, c.layout.shard_number, c.layout.replication_factor
            ),
            _ => "embedded (qdrant-edge)".to_string(),
        }
    );
    let actor = Actor::local("bench");
    let mut rng = StdRng::seed_from_u64(7);

    let started = Instant::now();
    let mut serial = 0;
    for (tier, n) in [(Tier::LongTerm, memories), (Tier::Reference, reference)] {
        let mut left = n;
        while left > 0 {
            let batch: Vec<NewMemory> = (0..left.min(500))
                .map(|_| {
                    serial += 1;
                    NewMemory {
                        tier: Some(tier),
                        user_id: (tier == Tier::LongTerm).then(|| "bench-user".to_string()),
                        text: sentence(&mut rng, serial),
                        ..Default::default()
                    }
                })
                .collect();
            left -= batch.len();
            engine.add(&actor, batch, false).await?;
        }
    }
    engine.commit().await?;
    let ingest_secs = started.elapsed().as_secs_f64();
    let t = Instant::now();
    engine.optimize().await?;
    let optimize_secs = t.elapsed().as_secs_f64();

    println!("memories: {memories} long-term (one user) + {reference} reference");
    println!(
        "ingest with embedding: {:.1} s, {:.0} memories/s; optimize (HNSW) {:.1} s",
        ingest_secs,
        (memories + reference) as f64 / ingest_secs,
        optimize_secs
    );
    println!("| legs | queries | p50 ms | p95 ms | p99 ms | embed p50 ms |");
    println!("|---|---:|---:|---:|---:|---:|");
    for legs in [Legs::Lexical, Legs::Vector, Legs::Hybrid] {
        let mut lat = Vec::with_capacity(queries);
        let mut emb = Vec::with_capacity(queries);
        for i in 0..queries + 20 {
            let q = format!(
                "what about {} {}",
                OBJECTS[rng.random_range(0..OBJECTS.len())],
                WHEN[i % WHEN.len()]
            );
            let mut req = SearchRequest::new(Scope::user("bench-user"), q);
            req.legs = legs;
            req.record_access = false;
            let t = Instant::now();
            let r = engine.search(req).await?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if i >= 20 {
                // the first 20 warm caches up
                lat.push(ms);
                emb.push(r.embed_ms);
            }
        }
        lat.sort_by(f64::total_cmp);
        emb.sort_by(f64::total_cmp);
        println!(
            "| {legs:?} | {queries} | {:.2} | {:.2} | {:.2} | {:.2} |",
            percentile(&lat, 0.5),
            percentile(&lat, 0.95),
            percentile(&lat, 0.99),
            percentile(&emb, 0.5)
        );
    }
    // "Forget all my data" for the user with all those memories.
    let t = Instant::now();
    let receipt = engine.forget_user(&actor, "bench-user").await?;
    println!(
        "forget-all: {} memories, {} lexical docs, {} vectors erased in {:.0} ms",
        receipt.erased.memories,
        receipt.erased.lexical_docs,
        receipt.erased.vectors,
        t.elapsed().as_secs_f64() * 1e3
    );
    engine.shutdown().await?;
    if let mnemo::vector::VectorBackend::Server(config) = &vectors {
        mnemo::vector::QdrantServerIndex::connect(config, embedder.dim())?.drop_collection()?;
    }
    Ok(())
}
