//! Retrieval evaluation (`mnemo eval`, and the library entry point the HTTP
//! route calls): ingest evaluation sets into fresh temporary engines, run
//! their queries under ranking presets or policy files, and report recall,
//! nDCG, MRR, latency and paired comparisons.
//!
//! - [`set`]: loading and validating a set (errors name file and line);
//! - [`metrics`]: pure metric functions;
//! - [`compare`]: paired bootstrap comparison of two runs;
//! - [`runner`]: one set through the engine, once per preset;
//! - [`cache`]: the persistent embedding cache (documents and queries);
//! - [`similarity`]: the model's cosine distributions (threshold calibration);
//! - [`report`]: `report.json` (stable schema), `report.md`, `report.html`,
//!   `per_query.jsonl`.
//!
//! Everything goes through [`crate::Engine`], the same code path as the
//! service. Queries run one at a time, each with the clock set to its
//! `asked_at`, so latencies are those of an idle engine and decay behaves as
//! at question time.

pub mod cache;
pub mod candidates;
pub mod compare;
pub mod metrics;
pub mod report;
pub mod runner;
pub mod set;
pub mod similarity;
pub mod tune;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::domain::ranking::RankingParams;
use crate::embed::Embedder;
use crate::policy::Policy;
use crate::service::Legs;

pub use compare::{Bootstrap, Comparison};
pub use report::{Report, Run};

/// Errors of the evaluation tool: user errors in a set or the configuration,
/// and engine errors passed through.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A malformed or inconsistent set file, with the line when there is one.
    #[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Set {
        file: PathBuf,
        line: Option<usize>,
        message: String,
    },
    /// An invalid evaluation configuration (preset names, k, comparison).
    #[error("invalid evaluation config: {0}")]
    Config(String),
    #[error(transparent)]
    Engine(#[from] crate::Error),
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A built-in ranking preset: which legs, and which score factors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// BM25 only; no decay, importance weight 0.
    Bm25,
    /// Vector only; no decay, importance weight 0.
    Vector,
    /// Both legs with the policy's fusion; no decay, importance weight 0.
    Hybrid,
    /// `hybrid` plus the policy's time decay.
    HybridDecay,
    /// The full policy: fusion, decay and importance.
    HybridDecayImportance,
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::Bm25,
        Preset::Vector,
        Preset::Hybrid,
        Preset::HybridDecay,
        Preset::HybridDecayImportance,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Bm25 => "bm25",
            Preset::Vector => "vector",
            Preset::Hybrid => "hybrid",
            Preset::HybridDecay => "hybrid_decay",
            Preset::HybridDecayImportance => "hybrid_decay_importance",
        }
    }

    pub fn parse(name: &str) -> Result<Self> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
                Error::Config(format!(
                    "unknown preset `{name}`; expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// What one run changes in each search: legs, ranking, decay.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchParams {
    pub legs: Legs,
    pub ranking: RankingParams,
    pub decay: bool,
}

/// A preset or a policy file: one column of the report.
#[derive(Clone, Debug)]
pub enum Variant {
    Preset(Preset),
    /// A policy file run as the full pipeline with its ranking (fusion, decay
    /// floor, importance weight, min score). The embedding model and its
    /// calibration, half-lives, candidate counts and the vector similarity
    /// floor are the engine's (base) policy.
    Config {
        label: String,
        path: PathBuf,
        policy: Box<Policy>,
    },
}

impl Variant {
    /// Loads a policy file; its label is the file stem.
    pub fn config(path: &Path) -> Result<Self> {
        let policy = Policy::load(path)?;
        let label = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Ok(Variant::Config {
            label,
            path: path.to_path_buf(),
            policy: Box::new(policy),
        })
    }

    pub fn label(&self) -> &str {
        match self {
            Variant::Preset(p) => p.name(),
            Variant::Config { label, .. } => label,
        }
    }

    pub fn config_path(&self) -> Option<&Path> {
        match self {
            Variant::Preset(_) => None,
            Variant::Config { path, .. } => Some(path),
        }
    }

    /// The search parameters under the engine's `base` policy.
    pub fn params(&self, base: &Policy) -> SearchParams {
        let plain = |legs| SearchParams {
            legs,
            // The legs alone and plain hybrid: no second stage, no
            // conversation context.
            ranking: RankingParams {
                importance_weight: 0.0,
                rerank: None,
                context: None,
                temporal: None,
                // The legs as they are: the query as asked, the model's
                // similarity cut, no learned stage.
                perspective: false,
                learned: None,
                ..base.ranking()
            },
            decay: false,
        };
        match self {
            Variant::Preset(Preset::Bm25) => plain(Legs::Lexical),
            Variant::Preset(Preset::Vector) => plain(Legs::Vector),
            Variant::Preset(Preset::Hybrid) => plain(Legs::Hybrid),
            Variant::Preset(Preset::HybridDecay) => SearchParams {
                decay: true,
                ..plain(Legs::Hybrid)
            },
            Variant::Preset(Preset::HybridDecayImportance) => SearchParams {
                legs: Legs::Hybrid,
                ranking: base.ranking(),
                decay: true,
            },
            Variant::Config { policy, .. } => {
                // The file's ranking with the engine's model and its
                // calibration (not the file's default model's).
                let mut p = (**policy).clone();
                p.embedding = base.embedding.clone();
                SearchParams {
                    legs: Legs::Hybrid,
                    ranking: p.ranking(),
                    decay: true,
                }
            }
        }
    }
}

/// Everything a run needs.
#[derive(Clone)]
pub struct EvalConfig {
    /// Set directories, in report order.
    pub sets: Vec<PathBuf>,
    /// Presets and policy files, in report order; empty = all five presets.
    pub variants: Vec<Variant>,
    /// Dotted path into corpus lines (`meta.session_key`) for group metrics.
    pub group_by: Option<String>,
    /// Dotted path into corpus lines (`meta.session`) naming, within a
    /// user, the conversation a document is a turn of.
    pub thread_by: Option<String>,
    /// Dotted path into query lines whose RFC 3339 value stands in for a
    /// missing `asked_at` (`--asked-at-by`).
    pub asked_at_by: Option<String>,
    /// Recall cut-offs.
    pub ks: Vec<usize>,
    /// Pairs of labels to compare, each `(a, b)` giving `b - a`; empty =
    /// the first two variants.
    pub compare: Vec<(String, String)>,
    pub bootstrap: Bootstrap,
    /// The engines' policy (limits, half-lives, candidates; presets derive
    /// their ranking from it).
    pub policy: Policy,
    /// Embeds documents and queries (the ONNX model in production).
    pub embedder: Arc<dyn Embedder>,
    /// Stop at the first bad line of a set (default: skip it and count it
    /// in the report).
    pub strict: bool,
    /// Ingest through the memory lifecycle (`--lifecycle`): documents in
    /// `created_at` order, one write each, with reinforcement and
    /// correction detection on; a document merged into an earlier memory
    /// is scored as that memory.
    pub lifecycle: bool,
    /// Where the persistent embedding cache lives; `None` = no cache.
    pub cache_dir: Option<PathBuf>,
    /// Parent of the temporary data directories (system temp when `None`).
    pub work_dir: Option<PathBuf>,
    /// Where the vectors of each run live: the embedded index, or a
    /// temporary collection (named after the configured one, dropped after
    /// the run) on the clustered mode's Qdrant server.
    pub vectors: crate::vector::VectorBackend,
}

impl EvalConfig {
    /// Defaults: all five presets, k = 1,5,10,20, compare the first two.
    pub fn new(sets: Vec<PathBuf>, embedder: Arc<dyn Embedder>) -> Self {
        EvalConfig {
            sets,
            variants: Preset::ALL.into_iter().map(Variant::Preset).collect(),
            group_by: None,
            thread_by: None,
            asked_at_by: None,
            ks: vec![1, 5, 10, 20],
            compare: Vec::new(),
            bootstrap: Bootstrap::default(),
            policy: Policy::default(),
            embedder,
            strict: false,
            lifecycle: false,
            cache_dir: None,
            work_dir: None,
            vectors: crate::vector::VectorBackend::Embedded,
        }
    }

    fn validate(&mut self) -> Result<()> {
        if self.sets.is_empty() {
            return Err(Error::Config("at least one --set is required".into()));
        }
        if self.variants.is_empty() {
            self.variants = Preset::ALL.into_iter().map(Variant::Preset).collect();
        }
        let mut seen = std::collections::HashSet::new();
        for v in &self.variants {
            if !seen.insert(v.label().to_string()) {
                return Err(Error::Config(format!(
                    "`{}` is given twice (config files are labelled by file stem)",
                    v.label()
                )));
            }
        }
        self.ks.sort_unstable();
        self.ks.dedup();
        if self.ks.is_empty() || self.ks[0] == 0 {
            return Err(Error::Config("--k needs cut-offs of at least 1".into()));
        }
        let max = self.policy.retrieval.max_top_k;
        if self.depth() > max {
            return Err(Error::Config(format!(
                "k = {} exceeds the policy's retrieval.max_top_k ({max})",
                self.depth()
            )));
        }
        for (a, b) in &self.compare {
            for l in [a, b] {
                if !seen.contains(l.as_str()) {
                    return Err(Error::Config(format!(
                        "--compare names `{l}`, which is not among the runs"
                    )));
                }
            }
        }
        if self.bootstrap.resamples == 0 || !(0.0..1.0).contains(&self.bootstrap.confidence) {
            return Err(Error::Config(
                "bootstrap needs resamples ≥ 1 and a confidence in (0, 1)".into(),
            ));
        }
        Ok(())
    }

    /// Loads and validates every set (errors name file and line).
    pub fn load_sets(&self) -> Result<Vec<set::EvalSet>> {
        self.sets
            .iter()
            .map(|d| {
                set::load_with(
                    d,
                    self.group_by.as_deref(),
                    self.thread_by.as_deref(),
                    self.asked_at_by.as_deref(),
                    self.strict,
                )
            })
            .collect()
    }

    /// How many hits each search asks for.
    pub fn depth(&self) -> usize {
        self.ks
            .iter()
            .copied()
            .chain([metrics::NDCG_AT, metrics::MRR_AT])
            .max()
            .unwrap_or(metrics::NDCG_AT)
    }

    /// The pairs to compare: the configured ones, else the first two runs.
    fn comparison_pairs(&self) -> Vec<(String, String)> {
        if !self.compare.is_empty() {
            return self.compare.clone();
        }
        match &self.variants[..] {
            [a, b, ..] => vec![(a.label().to_string(), b.label().to_string())],
            _ => vec![],
        }
    }
}

/// Where progress goes (a terminal bar in the CLI, a job status over HTTP).
pub trait Progress: Send + Sync {
    /// A new phase (`"scifact: ingest"`) of `total` steps begins.
    fn start(&self, phase: &str, total: u64);
    fn advance(&self, n: u64);
    fn finish(&self);
}

/// No progress reporting.
impl Progress for () {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Versions and hashes that make a report reproducible.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    pub mnemo: String,
    pub report_schema: u32,
    pub embedding_model: String,
    /// SHA-256 of the engines' policy (canonical JSON).
    pub policy_sha256: String,
    /// Label → SHA-256 of each policy file's contents.
    pub config_sha256: BTreeMap<String, String>,
    pub bootstrap: Bootstrap,
}

/// Runs the evaluation: every set, every variant, then the comparisons.
pub async fn run(mut config: EvalConfig, progress: &dyn Progress) -> Result<Report> {
    config.validate()?;
    // Validate every set before the (slow) first ingest.
    progress.start("load the sets", config.sets.len() as u64);
    let sets = config.load_sets()?;
    progress.advance(config.sets.len() as u64);
    progress.finish();
    let mut runs = Vec::new();
    let mut set_infos = Vec::new();
    for s in &sets {
        let (info, mut set_runs) = runner::run_set(&config, s, progress).await?;
        set_infos.push(info);
        runs.append(&mut set_runs);
    }
    let names = metrics::metric_names(&config.ks);
    let pairs = config.comparison_pairs();
    let comparisons = sets
        .iter()
        .flat_map(|s| pairs.iter().map(move |p| (s, p)))
        .filter_map(|(s, (a, b))| {
            let find = |l: &str| {
                runs.iter()
                    .find(|r: &&Run| r.set == s.name && r.preset == l)
            };
            let (ra, rb) = (find(a)?, find(b)?);
            Some(compare::compare(
                &s.name,
                (a, &ra.per_query),
                (b, &rb.per_query),
                &names,
                config.bootstrap,
            ))
        })
        .collect();
    let mut config_sha256 = BTreeMap::new();
    for v in &config.variants {
        if let Some(p) = v.config_path() {
            let bytes = std::fs::read(p).map_err(|e| Error::Io {
                path: p.to_path_buf(),
                source: e,
            })?;
            config_sha256.insert(v.label().to_string(), sha256_hex(&bytes));
        }
    }
    let policy_json = serde_json::to_vec(&config.policy).map_err(crate::Error::internal)?;
    Ok(Report {
        runs,
        comparisons,
        versions: Versions {
            mnemo: env!("CARGO_PKG_VERSION").to_string(),
            report_schema: report::SCHEMA_VERSION,
            embedding_model: config.embedder.model_id().to_string(),
            policy_sha256: sha256_hex(&policy_json),
            config_sha256,
            bootstrap: config.bootstrap,
        },
        sets: set_infos,
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}
