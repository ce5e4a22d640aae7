//! Keeping both derived indexes in line with the store: per write (`index`,
//! `unindex`), at every start (`reconcile`, by id and version, so nothing is
//! lost or resurrected), on request (`reindex`), and in the background
//! (`optimize`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use uuid::Uuid;

use super::{blocking, Engine};
use crate::domain::Memory;
use crate::error::Result;
use crate::lexical::LexicalDoc;
use crate::runner::PeriodicTask;
use crate::vector::VectorPoint;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReconcileReport {
    /// The start skipped the comparison: a clean shutdown recorded where the
    /// indexes agreed with the store, and the repair loop applies the changes
    /// since (`clean_shutdown.rs`); every count is then 0.
    pub from_clean_shutdown: bool,
    pub store_indexed: usize,
    pub lexical_added: usize,
    pub lexical_removed: usize,
    pub vector_added: usize,
    pub vector_removed: usize,
}

impl Engine {
    /// Brings both indexes in line with these memories: indexed statuses are
    /// upserted, others removed. Failures are logged, not returned: the store
    /// already holds the truth and `reconcile` repairs the indexes.
    pub(crate) async fn index(&self, memories: &[Memory], vectors: Vec<Vec<f32>>, refresh: bool) {
        if let Err(e) = self.try_index(memories, vectors, refresh).await {
            tracing::error!(error = %e, count = memories.len(), "index update failed; the repair loop will repair it");
            self.index_write_failed();
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
            self.index_write_failed();
        }
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
            from_clean_shutdown: false,
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
        let done = crate::service::ingest::pipeline(
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

    /// Rewrites the lexical index's segments that hold deletes and collects
    /// the old files, so deleted text is physically gone from disk.
    pub(crate) async fn purge_lexical(&self) -> Result<()> {
        let lexical = self.0.lexical.clone();
        blocking(move || lexical.purge()).await
    }

    /// Builds the vector index's search structures; run by a background task.
    pub async fn optimize(&self) -> Result<()> {
        let vectors = self.0.vectors.clone();
        self.0.writes_since_optimize.store(0, Ordering::Relaxed);
        blocking(move || vectors.optimize()).await
    }
}

/// The background index maintainer: every interval it makes the vector
/// index durable (qdrant-edge persists writes only on flush, and whatever a
/// crash loses is re-embedded by `reconcile`, so flushing bounds that work),
/// and once `indexing.optimize_after_writes` writes were made, or as many
/// points sit outside HNSW (after a rebuild), it builds the HNSW graph.
/// Never on the request path. Deletes nothing.
pub struct IndexOptimizer {
    engine: Engine,
}

impl IndexOptimizer {
    pub fn new(engine: Engine) -> Self {
        IndexOptimizer { engine }
    }
}

#[async_trait]
impl PeriodicTask for IndexOptimizer {
    fn name(&self) -> &'static str {
        "index-optimizer"
    }

    fn interval(&self) -> Duration {
        Duration::from_secs(self.engine.policy().indexing.optimize_interval_secs.max(1))
    }

    fn run_at_start(&self) -> bool {
        false
    }

    async fn run_once(&mut self) -> Result<()> {
        let engine = &self.engine;
        let vectors = engine.0.vectors.clone();
        if let Err(e) = blocking(move || vectors.flush()).await {
            tracing::warn!(error = %e, "vector index flush failed");
        }
        let threshold = engine.0.policy.indexing.optimize_after_writes;
        let due = engine.0.writes_since_optimize.load(Ordering::Relaxed) >= threshold || {
            // Points the index holds outside HNSW, whoever wrote them: a
            // rebuild (an erasure's purge) rewrites every point into a fresh
            // shard, and without this a million-point index stayed a brute
            // force scan (57 ms a search) until enough new writes came.
            let vectors = engine.0.vectors.clone();
            blocking(move || vectors.unindexed()).await? >= threshold.max(1)
        };
        if due {
            engine.optimize().await?;
        }
        Ok(())
    }
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
