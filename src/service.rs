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

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Semaphore};
use uuid::Uuid;

use crate::clock::SharedClock;
use crate::domain::memory::{validate_id, validate_metadata, validate_text, validate_unit};
use crate::domain::ranking::{self, Candidates, Hit, RankingParams};
use crate::domain::rerank::{self, QueryTerms};
use crate::domain::{Kind, Memory, MemoryPatch, NewMemory, Scope, Status, Tier};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::lexical::{LexicalDoc, LexicalIndex};
use crate::policy::Policy;
use crate::store::{
    text_hash, AuditAction, AuditEvent, CacheOwner, ListQuery, MemoryStore, StoreStats, ThreadRef,
};
use crate::vector::{VectorIndex, VectorPoint};

/// Who is acting, and within which tenant and user they may act.
#[derive(Clone, Debug, PartialEq)]
pub struct Actor {
    /// Recorded in audit events: a key id, `cli`, `system`.
    pub id: String,
    pub tenant_id: String,
    /// `Some` restricts every operation to this user's memories (a user key).
    pub user_id: Option<String>,
    /// May write reference memory.
    pub admin: bool,
}

impl Actor {
    /// The local operator (CLI, dev mode): default tenant, every user, admin.
    pub fn local(id: &str) -> Self {
        Actor {
            id: id.to_string(),
            tenant_id: crate::domain::scope::DEFAULT_TENANT.to_string(),
            user_id: None,
            admin: true,
        }
    }

    /// Whether this actor may see a memory (tenant, and user when bound).
    pub fn can_read(&self, m: &Memory) -> bool {
        m.tenant_id == self.tenant_id
            && match (&self.user_id, m.tier) {
                (_, Tier::Reference) => true,
                (None, _) => true,
                (Some(u), _) => m.user_id.as_deref() == Some(u),
            }
    }

    /// Whether this actor may change a memory: reference memory is admin-only.
    pub fn can_write(&self, m: &Memory) -> bool {
        self.can_read(m) && (m.tier != Tier::Reference || self.admin)
    }

    /// The user a request may act for: a bound key forces its own user.
    pub fn user_for(&self, requested: Option<&str>) -> Result<Option<String>> {
        match (&self.user_id, requested) {
            (Some(bound), Some(r)) if bound != r => Err(Error::Forbidden(
                "this key may only act for its own user".into(),
            )),
            (Some(bound), _) => Ok(Some(bound.clone())),
            (None, r) => Ok(r.map(str::to_string)),
        }
    }
}

/// Which retrieval legs a search uses (the evaluation tool ablates them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Legs {
    Lexical,
    Vector,
    #[default]
    Hybrid,
}

/// A search, already scoped.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub scope: Scope,
    pub query: String,
    pub top_k: Option<usize>,
    pub legs: Legs,
    /// Overrides the policy's ranking (evaluation presets).
    pub ranking: Option<RankingParams>,
    /// Whether time decay applies (evaluation presets switch it off).
    pub decay: bool,
    /// Metadata equality filters, applied to the hydrated memories.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub created_after: Option<DateTime<Utc>>,
    pub created_before: Option<DateTime<Utc>>,
    /// Whether returned hits count as accessed (evaluation says no).
    pub record_access: bool,
}

impl SearchRequest {
    pub fn new(scope: Scope, query: impl Into<String>) -> Self {
        SearchRequest {
            scope,
            query: query.into(),
            top_k: None,
            legs: Legs::Hybrid,
            ranking: None,
            decay: true,
            metadata: Default::default(),
            created_after: None,
            created_before: None,
            record_access: true,
        }
    }
}

/// Hits and where the time went.
#[derive(Clone, Debug)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    pub embed_ms: f64,
    pub total_ms: f64,
    pub stages: SearchStages,
}

/// Milliseconds per stage of one search (`/metrics` exports them). The two
/// legs run concurrently, so the stages can add up to more than the total.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SearchStages {
    /// Embedding the query.
    pub embed_ms: f64,
    /// The BM25 leg (tantivy).
    pub lexical_ms: f64,
    /// The vector leg's index query, after embedding.
    pub vector_ms: f64,
    /// Fusing the two candidate lists.
    pub fuse_ms: f64,
    /// Reading the candidates from the store and re-checking their scope.
    pub hydrate_ms: f64,
    /// Decay, importance and the final cut to `top_k`.
    pub rank_ms: f64,
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// What start-up (or `reindex`) did to bring the indexes in line with the store.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReconcileReport {
    pub store_indexed: usize,
    pub lexical_added: usize,
    pub lexical_removed: usize,
    pub vector_added: usize,
    pub vector_removed: usize,
}

/// A reference document to ingest.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DocumentInput {
    /// Stable id chosen by the caller; generated when absent.
    pub document_id: Option<String>,
    pub title: Option<String>,
    pub text: String,
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub importance: Option<f32>,
    pub created_at: Option<DateTime<Utc>>,
}

/// What ingesting a document did.
#[derive(Clone, Debug, Serialize)]
pub struct DocumentReceipt {
    pub document_id: String,
    pub chunk_ids: Vec<Uuid>,
    /// Chunks of an earlier version of the same document, now soft-deleted.
    pub replaced_chunks: usize,
}

/// Counts for `mnemo stats` and `/metrics`.
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
    access_tx: mpsc::Sender<(Vec<Uuid>, DateTime<Utc>)>,
    writes_since_optimize: AtomicUsize,
    /// "Forget all my data" jobs running on this node (`erasure.rs`).
    erasures: Arc<crate::erasure::ErasureJobs>,
    /// How far the index repair loop is (`repair.rs`).
    repair: Arc<crate::repair::RepairStatus>,
    /// Model calls per user in the last minute (`quota.rs`).
    model_calls: Arc<crate::quota::ModelCallQuota>,
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

fn embed_overloaded() -> Error {
    Error::Overloaded {
        message: "too many embedding requests in flight".into(),
        retry_after_secs: 1,
    }
}

async fn blocking<T, F>(f: F) -> Result<T>
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
        let (access_tx, access_rx) = mpsc::channel::<crate::access::Access>(1024);
        tokio::spawn(crate::access::record(parts.store.clone(), access_rx));
        let model_calls = Arc::new(crate::quota::ModelCallQuota::new(
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
    pub fn erasure_jobs(&self) -> &crate::erasure::ErasureJobs {
        &self.0.erasures
    }

    pub(crate) fn erasure_jobs_arc(&self) -> Arc<crate::erasure::ErasureJobs> {
        self.0.erasures.clone()
    }

    /// How far the index repair loop is (`/readyz`, `/metrics`).
    pub fn repair_status(&self) -> &Arc<crate::repair::RepairStatus> {
        &self.0.repair
    }

    /// The per-user model-call quota (`quota.rs`).
    pub fn model_calls(&self) -> &crate::quota::ModelCallQuota {
        &self.0.model_calls
    }

    /// How many embedding calls are queued or running (for `/metrics`).
    pub fn embedding_queue_depth(&self) -> usize {
        EMBED_QUEUE - self.0.embed_permits.available_permits()
    }

    // ----- writes -------------------------------------------------------

    /// Validates a new memory into its stored form (without embedding).
    pub(crate) fn prepare(
        &self,
        actor: &Actor,
        new: NewMemory,
        now: DateTime<Utc>,
    ) -> Result<Memory> {
        let policy = &self.0.policy;
        let tier = new.tier.unwrap_or(Tier::LongTerm);
        validate_text(&new.text, policy.limits())?;
        validate_metadata(&new.metadata, policy.limits())?;
        let user_id = match tier {
            Tier::Reference => {
                if new.user_id.is_some() {
                    return Err(Error::invalid(
                        "user_id",
                        "reference memory is shared and has no user_id",
                    ));
                }
                if !actor.admin {
                    return Err(Error::Forbidden(
                        "only admin keys may write reference memory".into(),
                    ));
                }
                None
            }
            _ => {
                let user = actor.user_for(new.user_id.as_deref())?.ok_or_else(|| {
                    Error::invalid("user_id", format!("user_id is required for {tier} memory"))
                })?;
                validate_id("user_id", &user)?;
                Some(user)
            }
        };
        if tier == Tier::Working && new.thread_id.is_none() {
            return Err(Error::invalid(
                "thread_id",
                "working memory belongs to a thread: thread_id is required",
            ));
        }
        if let Some(t) = &new.thread_id {
            validate_id("thread_id", t)?;
        }
        let importance = new.importance.unwrap_or(policy.defaults.importance);
        validate_unit("importance", importance)?;
        let confidence = new.confidence.unwrap_or(policy.defaults.confidence);
        validate_unit("confidence", confidence)?;
        let status = if confidence < policy.lifecycle.pending_below_confidence {
            Status::Pending
        } else {
            Status::Active
        };
        let created_at = new.created_at.unwrap_or(now);
        let expires_at = new.expires_at.or_else(|| {
            (tier == Tier::Working && policy.lifecycle.working_ttl_days > 0).then(|| {
                created_at + chrono::Duration::days(policy.lifecycle.working_ttl_days as i64)
            })
        });
        let kind = new.kind.unwrap_or(match tier {
            Tier::Working => Kind::Message,
            Tier::LongTerm => Kind::Fact,
            Tier::Reference => Kind::Document,
        });
        Ok(Memory {
            id: uuid_at(created_at),
            tenant_id: actor.tenant_id.clone(),
            tier,
            user_id,
            thread_id: new.thread_id,
            kind,
            text: new.text,
            importance,
            confidence,
            status,
            created_at,
            updated_at: now,
            last_accessed_at: None,
            access_count: 0,
            expires_at,
            source: new.source,
            metadata: new.metadata,
            embedding_model: Some(self.0.embedder.model_id().to_string()),
            version: 1,
            supersedes: new.supersedes,
            superseded_by: None,
        })
    }

    /// Adds memories: all are validated before anything is written, then they
    /// are stored in one transaction and indexed. `refresh` makes them
    /// searchable before this returns.
    ///
    /// Long-term memories go through the lifecycle rules first (see
    /// [`Engine::remember`], which says what happened to each item): one that
    /// states the same fact as a stored memory of the same user *reinforces*
    /// it, and the stored memory is returned in its place (same id, no copy);
    /// an explicit correction supersedes the memory it corrects. One memory
    /// is returned per item, in order.
    pub async fn add(
        &self,
        actor: &Actor,
        items: Vec<NewMemory>,
        refresh: bool,
    ) -> Result<Vec<Memory>> {
        Ok(self
            .remember(actor, items, refresh)
            .await?
            .into_iter()
            .map(|r| r.memory)
            .collect())
    }

    /// Embeds memories' texts, using and filling the embedding cache. The
    /// cache is kept per owner (see [`CacheOwner`]) and a batch may mix
    /// owners; a text missing for several of them is embedded once.
    pub(crate) async fn embed_passages(&self, memories: &[Memory]) -> Result<Vec<Vec<f32>>> {
        self.embed_passages_from(memories, None).await
    }

    /// [`Engine::embed_passages`] for memories extracted from a thread: the
    /// vectors are cached only while the thread exists (see
    /// [`Engine::remember_from_thread`]).
    pub(crate) async fn embed_passages_from(
        &self,
        memories: &[Memory],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<Vec<Vec<f32>>> {
        let hashes: Vec<String> = memories.iter().map(|m| text_hash(&m.text)).collect();
        let model = self.0.embedder.model_id().to_string();
        let owners = CacheOwner::group(memories.iter().map(CacheOwner::of).zip(0..));
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; memories.len()];
        for (owner, items) in &owners {
            let wanted: Vec<String> = items.iter().map(|&i| hashes[i].clone()).collect();
            let cached = self
                .0
                .store
                .cached_embeddings(owner, &model, &wanted)
                .await?;
            for &i in items {
                vectors[i] = cached.get(&hashes[i]).cloned();
            }
        }
        // Each missing text once, in first-seen order.
        let mut missing: Vec<(&str, &str)> = Vec::new();
        let mut seen = HashSet::new();
        for (i, m) in memories.iter().enumerate() {
            if vectors[i].is_none() && seen.insert(hashes[i].as_str()) {
                missing.push((hashes[i].as_str(), m.text.as_str()));
            }
        }
        if !missing.is_empty() {
            let _permit = self.write_embed_permit()?;
            let embedder = self.0.embedder.clone();
            let texts: Vec<String> = missing.iter().map(|(_, t)| t.to_string()).collect();
            // One call: the embedder sorts by length, batches
            // (`indexing.embed_batch`) and uses every bulk session.
            let fresh = blocking(move || {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                embedder.embed_passages(&refs)
            })
            .await?;
            let fresh: HashMap<&str, Vec<f32>> =
                missing.iter().map(|(h, _)| *h).zip(fresh).collect();
            for (owner, items) in &owners {
                let mut entries: Vec<(String, Vec<f32>)> = Vec::new();
                let mut added: HashSet<&str> = HashSet::new();
                for &i in items {
                    if vectors[i].is_none() {
                        let v = fresh
                            .get(hashes[i].as_str())
                            .cloned()
                            .ok_or_else(|| Error::internal("embedding missing after embedding"))?;
                        if added.insert(hashes[i].as_str()) {
                            entries.push((hashes[i].clone(), v.clone()));
                        }
                        vectors[i] = Some(v);
                    }
                }
                if !entries.is_empty() {
                    self.0
                        .store
                        .cache_embeddings(owner, &model, &entries, from_thread)
                        .await?;
                }
            }
        }
        vectors
            .into_iter()
            .map(|v| v.ok_or_else(|| Error::internal("embedding missing after embedding")))
            .collect()
    }

    fn embed_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        self.0
            .embed_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| embed_overloaded())
    }

    /// An embedding permit for a write: refused while only the searches'
    /// reserved permits are left.
    fn write_embed_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        if self.0.embed_permits.available_permits() <= SEARCH_RESERVED_PERMITS {
            return Err(embed_overloaded());
        }
        self.embed_permit()
    }

    /// Brings both indexes in line with these memories: indexed statuses are
    /// upserted, others removed. Failures are logged, not returned: the store
    /// already holds the truth and `reconcile` repairs the indexes.
    pub(crate) async fn index(&self, memories: &[Memory], vectors: Vec<Vec<f32>>, refresh: bool) {
        if let Err(e) = self.try_index(memories, vectors, refresh).await {
            tracing::error!(error = %e, count = memories.len(), "index update failed; the repair loop will repair it");
            crate::repair::note_index_failure();
        }
    }

    async fn try_index(
        &self,
        memories: &[Memory],
        vectors: Vec<Vec<f32>>,
        refresh: bool,
    ) -> Result<()> {
        let mut docs = Vec::new();
        let mut points = Vec::new();
        let mut removed = Vec::new();
        for (m, v) in memories.iter().zip(vectors) {
            if m.status.is_indexed() {
                docs.push(lexical_doc(m));
                points.push(vector_point(m, v));
            } else {
                removed.push(m.id);
            }
        }
        let lexical = self.0.lexical.clone();
        let vectors_ix = self.0.vectors.clone();
        let n = docs.len() + removed.len();
        blocking(move || {
            if !removed.is_empty() {
                lexical.delete(&removed)?;
                vectors_ix.delete(&removed)?;
            }
            if !docs.is_empty() {
                lexical.upsert(docs)?;
                vectors_ix.upsert(points)?;
            }
            if refresh {
                lexical.commit()?;
            }
            Ok(())
        })
        .await?;
        self.0.writes_since_optimize.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }

    /// Removes memories from both indexes (status left the indexed set).
    pub(crate) async fn unindex(&self, ids: Vec<Uuid>, refresh: bool) {
        let lexical = self.0.lexical.clone();
        let vectors = self.0.vectors.clone();
        let r = blocking(move || {
            lexical.delete(&ids)?;
            vectors.delete(&ids)?;
            if refresh {
                lexical.commit()?;
            }
            Ok(())
        })
        .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "index delete failed; the repair loop will repair it");
            crate::repair::note_index_failure();
        }
    }

    /// Reads one memory the actor may see.
    pub async fn get(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        match self.0.store.get(id).await? {
            Some(m) if actor.can_read(&m) => Ok(m),
            // Another tenant's or user's memory is indistinguishable from none.
            _ => Err(Error::not_found(format!("memory {id}"))),
        }
    }

    /// Reads a memory the actor may change: reference memory is admin-only.
    pub async fn get_writable(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        let m = self.get(actor, id).await?;
        if !actor.can_write(&m) {
            return Err(Error::Forbidden(
                "only admin keys may change reference memory".into(),
            ));
        }
        Ok(m)
    }

    /// Changes a memory's text, importance, metadata or expiry. A text change
    /// re-embeds and re-indexes it.
    pub async fn update(
        &self,
        actor: &Actor,
        id: Uuid,
        patch: MemoryPatch,
        refresh: bool,
    ) -> Result<Memory> {
        let old = self.get_writable(actor, id).await?;
        if let Some(t) = &patch.text {
            validate_text(t, self.0.policy.limits())?;
        }
        if let Some(i) = patch.importance {
            validate_unit("importance", i)?;
        }
        if let Some(md) = &patch.metadata {
            validate_metadata(md, self.0.policy.limits())?;
        }
        let now = self.0.clock.now();
        let mut new = old.clone();
        if let Some(t) = patch.text {
            new.text = t;
        }
        if let Some(i) = patch.importance {
            new.importance = i;
        }
        if let Some(md) = patch.metadata {
            new.metadata = md;
        }
        if let Some(e) = patch.expires_at {
            new.expires_at = e;
        }
        new.updated_at = now;
        new.version = old.version + 1;
        let text_changed = new.text != old.text;
        let vectors = self.embed_passages(std::slice::from_ref(&new)).await?;
        let mut event = AuditEvent::for_memory(&new, AuditAction::Update, &actor.id, now);
        if text_changed {
            event.before_text = Some(old.text.clone());
            event.after_text = Some(new.text.clone());
        }
        self.0
            .store
            .update(&[(new.clone(), old.version)], &[event])
            .await?;
        self.index(std::slice::from_ref(&new), vectors, refresh)
            .await;
        Ok(new)
    }

    /// Moves a memory to another status (soft delete, restore, lifecycle
    /// transitions), audited, and brings the indexes in line.
    pub async fn set_status(
        &self,
        actor: &Actor,
        id: Uuid,
        status: Status,
        action: AuditAction,
        refresh: bool,
    ) -> Result<Memory> {
        let old = self.get_writable(actor, id).await?;
        let now = self.0.clock.now();
        let mut new = old.clone();
        new.status = status;
        new.updated_at = now;
        new.version = old.version + 1;
        let mut event = AuditEvent::for_memory(&new, action, &actor.id, now);
        event.details = serde_json::json!({"from": old.status, "to": status});
        self.0
            .store
            .update(&[(new.clone(), old.version)], &[event])
            .await?;
        if status.is_indexed() {
            self.index_committed(std::slice::from_ref(&new), vec![], None, refresh)
                .await;
        } else {
            self.unindex(vec![id], refresh).await;
        }
        Ok(new)
    }

    /// Soft-deletes a memory: kept in the store with its history, gone from
    /// retrieval, restorable.
    pub async fn delete(&self, actor: &Actor, id: Uuid) -> Result<Memory> {
        self.set_status(actor, id, Status::Deleted, AuditAction::Delete, true)
            .await
    }

    pub async fn list(&self, actor: &Actor, mut query: ListQuery) -> Result<Vec<Memory>> {
        query.tenant_id = actor.tenant_id.clone();
        if query.tier != Some(Tier::Reference) {
            query.user_id = actor.user_for(query.user_id.as_deref())?;
        }
        if let Some(u) = &query.user_id {
            validate_id("user_id", u)?;
        }
        self.0.store.list(&query).await
    }

    pub async fn history(&self, actor: &Actor, id: Uuid) -> Result<Vec<AuditEvent>> {
        self.get(actor, id).await?;
        self.0.store.history(id).await
    }

    /// Makes every write so far searchable (tests, `refresh`, shutdown).
    pub async fn commit(&self) -> Result<()> {
        let lexical = self.0.lexical.clone();
        let vectors = self.0.vectors.clone();
        blocking(move || {
            lexical.commit()?;
            vectors.flush()
        })
        .await
    }

    // ----- reference documents ------------------------------------------

    /// Ingests a reference document: cut into chunks by the policy, each chunk
    /// a reference memory linked to the document. Re-ingesting a document id
    /// replaces its chunks (the old ones are soft-deleted). Admin only.
    pub async fn ingest_document(
        &self,
        actor: &Actor,
        doc: DocumentInput,
    ) -> Result<DocumentReceipt> {
        if !actor.admin {
            return Err(Error::Forbidden(
                "only admin keys may write reference memory".into(),
            ));
        }
        let document_id = doc
            .document_id
            .unwrap_or_else(|| Uuid::now_v7().to_string());
        validate_id("document_id", &document_id)?;
        if doc.text.trim().is_empty() {
            return Err(Error::invalid("text", "document text must not be empty"));
        }
        let policy = &self.0.policy.reference;
        let chunks =
            crate::domain::chunk::chunk(&doc.text, policy.chunk_chars, policy.chunk_overlap_chars);
        if chunks.len() > self.0.policy.limits.max_batch {
            return Err(Error::TooLarge {
                field: "text",
                message: format!(
                    "the document makes {} chunks; the limit is {} (policy limits.max_batch)",
                    chunks.len(),
                    self.0.policy.limits.max_batch
                ),
            });
        }
        let items = chunks
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                let mut metadata = doc.metadata.clone();
                if let Some(t) = &doc.title {
                    metadata.insert("title".into(), t.clone().into());
                }
                NewMemory {
                    tier: Some(Tier::Reference),
                    kind: Some(Kind::Document),
                    text,
                    importance: doc.importance,
                    created_at: doc.created_at,
                    source: crate::domain::Source {
                        document_id: Some(document_id.clone()),
                        chunk_index: Some(i as u32),
                        ..Default::default()
                    },
                    metadata,
                    ..Default::default()
                }
            })
            .collect();
        // One transaction: new chunks in, every live old chunk out (document.rs).
        let (added, replaced) = self.replace_document(actor, &document_id, items).await?;
        Ok(DocumentReceipt {
            document_id,
            chunk_ids: added.into_iter().map(|m| m.id).collect(),
            replaced_chunks: replaced,
        })
    }

    /// Soft-deletes every chunk of a reference document. Admin only.
    pub async fn delete_document(&self, actor: &Actor, document_id: &str) -> Result<usize> {
        if !actor.admin {
            return Err(Error::Forbidden(
                "only admin keys may write reference memory".into(),
            ));
        }
        match self.delete_document_chunks(actor, document_id).await? {
            0 => Err(Error::not_found(format!("document {document_id}"))),
            n => Ok(n),
        }
    }

    async fn delete_document_chunks(&self, actor: &Actor, document_id: &str) -> Result<usize> {
        // An empty replacement: every live chunk out, in one transaction.
        Ok(self.replace_document(actor, document_id, vec![]).await?.1)
    }

    // ----- reads --------------------------------------------------------

    /// Hybrid search within a scope.
    pub async fn search(&self, req: SearchRequest) -> Result<SearchResult> {
        let started = Instant::now();
        req.scope.validate()?;
        let query = req.query.trim().to_string();
        if query.is_empty() {
            return Err(Error::invalid("query", "query must not be empty"));
        }
        validate_text(&query, self.0.policy.limits())?;
        let policy = &self.0.policy;
        let top_k = req.top_k.unwrap_or(policy.retrieval.default_top_k);
        if top_k == 0 || top_k > policy.retrieval.max_top_k {
            return Err(Error::invalid(
                "top_k",
                format!("top_k must be between 1 and {}", policy.retrieval.max_top_k),
            ));
        }
        let n = policy.candidates(top_k);
        let filter = req.scope.filter();
        if filter.clauses.is_empty() {
            return Ok(SearchResult {
                hits: vec![],
                embed_ms: 0.0,
                total_ms: 0.0,
                stages: SearchStages::default(),
            });
        }

        let lexical_leg = async {
            if req.legs == Legs::Vector {
                return Ok((Vec::new(), 0.0, None));
            }
            let lexical = self.0.lexical.clone();
            let (q, f) = (query.clone(), filter.clone());
            blocking(move || {
                let t = Instant::now();
                let hits = lexical.search(&q, &f, n)?;
                let terms = lexical.query_terms(&q)?;
                Ok((hits, ms_since(t), terms))
            })
            .await
        };
        let vector_leg = async {
            if req.legs == Legs::Lexical {
                return Ok((Vec::new(), 0.0, 0.0, 1.0));
            }
            let _permit = self.embed_permit()?;
            let embedder = self.0.embedder.clone();
            let vectors = self.0.vectors.clone();
            let (q, f) = (query.clone(), filter.clone());
            let min_sim = policy.min_vector_similarity();
            blocking(move || {
                let t = Instant::now();
                let v = embedder.embed_query(&q)?;
                let embed_ms = ms_since(t);
                let t = Instant::now();
                let mut hits = vectors.search(&v, &f, n)?;
                hits.retain(|(_, s)| *s >= min_sim);
                Ok((hits, embed_ms, ms_since(t), embedder.known_token_share(&q)))
            })
            .await
        };
        let (lexical, vector) = tokio::join!(lexical_leg, vector_leg);
        let (lexical, lexical_ms, terms): (Candidates, f64, Option<QueryTerms>) = lexical?;
        let (vector, embed_ms, vector_ms, vector_confidence): (Candidates, f64, f64, f32) = vector?;

        let params = req.ranking.clone().unwrap_or_else(|| policy.ranking());
        let t = Instant::now();
        let scales = ranking::QueryScales {
            lexical_full_match: terms.as_ref().map(|t| t.full_match_score),
            vector_confidence,
        };
        let fused = ranking::fuse_scaled(&lexical, &vector, params.fusion, scales);
        let fuse_ms = ms_since(t);
        let t = Instant::now();
        let ids: Vec<Uuid> = fused.iter().map(|f| f.id).collect();
        let now = self.0.clock.now();
        let mut memories = self.0.store.get_many(&ids).await?;
        // The store is the truth: re-check scope, status and expiry there, so
        // that index lag can never return another user's or a deleted memory.
        memories.retain(|_, m| {
            filter.matches(&m.owner(), m.tier, m.thread_id.as_deref(), m.status, m.kind)
                && m.tenant_id == req.scope.tenant_id
                && m.expires_at.is_none_or(|e| e > now)
                && req.created_after.is_none_or(|a| m.created_at >= a)
                && req.created_before.is_none_or(|b| m.created_at < b)
                && req
                    .metadata
                    .iter()
                    .all(|(k, v)| m.metadata.get(k) == Some(v))
        });
        let hydrate_ms = ms_since(t);
        let t = Instant::now();
        let use_decay = req.decay;
        let window = params.rerank.map_or(top_k, |r| r.depth.max(top_k));
        let hits = ranking::rank(
            fused,
            &memories,
            now,
            &params,
            |m| {
                if use_decay {
                    policy.half_life_days(m)
                } else {
                    None
                }
            },
            window,
        );
        let mut hits = match (&params.rerank, &terms) {
            (Some(r), Some(terms)) => {
                rerank::rerank(hits, terms, crate::lexical::analyzer::analyze, r)
            }
            _ => hits,
        };
        hits.truncate(top_k);
        let rank_ms = ms_since(t);
        if req.record_access && !hits.is_empty() {
            let ids = hits.iter().map(|h| h.memory.id).collect();
            // Off the request path; if the recorder is saturated, skip.
            let _ = self.0.access_tx.try_send((ids, now));
        }
        Ok(SearchResult {
            hits,
            embed_ms,
            total_ms: ms_since(started),
            stages: SearchStages {
                embed_ms,
                lexical_ms,
                vector_ms,
                fuse_ms,
                hydrate_ms,
                rank_ms,
            },
        })
    }

    // ----- maintenance --------------------------------------------------

    /// Of index entries the store did not list as indexed, those it still
    /// does not index now (missing, or in a status indexes never hold).
    pub(crate) async fn still_unindexed(&self, ids: Vec<Uuid>) -> Result<Vec<Uuid>> {
        let mut gone = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(1000) {
            let found = self.0.store.get_many(chunk).await?;
            gone.extend(
                chunk
                    .iter()
                    .copied()
                    .filter(|id| found.get(id).is_none_or(|m| !m.status.is_indexed())),
            );
        }
        Ok(gone)
    }

    /// Repairs divergence between the store and the indexes: indexes missing
    /// or holding a stale version of an indexed memory get it (re-embedded);
    /// entries the store no longer indexes are removed.
    pub async fn reconcile(&self) -> Result<ReconcileReport> {
        let truth: HashMap<Uuid, i64> =
            self.0.store.indexed_versions().await?.into_iter().collect();
        let lexical = self.0.lexical.clone();
        let vectors = self.0.vectors.clone();
        let (lex_entries, vec_entries) = blocking(move || {
            lexical.commit()?;
            Ok((lexical.entries()?, vectors.entries()?))
        })
        .await?;
        let diff = |entries: &[(Uuid, i64)]| {
            let have: HashMap<Uuid, i64> = entries.iter().copied().collect();
            let extra: Vec<Uuid> = entries
                .iter()
                .filter(|(id, _)| !truth.contains_key(id))
                .map(|(id, _)| *id)
                .collect();
            let missing: Vec<Uuid> = truth
                .iter()
                .filter(|(id, v)| have.get(id) != Some(v))
                .map(|(id, _)| *id)
                .collect();
            (extra, missing)
        };
        let (lex_extra, lex_missing) = diff(&lex_entries);
        let (vec_extra, vec_missing) = diff(&vec_entries);
        // An entry absent from `truth` may belong to a memory another node
        // committed after `truth` was read (it writes the store first, then
        // the shared index): ask the store again, after the entries were
        // read, and delete only what it still does not index.
        let lex_extra = self.still_unindexed(lex_extra).await?;
        let vec_extra = self.still_unindexed(vec_extra).await?;
        let report = ReconcileReport {
            store_indexed: truth.len(),
            lexical_added: lex_missing.len(),
            lexical_removed: lex_extra.len(),
            vector_added: vec_missing.len(),
            vector_removed: vec_extra.len(),
        };
        let lexical = self.0.lexical.clone();
        let vectors = self.0.vectors.clone();
        blocking(move || {
            lexical.delete(&lex_extra)?;
            vectors.delete(&vec_extra)?;
            Ok(())
        })
        .await?;
        let lex_missing: HashSet<Uuid> = lex_missing.into_iter().collect();
        let vec_missing: HashSet<Uuid> = vec_missing.into_iter().collect();
        let mut todo: Vec<Uuid> = lex_missing.union(&vec_missing).copied().collect();
        todo.sort();
        for chunk in todo.chunks(1000) {
            let found = self.0.store.get_many(chunk).await?;
            let mems: Vec<Memory> = chunk
                .iter()
                .filter_map(|id| found.get(id).cloned())
                .collect();
            let vecs = self.embed_passages(&mems).await?;
            let mut docs = Vec::new();
            let mut points = Vec::new();
            for (m, v) in mems.iter().zip(vecs) {
                if lex_missing.contains(&m.id) {
                    docs.push(lexical_doc(m));
                }
                if vec_missing.contains(&m.id) {
                    points.push(vector_point(m, v));
                }
            }
            let lexical = self.0.lexical.clone();
            let vectors = self.0.vectors.clone();
            blocking(move || {
                lexical.upsert(docs)?;
                vectors.upsert(points)
            })
            .await?;
        }
        self.commit().await?;
        if report
            != (ReconcileReport {
                store_indexed: report.store_indexed,
                ..Default::default()
            })
        {
            tracing::info!(?report, "indexes repaired from the store");
        }
        Ok(report)
    }

    /// Rebuilds both indexes from the store, re-embedding with the current
    /// model (cached embeddings of the same model are reused).
    pub async fn reindex(&self, mut progress: impl FnMut(usize, usize)) -> Result<usize> {
        let total = self.0.store.indexed_versions().await?.len();
        let lexical = self.0.lexical.clone();
        let vectors = self.0.vectors.clone();
        blocking(move || {
            lexical.clear()?;
            vectors.clear()
        })
        .await?;
        // Reading and embedding the next batch overlaps with indexing this one.
        let done = crate::ingest::pipeline(
            |tx| async move {
                let mut after = None;
                loop {
                    let batch = self.0.store.scan_indexed(after, 512).await?;
                    let Some(last) = batch.last() else { break };
                    after = Some(last.id);
                    let vecs = self.embed_passages(&batch).await?;
                    if tx.send((batch, vecs)).await.is_err() {
                        break;
                    }
                }
                Ok(())
            },
            |mut rx| async move {
                let mut done = 0;
                while let Some((batch, vecs)) = rx.recv().await {
                    self.try_index(&batch, vecs, false).await?;
                    done += batch.len();
                    progress(done, total);
                }
                Ok(done)
            },
        )
        .await?;
        self.commit().await?;
        self.optimize().await?;
        Ok(done)
    }

    /// Builds the vector index's search structures; run by a background task.
    pub async fn optimize(&self) -> Result<()> {
        let vectors = self.0.vectors.clone();
        self.0.writes_since_optimize.store(0, Ordering::Relaxed);
        blocking(move || vectors.optimize()).await
    }

    /// Starts the background index maintainer: every interval it makes the
    /// vector index durable (qdrant-edge persists writes only on flush, and
    /// whatever a crash loses is re-embedded by `reconcile`, so flushing
    /// bounds that work), and after enough writes it builds the HNSW graph.
    /// Never on the request path.
    pub fn spawn_optimizer(&self) -> tokio::task::JoinHandle<()> {
        let engine = self.clone();
        let every = Duration::from_secs(self.0.policy.indexing.optimize_interval_secs.max(1));
        let threshold = self.0.policy.indexing.optimize_after_writes;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let vectors = engine.0.vectors.clone();
                if let Err(e) = blocking(move || vectors.flush()).await {
                    tracing::warn!(error = %e, "vector index flush failed");
                }
                if engine.0.writes_since_optimize.load(Ordering::Relaxed) >= threshold {
                    if let Err(e) = engine.optimize().await {
                        tracing::warn!(error = %e, "vector index optimisation failed");
                    }
                }
            }
        })
    }

    pub async fn stats(&self) -> Result<EngineStats> {
        let store = self.0.store.stats().await?;
        let lexical = self.0.lexical.clone();
        let vectors = self.0.vectors.clone();
        let (lexical_docs, vector_points) =
            blocking(move || Ok((lexical.entries()?.len(), vectors.entries()?.len()))).await?;
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
        self.0.store.close().await
    }
}

/// A UUID v7 whose timestamp is the memory's creation time (back-dated
/// imports keep their order).
fn uuid_at(t: DateTime<Utc>) -> Uuid {
    let ms = t.timestamp_millis().max(0) as u64;
    let ts =
        uuid::Timestamp::from_unix(uuid::NoContext, ms / 1000, ((ms % 1000) * 1_000_000) as u32);
    Uuid::new_v7(ts)
}

pub(crate) fn lexical_doc(m: &Memory) -> LexicalDoc {
    LexicalDoc {
        id: m.id,
        text: m.text.clone(),
        owner: m.owner(),
        tier: m.tier,
        thread_id: m.thread_id.clone(),
        status: m.status,
        kind: m.kind,
        version: m.version,
    }
}

pub(crate) fn vector_point(m: &Memory, vector: Vec<f32>) -> VectorPoint {
    VectorPoint {
        id: m.id,
        vector,
        owner: m.owner(),
        tier: m.tier,
        thread_id: m.thread_id.clone(),
        status: m.status,
        kind: m.kind,
        created_at_ms: m.created_at.timestamp_millis(),
        importance: m.importance,
        version: m.version,
    }
}
