//! The vector leg's query plans, timed on an existing index (issue 15): one
//! filtered query over the OR of a user's and the tenant's reference clause,
//! against one query per clause merged by score (what `vector::edge` does),
//! each with and without ACORN and at larger `ef`, with the recall@limit of
//! each against the exact answer. Plans run one after another on the same
//! queries, so their times compare.
//!
//! ```text
//! MNEMO_ASSETS_DIR=… cargo run --release --example vector_probe -- \
//!     --dir <copy of a data dir's vectors/> --users 100000 --queries 200
//! ```
//! `--evict-mb N` writes over N MB before each timed query (the CPU
//! caches as a query's embedding leaves them). `--owner NAME` searches
//! that user only (`bench-user` on `scripts/rest-bench.sh`'s deployment).
//! `--queries-file F` searches with real queries (JSON lines, `text`)
//! instead of synthetic ones. `--hnsw M,PAYLOAD_M` first switches the shard's graph configuration and
//! times the engine's rebuild of it (`--hnsw 0,16`: per-owner graphs, what
//! `vector::edge` builds now); `--erase uN` ends with one user's delete and
//! the purge's vacuum, timed. The index must not be open elsewhere (work on
//! a copy). Users are `u0` …
//! `u<users-1>` of the default tenant (`scripts/bench-corpus.py scale`);
//! queries are built like `scripts/search.lua`'s.

use std::time::Instant;

use mnemo::domain::{Owner, Tier};
use mnemo::embed::onnx::OnnxEmbedder;
use qdrant_edge::{
    AcornSearchParams, Condition, EdgeConfig, EdgeOptimizersConfig, EdgeShard, FieldCondition,
    Filter, HnswIndexConfig, JsonPath, Match, Memory, NamedQuery, PointId, PointOperations,
    QuantizationConfig, QuantizationSearchParams, QueryEnum, QueryRequest,
    ScalarQuantizationConfig, ScalarType, ScoringQuery, SearchParams, UpdateOperation,
    WithPayloadInterface, WithVector,
};

#[path = "common/args.rs"]
mod args;
use args::value;

fn keyword(field: &str, value: &str) -> Condition {
    let key: JsonPath = field.parse().unwrap_or_else(|()| panic!("{field}"));
    Condition::Field(FieldCondition::new_match(
        key,
        Match::from(value.to_string()),
    ))
}

/// A scope clause as `vector::edge` sends it: owner, tier and status;
/// `--conditions N` keeps only the first N of them (the cost of each
/// keyword check in the graph walk).
fn clause(owner: &Owner, tier: Tier) -> Filter {
    let keep: usize = value("--conditions").map_or(3, |v| v.parse().expect("--conditions"));
    let mut must = vec![
        keyword("owner", owner.as_str()),
        keyword("tier", tier.as_str()),
        keyword("status", "active"),
    ];
    must.truncate(keep);
    Filter {
        must: Some(must),
        ..Filter::default()
    }
}

fn either(a: Filter, b: Filter) -> Filter {
    Filter {
        should: Some(vec![Condition::Filter(a), Condition::Filter(b)]),
        ..Filter::default()
    }
}

#[derive(Clone, Copy)]
struct Plan {
    name: &'static str,
    split: bool,
    acorn: bool,
    exact: bool,
    ef: Option<usize>,
}

fn query(shard: &EdgeShard, v: &[f32], f: Filter, limit: usize, plan: Plan) -> Vec<(PointId, f32)> {
    let request = QueryRequest {
        prefetches: Vec::new(),
        query: Some(ScoringQuery::Vector(QueryEnum::Nearest(
            NamedQuery::default_dense(v.to_vec()),
        ))),
        filter: Some(f),
        score_threshold: None,
        limit,
        offset: 0,
        params: Some(SearchParams {
            exact: plan.exact,
            hnsw_ef: plan.ef,
            acorn: Some(AcornSearchParams {
                enable: plan.acorn,
                max_selectivity: None,
            }),
            // Scores from the originals, as the service's thresholds and
            // fusion expect; no effect on an index without quantisation.
            quantization: Some(QuantizationSearchParams {
                ignore: false,
                rescore: Some(true),
                oversampling: value("--oversampling").map(|v| v.parse().expect("--oversampling")),
            }),
            ..SearchParams::default()
        }),
        with_vector: WithVector::Bool(false),
        with_payload: WithPayloadInterface::Bool(false),
    };
    shard
        .query(request)
        .expect("query")
        .into_iter()
        .map(|p| (p.id, p.score))
        .collect()
}

fn run(
    shard: &EdgeShard,
    v: &[f32],
    user: &Owner,
    reference: &Owner,
    limit: usize,
    plan: Plan,
) -> Vec<(PointId, f32)> {
    let mine = clause(user, Tier::LongTerm);
    let shared = clause(reference, Tier::Reference);
    if !plan.split {
        return query(shard, v, either(mine, shared), limit, plan);
    }
    let mut all = query(shard, v, mine, limit, plan);
    all.extend(query(shard, v, shared, limit, plan));
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all.truncate(limit);
    all
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let dir = value("--dir").expect("--dir <vectors dir>");
    let users: usize = value("--users").map_or(100_000, |v| v.parse().expect("--users"));
    let n: usize = value("--queries").map_or(200, |v| v.parse().expect("--queries"));
    let limit: usize = value("--limit").map_or(50, |v| v.parse().expect("--limit"));
    let assets = std::env::var_os("MNEMO_ASSETS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "assets".into());
    // The index's model embeds the queries: `MNEMO_EMBEDDING_MODEL`, as
    // for the service (before this, the probe always used the default
    // model, whatever the index held).
    let mut policy = mnemo::policy::Policy::default();
    if let Ok(model) = std::env::var("MNEMO_EMBEDDING_MODEL") {
        policy.embedding.model = model;
    }
    println!("queries embedded by {}", policy.embedding.model);
    let embedder = OnnxEmbedder::for_policy(&assets, &policy)?;
    let t = Instant::now();
    // `--quantize`: int8 scalar quantisation for the graph walk, with the
    // best candidates rescored on the originals; the engine's config-mismatch
    // optimiser builds it (timed) before the plans.
    let quantize = std::env::args().any(|a| a == "--quantize");
    let config = quantize.then(|| {
        EdgeConfig::builder()
            .quantization_config(QuantizationConfig::from(ScalarQuantizationConfig {
                r#type: ScalarType::Int8,
                quantile: Some(0.99),
                #[allow(deprecated)]
                always_ram: None,
                memory: Some(Memory::Pinned),
            }))
            .build()
    });
    let shard = EdgeShard::load(dir.as_ref(), config)?;
    if quantize {
        let t = Instant::now();
        while shard.optimize()? {}
        shard.flush()?;
        println!("quantised in {:.1} s", t.elapsed().as_secs_f64());
    }
    let info = shard.info()?;
    println!(
        "loaded {} points in {} segments in {:.1} s",
        info.points_count,
        info.segments_count,
        t.elapsed().as_secs_f64()
    );
    // `--hnsw M,PAYLOAD_M`: switch the shard's graph config and let the
    // engine's config-mismatch optimiser rebuild it (timed) before the plans.
    if let Some(spec) = value("--hnsw") {
        let (m, payload_m) = spec.split_once(',').expect("--hnsw M,PAYLOAD_M");
        let config = HnswIndexConfig {
            m: m.parse()?,
            payload_m: Some(payload_m.parse()?),
            ..shard.config().hnsw_config()
        };
        shard.set_hnsw_config(config)?;
        let t = Instant::now();
        while shard.optimize()? {}
        shard.flush()?;
        println!(
            "hnsw {spec}: optimised in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let subjects = [
        "the user",
        "my sister",
        "the team",
        "our landlord",
        "the dentist",
    ];
    let objects = [
        "green tea",
        "a flight to Lisbon",
        "the quarterly report",
        "oat milk",
        "a new laptop",
        "vegetarian food",
        "a trip to Kyoto",
        "running shoes",
    ];
    let reference = Owner::reference("default");
    // `--queries-file F`: real queries (JSON lines with a `text` field)
    // instead of the synthetic ones, at most `--queries` of them.
    let texts: Option<Vec<String>> = value("--queries-file").map(|f| {
        std::fs::read_to_string(f)
            .expect("--queries-file")
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                v["text"].as_str().expect("a `text` field").to_string()
            })
            .take(n)
            .collect()
    });
    let n = texts.as_ref().map_or(n, Vec::len);
    let owner = value("--owner");
    let cases: Vec<(Vec<f32>, Owner)> = (0..n)
        .map(|i| {
            let q = texts.as_ref().map_or_else(
                || {
                    format!(
                        "when did {} mention {}, request {i}",
                        subjects[i % subjects.len()],
                        objects[(i / 5) % objects.len()]
                    )
                },
                |t| t[i].clone(),
            );
            let v = embedder.embed_query(&q).expect("embedding");
            (
                v,
                Owner::user(
                    "default",
                    &owner
                        .clone()
                        .unwrap_or_else(|| format!("u{}", (i * 7919) % users)),
                ),
            )
        })
        .collect();
    let exact = Plan {
        name: "exact",
        split: false,
        acorn: false,
        exact: true,
        ef: None,
    };
    let truth: Vec<Vec<(PointId, f32)>> = cases
        .iter()
        .map(|(v, u)| run(&shard, v, u, &reference, limit, exact))
        .collect();
    let plans = [
        Plan {
            name: "one query, ACORN",
            split: false,
            acorn: true,
            exact: false,
            ef: None,
        },
        Plan {
            name: "one query, no ACORN",
            split: false,
            acorn: false,
            exact: false,
            ef: None,
        },
        Plan {
            name: "per clause, ACORN",
            split: true,
            acorn: true,
            exact: false,
            ef: None,
        },
        Plan {
            name: "per clause, no ACORN",
            split: true,
            acorn: false,
            exact: false,
            ef: None,
        },
        Plan {
            name: "per clause, no ACORN, ef 256",
            split: true,
            acorn: false,
            exact: false,
            ef: Some(256),
        },
        Plan {
            name: "per clause, no ACORN, ef 512",
            split: true,
            acorn: false,
            exact: false,
            ef: Some(512),
        },
        Plan {
            name: "per clause, no ACORN, ef 1024",
            split: true,
            acorn: false,
            exact: false,
            ef: Some(1024),
        },
        Plan {
            name: "per clause, ACORN, ef 128",
            split: true,
            acorn: true,
            exact: false,
            ef: Some(128),
        },
        Plan {
            name: "per clause, ACORN, ef 256",
            split: true,
            acorn: true,
            exact: false,
            ef: Some(256),
        },
        exact,
    ];
    println!("payload schema: {:?}", info.payload_schema);
    let rounds: usize = value("--rounds").map_or(1, |v| v.parse().expect("--rounds"));
    let mut evict =
        vec![0u8; value("--evict-mb").map_or(0, |v| v.parse().expect("--evict-mb")) << 20];
    for round in 0..rounds {
        for plan in plans {
            let mut ms = Vec::with_capacity(n);
            let mut found = 0usize;
            let mut wanted = 0usize;
            for ((v, u), want) in cases.iter().zip(&truth) {
                for (i, b) in evict.iter_mut().enumerate().step_by(64) {
                    *b = b.wrapping_add(i as u8);
                }
                std::hint::black_box(&evict);
                let t = Instant::now();
                let got = run(&shard, v, u, &reference, limit, plan);
                ms.push(t.elapsed().as_secs_f64() * 1e3);
                wanted += want.len();
                found += want
                    .iter()
                    .filter(|w| got.iter().any(|g| g.0 == w.0))
                    .count();
            }
            let mean = ms.iter().sum::<f64>() / ms.len() as f64;
            println!(
                "round {round} {:<30} p50 {:7.2} p95 {:7.2} mean {:7.2} ms  recall@{limit} {:.3}",
                plan.name,
                pct(&mut ms, 0.5),
                pct(&mut ms, 0.95),
                mean,
                found as f64 / wanted.max(1) as f64
            );
        }
    }
    // `--erase uN`: delete one user's points and vacuum the segments that
    // held them, as an erasure's purge does (timed).
    if let Some(user) = value("--erase") {
        let owner = Owner::user("default", &user);
        let t = Instant::now();
        shard.update(UpdateOperation::PointOperation(
            PointOperations::DeletePointsByFilter(Filter {
                must: Some(vec![keyword("owner", owner.as_str())]),
                ..Filter::default()
            }),
        ))?;
        let deleted = t.elapsed();
        let normal = shard.config().optimizers();
        shard.set_optimizers_config(EdgeOptimizersConfig {
            deleted_threshold: Some(0.0),
            vacuum_min_vector_number: Some(1),
            ..normal.clone()
        })?;
        let v = Instant::now();
        shard.optimize()?;
        shard.set_optimizers_config(normal)?;
        shard.flush()?;
        shard.flush()?;
        println!(
            "erase {user}: delete {:.3} s, vacuum and flush {:.1} s",
            deleted.as_secs_f64(),
            v.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
