//! Opening an engine: [`Engine::builder`] takes the data directory and the
//! options callers set (policy, embedder or asset directory, clock, store or
//! database URL, vector backend, model change allowed, a clustered node id),
//! and [`EngineBuilder::build`] assembles the parts, checks that the vector
//! index was built by the configured model, resumes interrupted erasures and
//! repairs any divergence between the store and the indexes.
//!
//! On the embedded defaults: SQLite in the data directory, tantivy and
//! qdrant-edge beside it, the ONNX embedder from the asset directory. A
//! `postgres://` URL ([`StoreUrl`]) puts the store on PostgreSQL; a Qdrant
//! server ([`VectorBackend::Server`]) puts the vectors in a collection every
//! node shares, and then the node also follows the store's change feed so
//! that its lexical index sees every node's writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::cluster::{default_node_id, LexicalFollower};
use super::{DataDir, Engine, IndexMeta, Parts, ReconcileReport};
use crate::clock::{SharedClock, SystemClock};
use crate::embed::onnx::OnnxEmbedder;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::lexical::tantivy::TantivyIndex;
use crate::policy::Policy;
use crate::store::url::StoreUrl;
use crate::store::MemoryStore;
use crate::vector::edge::PartitionedIndex;
use crate::vector::{QdrantServerIndex, VectorBackend, VectorIndex};

/// How to open an engine; see [`Engine::builder`].
#[derive(Clone)]
pub struct EngineBuilder {
    data_dir: PathBuf,
    policy: Policy,
    assets_dir: Option<PathBuf>,
    embedder: Option<Arc<dyn Embedder>>,
    clock: SharedClock,
    store: Option<Arc<dyn MemoryStore>>,
    database_url: Option<String>,
    db_pool_size: u32,
    vectors: VectorBackend,
    allow_model_change: bool,
    node_id: Option<String>,
    trust_clean_shutdown: bool,
}

/// An opened engine, what its start-up reconcile did, and (clustered) the
/// follower of the change feed, registered but not yet running.
pub struct Opened {
    pub engine: Engine,
    pub reconciled: ReconcileReport,
    pub follower: Option<LexicalFollower>,
}

impl Engine {
    /// Starts configuring an engine whose files live in `data_dir`.
    pub fn builder(data_dir: impl Into<PathBuf>) -> EngineBuilder {
        EngineBuilder {
            data_dir: data_dir.into(),
            policy: Policy::default(),
            assets_dir: None,
            embedder: None,
            clock: Arc::new(SystemClock),
            store: None,
            database_url: None,
            db_pool_size: crate::store::postgres::DEFAULT_POOL_SIZE,
            vectors: VectorBackend::Embedded,
            allow_model_change: false,
            node_id: None,
            trust_clean_shutdown: false,
        }
    }
}

impl EngineBuilder {
    /// The policy (default: the built-in one, equal to the shipped file).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Where `mnemo setup` put the model assets; the ONNX embedder of the
    /// policy's `[embedding] model` is loaded from there unless
    /// [`embedder`](Self::embedder) gives one.
    pub fn assets_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.assets_dir = Some(dir.into());
        self
    }

    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The clock (default: the system clock).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// A store opened by the caller, instead of the database URL.
    pub fn store(mut self, store: Arc<dyn MemoryStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// `postgres://…` or `sqlite://PATH`; `None` = SQLite in the data directory.
    pub fn database_url(mut self, url: Option<String>) -> Self {
        self.database_url = url;
        self
    }

    /// PostgreSQL connections per node (default 10).
    pub fn db_pool_size(mut self, size: u32) -> Self {
        self.db_pool_size = size;
        self
    }

    /// Where the vectors live (default: qdrant-edge in the data directory).
    /// On a server the node follows the change feed, as
    /// [`node_id`](Self::node_id) (default: [`default_node_id`]).
    pub fn vectors(mut self, backend: VectorBackend) -> Self {
        self.vectors = backend;
        self
    }

    /// This node's id in the cluster's registry (clustered mode only).
    pub fn node_id(mut self, id: impl Into<String>) -> Self {
        self.node_id = Some(id.into());
        self
    }

    /// Lets the embedding model differ from the one that built the indexes
    /// (`reindex`, which rebuilds the vectors anyway).
    pub fn allow_model_change(mut self, allow: bool) -> Self {
        self.allow_model_change = allow;
        self
    }

    /// A clean shutdown's record (`indexes.clean`) replaces the full
    /// start-up reconcile, on the embedded vector index only: for a caller
    /// that runs the repair loop, which then applies the changes since (`mnemo
    /// serve`, through `Node::start`). See `clean_shutdown.rs`.
    pub fn trust_clean_shutdown(mut self, trust: bool) -> Self {
        self.trust_clean_shutdown = trust;
        self
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn database_url_given(&self) -> Option<&str> {
        self.database_url.as_deref()
    }

    pub fn pool_size(&self) -> u32 {
        self.db_pool_size
    }

    pub fn vector_backend(&self) -> &VectorBackend {
        &self.vectors
    }

    /// Opens the configured store alone (commands that need no engine).
    pub async fn open_store(&self) -> Result<Arc<dyn MemoryStore>> {
        if let Some(store) = &self.store {
            return Ok(store.clone());
        }
        StoreUrl::resolve(&self.data_dir, self.database_url.as_deref())?
            .open(self.db_pool_size)
            .await
    }

    /// Opens the engine: parts assembled, interrupted erasures resumed, the
    /// indexes reconciled with the store. Clustered (vectors on a server),
    /// the feed head is read *before* the reconcile and the follower
    /// registered at it, so no change between the two is missed.
    pub async fn build(self) -> Result<Opened> {
        let clustered = matches!(self.vectors, VectorBackend::Server(_));
        let node_id = self.node_id.clone().unwrap_or_else(default_node_id);
        let clean_start = self.trust_clean_shutdown && !clustered;
        let data_dir = self.data_dir.clone();
        let engine = self.assemble().await?;
        let head = if clustered {
            Some(engine.store().change_feed_head().await?)
        } else {
            None
        };
        // Finish any "forget all my data" a crash interrupted before serving.
        engine.resume_erasures().await?;
        let recorded = if clean_start {
            super::clean_shutdown::take(&data_dir)?
        } else {
            None
        };
        let reconciled = match recorded {
            Some(position) if position <= engine.store().change_feed_head().await? => {
                engine.repair_status().start_from(position);
                tracing::info!(
                    position,
                    "clean shutdown recorded: no full reconcile; the changes since are applied from the feed"
                );
                ReconcileReport {
                    from_clean_shutdown: true,
                    ..ReconcileReport::default()
                }
            }
            _ => engine.reconcile().await?,
        };
        let follower = match head {
            None => None,
            Some(head) => {
                if reconciled.lexical_removed > 0 {
                    // Documents of memories erased while this node was away:
                    // make sure their text is physically gone from this
                    // node's disk too.
                    engine.purge_lexical().await?;
                }
                Some(LexicalFollower::register(engine.clone(), node_id, head).await?)
            }
        };
        Ok(Opened {
            engine,
            reconciled,
            follower,
        })
    }

    /// The engine's parts, assembled; no erasure resumed, nothing reconciled.
    async fn assemble(self) -> Result<Engine> {
        let embedder = match &self.embedder {
            Some(e) => e.clone(),
            None => {
                let assets = self.assets_dir.as_deref().ok_or_else(|| {
                    Error::internal("an engine needs an embedder or an asset directory")
                })?;
                OnnxEmbedder::for_policy(assets, &self.policy)?
            }
        };
        let store = self.open_store().await?;
        let EngineBuilder {
            data_dir,
            policy,
            clock,
            vectors: backend,
            allow_model_change,
            ..
        } = self;
        let data_dir = data_dir.as_path();
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
            VectorBackend::Embedded => Arc::new(PartitionedIndex::open(&dirs.vectors(), dim)?),
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
}
