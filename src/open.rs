//! Opening an engine on the embedded defaults: SQLite in the data directory,
//! tantivy and qdrant-edge beside it, the ONNX embedder from the asset
//! directory. Checks that the vector index was built by the configured model,
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
use crate::store::sqlite::SqliteStore;
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
}

/// Loads the production embedder from the asset directory.
pub fn load_embedder(assets_dir: &std::path::Path) -> Result<Arc<dyn Embedder>> {
    let paths = AssetPaths::new(assets_dir);
    Ok(Arc::new(OnnxEmbedder::load(
        &paths,
        EmbedderOptions::default(),
    )?))
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

/// As [`open_with`], with the vectors on the given backend.
pub async fn open_with_backend(
    data_dir: &std::path::Path,
    policy: Policy,
    embedder: Arc<dyn Embedder>,
    clock: SharedClock,
    allow_model_change: bool,
    vectors: &VectorBackend,
) -> Result<(Engine, ReconcileReport)> {
    let engine = assemble(
        data_dir,
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
    let embedder = load_embedder(&config.assets_dir)?;
    let engine = assemble(
        &config.data_dir,
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
    let store = SqliteStore::open(&dirs.database()).await?;
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
        store: Arc::new(store),
        lexical: Arc::new(lexical),
        vectors,
        embedder,
        policy: Arc::new(policy),
        clock,
    }))
}

/// Opens the engine with the production embedder and the system clock.
pub async fn open(config: &EngineConfig) -> Result<(Engine, ReconcileReport)> {
    let embedder = load_embedder(&config.assets_dir)?;
    open_with_backend(
        &config.data_dir,
        config.policy.clone(),
        embedder,
        Arc::new(SystemClock),
        false,
        &config.vectors,
    )
    .await
}
