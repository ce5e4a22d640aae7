//! Segment cap against search and erasure cost, on synthetic vectors.
//!
//! Builds one qdrant-edge shard the way `vector::edge` configures it (384
//! dimensions, cosine, no WAL, `m` 0 and `payload_m` 16 on the `owner` tenant
//! index) with `--refs` reference points of one owner, then `--users` users
//! of `--per` points each, optimising every `--optimize-every` points; then
//! reports the segments, the p50/p95 of 300 filtered searches (limit 10,
//! `hnsw_ef` 256, ACORN) for a user and for the reference owner, and the time
//! to delete one user and vacuum (thresholds at zero, as a purge does).
//!
//! ```text
//! cargo run --release --example segment_probe -- --users 100000 --refs 200000 \
//!     [--cap-kb 64000] [--optimize-every 20000] [--dir /tmp/segprobe]
//! ```
//! Random vectors: a graph over them is harder to search than one over text,
//! so the times compare plans with each other, not with real deployments.
use std::time::Instant;

use qdrant_edge::*;
use qdrant_edge::{CreateIndex, FieldIndexOperations};

fn arg(name: &str, default: usize) -> usize {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .map(|i| a[i + 1].parse().expect("a number"))
        .unwrap_or(default)
}

fn key(n: &str) -> JsonPath {
    n.parse().expect("a payload key")
}

fn owner_filter(o: &str) -> Filter {
    Filter::new_must(Condition::Field(FieldCondition::new_match(
        key("owner"),
        Match::from(o.to_string()),
    )))
}

/// xorshift: reproducible vectors without a dependency.
struct Rng(u64);
impl Rng {
    fn f(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }
    fn vector(&mut self) -> Vec<f32> {
        (0..384).map(|_| self.f()).collect()
    }
}

fn dir_bytes(p: &std::path::Path) -> u64 {
    if p.is_dir() {
        std::fs::read_dir(p)
            .map(|d| d.flatten().map(|e| dir_bytes(&e.path())).sum())
            .unwrap_or(0)
    } else {
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    }
}

fn main() -> anyhow::Result<()> {
    let users = arg("--users", 100_000);
    let per = arg("--per", 8);
    let refs = arg("--refs", 0);
    let cap = arg("--cap-kb", 0);
    let every = arg("--optimize-every", 50_000);
    let dir = std::env::args()
        .skip_while(|a| a != "--dir")
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("segment-probe-{cap}")));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut optimizers = EdgeOptimizersConfig::default();
    if cap > 0 {
        optimizers.max_segment_size = Some(cap);
    }
    let config = EdgeConfig::builder()
        .vector(
            DEFAULT_VECTOR_NAME,
            EdgeVectorParams::builder(384, Distance::Cosine).build(),
        )
        .wal_enabled(false)
        .optimizers(optimizers)
        .hnsw_config(HnswIndexConfig {
            m: 0,
            payload_m: Some(16),
            ..HnswIndexConfig::default()
        })
        .build();
    let shard = EdgeShard::new(&dir, config)?;
    let schema =
        PayloadFieldSchema::FieldParams(PayloadSchemaParams::Keyword(KeywordIndexParams {
            is_tenant: Some(true),
            enable_hnsw: Some(true),
            ..KeywordIndexParams::default()
        }));
    shard.update(UpdateOperation::FieldIndexOperation(
        FieldIndexOperations::CreateIndex(CreateIndex {
            field_name: key("owner"),
            field_schema: Some(schema),
        }),
    ))?;
    let mut rng = Rng(88_172_645_463_325_252);
    let total = refs + users * per;
    let started = Instant::now();
    let mut batch = Vec::new();
    let mut optimizing = 0.0;
    for i in 0..total {
        let owner = if i < refs {
            "ref".to_string()
        } else {
            format!("u{}", (i - refs) / per)
        };
        let payload: serde_json::Map<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({ "owner": owner }))?;
        batch.push(
            PointStruct::new(PointId::NumId(i as u64 + 1), rng.vector(), payload.into()).into(),
        );
        if batch.len() == 1000 || i + 1 == total {
            shard.update(UpdateOperation::PointOperation(
                PointOperations::UpsertPoints(PointInsertOperations::PointsList(std::mem::take(
                    &mut batch,
                ))),
            ))?;
        }
        if (i + 1) % every == 0 || i + 1 == total {
            let t = Instant::now();
            shard.optimize()?;
            optimizing += t.elapsed().as_secs_f64();
        }
    }
    shard.flush()?;
    println!(
        "ingest {total} points in {:.1} s (optimising {optimizing:.1} s)",
        started.elapsed().as_secs_f64()
    );
    let mut sizes: Vec<u64> = std::fs::read_dir(dir.join("segments"))?
        .flatten()
        .map(|e| dir_bytes(&e.path()) / 1_000_000)
        .collect();
    sizes.sort_unstable();
    println!("segments {}: MB on disk {sizes:?}", sizes.len());
    for reference in [false, true] {
        if reference && refs == 0 {
            continue;
        }
        let mut times = Vec::new();
        for q in 0..300 {
            let owner = if reference {
                "ref".to_string()
            } else {
                format!("u{}", (q * 7919) % users)
            };
            let request = QueryRequest {
                prefetches: Vec::new(),
                query: Some(ScoringQuery::Vector(QueryEnum::Nearest(
                    NamedQuery::default_dense(rng.vector()),
                ))),
                filter: Some(owner_filter(&owner)),
                score_threshold: None,
                limit: 10,
                offset: 0,
                params: Some(SearchParams {
                    hnsw_ef: Some(256),
                    acorn: Some(AcornSearchParams {
                        enable: true,
                        max_selectivity: None,
                    }),
                    ..SearchParams::default()
                }),
                with_vector: WithVector::Bool(false),
                with_payload: WithPayloadInterface::Bool(false),
            };
            let t = Instant::now();
            let hits = shard.query(request)?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            anyhow::ensure!(!hits.is_empty(), "no hits for {owner}");
        }
        times.sort_by(f64::total_cmp);
        println!(
            "search {}: p50 {:.3} ms, p95 {:.3} ms",
            if reference { "reference" } else { "user" },
            times[150],
            times[285]
        );
    }
    for u in [users / 2, users / 3] {
        let owner = format!("u{u}");
        let t = Instant::now();
        shard.update(UpdateOperation::PointOperation(
            PointOperations::DeletePointsByFilter(owner_filter(&owner)),
        ))?;
        let normal = shard.config().optimizers();
        shard.set_optimizers_config(EdgeOptimizersConfig {
            deleted_threshold: Some(0.0),
            vacuum_min_vector_number: Some(1),
            ..normal.clone()
        })?;
        shard.optimize()?;
        shard.set_optimizers_config(normal)?;
        shard.flush()?;
        shard.flush()?;
        println!(
            "erase {owner}: delete and vacuum {:.3} s",
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
