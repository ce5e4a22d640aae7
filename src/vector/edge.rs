//! The vector index on Qdrant's engine, embedded in-process (`qdrant-edge`).
//!
//! One `EdgeVectorIndex` is one shard in one directory. The service opens
//! two of them through [`PartitionedIndex`] (`partitions.rs`):
//! `vectors/reference/` and `vectors/users/`, the latter with capped
//! segments so that an erasure rewrites little; this module is what each
//! partition is.
//!
//! **What it owns.** One directory, exclusively (an flock on `index.lock`
//! refuses a second process): an edge shard (segments and config, no WAL)
//! with a single unnamed dense vector of `dim` dimensions compared by
//! cosine, and one point per memory (point id = memory UUID). The payload is
//! `owner` (keyword, tenant index: the user isolation key), `tier`,
//! `thread_id` (keyed hash, absent when none, see [`PayloadKey`]), `status`,
//! `kind` (keywords, indexed), `created_at_ms`, `version` (integers) and
//! `importance` (float). Beside the shard: `payload.key` (the thread hash
//! key; an index without one was written before hashing and is migrated by a
//! rebuild at open) and `purge.pending` (an owner was deleted since the last
//! purge). `clear` empties the directory and starts it afresh (keeping the
//! key and the lock), so keep nothing else in it; a rebuild uses the
//! siblings `<dir>.next` and `<dir>.old`.
//!
//! **Threading.** The engine is synchronous and `Send + Sync`; every method
//! blocks. Searches, counts and scrolls run concurrently with each other and
//! with writes. Two locks keep the engine's own assumptions true:
//! - `shard` (RwLock): shared by every call, exclusive only for `clear`, which
//!   swaps the shard.
//! - `writes` (RwLock): shared by `upsert`, `delete` and `optimize`, exclusive
//!   for `flush` (kept from qdrant-edge 0.7.2, whose flush panicked when its
//!   locks were held; 0.9's blocks instead) and for `delete_owner` (so the
//!   count it returns is exactly what it deleted). So `flush` waits for a
//!   running `optimize` (seconds in release for 10k points); upserts do not.
//! - `optimizing` (Mutex): one engine `optimize` at a time, so a purge's
//!   vacuum thresholds apply to its own run only.
//!
//! **Durability.** The shard runs without a WAL (qdrant-edge 0.9's
//! `wal_enabled(false)`: operations are numbered from the highest version in
//! the segments). Writes go to the segments and are durable only once
//! `flush` returns; an unflushed write is lost in a crash, as it was with
//! 0.7.2, which did not replay its WAL either. The index is derived from the
//! store, so a lost write is repaired by reconciling `entries` versions. With
//! no WAL there is nothing to bound: no `wal` directory exists. A shard
//! created with a WAL (every 0.7.2 index; the engine refuses to turn an
//! existing shard's WAL off) is rebuilt without one at open, once (see
//! [`rebuild`]). `flush` writes only the segments changed since their last
//! flush (`EdgeShard::flush_changed`, a vendored addition): the engine's own
//! `flush` rewrites and fsyncs every segment's files and state, which at
//! 1M memories (38 user segments, plus the reference partition) was most of
//! an erasure's vector leg.
//!
//! **Deleted points.** The engine only marks a deleted point in its segment;
//! its vector and payload stay in the segment files until the segment is
//! rewritten. `purge_deleted` (after an erasure, when `purge.pending` says an
//! owner was deleted) runs the engine's vacuum with its thresholds at zero
//! for that one run: every segment holding a deleted point is rewritten from
//! its live points, the others keep their files, and the two flushes after
//! it let the engine remove the replaced segment directories.
//! `purge_unconditionally` (a resumed erasure) rebuilds the whole shard
//! instead, see its docs.
//!
//! **The graph is per owner.** Search is exact (brute force over the
//! filtered points) until `optimize` builds HNSW for segments above the
//! engine's indexing threshold (10 MB of vectors by default). The graph has
//! no global links (`m` = 0); each owner with more points than a quarter of
//! the full-scan threshold gets links among its own points (`payload_m` on
//! the `owner` tenant index), Qdrant's layout for multitenancy. Every search
//! is one query per scope clause, and every clause names one owner, so a
//! walk never leaves the owner's points: the tenant's reference chunks are
//! searched as a graph of their own rather than a filtered fifth of
//! everyone's, and a user with few memories is scored exactly from the
//! payload index. At 1M memories this took the vector leg from 7.6 to 3.1 ms
//! p50 with recall@10 against exact 0.887 → 0.954
//! (docs/decisions/0014-hnsw-per-owner.md). A shard built with a global graph is switched at open
//! and regraphed by the next `optimize`. Searches keep ACORN on, for status
//! or kind filters that select few of an owner's points (without it, a
//! filtered top-10 could return 1 hit).
//!
//! **Vectors are quantised** in the reference partition (not the users
//! partition, whose segments an erasure rewrites: [`Tuning::unquantized`]).
//! Each segment with a graph also holds an int8 copy of its vectors
//! (Qdrant's scalar quantisation, [`quantization`]), pinned in RAM: a
//! search walks the graph on those 384-byte copies and rescores the best
//! [`OVERSAMPLING`] × limit candidates with the f32 originals, so the
//! scores a search returns are exact cosines (fusion and the similarity
//! thresholds depend on them). The originals are mapped from disk without
//! being preloaded (`memory: cold`, in both partitions): a search reads
//! only the few it rescores. The vector leg in the service is mostly cache
//! misses after the query's embedding has streamed the model through L3
//! (docs/benchmarks/2026-12-01-rest-search.md, "Why the vector leg costs
//! three times the engine's own search"); a quarter of the bytes per visited node is what this buys. A
//! shard created with another layout is given this one at open, and its
//! segments are rewritten by the next `optimize` (as for the graph above).

mod implied;
mod partitions;
mod rebuild;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use parking_lot::{Mutex, RwLock};
use qdrant_edge::{
    AcornSearchParams, Condition, CountRequest, Distance, EdgeConfig, EdgeOptimizersConfig,
    EdgeShard, EdgeVectorParams, FieldCondition, Filter, HnswIndexConfig, JsonPath,
    KeywordIndexParams, Match, Memory, NamedQuery, PayloadFieldSchema, PayloadSchemaParams,
    PointId, PointInsertOperations, PointOperations, PointStruct, QuantizationConfig,
    QuantizationSearchParams, QueryEnum, QueryRequest, RetrieveRequest, ScalarQuantizationConfig,
    ScalarType, ScoringQuery, ScrollRequest, SearchParams, UpdateOperation, WithPayloadInterface,
    WithVector, DEFAULT_VECTOR_NAME,
};
use qdrant_edge::{CreateIndex, FieldIndexOperations};
use uuid::Uuid;

pub use self::partitions::PartitionedIndex;
pub use self::rebuild::RebuildStats;
use self::rebuild::{dir_bytes, Payloads};
use super::{
    check_points_dim, check_query_dim, keyword_filter, merge_nearest, payload_json, PayloadKey,
    VectorIndex, VectorPoint, F_KIND, F_OWNER, F_STATUS, F_THREAD, F_TIER, F_VERSION,
};
use crate::domain::scope::IndexFilter;
use crate::domain::Owner;
use crate::error::{Error, Result};
use crate::vector::VectorError;

/// Page size of the scroll behind `entries` and rebuilds.
const SCROLL_PAGE: usize = 1024;

/// The file beside the shard that holds its [`PayloadKey`].
const KEY_FILE: &str = "payload.key";

/// Locked (`flock`) by the process that has the index open: without a WAL
/// (whose lock refused a second writer before) nothing in the engine does.
const LOCK_FILE: &str = "index.lock";

/// Present while an owner's points were deleted and the shard not yet
/// rebuilt: `purge_deleted` rebuilds only then, so a second erasure of the
/// same user (or a resumed one) costs nothing, and a crash between the
/// delete and the rebuild still leads to one.
const PURGE_PENDING: &str = "purge.pending";

/// The vacuum thresholds `purge_deleted` sets for one `optimize`: every
/// segment holding at least one deleted point is rewritten (the engine's
/// test is `deleted / total > deleted_threshold`, and at least
/// `vacuum_min_vector_number` points or deleted indexed vectors).
const PURGE_DELETED_THRESHOLD: f64 = 0.0;
const PURGE_VACUUM_MIN_VECTORS: usize = 1;

/// The graph: no global HNSW links (`m` = 0), and links among each owner's
/// points (`payload_m`, on the `owner` tenant index) — Qdrant's layout for
/// multitenancy. Every search names one owner per clause (see
/// [`IndexFilter::per_clause`]), so the walk stays inside that owner's
/// points instead of filtering a graph of everyone's; an owner with fewer
/// points than the full-scan threshold is scored exactly from the payload
/// index. See the module docs for what it measured.
const GRAPH_M: usize = 0;
const GRAPH_PAYLOAD_M: usize = 16;

/// Threads of each shard's search pool, which scores a search's segments
/// (and answers counts and scrolls): half the cores, at least one. The
/// engine's default is four per core, and every search split its segments
/// over them: on 2 cores the idle workers spun in `sched_yield` (14% of the
/// service's CPU at one connection), and a search waited for a second worker
/// that the other leg or the embedder was holding the core from. Measured on
/// 2 cores (docs/decisions/0021-search-threads.md): at 1M memories the
/// vector leg took p50 / p95 2.11 / 8.98 ms with 8 threads, 2.25 / 9.11 with
/// 2 and 1.67 / 2.48 with 1; at 10k memories under 16 connections 4.87 →
/// 2.35 ms. Concurrent searches are a service's parallelism; half the cores
/// leaves the other half to the embedder and the lexical leg.
fn search_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get() / 2)
        .max(1)
}

/// Candidates a graph search keeps (`hnsw_ef`). The engine's default is
/// `ef_construct` (100), at which the owner graphs' recall was below the
/// global graph's (the plan before them); at 256 it is above it at 100k and
/// 1M memories, and the search is still 2.4–3× faster
/// (docs/decisions/0014-hnsw-per-owner.md). 128 is not a constant to take: it fell to
/// recall@50 0.907 (from 0.975) on a 20k-chunk reference graph
/// (docs/benchmarks/2026-12-01-rest-search.md, "Quantised vectors"), and on one user's 22,000 memories it kept 0.999
/// for queries like them but lost recall@10 for queries unlike them
/// (SciFact, CMRC 2018 and LoCoMo questions: 0.954–0.972 against
/// 0.988–0.990; docs/benchmarks/2026-12-01-rest-search.md, "The vector leg
/// reads its own candidates").
const SEARCH_EF: usize = 256;

/// Candidates rescored with the original vectors, as a multiple of the
/// limit, after the graph walk on the int8 copies. At 1 (the engine's
/// default) the int8 order decides which candidates are rescored, and
/// recall@50 against exact search was 0.968 on 10k memories of one user
/// with multilingual-e5-small, whose cosines sit in a narrow band; at 2 it
/// was 1.000 at `hnsw_ef` 128 and 256, and the search still 0.3 ms faster
/// than without quantisation (docs/decisions/0016-quantise-reference-only.md).
const OVERSAMPLING: f64 = 2.0;

/// Scalar int8 quantisation: one byte per dimension, scaled between the
/// 0.5 % and 99.5 % quantiles of the segment's values (so a few outliers
/// do not coarsen everyone's steps), pinned in RAM.
fn quantization() -> QuantizationConfig {
    QuantizationConfig::from(ScalarQuantizationConfig {
        r#type: ScalarType::Int8,
        quantile: Some(0.99),
        #[allow(deprecated)]
        always_ram: None,
        memory: Some(Memory::Pinned),
    })
}

/// Where the original vectors live: mapped from disk, not preloaded. The
/// graph walk reads the int8 copies; only rescoring reads an original.
const ORIGINALS: Memory = Memory::Cold;

/// The embedded Qdrant vector index. See the module docs.
pub struct EdgeVectorIndex {
    dir: PathBuf,
    dim: usize,
    tuning: Tuning,
    /// Hashes thread ids in payloads and filters; kept in [`KEY_FILE`].
    key: PayloadKey,
    /// `None` only after a `clear` that failed to recreate the shard.
    shard: RwLock<Option<EdgeShard>>,
    writes: RwLock<()>,
    /// The locked [`LOCK_FILE`]; a rebuild moves in the new directory's.
    lock: Mutex<std::fs::File>,
    /// Held by a rebuild (one at a time) and by `clear`.
    rebuilding: Mutex<()>,
    /// While a rebuild copies: the ids written since it started.
    touched: Mutex<Option<HashSet<Uuid>>>,
    /// Held by every engine `optimize` (HNSW builds and a purge's vacuum),
    /// so a purge's vacuum thresholds apply to its own run only.
    optimizing: Mutex<()>,
    /// Counts `delete_owner` calls that deleted something, so a rebuild
    /// knows whether one happened while it copied.
    owner_deletes: std::sync::atomic::AtomicU64,
    /// Set when `open` changed the shard's graph configuration or vector
    /// layout: its segments hold the old one until an `optimize` rebuilds
    /// them, so
    /// `unindexed` counts every point and the background optimiser runs.
    regraph_pending: std::sync::atomic::AtomicBool,
    /// Bytes of vectors upserted since the last `optimize` began: with a
    /// segment cap, an `upsert` that takes it past the cap optimises.
    unoptimized_bytes: std::sync::atomic::AtomicUsize,
    /// The writes begun and ended, and the filters every point passes
    /// (`implied.rs`).
    implied: implied::Implied,
}

impl std::fmt::Debug for EdgeVectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeVectorIndex")
            .field("dir", &self.dir)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

fn engine(context: &str, err: impl Into<crate::error::BoxError>) -> Error {
    VectorError::Engine {
        context: context.to_string(),
        source: err.into(),
    }
    .into()
}

fn key(name: &str) -> JsonPath {
    name.parse()
        .unwrap_or_else(|()| panic!("`{name}` is a valid payload key"))
}

fn keyword(field: &str, value: &str) -> Condition {
    Condition::Field(FieldCondition::new_match(
        key(field),
        Match::from(value.to_string()),
    ))
}

fn keyword_any(field: &str, values: Vec<String>) -> Condition {
    Condition::Field(FieldCondition::new_match(key(field), Match::from(values)))
}

fn owner_filter(owner: &Owner) -> Filter {
    Filter::new_must(keyword(F_OWNER, owner.as_str()))
}

/// Translates an [`IndexFilter`] into the engine's filter, or `None` when it
/// can match nothing.
fn translate_filter(filter: &IndexFilter, key: &PayloadKey) -> Option<Filter> {
    let kf = keyword_filter(filter, key)?;
    let all = |c: &Vec<(&str, String)>| -> Vec<Condition> {
        c.iter().map(|(f, v)| keyword(f, v)).collect()
    };
    let mut must: Vec<Condition> = match kf.clauses.as_slice() {
        // One clause (what a search sends, see `IndexFilter::per_clause`):
        // its keys go straight into `must`, where the planner's cardinality
        // estimate is the owner index's exact count.
        [only] => all(only),
        several => vec![Condition::Filter(Filter {
            should: Some(
                several
                    .iter()
                    .map(|c| {
                        Condition::Filter(Filter {
                            must: Some(all(c)),
                            ..Filter::default()
                        })
                    })
                    .collect(),
            ),
            ..Filter::default()
        })],
    };
    must.extend(kf.any_of.into_iter().map(|(f, v)| keyword_any(f, v)));
    Some(Filter {
        must: Some(must),
        ..Filter::default()
    })
}

/// The ids of an owner's points.
fn owner_ids(shard: &EdgeShard, owner: &Owner) -> Result<Vec<Uuid>> {
    let mut out = Vec::new();
    let mut offset = None;
    loop {
        let (records, next) = shard
            .scroll(ScrollRequest {
                offset,
                limit: Some(SCROLL_PAGE),
                filter: Some(owner_filter(owner)),
                with_payload: Some(WithPayloadInterface::Bool(false)),
                with_vector: WithVector::Bool(false),
                order_by: None,
            })
            .map_err(|e| engine("listing an owner's points", e))?;
        for r in records {
            out.push(point_uuid(r.id)?);
        }
        match next {
            Some(n) => offset = Some(n),
            None => return Ok(out),
        }
    }
}

fn point_uuid(id: PointId) -> Result<Uuid> {
    match id {
        PointId::Uuid(u) => Ok(u),
        PointId::NumId(n) => Err(VectorError::invalid(format!(
            "unexpected numeric point id {n} (points are keyed by memory UUID)"
        ))),
    }
}

/// The payload indexes: the owner is the tenant key; the other keywords are
/// filter-only (no extra HNSW links, which would multiply build time).
fn payload_indexes() -> Vec<(&'static str, PayloadFieldSchema)> {
    let kw = |is_tenant: bool| {
        PayloadFieldSchema::FieldParams(PayloadSchemaParams::Keyword(KeywordIndexParams {
            is_tenant: Some(is_tenant),
            enable_hnsw: Some(is_tenant),
            ..KeywordIndexParams::default()
        }))
    };
    vec![
        (F_OWNER, kw(true)),
        (F_TIER, kw(false)),
        (F_THREAD, kw(false)),
        (F_STATUS, kw(false)),
        (F_KIND, kw(false)),
    ]
}

impl EdgeVectorIndex {
    /// Opens the index in `dir` (created if needed), or creates an empty one
    /// for `dim`-dimensional vectors. Fails if the directory holds an index of
    /// another dimension: changing models goes through reindex.
    pub fn open(dir: &Path, dim: usize) -> Result<Self> {
        Self::open_with(dir, dim, Tuning::default())
    }

    /// As [`open`](Self::open), with engine thresholds for a newly created
    /// index; tests use tiny ones to exercise HNSW on little data.
    fn open_with(dir: &Path, dim: usize, tuning: Tuning) -> Result<Self> {
        if dim == 0 {
            return Err(VectorError::invalid("vector dimension must be positive"));
        }
        rebuild::recover(dir)?;
        let lock = lock_dir(dir)?;
        let (shard, relaid) = open_shard(dir, dim, shard_config(dim, tuning))?;
        if relaid {
            tracing::info!(
                "vector index: new vector layout configured (int8 copies, originals on disk); the next optimisation rewrites the segments"
            );
        }
        let key_path = dir.join(KEY_FILE);
        let stored = PayloadKey::load(&key_path)?;
        let migrate = stored.is_none() && shard_info(&shard)?.points_count > 0;
        // Created by qdrant-edge 0.7.2, whose WAL was never truncated; the
        // engine refuses to switch an existing shard's WAL off.
        let has_wal = shard.config().wal_enabled();
        reset_vacuum_thresholds(&shard)?;
        set_segment_cap(&shard, tuning.segment_cap_kb)?;
        let regraph = set_graph_config(&shard)? || relaid;
        let key = stored.unwrap_or_else(PayloadKey::random);
        let index = EdgeVectorIndex {
            dir: dir.to_path_buf(),
            dim,
            tuning,
            key,
            shard: RwLock::new(Some(shard)),
            writes: RwLock::new(()),
            lock: Mutex::new(lock),
            rebuilding: Mutex::new(()),
            touched: Mutex::new(None),
            optimizing: Mutex::new(()),
            owner_deletes: Default::default(),
            regraph_pending: regraph.into(),
            unoptimized_bytes: Default::default(),
            implied: Default::default(),
        };
        if migrate {
            // Written before payloads were hashed: rebuild with hashed thread
            // ids (the new directory gets the key; a crash before the swap
            // leaves the old one, migrated again at the next open).
            let stats = index.rebuild(Payloads::HashThreads)?;
            tracing::info!(
                points = stats.points,
                "vector payloads migrated to hashed thread ids"
            );
        } else if has_wal {
            // A copy into a shard created without a WAL (the old WAL and
            // everything in it go with the old directory).
            let stats = index.rebuild(Payloads::Keep)?;
            tracing::info!(
                points = stats.points,
                bytes_before = stats.bytes_before,
                bytes_after = stats.bytes_after,
                "vector index rebuilt without a WAL"
            );
        } else if !key_path.exists() {
            index.key.save(&key_path)?;
        }
        Ok(index)
    }

    /// Rebuilds the shard without its deleted points (see [`rebuild`]).
    pub fn rebuild_now(&self) -> Result<RebuildStats> {
        self.rebuild(Payloads::Keep)
    }

    /// Bytes of the shard's WAL files (0: the index runs without a WAL).
    pub fn wal_bytes(&self) -> u64 {
        dir_bytes(&self.dir.join("wal"))
    }

    /// Records ids written while a rebuild copies.
    fn touch(&self, ids: impl IntoIterator<Item = Uuid>) {
        if let Some(set) = self.touched.lock().as_mut() {
            set.extend(ids);
        }
    }

    /// The directory the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn with_shard<T>(&self, f: impl FnOnce(&EdgeShard) -> Result<T>) -> Result<T> {
        let guard = self.shard.read();
        match guard.as_ref() {
            Some(shard) => f(shard),
            None => Err(VectorError::invalid(format!(
                "vector index at {} is unavailable: a previous clear failed to recreate it",
                self.dir.display()
            ))),
        }
    }

    /// Runs the engine's optimisers: merges segments and builds HNSW for
    /// those above the indexing threshold.
    fn build_hnsw(&self) -> Result<()> {
        self.with_shard(|shard| {
            let _w = self.writes.read();
            let _o = self.optimizing.lock();
            self.unoptimized_bytes
                .store(0, std::sync::atomic::Ordering::Relaxed);
            shard
                .optimize()
                .map(|_| ())
                .map_err(|e| engine("optimizing", e))
        })?;
        self.regraph_pending
            .store(false, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Counts `bytes` of vectors written and, with a segment cap, optimises
    /// once they reach it. New points all go to the smallest appendable
    /// segment, which the engine never splits: a bulk of writes (an ingest,
    /// a rebuild, an eval, a migration) faster than the background optimiser
    /// would grow one segment past the cap, and an erasure's vacuum rewrites
    /// whole segments. The background optimiser (every 5,000 writes or a
    /// minute) keeps a service's own writes far below the cap, so a request
    /// only waits here when writes arrive at bulk speed.
    fn wrote(&self, bytes: usize) -> Result<()> {
        let pending = self
            .unoptimized_bytes
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed)
            + bytes;
        match self.tuning.segment_cap_kb {
            Some(kb) if pending >= kb * 1024 => self.build_hnsw(),
            _ => Ok(()),
        }
    }

    /// Rewrites every segment that holds a deleted point (the engine's
    /// vacuum, with thresholds at zero for this run), then flushes twice:
    /// the engine removes a replaced segment's directory in the flush after
    /// the swap, once no reader holds it. Returns the bytes of the segment
    /// directories that are gone.
    fn vacuum_deleted(&self) -> Result<u64> {
        self.with_shard(|shard| {
            let segments = self.dir.join("segments");
            let before = segment_dirs(&segments);
            {
                let _w = self.writes.read();
                let _o = self.optimizing.lock();
                let normal = shard.config().optimizers();
                shard
                    .set_optimizers_config(EdgeOptimizersConfig {
                        deleted_threshold: Some(PURGE_DELETED_THRESHOLD),
                        vacuum_min_vector_number: Some(PURGE_VACUUM_MIN_VECTORS),
                        ..normal.clone()
                    })
                    .map_err(|e| engine("setting vacuum thresholds", e))?;
                let optimized = shard.optimize().map_err(|e| engine("vacuuming", e));
                shard
                    .set_optimizers_config(normal)
                    .map_err(|e| engine("restoring vacuum thresholds", e))?;
                optimized?;
            }
            for _ in 0..2 {
                let _w = self.writes.write();
                shard
                    .flush_changed()
                    .map_err(|e| engine("flushing the vector index", e))?;
            }
            let after = segment_dirs(&segments);
            Ok(before
                .into_iter()
                .filter(|(name, _)| !after.iter().any(|(n, _)| n == name))
                .map(|(_, bytes)| bytes)
                .sum())
        })
    }

    /// The `limit` nearest points passing one clause's filter. A filter
    /// every point passes is left out of the walk (`implied.rs`), and the
    /// search runs again with it if a write began meanwhile.
    fn nearest(&self, vector: &[f32], filter: Filter, limit: usize) -> Result<Vec<(Uuid, f32)>> {
        self.with_shard(|shard| {
            let snapshot = self.implied.snapshot();
            if self.every_point_passes(shard, &filter, snapshot)? {
                let hits = Self::query(shard, vector, None, limit)?;
                if self.implied.unchanged_since(snapshot) {
                    return Ok(hits);
                }
            }
            Self::query(shard, vector, Some(filter), limit)
        })
    }

    /// Whether no point of the shard fails `filter` (see `implied.rs`).
    fn every_point_passes(
        &self,
        shard: &EdgeShard,
        filter: &Filter,
        snapshot: implied::Snapshot,
    ) -> Result<bool> {
        let count = |filter: Option<Filter>, exact: bool| {
            shard
                .count(CountRequest { filter, exact })
                .map_err(|e| engine("counting the points of a filter", e))
        };
        self.implied
            .every_point_passes(&format!("{filter:?}"), snapshot, || {
                // The payload index's estimate first (no point read): a
                // user's clause in a partition of many users ends here.
                if count(Some(filter.clone()), false)? < count(None, false)? {
                    return Ok(false);
                }
                let failing = Filter {
                    must_not: Some(vec![Condition::Filter(filter.clone())]),
                    ..Filter::default()
                };
                Ok(count(Some(failing), true)? == 0)
            })
    }

    /// One query of the engine.
    fn query(
        shard: &EdgeShard,
        vector: &[f32],
        filter: Option<Filter>,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>> {
        let request = QueryRequest {
            prefetches: Vec::new(),
            query: Some(ScoringQuery::Vector(QueryEnum::Nearest(
                NamedQuery::default_dense(vector.to_vec()),
            ))),
            filter,
            score_threshold: None,
            limit,
            offset: 0,
            // ACORN keeps recall up when HNSW is used under a selective
            // filter (a status or kind filter inside one owner's points); it
            // only engages below the default 40 % estimated selectivity.
            params: Some(SearchParams {
                hnsw_ef: Some(SEARCH_EF),
                acorn: Some(AcornSearchParams {
                    enable: true,
                    max_selectivity: None,
                }),
                quantization: Some(QuantizationSearchParams {
                    ignore: false,
                    rescore: Some(true),
                    oversampling: Some(OVERSAMPLING),
                }),
                ..SearchParams::default()
            }),
            with_vector: WithVector::Bool(false),
            with_payload: WithPayloadInterface::Bool(false),
        };
        let hits = shard.query(request).map_err(|e| engine("searching", e))?;
        hits.into_iter()
            .map(|p| Ok((point_uuid(p.id)?, p.score)))
            .collect()
    }

    /// Every change to the shard's points goes through here, between the
    /// write counters the implied filters rely on.
    fn update(&self, shard: &EdgeShard, op: UpdateOperation, what: &str) -> Result<()> {
        self.implied.begin_write();
        let r = shard.update(op).map_err(|e| engine(what, e));
        self.implied.end_write();
        r
    }
}

/// Engine thresholds; `None` keeps the engine's defaults.
#[derive(Clone, Copy, Debug, Default)]
struct Tuning {
    /// KB of vectors a segment needs before `optimize` builds HNSW for it.
    indexing_threshold_kb: Option<usize>,
    /// KB of filtered vectors below which a search is exact despite HNSW.
    full_scan_threshold_kb: Option<usize>,
    /// Segments the merge optimiser aims for.
    segments: Option<usize>,
    /// KB of vectors a segment may reach (the engine's `max_segment_size`),
    /// and how much a bulk of writes may leave unindexed before `upsert`
    /// runs the optimiser itself (see [`EdgeVectorIndex::wrote`]).
    /// `None`: the engine's default (256 MB per indexing thread) and no
    /// optimising on the write path.
    segment_cap_kb: Option<usize>,
    /// No int8 copies of the vectors (see the module docs): the users
    /// partition's. Its clauses are mostly a few points scored exactly, and
    /// an erasure rewrites its segments, which with the copies took a
    /// forget-all at 100k memories from a median 0.61 to 0.77 s
    /// (docs/decisions/0016-quantise-reference-only.md); the reference partition's large graphs are
    /// where the copies pay.
    unquantized: bool,
}

#[cfg(test)]
impl Tuning {
    /// Thresholds of 1 KB, so that `optimize` builds graphs on a few hundred
    /// test points and searches walk them.
    fn tiny() -> Self {
        Tuning {
            indexing_threshold_kb: Some(1),
            full_scan_threshold_kb: Some(1),
            segments: None,
            segment_cap_kb: None,
            unquantized: false,
        }
    }
}

fn shard_config(dim: usize, tuning: Tuning) -> EdgeConfig {
    let mut builder = EdgeConfig::builder()
        .vector(
            DEFAULT_VECTOR_NAME,
            EdgeVectorParams::builder(dim, Distance::Cosine)
                .memory(ORIGINALS)
                .build(),
        )
        // No WAL: the store is the source of truth, writes count only once
        // `flush` returns, and reconciling repairs what a crash lost; see
        // the module docs.
        .wal_enabled(false)
        .max_search_threads(search_threads());
    if !tuning.unquantized {
        builder = builder.quantization_config(quantization());
    }
    if tuning.indexing_threshold_kb.is_some()
        || tuning.segments.is_some()
        || tuning.segment_cap_kb.is_some()
    {
        builder = builder.optimizers(EdgeOptimizersConfig {
            indexing_threshold: tuning.indexing_threshold_kb,
            default_segment_number: tuning.segments,
            max_segment_size: tuning.segment_cap_kb,
            ..EdgeOptimizersConfig::default()
        });
    }
    builder = builder.hnsw_config(graph_config(tuning.full_scan_threshold_kb.map_or_else(
        HnswIndexConfig::default,
        |kb| HnswIndexConfig {
            full_scan_threshold: kb,
            ..HnswIndexConfig::default()
        },
    )));
    builder.build()
}

/// `base` with the per-owner graph ([`GRAPH_M`], [`GRAPH_PAYLOAD_M`]).
fn graph_config(base: HnswIndexConfig) -> HnswIndexConfig {
    HnswIndexConfig {
        m: GRAPH_M,
        payload_m: Some(GRAPH_PAYLOAD_M),
        ..base
    }
}

/// Gives a shard created with a global graph (before per-owner graphs) the
/// per-owner graph configuration; the engine's config-mismatch optimiser
/// rebuilds its segments' graphs at the next `optimize`. Returns whether the
/// configuration changed. Searches stay correct meanwhile: each segment
/// searches with the graph it has.
fn set_graph_config(shard: &EdgeShard) -> Result<bool> {
    let now = shard.config().hnsw_config();
    let wanted = graph_config(now);
    if now == wanted {
        return Ok(false);
    }
    shard
        .set_hnsw_config(wanted)
        .map_err(|e| engine("setting the graph configuration", e))?;
    tracing::info!(
        from_m = now.m,
        "vector index: per-owner graphs configured; the next optimisation rebuilds the graph"
    );
    Ok(true)
}

/// Creates `dir` if needed and locks its [`LOCK_FILE`], or fails if another
/// process holds it.
fn lock_dir(dir: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir)
        .map_err(|e| VectorError::io("cannot create vector index directory", dir, e))?;
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| VectorError::io("cannot open", &path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(VectorError::invalid(format!(
            "vector index at {} is open in another process",
            dir.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(VectorError::io("cannot lock", &path, e)),
    }
}

/// Puts back the engine's vacuum thresholds if a purge's vacuum was
/// interrupted (they are saved in the shard's config).
fn reset_vacuum_thresholds(shard: &EdgeShard) -> Result<()> {
    let optimizers = shard.config().optimizers();
    if optimizers.deleted_threshold == Some(PURGE_DELETED_THRESHOLD) {
        shard
            .set_optimizers_config(EdgeOptimizersConfig {
                deleted_threshold: None,
                vacuum_min_vector_number: None,
                ..optimizers
            })
            .map_err(|e| engine("restoring vacuum thresholds", e))?;
    }
    Ok(())
}

/// Gives a shard the segment cap of its [`Tuning`] (a shard created before
/// the cap, or with another one); the merge optimiser keeps to it from the
/// next `optimize` on, the segments already bigger stay until rewritten.
fn set_segment_cap(shard: &EdgeShard, cap_kb: Option<usize>) -> Result<()> {
    let optimizers = shard.config().optimizers();
    if cap_kb.is_none() || optimizers.max_segment_size == cap_kb {
        return Ok(());
    }
    shard
        .set_optimizers_config(EdgeOptimizersConfig {
            max_segment_size: cap_kb,
            ..optimizers
        })
        .map_err(|e| engine("setting the segment cap", e))
}

/// The segment directories under `segments` with their bytes.
fn segment_dirs(segments: &Path) -> Vec<(std::ffi::OsString, u64)> {
    std::fs::read_dir(segments)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| (e.file_name(), dir_bytes(&e.path())))
                .collect()
        })
        .unwrap_or_default()
}

/// The shard's counts and payload schema.
fn shard_info(shard: &EdgeShard) -> Result<qdrant_edge::ShardInfo> {
    shard
        .info()
        .map_err(|e| engine("reading the vector index's info", e))
}

fn has_shard_files(dir: &Path) -> bool {
    dir.join("edge_config.json").exists()
        || std::fs::read_dir(dir.join("segments")).is_ok_and(|mut d| d.next().is_some())
}

/// Opens the shard in `dir`, or creates one with `new_config`. Also returns
/// whether an existing shard's vector layout changed (see [`vector_layout`]).
fn open_shard(dir: &Path, dim: usize, new_config: EdgeConfig) -> Result<(EdgeShard, bool)> {
    std::fs::create_dir_all(dir).map_err(|e| {
        VectorError::invalid(format!(
            "cannot create vector index directory {}: {e}",
            dir.display()
        ))
    })?;
    let context = format!("opening vector index at {}", dir.display());
    let (shard, relaid) = if has_shard_files(dir) {
        // The pool size and the vector layout are given: everything else
        // keeps what the shard has persisted (a shard created before had the
        // engine's default pool).
        let persisted = match EdgeConfig::load(dir) {
            Some(loaded) => Some(loaded.map_err(|e| engine(&context, e))?),
            None => None,
        };
        let quantized = new_config.quantization_config.clone();
        let (layout, relaid) = vector_layout(persisted.as_ref(), dim, quantized);
        let given = EdgeConfig {
            max_search_threads: Some(search_threads()),
            ..layout
        };
        let shard = EdgeShard::load(dir, Some(given)).map_err(|e| engine(&context, e))?;
        (shard, relaid)
    } else {
        let shard = EdgeShard::new(dir, new_config).map_err(|e| engine(&context, e))?;
        (shard, false)
    };
    {
        let config = shard.config();
        match config.vectors.get(DEFAULT_VECTOR_NAME) {
            Some(v) if v.size == dim && v.distance == Distance::Cosine => {}
            Some(v) if v.size != dim => {
                return Err(VectorError::invalid(format!(
                    "vector index at {} holds {}-dimensional vectors but the embedder produces \
                     {dim}-dimensional ones; changing the model requires a reindex",
                    dir.display(),
                    v.size
                )))
            }
            other => {
                return Err(VectorError::invalid(format!(
                    "vector index at {} has an unexpected vector config ({other:?}); \
                     expected {dim} dimensions with cosine distance",
                    dir.display()
                )))
            }
        }
    }
    // Create the payload indexes a new (or interrupted) shard lacks.
    let existing = shard_info(&shard)?.payload_schema;
    for (field, schema) in payload_indexes() {
        if existing.contains_key(&key(field)) {
            continue;
        }
        let op =
            UpdateOperation::FieldIndexOperation(FieldIndexOperations::CreateIndex(CreateIndex {
                field_name: key(field),
                field_schema: Some(schema),
            }));
        shard
            .update(op)
            .map_err(|e| engine(&format!("creating payload index `{field}`"), e))?;
    }
    Ok((shard, relaid))
}

/// What an existing shard is given at load for its vectors: the int8 copies
/// (`quantized`, when its partition has them: [`Tuning::unquantized`]) and
/// the originals' placement ([`ORIGINALS`]), and
/// whether that differs from what it `persisted` (its segments then hold
/// the old layout until the engine's config-mismatch optimiser rewrites
/// them at the next `optimize`; searches stay correct meanwhile, each
/// segment searching with what it has). Vector parameters of another
/// dimension are left alone, for `open_shard` to refuse with its message.
fn vector_layout(
    persisted: Option<&EdgeConfig>,
    dim: usize,
    quantized: Option<QuantizationConfig>,
) -> (EdgeConfig, bool) {
    let mut layout = EdgeConfig::builder().build();
    let mut relaid = false;
    if let Some(q) = quantized {
        relaid = persisted.is_some_and(|p| p.quantization_config.as_ref() != Some(&q));
        layout.quantization_config = Some(q);
    }
    if let Some(p) = persisted {
        if p.vectors.get(DEFAULT_VECTOR_NAME).map(|v| v.size) == Some(dim) {
            let mut vectors = p.vectors.clone();
            for v in vectors.values_mut() {
                relaid |= v.memory_placement() != Some(ORIGINALS);
                v.memory = Some(ORIGINALS);
                #[allow(deprecated)]
                {
                    v.on_disk = None;
                }
            }
            layout.vectors = vectors;
        }
    }
    (layout, relaid)
}

impl VectorIndex for EdgeVectorIndex {
    fn dim(&self) -> usize {
        self.dim
    }

    fn upsert(&self, points: Vec<VectorPoint>) -> Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        check_points_dim(&points, self.dim)?;
        let bytes = points.len() * self.dim * std::mem::size_of::<f32>();
        let ids: Vec<Uuid> = points.iter().map(|p| p.id).collect();
        let points = points
            .into_iter()
            .map(|p| {
                let payload = payload_json(&p, &self.key);
                PointStruct::new(PointId::Uuid(p.id), p.vector, payload).into()
            })
            .collect();
        let op = UpdateOperation::PointOperation(PointOperations::UpsertPoints(
            PointInsertOperations::PointsList(points),
        ));
        self.with_shard(|shard| {
            let _w = self.writes.read();
            let r = self.update(shard, op, "upserting points");
            self.touch(ids);
            r
        })?;
        self.wrote(bytes)
    }

    fn delete(&self, ids: &[Uuid]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let touched = ids.to_vec();
        let ids = ids.iter().map(|id| PointId::Uuid(*id)).collect();
        let op = UpdateOperation::PointOperation(PointOperations::DeletePoints { ids });
        self.with_shard(|shard| {
            let _w = self.writes.read();
            let r = self.update(shard, op, "deleting points");
            self.touch(touched);
            r
        })
    }

    fn delete_owner(&self, owner: &Owner) -> Result<usize> {
        self.with_shard(|shard| {
            // Exclusive: no upsert may land between the count and the delete.
            let _w = self.writes.write();
            let count = shard
                .count(CountRequest {
                    filter: Some(owner_filter(owner)),
                    exact: true,
                })
                .map_err(|e| engine("counting an owner's points", e))?;
            if count > 0 {
                // Recorded before the delete: a crash after it still purges.
                std::fs::write(self.dir.join(PURGE_PENDING), b"").map_err(|e| {
                    VectorError::invalid(format!(
                        "cannot mark {} for purging: {e}",
                        self.dir.display()
                    ))
                })?;
                self.owner_deletes
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if self.touched.lock().is_some() {
                    // A rebuild is copying: it must learn which ids go.
                    let ids = owner_ids(shard, owner)?;
                    self.touch(ids);
                }
                let op = UpdateOperation::PointOperation(PointOperations::DeletePointsByFilter(
                    owner_filter(owner),
                ));
                self.update(shard, op, "deleting an owner's points")?;
            }
            Ok(count)
        })
    }

    fn search(
        &self,
        vector: &[f32],
        filter: &IndexFilter,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>> {
        check_query_dim(vector, self.dim)?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        // One query per scope clause (see `IndexFilter::per_clause`): each
        // is planned on its own cardinality.
        let lists = filter
            .per_clause()
            .filter_map(|clause| translate_filter(&clause, &self.key))
            .map(|f| self.nearest(vector, f, limit))
            .collect::<Result<Vec<_>>>()?;
        Ok(merge_nearest(lists, limit))
    }

    fn entries(&self) -> Result<Vec<(Uuid, i64)>> {
        self.with_shard(|shard| {
            let mut out = Vec::new();
            let mut offset = None;
            loop {
                let (records, next) = shard
                    .scroll(ScrollRequest {
                        offset,
                        limit: Some(SCROLL_PAGE),
                        filter: None,
                        with_payload: Some(WithPayloadInterface::Fields(vec![key(F_VERSION)])),
                        with_vector: WithVector::Bool(false),
                        order_by: None,
                    })
                    .map_err(|e| engine("listing points", e))?;
                for r in records {
                    let id = point_uuid(r.id)?;
                    let version = r
                        .payload
                        .as_ref()
                        .and_then(|p| p.0.get(F_VERSION))
                        .and_then(serde_json::Value::as_i64)
                        .ok_or_else(|| {
                            VectorError::invalid(format!(
                                "point {id} has no integer `version` payload"
                            ))
                        })?;
                    out.push((id, version));
                }
                match next {
                    Some(n) => offset = Some(n),
                    None => break,
                }
            }
            Ok(out)
        })
    }

    fn versions(&self, ids: &[Uuid]) -> Result<std::collections::HashMap<Uuid, i64>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let point_ids: Vec<PointId> = ids.iter().map(|id| PointId::Uuid(*id)).collect();
        let records = self.with_shard(|shard| {
            shard
                .retrieve(RetrieveRequest {
                    point_ids: point_ids.clone(),
                    with_payload: Some(WithPayloadInterface::Fields(vec![key(F_VERSION)])),
                    with_vector: Some(WithVector::Bool(false)),
                })
                .map_err(|e| engine("retrieving points", e))
        })?;
        records
            .into_iter()
            .map(|r| {
                let id = point_uuid(r.id)?;
                let version = r
                    .payload
                    .as_ref()
                    .and_then(|p| p.0.get(F_VERSION))
                    .and_then(serde_json::Value::as_i64)
                    .ok_or_else(|| {
                        VectorError::invalid(format!("point {id} has no integer `version` payload"))
                    })?;
                Ok((id, version))
            })
            .collect()
    }

    fn entry_count(&self) -> Result<usize> {
        self.with_shard(|shard| {
            shard
                .count(CountRequest {
                    filter: None,
                    exact: true,
                })
                .map_err(|e| engine("counting the points", e))
        })
    }

    fn count_owner(&self, owner: &Owner) -> Result<usize> {
        self.with_shard(|shard| {
            shard
                .count(CountRequest {
                    filter: Some(owner_filter(owner)),
                    exact: true,
                })
                .map_err(|e| engine("counting an owner's points", e))
        })
    }

    fn flush(&self) -> Result<()> {
        self.with_shard(|shard| {
            let _w = self.writes.write();
            shard
                .flush_changed()
                .map_err(|e| engine("flushing the vector index", e))
        })
    }

    fn optimize(&self) -> Result<()> {
        self.build_hnsw()
    }

    fn unindexed(&self) -> Result<usize> {
        self.with_shard(|shard| {
            let info = shard_info(shard)?;
            if self
                .regraph_pending
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                return Ok(info.points_count);
            }
            Ok(info.points_count.saturating_sub(info.indexed_vectors_count))
        })
    }

    /// A rebuild, not a vacuum: after a kill -9 the files can hold points
    /// the segments no longer count (applied, not flushed out of the id
    /// tracker), which the vacuum, counting deleted points, does not see.
    fn purge_unconditionally(&self) -> Result<u64> {
        let mark = self.dir.join(PURGE_PENDING);
        std::fs::write(&mark, b"")
            .map_err(|e| VectorError::io("marking the index for purging", &mark, e))?;
        let stats = self.rebuild(Payloads::Keep)?;
        Ok(stats.bytes_before)
    }

    fn purge_deleted(&self) -> Result<u64> {
        let mark = self.dir.join(PURGE_PENDING);
        if !mark.exists() {
            return Ok(0);
        }
        let deletes = self.owner_deletes.load(std::sync::atomic::Ordering::SeqCst);
        let removed = self.vacuum_deleted()?;
        if self.owner_deletes.load(std::sync::atomic::Ordering::SeqCst) != deletes {
            // An owner was deleted while the vacuum ran and may have been
            // missed: the marker stays for that erasure's own purge.
            return Ok(removed);
        }
        match std::fs::remove_file(&mark) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(VectorError::io("cannot remove", &mark, e))
            }
            _ => Ok(removed),
        }
    }

    fn clear(&self) -> Result<()> {
        let _one = self.rebuilding.lock();
        let mut guard = self.shard.write();
        self.implied.replaced();
        // Dropping the shard flushes it.
        drop(guard.take());
        // Everything but the lock file, which this process keeps holding.
        let removed = std::fs::read_dir(&self.dir)
            .map_err(|e| VectorError::io("cannot read vector index directory", &self.dir, e))
            .and_then(|entries| {
                for e in entries.flatten() {
                    if e.file_name() == LOCK_FILE {
                        continue;
                    }
                    let path = e.path();
                    let r = if e.file_type().is_ok_and(|t| t.is_dir()) {
                        std::fs::remove_dir_all(&path)
                    } else {
                        std::fs::remove_file(&path)
                    };
                    r.map_err(|err| VectorError::io("cannot remove", &path, err))?;
                }
                Ok(())
            });
        // Reopen whatever is there, even after a failed removal, so the index
        // stays usable; report the first failure.
        // `open` already gave this directory the current vector layout.
        let reopened = open_shard(&self.dir, self.dim, shard_config(self.dim, self.tuning))
            .map(|(shard, _)| shard);
        match reopened {
            Ok(shard) => {
                *guard = Some(shard);
                // The key outlives a clear: filters already hold it.
                removed.and_then(|()| self.key.save(&self.dir.join(KEY_FILE)))
            }
            Err(e) => Err(removed.err().unwrap_or(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::time::Instant;

    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use tempfile::TempDir;

    use super::*;
    use crate::domain::scope::{Scope, ScopeClause};
    use crate::domain::{Kind, Status, Tier};
    use crate::vector::contract::*;

    fn edge_fixture(dim: usize) -> Fixture {
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open(&dir.path().join("vectors"), dim).unwrap();
        Fixture::new(std::sync::Arc::new(idx)).keeping(dir)
    }

    /// A reference partition's tenant clause walks without its conditions
    /// while every point passes them, and keeps them from the moment one
    /// does not: another tenant's chunk, nearer the query than any, is never
    /// returned for the first tenant's clause.
    #[test]
    fn an_implied_filter_is_dropped_only_while_every_point_passes_it() {
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open_with(dir.path(), 8, Tuning::tiny()).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let chunk = |owner: &Owner, vector: Vec<f32>| VectorPoint {
            id: Uuid::new_v4(),
            vector,
            owner: owner.clone(),
            tier: Tier::Reference,
            thread_id: None,
            status: Status::Active,
            kind: Kind::Fact,
            created_at_ms: 0,
            version: 1,
            importance: 0.5,
        };
        let mine = Owner::reference("acme");
        let points: Vec<_> = (0..400)
            .map(|_| chunk(&mine, random_vec(&mut rng, 8)))
            .collect();
        idx.upsert(points.clone()).unwrap();
        idx.optimize().unwrap();
        let filter = IndexFilter {
            clauses: vec![ScopeClause {
                owner: mine.clone(),
                tier: Tier::Reference,
                thread_id: None,
            }],
            statuses: vec![Status::Active],
            kinds: None,
        };
        let passes = |idx: &EdgeVectorIndex| {
            let f = translate_filter(&filter, &idx.key).unwrap();
            idx.with_shard(|shard| idx.every_point_passes(shard, &f, idx.implied.snapshot()))
                .unwrap()
        };
        assert!(passes(&idx), "every chunk is the tenant's");
        let q = random_vec(&mut rng, 8);
        let hits = idx.search(&q, &filter, 10).unwrap();
        assert_eq!(hits.len(), 10);
        let theirs = chunk(&Owner::reference("globex"), q.clone());
        idx.upsert(vec![theirs.clone()]).unwrap();
        // Within RECOUNT_EVERY of the last count: not known, so filtered.
        assert!(!passes(&idx));
        let hits = idx.search(&q, &filter, 10).unwrap();
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|(id, _)| *id != theirs.id));
        // Recounted: the other tenant's chunk fails the clause.
        std::thread::sleep(implied::RECOUNT_EVERY);
        assert!(!passes(&idx));
        assert!(idx
            .search(&q, &filter, 10)
            .unwrap()
            .iter()
            .all(|(id, _)| *id != theirs.id));
        // Gone again: implied again after the next recount.
        idx.delete(&[theirs.id]).unwrap();
        std::thread::sleep(implied::RECOUNT_EVERY);
        assert!(passes(&idx));
        assert_eq!(idx.search(&q, &filter, 10).unwrap().len(), 10);
    }

    /// The contract every vector backend passes.
    mod contract {
        use super::edge_fixture;
        crate::vector::contract::vector_contract_tests!(edge_fixture);
    }

    fn arb_filter(tenant: String) -> impl Strategy<Value = IndexFilter> {
        let owners = vec![
            Owner::user(&tenant, "alice"),
            Owner::user(&tenant, "bob"),
            Owner::user(&tenant, "carol"),
            Owner::reference(&tenant),
            Owner::user("elsewhere", "alice"),
        ];
        let clause = (
            proptest::sample::select(owners),
            proptest::sample::select(Tier::ALL.to_vec()),
            proptest::option::of(proptest::sample::select(vec!["t1", "t2", "t3"])),
        )
            .prop_map(|(owner, tier, thread)| ScopeClause {
                owner,
                tier,
                thread_id: thread.map(str::to_string),
            });
        (
            proptest::collection::vec(clause, 0..4),
            proptest::sample::subsequence(Status::ALL.to_vec(), 0..=Status::ALL.len()),
            proptest::option::of(proptest::sample::subsequence(
                Kind::ALL.to_vec(),
                0..=Kind::ALL.len(),
            )),
        )
            .prop_map(|(clauses, statuses, kinds)| IndexFilter {
                clauses,
                statuses,
                kinds,
            })
    }

    /// Random points and filters: the engine's answer is exactly the set the
    /// reference semantics (`IndexFilter::matches`) admits, when the limit
    /// allows it. Exact search (no optimize). Each case gets its own tenant
    /// in one shared index, so cases cannot see each other's points.
    #[test]
    fn prop_search_returns_exactly_the_matching_points() {
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open(dir.path(), 4).unwrap();
        let mut runner = TestRunner::new(Config {
            cases: 48,
            failure_persistence: None,
            ..Config::default()
        });
        let strategy = (any::<u64>(), 0usize..60).prop_flat_map(|(seed, n)| {
            let tenant = format!("tenant-{seed:x}-{n}");
            (
                Just(seed),
                Just(n),
                Just(tenant.clone()),
                proptest::collection::vec(arb_filter(tenant), 1..4),
            )
        });
        runner
            .run(&strategy, |(seed, n, tenant, filters)| {
                // Cases may repeat a tenant (shrinking): start from a clean slate.
                for owner in ["alice", "bob", "carol"] {
                    idx.delete_owner(&Owner::user(&tenant, owner)).unwrap();
                }
                idx.delete_owner(&Owner::reference(&tenant)).unwrap();
                let mut rng = StdRng::seed_from_u64(seed);
                let points = population(&mut rng, 4, n, &tenant);
                idx.upsert(points.clone()).unwrap();
                let q = random_vec(&mut rng, 4);
                for f in &filters {
                    let got = idx.search(&q, f, n + 1).unwrap();
                    let got_set: HashSet<_> = ids(&got).into_iter().collect();
                    prop_assert_eq!(got.len(), got_set.len(), "no duplicates");
                    prop_assert_eq!(&got_set, &matching(&points, f), "filter {:?}", f);
                    if f.clauses.is_empty() {
                        prop_assert!(got.is_empty());
                    }
                    if n > 0 {
                        let top = idx.search(&q, f, 2).unwrap();
                        prop_assert!(top.iter().all(|h| got_set.contains(&h.0)));
                    }
                }
                Ok::<(), TestCaseError>(())
            })
            .unwrap();
    }

    #[test]
    fn reopening_restores_points_and_payload() {
        let dir = TempDir::new().unwrap();
        let mut rng = StdRng::seed_from_u64(11);
        let points = population(&mut rng, 8, 200, "default");
        let q = random_vec(&mut rng, 8);
        let f = Scope::user("alice").with_thread("t1").filter();
        let (entries, hits) = {
            let idx = EdgeVectorIndex::open(dir.path(), 8).unwrap();
            idx.upsert(points.clone()).unwrap();
            idx.delete(&[points[0].id]).unwrap();
            idx.flush().unwrap();
            (
                sorted(idx.entries().unwrap()),
                idx.search(&q, &f, 20).unwrap(),
            )
        };
        assert_eq!(entries.len(), 199);
        let want: Vec<_> = sorted(points[1..].iter().map(|p| (p.id, p.version)).collect());
        assert_eq!(entries, want);
        assert!(!hits.is_empty());

        let idx = EdgeVectorIndex::open(dir.path(), 8).unwrap();
        assert_eq!(sorted(idx.entries().unwrap()), entries);
        assert_eq!(ids(&idx.search(&q, &f, 20).unwrap()), ids(&hits));
        let alice_n = points[1..].iter().filter(|p| p.owner == alice()).count();
        assert_eq!(idx.count_owner(&alice()).unwrap(), alice_n);
        // The payload (not just the ids) survived: filters still isolate.
        for scope in [Scope::user("bob"), Scope::user("carol").with_thread("t2")] {
            let f = scope.filter();
            let got: HashSet<_> = ids(&idx.search(&q, &f, 1000).unwrap())
                .into_iter()
                .collect();
            assert_eq!(got, matching(&points[1..], &f));
        }
        // A second writer on the same directory is refused while this one is open.
        assert!(EdgeVectorIndex::open(dir.path(), 8).is_err());
    }

    /// The state file of every segment with its modification time.
    fn segment_states(dir: &Path) -> HashMap<std::ffi::OsString, std::time::SystemTime> {
        segment_dirs(&dir.join("segments"))
            .into_iter()
            .map(|(name, _)| {
                let state = dir.join("segments").join(&name).join("segment.json");
                let modified = std::fs::metadata(&state).unwrap().modified().unwrap();
                (name, modified)
            })
            .collect()
    }

    #[test]
    fn flush_writes_only_the_segments_that_changed() {
        let dir = TempDir::new().unwrap();
        // A 4 KB cap: 64 points of 16 dimensions a segment, so several.
        let tuning = Tuning {
            segment_cap_kb: Some(4),
            ..Tuning::tiny()
        };
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, tuning).unwrap();
        let mut rng = StdRng::seed_from_u64(17);
        let points = population(&mut rng, 16, 600, "default");
        for chunk in points.chunks(100) {
            idx.upsert(chunk.to_vec()).unwrap();
        }
        idx.optimize().unwrap();
        idx.flush().unwrap();
        let flushed = segment_states(dir.path());
        assert!(flushed.len() >= 3, "{} segments", flushed.len());

        // Nothing changed: no segment is written again.
        std::thread::sleep(std::time::Duration::from_millis(20));
        idx.flush().unwrap();
        assert_eq!(segment_states(dir.path()), flushed);

        // One deleted point: its segment is written, and only it.
        idx.delete(&[points[0].id]).unwrap();
        idx.flush().unwrap();
        let after = segment_states(dir.path());
        assert_eq!(after.len(), flushed.len());
        let rewritten: Vec<_> = after
            .iter()
            .filter(|(name, modified)| flushed.get(*name) != Some(*modified))
            .collect();
        assert_eq!(rewritten.len(), 1, "{rewritten:?}");

        // The files as they are now, without the flush that dropping the
        // index does (a crash), hold exactly the live points.
        let copy = TempDir::new().unwrap();
        copy_tree(dir.path(), copy.path());
        let reopened = EdgeVectorIndex::open(copy.path(), 16).unwrap();
        let want: Vec<_> = sorted(points[1..].iter().map(|p| (p.id, p.version)).collect());
        assert_eq!(sorted(reopened.entries().unwrap()), want);
    }

    fn copy_tree(from: &Path, to: &Path) {
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                std::fs::create_dir_all(&target).unwrap();
                copy_tree(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }

    #[test]
    fn search_is_still_correct_after_optimize() {
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, Tuning::tiny()).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let points = population(&mut rng, 16, 1500, "default");
        // Several batches, so there are several segments to merge.
        for chunk in points.chunks(300) {
            idx.upsert(chunk.to_vec()).unwrap();
        }
        let f = Scope::user("alice").with_thread("t1").filter();
        let queries: Vec<_> = (0..20).map(|_| random_vec(&mut rng, 16)).collect();
        let exact: Vec<_> = queries
            .iter()
            .map(|q| idx.search(q, &f, 10).unwrap())
            .collect();

        assert_eq!(idx.unindexed().unwrap(), 1500, "nothing indexed yet");
        idx.optimize().unwrap();
        let info = idx.shard.read().as_ref().unwrap().info().unwrap();
        assert!(info.indexed_vectors_count > 0, "HNSW was built: {info:?}");
        assert_eq!(info.points_count, 1500);
        assert_eq!(idx.unindexed().unwrap(), 0);
        // A rebuild (an erasure's purge) swaps in a shard whose HNSW is
        // already built: searches never fall back to a full scan.
        let stats = idx.rebuild_now().unwrap();
        assert_eq!(stats.points, 1500);
        assert_eq!(idx.unindexed().unwrap(), 0);
        // Points written after it are what the background optimiser finds.
        idx.upsert(population(&mut rng, 16, 50, "late")).unwrap();
        assert_eq!(idx.unindexed().unwrap(), 50);
        idx.optimize().unwrap();
        assert_eq!(idx.unindexed().unwrap(), 0);

        let want = matching(&points, &f);
        let mut overlap = 0;
        for (q, exact) in queries.iter().zip(&exact) {
            let got = idx.search(q, &f, 10).unwrap();
            assert_eq!(got.len(), exact.len());
            assert!(
                got.iter().all(|h| want.contains(&h.0)),
                "filter holds with HNSW"
            );
            let e: HashSet<_> = ids(exact).into_iter().collect();
            overlap += got.iter().filter(|h| e.contains(&h.0)).count();
        }
        let total: usize = exact.iter().map(Vec::len).sum();
        assert!(overlap * 10 >= total * 9, "recall@10 {overlap}/{total}");
        // Stored vectors find themselves: each matching point searched by
        // its own vector is in its top 10 (score 1), for nearly all of them.
        // A rate, not one point: the graph build is multi-threaded and not
        // deterministic. Under a parallel `cargo test --lib vector`, 10 runs
        // each: HNSW built after the swap gave 101-107 of 107 (4 runs
        // below 107), built before it (now) 101-107 (1 run below).
        let stored: Vec<_> = points.iter().filter(|p| want.contains(&p.id)).collect();
        let found = stored
            .iter()
            .filter(|p| {
                idx.search(&p.vector, &f, 10)
                    .unwrap()
                    .iter()
                    .any(|h| h.0 == p.id && (h.1 - 1.0).abs() < 1e-4)
            })
            .count();
        assert!(
            found * 10 >= stored.len() * 9,
            "stored vectors found by themselves: {found}/{}",
            stored.len()
        );
        // Writes after optimize are searchable too.
        let id = Uuid::now_v7();
        idx.upsert(vec![point(id, vec![1.0; 16], &alice(), Tier::LongTerm)])
            .unwrap();
        assert_eq!(
            idx.search(&[1.0; 16], &alice_long_term(), 1).unwrap()[0].0,
            id
        );
        assert_eq!(idx.entries().unwrap().len(), 1551);
    }

    #[test]
    fn every_shard_searches_with_the_pool_size_mnemo_sets() {
        let threads = |idx: &EdgeVectorIndex| {
            idx.with_shard(|shard| Ok(shard.config().max_search_threads))
                .unwrap()
        };
        let want = Some(search_threads());
        assert!(search_threads() >= 1);
        // A new shard.
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, Tuning::default()).unwrap();
        assert_eq!(threads(&idx), want);
        // A shard an older build created, with the engine's default pool
        // (four threads per core, nothing persisted): reopened, it gets the
        // pool mnemo sets, and keeps its points.
        let dir = TempDir::new().unwrap();
        let old = EdgeConfig {
            max_search_threads: None,
            ..shard_config(16, Tuning::default())
        };
        {
            let shard = EdgeShard::new(dir.path(), old).unwrap();
            assert_eq!(shard.config().max_search_threads, None);
            assert!(shard.config().search_thread_count() > search_threads());
        }
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, Tuning::default()).unwrap();
        assert_eq!(threads(&idx), want);
        let mut rng = StdRng::seed_from_u64(5);
        let points = population(&mut rng, 16, 50, "default");
        idx.upsert(points.clone()).unwrap();
        idx.flush().unwrap();
        drop(idx);
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, Tuning::default()).unwrap();
        assert_eq!(threads(&idx), want);
        assert_eq!(idx.entries().unwrap().len(), 50);
        // Searches still run on the smaller pool: stored vectors find
        // themselves.
        let f = Scope::user("alice").filter();
        let want = matching(&points, &f);
        let p = points.iter().find(|p| want.contains(&p.id)).unwrap();
        assert_eq!(idx.search(&p.vector, &f, 5).unwrap()[0].0, p.id);
    }

    /// Segments of the shard in `dir` that hold int8 copies of their vectors,
    /// and all segments.
    fn quantized_segments(dir: &Path) -> (usize, usize) {
        let all = segment_dirs(&dir.join("segments"));
        let quantized = all
            .iter()
            .filter(|(name, _)| {
                dir.join("segments")
                    .join(name)
                    .join("vector_storage/quantized.data")
                    .exists()
            })
            .count();
        (quantized, all.len())
    }

    /// An index in `dir` holding `points`, optimised (graphs built at the
    /// `tuning`'s thresholds) and flushed, then closed.
    fn write_optimized(dir: &Path, tuning: Tuning, points: &[VectorPoint]) {
        let idx = EdgeVectorIndex::open_with(dir, 16, tuning).unwrap();
        idx.upsert(points.to_vec()).unwrap();
        idx.optimize().unwrap();
        idx.flush().unwrap();
    }

    #[test]
    fn an_index_without_quantization_is_quantized_and_searches_score_on_the_originals() {
        let dir = TempDir::new().unwrap();
        let tuning = Tuning::tiny();
        let mut rng = StdRng::seed_from_u64(17);
        let points = population(&mut rng, 16, 1200, "default");
        write_optimized(dir.path(), tuning, &points);
        let (quantized, all) = quantized_segments(dir.path());
        assert!(quantized >= 1, "a new index quantises its indexed segments");
        assert!(quantized < all || all == 1);
        // What an index built before quantisation holds: no int8 copies and
        // the originals preloaded (the engine's default placement).
        let config = dir.path().join("edge_config.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
        let object = json.as_object_mut().unwrap();
        assert!(object.remove("quantization_config").is_some());
        object["vectors"][""]["memory"] = "cached".into();
        std::fs::write(&config, serde_json::to_vec(&json).unwrap()).unwrap();
        {
            let shard = EdgeShard::load(dir.path(), None).unwrap();
            while shard.optimize().unwrap() {}
            shard.flush().unwrap();
        }
        assert_eq!(quantized_segments(dir.path()).0, 0);
        // Reopened, it is given the layout; every point counts as unindexed
        // until the next optimisation rewrites the segments with it.
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, tuning).unwrap();
        assert_eq!(idx.unindexed().unwrap(), 1200);
        idx.optimize().unwrap();
        idx.flush().unwrap();
        assert_eq!(idx.unindexed().unwrap(), 0);
        assert!(quantized_segments(dir.path()).0 >= 1);
        {
            let guard = idx.shard.read();
            let config = guard.as_ref().unwrap().config();
            assert_eq!(config.quantization_config, Some(quantization()));
            let originals = config.vectors[DEFAULT_VECTOR_NAME].memory_placement();
            assert_eq!(originals, Some(ORIGINALS));
        }
        // Persisted: the next open changes nothing.
        drop(idx);
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, tuning).unwrap();
        assert_eq!(idx.unindexed().unwrap(), 0);
        // Scores are the originals' cosines, not the int8 estimates (which
        // are off by about 1e-2 on 16 dimensions), and stored vectors find
        // themselves.
        let by_id: std::collections::HashMap<Uuid, &VectorPoint> =
            points.iter().map(|p| (p.id, p)).collect();
        let f = Scope::user("alice").filter();
        let want = matching(&points, &f);
        let mut found = 0;
        for p in points.iter().filter(|p| want.contains(&p.id)) {
            let hits = idx.search(&p.vector, &f, 10).unwrap();
            for (id, score) in &hits {
                assert!(want.contains(id));
                let exact = cosine(&p.vector, &by_id[id].vector);
                assert!((score - exact).abs() < 1e-4, "{score} against {exact}");
            }
            found += usize::from(hits.first().is_some_and(|h| h.0 == p.id));
        }
        assert!(found * 10 >= want.len() * 9, "{found}/{}", want.len());
    }

    #[test]
    fn an_index_with_a_global_graph_is_regraphed_per_owner() {
        let dir = TempDir::new().unwrap();
        let tuning = Tuning::tiny();
        let mut rng = StdRng::seed_from_u64(11);
        let points = population(&mut rng, 16, 1200, "default");
        {
            let idx = EdgeVectorIndex::open_with(dir.path(), 16, tuning).unwrap();
            let config = idx.shard.read().as_ref().unwrap().config().hnsw_config();
            assert_eq!(
                (config.m, config.payload_m),
                (GRAPH_M, Some(GRAPH_PAYLOAD_M))
            );
            idx.upsert(points.clone()).unwrap();
            idx.optimize().unwrap();
            idx.flush().unwrap();
        }
        // What an index built before per-owner graphs holds: a global graph.
        {
            let shard = EdgeShard::load(dir.path(), None).unwrap();
            // Bound first: the config's read guard must be gone before the write.
            let now = shard.config().hnsw_config();
            shard
                .set_hnsw_config(HnswIndexConfig {
                    m: 16,
                    payload_m: None,
                    ..now
                })
                .unwrap();
            while shard.optimize().unwrap() {}
            shard.flush().unwrap();
        }
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, tuning).unwrap();
        let config = idx.shard.read().as_ref().unwrap().config().hnsw_config();
        assert_eq!(
            (config.m, config.payload_m),
            (GRAPH_M, Some(GRAPH_PAYLOAD_M))
        );
        // Every point counts as unindexed, so the background optimiser runs.
        assert_eq!(idx.unindexed().unwrap(), 1200);
        idx.optimize().unwrap();
        assert_eq!(idx.unindexed().unwrap(), 0);
        // The configuration persists: the next open changes nothing.
        drop(idx);
        let idx = EdgeVectorIndex::open_with(dir.path(), 16, tuning).unwrap();
        assert_eq!(idx.unindexed().unwrap(), 0);
        // Searches through the owner graphs: every hit passes the filter, and
        // stored vectors find themselves.
        let f = Scope::user("alice").filter();
        let want = matching(&points, &f);
        // Alice holds ~300 points (a graph of her own: more than a quarter
        // of the 1 KB full-scan threshold); ~30 pass the filter, which ACORN
        // finds inside her graph.
        assert!(want.len() >= 20, "{} points pass the filter", want.len());
        let mut found = 0;
        for p in points.iter().filter(|p| want.contains(&p.id)) {
            let hits = idx.search(&p.vector, &f, 10).unwrap();
            assert!(hits.iter().all(|h| want.contains(&h.0)));
            found += usize::from(hits.iter().any(|h| h.0 == p.id));
        }
        assert!(found * 10 >= want.len() * 9, "{found}/{}", want.len());
    }

    #[test]
    fn a_dimension_mismatch_names_both_dimensions() {
        let dir = TempDir::new().unwrap();
        {
            let idx = EdgeVectorIndex::open(dir.path(), 4).unwrap();
            idx.upsert(vec![point(
                Uuid::now_v7(),
                vec![1.0; 4],
                &alice(),
                Tier::LongTerm,
            )])
            .unwrap();
            idx.flush().unwrap();
        }
        let err = EdgeVectorIndex::open(dir.path(), 384).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Vector(_)));
        assert!(
            msg.contains("4-dimensional") && msg.contains("384"),
            "{msg}"
        );
        // The directory was not damaged by the failed open.
        let idx = EdgeVectorIndex::open(dir.path(), 4).unwrap();
        assert_eq!(idx.entries().unwrap().len(), 1);
    }

    #[test]
    fn concurrent_writes_flushes_and_searches() {
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open(dir.path(), 8).unwrap();
        let per_thread = 200;
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let idx = &idx;
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    for _ in 0..per_thread / 20 {
                        let batch = (0..20)
                            .map(|_| {
                                point(
                                    Uuid::new_v4(),
                                    random_vec(&mut rng, 8),
                                    &alice(),
                                    Tier::LongTerm,
                                )
                            })
                            .collect();
                        idx.upsert(batch).unwrap();
                        idx.flush().unwrap();
                    }
                });
            }
            s.spawn(|| {
                let mut rng = StdRng::seed_from_u64(99);
                for _ in 0..50 {
                    let q = random_vec(&mut rng, 8);
                    let hits = idx.search(&q, &alice_long_term(), 5).unwrap();
                    assert!(hits.len() <= 5);
                }
            });
            s.spawn(|| idx.optimize().unwrap());
        });
        assert_eq!(idx.count_owner(&alice()).unwrap(), 2 * per_thread);
        assert_eq!(idx.entries().unwrap().len(), 2 * per_thread);
    }

    fn percentile(sorted_us: &[f64], p: f64) -> f64 {
        sorted_us[((sorted_us.len() as f64 - 1.0) * p).round() as usize]
    }

    /// Figures, not a test: `cargo test --lib vector::edge::tests::bench -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn bench_10k_384d() {
        const N: usize = 10_000;
        const DIM: usize = 384;
        let dir = TempDir::new().unwrap();
        let idx = EdgeVectorIndex::open(dir.path(), DIM).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        let users: Vec<String> = (0..50).map(|i| format!("user{i}")).collect();
        let points: Vec<VectorPoint> = (0..N)
            .map(|i| {
                let reference = i % 5 == 0;
                let owner = if reference {
                    Owner::reference("default")
                } else {
                    Owner::user("default", &users[rng.random_range(0..users.len())])
                };
                let mut p = point(
                    Uuid::new_v4(),
                    random_vec(&mut rng, DIM),
                    &owner,
                    if reference {
                        Tier::Reference
                    } else {
                        Tier::LongTerm
                    },
                );
                p.kind = Kind::ALL[i % Kind::ALL.len()];
                p
            })
            .collect();
        let t = Instant::now();
        for chunk in points.chunks(500) {
            idx.upsert(chunk.to_vec()).unwrap();
        }
        let upsert = t.elapsed();
        let t = Instant::now();
        idx.flush().unwrap();
        let flush = t.elapsed();

        let queries: Vec<_> = (0..200).map(|_| random_vec(&mut rng, DIM)).collect();
        let run = |label: &str| {
            let mut by_user: HashMap<&str, Vec<f64>> = HashMap::new();
            for (i, q) in queries.iter().enumerate() {
                let user = &users[i % users.len()];
                for (name, f) in [
                    ("user+reference", Scope::user(user.as_str()).filter()),
                    (
                        "user long_term only",
                        Scope::user(user.as_str())
                            .with_tiers(vec![Tier::LongTerm])
                            .filter(),
                    ),
                ] {
                    let t = Instant::now();
                    let hits = idx.search(q, &f, 10).unwrap();
                    by_user
                        .entry(name)
                        .or_default()
                        .push(t.elapsed().as_secs_f64() * 1e6);
                    assert_eq!(hits.len(), 10);
                }
            }
            for (name, mut v) in by_user {
                v.sort_by(f64::total_cmp);
                println!(
                    "{label:>15} {name:<20} top-10: p50 {:>8.0} µs  p95 {:>8.0} µs",
                    percentile(&v, 0.5),
                    percentile(&v, 0.95)
                );
            }
        };
        println!(
            "debug build (deps opt-level=1), {N} points x {DIM} dims, 50 users + reference (20%)"
        );
        println!("upsert (20 batches of 500): {upsert:.2?}; flush {flush:.2?}");
        run("exact");
        let t = Instant::now();
        idx.optimize().unwrap();
        let optimize = t.elapsed();
        let info = idx.shard.read().as_ref().unwrap().info().unwrap();
        println!(
            "optimize: {optimize:.2?} -> {} segments, {} indexed vectors",
            info.segments_count, info.indexed_vectors_count
        );
        run("after optimize");
        println!(
            "disk: wal {} MB, segments {} MB",
            dir_bytes(&dir.path().join("wal")) / 1_000_000,
            dir_bytes(&dir.path().join("segments")) / 1_000_000
        );
    }
}
