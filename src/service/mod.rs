//! The service: the one place where the store, both indexes and the embedder
//! meet. HTTP, MCP, jobs, the CLI and the evaluation tool all call it, so every
//! entry point runs the same code path.
//!
//! Write path: validate everything → embed (off the async runtime) → commit to
//! the store with audit events → update both indexes. The store is the source
//! of truth: if the process dies between the store commit and the index
//! update, [`Engine::reconcile`] (run at every start) repairs the indexes from
//! the store, by id and version, so nothing is lost or resurrected.
//!
//! Read path: both legs search under the same scope filter (inside each
//! index), candidates are fused, hydrated from the store (which re-checks
//! scope, status and expiry against the source of truth), then ranked with
//! decay and importance. Access is recorded by a background task.
//!
//! One use case per file, each an `impl Engine` block: `write.rs` (add,
//! update, transition, delete), `remember.rs` (the lifecycle rules on a
//! write), `review.rs` (confirm, reject, restore, supersede, lineage),
//! `read.rs`, `search.rs`, `context.rs` (the memory block), `reference.rs`
//! (documents), `embed.rs` (passage embedding and its cache), `index.rs`
//! (index upkeep: reconcile, reindex, optimize), `erasure.rs`, `export.rs`,
//! `keys.rs`, `cluster.rs` (the lexical follower). This file holds the
//! engine, its parts and its construction.

pub mod access;
mod builder;
pub mod clean_shutdown;
pub mod cluster;
pub mod command_engine;
mod context;
mod document;
mod embed;
pub mod erasure;
pub mod export;
pub mod import_check;
mod index;
pub mod ingest;
pub mod keys;
pub mod quota;
mod read;
mod reference;
mod remember;
pub mod repair;
mod review;
mod search;
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Semaphore};
use uuid::Uuid;

use crate::clock::SharedClock;
use crate::domain::{Status, Tier};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::lexical::LexicalIndex;
use crate::policy::Policy;
use crate::store::{
    ChangeFeed, EmbeddingCache, JobStore, KeyStore, MemoryStore, StoreStats, ThreadStore,
};
use crate::vector::VectorIndex;

pub use builder::{EngineBuilder, Opened};
pub use context::ContextRequest;
pub(crate) use index::{lexical_doc, vector_point};
pub use index::{IndexOptimizer, ReconcileReport};
pub use read::next_page;
pub use reference::{DocumentInput, DocumentReceipt};
pub use remember::{Outcome, Remembered};
pub use search::{Legs, SearchRequest, SearchResult, SearchStages};

/// Counts for `mnemo stats` and the inspector.
#[derive(Clone, Debug, Serialize)]
pub struct EngineStats {
    pub store: StoreStats,
    pub lexical_docs: usize,
    pub vector_points: usize,
    pub embedding_model: String,
}

/// Where an engine keeps its files.
#[derive(Clone, Debug)]
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn database(&self) -> PathBuf {
        self.0.join("mnemo.db")
    }
    pub fn lexical(&self) -> PathBuf {
        self.0.join("lexical")
    }
    pub fn vectors(&self) -> PathBuf {
        self.0.join("vectors")
    }
    pub fn index_meta(&self) -> PathBuf {
        self.0.join("index_meta.json")
    }
}

/// Which embedding model built the vector index; a different model must go
/// through `reindex`, never mix in one index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    pub embedding_model: String,
    pub dim: usize,
}

impl IndexMeta {
    pub fn read(path: &Path) -> Result<Option<Self>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::internal(format!("corrupt {}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(self).map_err(Error::internal)?,
        )?;
        std::fs::rename(tmp, path)?;
        Ok(())
    }

    /// The name of the model ([`crate::embed::assets::ModelSpec::name`]) the
    /// indexes in `data_dir` were built with, when they exist and the model
    /// is a known one.
    pub fn indexed_model(data_dir: &Path) -> Result<Option<&'static str>> {
        let Some(meta) = Self::read(&DataDir(data_dir.to_path_buf()).index_meta())? else {
            return Ok(None);
        };
        Ok(crate::embed::assets::MODELS
            .iter()
            .find(|m| m.model_id == meta.embedding_model)
            .map(|m| m.name))
    }
}

/// The parts an engine is made of.
pub struct Parts {
    pub store: Arc<dyn MemoryStore>,
    pub lexical: Arc<dyn LexicalIndex>,
    pub vectors: Arc<dyn VectorIndex>,
    pub embedder: Arc<dyn Embedder>,
    pub policy: Arc<Policy>,
    pub clock: SharedClock,
}

struct Inner {
    store: Arc<dyn MemoryStore>,
    lexical: Arc<dyn LexicalIndex>,
    vectors: Arc<dyn VectorIndex>,
    embedder: Arc<dyn Embedder>,
    policy: Arc<Policy>,
    clock: SharedClock,
    /// Bounds concurrent embedding work; beyond it callers get `Overloaded`.
    embed_permits: Arc<Semaphore>,
    access_tx: mpsc::Sender<crate::service::access::Message>,
    writes_since_optimize: AtomicUsize,
    /// "Forget all my data" jobs running on this node (`erasure.rs`).
    erasures: Arc<erasure::ErasureJobs>,
    /// How far the index repair loop is (`repair.rs`).
    repair: Arc<crate::service::repair::RepairStatus>,
    /// Model calls per user in the last minute (`quota.rs`).
    model_calls: Arc<crate::service::quota::ModelCallQuota>,
}

/// The memory engine. Cheap to clone; share it.
#[derive(Clone)]
pub struct Engine(Arc<Inner>);

/// Most embedding calls waiting or running at once before `Overloaded`.
const EMBED_QUEUE: usize = 64;

/// Of [`EMBED_QUEUE`], permits only searches may take: writes (a bulk
/// ingest, many `POST /v1/memories` at once) are refused first, so they
/// cannot turn searches away.
pub const SEARCH_RESERVED_PERMITS: usize = 8;

/// Runs `f` on the blocking pool (index, embedding and file work stay off
/// the async runtime); a panic in it is an internal error.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
}

impl Engine {
    /// Assembles an engine from its parts and starts its background tasks
    /// (access recording). Call [`Engine::reconcile`] before serving.
    pub fn new(parts: Parts) -> Self {
        let (access_tx, access_rx) = mpsc::channel::<crate::service::access::Message>(1024);
        tokio::spawn(crate::service::access::record(
            parts.store.clone(),
            access_rx,
        ));
        let model_calls = Arc::new(crate::service::quota::ModelCallQuota::new(
            parts.policy.limits.model_calls_per_user_per_minute,
        ));
        Engine(Arc::new(Inner {
            store: parts.store,
            lexical: parts.lexical,
            vectors: parts.vectors,
            embedder: parts.embedder,
            policy: parts.policy,
            clock: parts.clock,
            embed_permits: Arc::new(Semaphore::new(EMBED_QUEUE)),
            access_tx,
            writes_since_optimize: AtomicUsize::new(0),
            erasures: Default::default(),
            repair: Default::default(),
            model_calls,
        }))
    }

    pub fn policy(&self) -> &Policy {
        &self.0.policy
    }

    pub fn clock(&self) -> &SharedClock {
        &self.0.clock
    }

    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.0.store
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.0.embedder
    }

    pub fn lexical(&self) -> &Arc<dyn LexicalIndex> {
        &self.0.lexical
    }

    pub fn vectors(&self) -> &Arc<dyn VectorIndex> {
        &self.0.vectors
    }

    /// The erasures running on this node.
    pub fn erasure_jobs(&self) -> &erasure::ErasureJobs {
        &self.0.erasures
    }

    pub(crate) fn erasure_jobs_arc(&self) -> Arc<erasure::ErasureJobs> {
        self.0.erasures.clone()
    }

    /// How far the index repair loop is (`/readyz`, `/metrics`).
    pub fn repair_status(&self) -> &Arc<crate::service::repair::RepairStatus> {
        &self.0.repair
    }

    /// The per-user model-call quota (`quota.rs`).
    pub fn model_calls(&self) -> &crate::service::quota::ModelCallQuota {
        &self.0.model_calls
    }

    /// How many embedding calls are queued or running (for `/metrics`).
    pub fn embedding_queue_depth(&self) -> usize {
        EMBED_QUEUE - self.0.embed_permits.available_permits()
    }

    pub async fn stats(&self) -> Result<EngineStats> {
        let store = self.0.store.stats().await?;
        let lexical = self.0.lexical.clone();
        let vectors = self.0.vectors.clone();
        let (lexical_docs, vector_points) =
            blocking(move || Ok((lexical.entry_count()?, vectors.entry_count()?))).await?;
        Ok(EngineStats {
            store,
            lexical_docs,
            vector_points,
            embedding_model: self.0.embedder.model_id().to_string(),
        })
    }

    /// Commits indexes and checkpoints the store; call at shutdown.
    pub async fn shutdown(&self) -> Result<()> {
        self.commit().await?;
        // The access counts of the searches so far, before the pool closes.
        let (done, flushed) = tokio::sync::oneshot::channel();
        if self
            .0
            .access_tx
            .send(crate::service::access::Message::Flush(done))
            .await
            .is_ok()
        {
            let _ = flushed.await;
        }
        self.0.store.close().await
    }

    /// The agent loop's threads, messages and turn leases.
    pub fn threads(&self) -> &dyn ThreadStore {
        self.0.store.as_ref()
    }

    /// API keys (`service/keys.rs` creates and authenticates them).
    pub fn keys(&self) -> &dyn KeyStore {
        self.0.store.as_ref()
    }

    /// The lifecycle jobs' selections, purges and leases.
    pub fn job_store(&self) -> &dyn JobStore {
        self.0.store.as_ref()
    }

    /// Passage vectors already embedded, per owner and model.
    pub fn embedding_cache(&self) -> &dyn EmbeddingCache {
        self.0.store.as_ref()
    }

    /// Whether the store answers (readiness): one read by key.
    pub async fn store_ready(&self) -> Result<()> {
        self.0.store.get(Uuid::nil()).await.map(|_| ())
    }

    /// The store's memory counts by tier and status (`/metrics`).
    pub async fn memory_counts(&self) -> Result<Vec<(Tier, Status, u64)>> {
        self.0.store.count_by_tier_status().await
    }

    /// The change feed and the cluster's node registry.
    pub fn feed(&self) -> &dyn ChangeFeed {
        self.0.store.as_ref()
    }
}
