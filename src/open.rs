//! Opening an engine. On the embedded defaults: SQLite in the data directory,
//! tantivy and qdrant-edge beside it, the ONNX embedder from the asset
//! directory. A `postgres://` URL (`--database-url`, [`StoreUrl`]) puts the
//! store on PostgreSQL instead. Checks that the vector index was built by the configured model,
//! then repairs any divergence between the store and the indexes.
//!
//! With a Qdrant server ([`VectorBackend::Server`], `--qdrant-url`) the
//! vectors live in a collection every node shares instead of the data
//! directory; [`open_node`] also starts following the store's change feed
//! so that this node's lexical index sees every node's writes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{SharedClock, SystemClock};
use crate::cluster::LexicalFollower;
use crate::embed::assets::AssetPaths;
use crate::embed::onnx::{EmbedderOptions, OnnxEmbedder};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::lexical::tantivy::TantivyIndex;
use crate::policy::Policy;
use crate::service::{DataDir, Engine, IndexMeta, Parts, ReconcileReport};
use crate::store::postgres::PgStore;
use crate::store::sqlite::SqliteStore;
use crate::store::MemoryStore;
use crate::vector::edge::EdgeVectorIndex;
use crate::vector::{QdrantServerConfig, QdrantServerIndex, VectorIndex};

/// Where the vectors live.
#[derive(Clone, Debug, Default)]
pub enum VectorBackend {
    /// qdrant-edge in the data directory (one node).
    #[default]
    Embedded,
    /// A collection on a Qdrant server or cluster, shared by every node.
    Server(QdrantServerConfig),
}

/// Where things are and how to run them.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    pub policy: Policy,
    pub assets_dir: PathBuf,
    pub vectors: VectorBackend,
    /// `postgres://…` selects the PostgreSQL store; `None` = SQLite in `data_dir`.
    pub database_url: Option<String>,
    /// PostgreSQL connections per node.
    pub db_pool_size: u32,
}

/// Where the store lives, parsed from `--database-url`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    Postgres(String),
    Sqlite(PathBuf),
}

impl StoreUrl {
    /// `postgres://…` or `postgresql://…`, or `sqlite://PATH`.
    pub fn parse(url: &str) -> Result<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(StoreUrl::Postgres(url.to_string()))
        } else if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(Error::Config {
                    key: "database_url".into(),
                    message: "sqlite:// needs a file path, e.g. sqlite://./data/mnemo.db".into(),
                });
            }
            Ok(StoreUrl::Sqlite(PathBuf::from(path)))
        } else {
            Err(Error::Config {
                key: "database_url".into(),
                message:
                    "expected a postgres://user:password@host:port/database or sqlite://PATH URL"
                        .into(),
            })
        }
    }

    /// The URL's backend, for logs (never the URL: it may hold a password).
    pub fn backend(&self) -> &'static str {
        match self {
            StoreUrl::Postgres(_) => "postgres",
            StoreUrl::Sqlite(_) => "sqlite",
        }
    }

    pub async fn open(&self, pool_size: u32) -> Result<Arc<dyn MemoryStore>> {
        Ok(match self {
            StoreUrl::Postgres(url) => Arc::new(PgStore::open(url, pool_size).await?),
            StoreUrl::Sqlite(path) => Arc::new(SqliteStore::open(path).await?),
        })
    }
}

/// Opens the configured store: PostgreSQL for a `postgres://` URL, SQLite in
/// the data directory without one.
pub async fn open_store(config: &EngineConfig) -> Result<Arc<dyn MemoryStore>> {
    open_store_at(
        &config.data_dir,
        config.database_url.as_deref(),
        config.db_pool_size,
    )
    .await
}

/// As [`open_store`], from the parts (commands that need no policy).
pub async fn open_store_at(
    data_dir: &std::path::Path,
    database_url: Option<&str>,
    db_pool_size: u32,
) -> Result<Arc<dyn MemoryStore>> {
    match database_url {
        Some(url) => StoreUrl::parse(url)?.open(db_pool_size).await,
        None => Ok(Arc::new(
            SqliteStore::open(&DataDir(data_dir.to_path_buf()).database()).await?,
        )),
    }
}

/// Loads the production embedder (the default model) from the asset directory.
pub fn load_embedder(assets_dir: &std::path::Path) -> Result<Arc<dyn Embedder>> {
    load_embedder_for(assets_dir, &Policy::default())
}

/// Loads the embedder of the policy's `[embedding] model`.
pub fn load_embedder_for(
    assets_dir: &std::path::Path,
    policy: &Policy,
) -> Result<Arc<dyn Embedder>> {
    let paths = AssetPaths::new(assets_dir);
    let options = EmbedderOptions::for_policy(policy)?;
    Ok(Arc::new(OnnxEmbedder::load(&paths, options)?))
}

/// Opens the engine on the embedded backends with the given embedder and clock.
/// `allow_model_change` is set by `reindex`, which rebuilds the vectors anyway.
pub async fn open_with(
    data_dir: &std::path::Path,
    policy: Policy,
    embedder: Arc<dyn Embedder>,
    clock: SharedClock,
    allow_model_change: bool,
) -> Result<(Engine, ReconcileReport)> {
    open_with_backend(
        data_dir,
        policy,
        embedder,
        clock,
        allow_model_change,
        &VectorBackend::Embedded,
    )
    .await
}

/// As [`open_with`], on a store opened by the caller (PostgreSQL, or any
/// other backend); the indexes stay in `data_dir`.
pub async fn open_with_store(
    data_dir: &std::path::Path,
    store: Arc<dyn MemoryStore>,
    policy: Policy,
    embedder: Arc<dyn Embedder>,
    clock: SharedClock,
    allow_model_change: bool,
) -> Result<(Engine, ReconcileReport)> {
    open_parts(
        data_dir,
        store,
        policy,
        embedder,
        clock,
        allow_model_change,
        &VectorBackend::Embedded,
    )
    .await
}

/// As [`open_with`], with the vectors on the given backend.
pub async fn open_with_backend(
    data_dir: &std::path::Path,
    policy: Policy,
    embedder: Arc<dyn Embedder>,
    clock: SharedClock,
    allow_model_change: bool,
    vectors: &VectorBackend,
) -> Result<(Engine, ReconcileReport)> {
    let store = Arc::new(SqliteStore::open(&DataDir(data_dir.to_path_buf()).database()).await?);
    open_parts(
        data_dir,
        store,
        policy,
        embedder,
        clock,
        allow_model_change,
        vectors,
    )
    .await
}

/// The general form: the given store, the vectors on the given backend, the
/// lexical index in `data_dir`.
pub async fn open_parts(
    data_dir: &std::path::Path,
    store: Arc<dyn MemoryStore>,
    policy: Policy,
    embedder: Arc<dyn Embedder>,
    clock: SharedClock,
    allow_model_change: bool,
    vectors: &VectorBackend,
) -> Result<(Engine, ReconcileReport)> {
    let engine = assemble(
        data_dir,
        store,
        policy,
        embedder,
        clock,
        allow_model_change,
        vectors,
    )
    .await?;
    // Finish any "forget all my data" a crash interrupted before serving.
    engine.resume_erasures().await?;
    let report = engine.reconcile().await?;
    Ok((engine, report))
}

/// Opens a clustered node: the engine (vectors on `config.vectors`), its
/// indexes reconciled with the store, and a [`LexicalFollower`] registered
/// as `node_id` from the feed position read *before* the reconcile. The
/// caller spawns the follower.
pub async fn open_node(
    config: &EngineConfig,
    node_id: String,
) -> Result<(Engine, ReconcileReport, LexicalFollower)> {
    let embedder = load_embedder_for(&config.assets_dir, &config.policy)?;
    let store = open_store(config).await?;
    let engine = assemble(
        &config.data_dir,
        store,
        config.policy.clone(),
        embedder,
        Arc::new(SystemClock),
        false,
        &config.vectors,
    )
    .await?;
    let head = engine.store().change_feed_head().await?;
    engine.resume_erasures().await?;
    let report = engine.reconcile().await?;
    if report.lexical_removed > 0 {
        // Documents of memories erased while this node was away: make sure
        // their text is physically gone from this node's disk too.
        let lexical = engine.lexical().clone();
        tokio::task::spawn_blocking(move || lexical.purge())
            .await
            .map_err(|e| Error::internal(format!("purge task failed: {e}")))??;
    }
    let follower = LexicalFollower::register(engine.clone(), node_id, head).await?;
    Ok((engine, report, follower))
}

/// The engine's parts, assembled; no erasure resumed, nothing reconciled.
async fn assemble(
    data_dir: &std::path::Path,
    store: Arc<dyn MemoryStore>,
    policy: Policy,
    embedder: Arc<dyn Embedder>,
    clock: SharedClock,
    allow_model_change: bool,
    backend: &VectorBackend,
) -> Result<Engine> {
    let dirs = DataDir(data_dir.to_path_buf());
    std::fs::create_dir_all(&dirs.0)?;
    let meta = IndexMeta {
        embedding_model: embedder.model_id().to_string(),
        dim: embedder.dim(),
    };
    let model_changed = match IndexMeta::read(&dirs.index_meta())? {
        Some(existing) if existing != meta => {
            if !allow_model_change {
                return Err(Error::Config {
                    key: "embedding model".into(),
                    message: format!(
                        "the indexes in {} were built with `{}` ({} dims) but the configured model is `{}` ({} dims); \
                         run `mnemo reindex` to re-embed everything with the new model",
                        dirs.0.display(),
                        existing.embedding_model,
                        existing.dim,
                        meta.embedding_model,
                        meta.dim
                    ),
                });
            }
            true
        }
        _ => false,
    };
    if model_changed && matches!(backend, VectorBackend::Embedded) {
        // Vectors of another model (maybe another dimension) cannot be kept.
        std::fs::remove_dir_all(dirs.vectors()).ok();
    }
    let lexical = TantivyIndex::open(
        &dirs.lexical(),
        Duration::from_millis(policy.indexing.commit_delay_ms),
    )?;
    let dim = embedder.dim();
    let vectors: Arc<dyn VectorIndex> = match backend {
        VectorBackend::Embedded => Arc::new(EdgeVectorIndex::open(&dirs.vectors(), dim)?),
        VectorBackend::Server(config) => {
            let config = config.clone();
            let index = tokio::task::spawn_blocking(move || {
                if model_changed {
                    QdrantServerIndex::connect_replacing(&config, dim)
                } else {
                    QdrantServerIndex::connect(&config, dim)
                }
            })
            .await
            .map_err(|e| Error::internal(format!("connecting to Qdrant failed: {e}")))??;
            Arc::new(index)
        }
    };
    meta.write(&dirs.index_meta())?;
    Ok(Engine::new(Parts {
        store,
        lexical: Arc::new(lexical),
        vectors,
        embedder,
        policy: Arc::new(policy),
        clock,
    }))
}

/// Opens the engine with the production embedder and the system clock.
pub async fn open(config: &EngineConfig) -> Result<(Engine, ReconcileReport)> {
    let embedder = load_embedder_for(&config.assets_dir, &config.policy)?;
    let store = open_store(config).await?;
    open_parts(
        &config.data_dir,
        store,
        config.policy.clone(),
        embedder,
        Arc::new(SystemClock),
        false,
        &config.vectors,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_select_the_backend() {
        assert_eq!(
            StoreUrl::parse("postgres://u:p@h:5432/db").unwrap(),
            StoreUrl::Postgres("postgres://u:p@h:5432/db".into())
        );
        assert_eq!(
            StoreUrl::parse("postgresql://h/db").unwrap().backend(),
            "postgres"
        );
        assert_eq!(
            StoreUrl::parse("sqlite://./data/mnemo.db").unwrap(),
            StoreUrl::Sqlite("./data/mnemo.db".into())
        );
        for bad in ["sqlite://", "mysql://h/db", "./data/mnemo.db", ""] {
            assert!(StoreUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
