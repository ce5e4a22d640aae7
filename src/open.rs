//! Opening an engine on the embedded defaults: SQLite in the data directory,
//! tantivy and qdrant-edge beside it, the ONNX embedder from the asset
//! directory. Checks that the vector index was built by the configured model,
//! then repairs any divergence between the store and the indexes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{SharedClock, SystemClock};
use crate::embed::assets::AssetPaths;
use crate::embed::onnx::{EmbedderOptions, OnnxEmbedder};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::lexical::tantivy::TantivyIndex;
use crate::policy::Policy;
use crate::service::{DataDir, Engine, IndexMeta, Parts, ReconcileReport};
use crate::store::sqlite::SqliteStore;
use crate::vector::edge::EdgeVectorIndex;

/// Where things are and how to run them.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    pub policy: Policy,
    pub assets_dir: PathBuf,
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
    let options = EmbedderOptions {
        model: policy.embedding.model_spec()?,
        ..EmbedderOptions::default()
    };
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
    if model_changed {
        // Vectors of another model (maybe another dimension) cannot be kept.
        std::fs::remove_dir_all(dirs.vectors()).ok();
    }
    let store = SqliteStore::open(&dirs.database()).await?;
    let lexical = TantivyIndex::open(
        &dirs.lexical(),
        Duration::from_millis(policy.indexing.commit_delay_ms),
    )?;
    let vectors = EdgeVectorIndex::open(&dirs.vectors(), embedder.dim())?;
    meta.write(&dirs.index_meta())?;
    let engine = Engine::new(Parts {
        store: Arc::new(store),
        lexical: Arc::new(lexical),
        vectors: Arc::new(vectors),
        embedder,
        policy: Arc::new(policy),
        clock,
    });
    // Finish any "forget all my data" a crash interrupted before serving.
    engine.resume_erasures().await?;
    let report = engine.reconcile().await?;
    Ok((engine, report))
}

/// Opens the engine with the production embedder and the system clock.
pub async fn open(config: &EngineConfig) -> Result<(Engine, ReconcileReport)> {
    let embedder = load_embedder_for(&config.assets_dir, &config.policy)?;
    open_with(
        &config.data_dir,
        config.policy.clone(),
        embedder,
        Arc::new(SystemClock),
        false,
    )
    .await
}
