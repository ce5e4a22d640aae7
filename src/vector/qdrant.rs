//! The vector index on a Qdrant server (or cluster), over gRPC with
//! `qdrant-client`: the clustered counterpart of [`super::edge`], with the
//! same contract, payload and filter semantics.
//!
//! **Layout: one shared collection, partitioned by a tenant payload key.**
//! Every memory of every Mnemo tenant and user is a point (id = memory UUID)
//! in one collection (`mnemo_memories` by default). The `owner` payload — the
//! hashed (tenant, user) or (tenant, reference) key of [`Owner`] — has a
//! keyword index with `is_tenant: true`. Qdrant's multitenancy guidance
//! recommends exactly this for many small, similarly sized tenants (a user's
//! memories are hundreds to thousands of points): a collection per user
//! would carry per-collection overhead (Qdrant Cloud caps a cluster at 1,000
//! collections), whereas the tenant index makes Qdrant store each owner's
//! points together and build per-owner HNSW links (`payload_m`). The global
//! graph stays (`m` = 16, not 0) because a search covers *two* owners, the
//! user and the tenant's reference memory, in one `should` filter.
//! `tier`, `thread_id`, `status` and `kind` have keyword indexes for
//! filtering only (`enable_hnsw: false`), as in the embedded index. The
//! `thread_id` payload is hashed ([`PayloadKey`], keyed by the collection
//! name so every node agrees): the raw, client-chosen id never reaches the
//! server. What the server keeps of deleted points (its WAL, segments not yet
//! vacuumed, snapshots) is under its operator's control: `purge_deleted` is
//! a no-op here, see docs/guide/forget-all.md.
//!
//! **Semantics.** Searches filter inside Qdrant (never post-filter) with the
//! same translation as the embedded index, with ACORN on. Writes wait for the
//! server to apply them (`wait: true`) with `medium` write ordering (through
//! a shard leader, so two Mnemo nodes writing the same point converge), so a
//! node reads its own writes. `count_owner` reads with consistency `all` (an
//! erasure is verified on every replica), `entries` with `majority`. Deleting
//! an owner is one delete-by-filter. `flush` and `optimize` are no-ops: the
//! server persists every acknowledged write in its WAL and optimises
//! segments itself. `clear` drops and recreates the collection: it affects
//! every node sharing it (only `mnemo reindex` calls it).
//!
//! **Threading.** The trait is synchronous; the client is async. The index
//! owns a small runtime (one worker thread) and every call spawns its
//! request there and waits on a channel, so it is safe from
//! `spawn_blocking`, plain threads and even (blocking) an async worker — it
//! never nests a runtime. The runtime is shut down in the background on
//! drop, which is safe inside an async context too.
//!
//! **Errors.** An unreachable server or a timed-out request is
//! [`Error::Unavailable`] naming the URL (HTTP 503); anything else the server
//! refuses is [`Error::Vector`] holding a [`VectorError::Server`] whose
//! source is qdrant-client's error.

use std::future::Future;
use std::time::Duration;

pub use qdrant_client::qdrant::ReplicaState;
use qdrant_client::qdrant::{
    point_id::PointIdOptions, read_consistency, value::Kind as ValueKind, vectors_config,
    AcornSearchParamsBuilder, Condition, CountPointsBuilder, CreateCollectionBuilder,
    CreateFieldIndexCollectionBuilder, DeleteCollectionBuilder, DeletePointsBuilder, Distance,
    FieldType, Filter, GetCollectionInfoRequest, HnswConfigDiffBuilder, KeywordIndexParamsBuilder,
    PayloadIncludeSelector, PointId, PointStruct, PointsIdsList, Query, QueryBatchPointsBuilder,
    QueryPointsBuilder, ReadConsistencyType, ScrollPointsBuilder, SearchParamsBuilder,
    UpsertPointsBuilder, VectorParamsBuilder, WriteOrdering, WriteOrderingType,
};
use qdrant_client::{Payload, Qdrant, QdrantError};
use uuid::Uuid;

use super::{
    check_points_dim, check_query_dim, keyword_filter, merge_nearest, payload_json, PayloadKey,
    VectorIndex, VectorPoint, F_KIND, F_OWNER, F_STATUS, F_THREAD, F_TIER, F_VERSION,
};
use crate::domain::scope::IndexFilter;
use crate::domain::Owner;
use crate::error::{Error, Result};
use crate::vector::VectorError;

/// The collection name when none is configured.
pub const DEFAULT_COLLECTION: &str = "mnemo_memories";

/// Page size of the scroll behind `entries`.
const SCROLL_PAGE: u32 = 1024;

/// Where the server is and how to talk to it.
#[derive(Clone)]
pub struct QdrantServerConfig {
    /// The gRPC endpoint, e.g. `http://qdrant:6334`.
    pub url: String,
    pub api_key: Option<String>,
    pub collection: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Connection timeout.
    pub connect_timeout: Duration,
    /// How a collection Mnemo creates is laid out on a cluster (ignored for
    /// an existing collection: Qdrant fixes these at creation).
    pub layout: CollectionLayout,
}

/// Shards, replicas and write consistency of a collection Mnemo creates.
/// `None` leaves Qdrant's default (1 shard per peer at creation, 1 replica,
/// write consistency 1). On a 3-peer cluster, `shard_number: 3,
/// replication_factor: 2` puts every shard on two peers, so one peer can be
/// lost without losing a write or a search answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectionLayout {
    pub shard_number: Option<u32>,
    pub replication_factor: Option<u32>,
    /// Replicas that must apply a write before it is acknowledged.
    pub write_consistency_factor: Option<u32>,
}

impl std::fmt::Debug for QdrantServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the API key.
        f.debug_struct("QdrantServerConfig")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("collection", &self.collection)
            .field("timeout", &self.timeout)
            .field("layout", &self.layout)
            .finish()
    }
}

impl QdrantServerConfig {
    pub fn new(url: impl Into<String>) -> Self {
        QdrantServerConfig {
            url: url.into(),
            api_key: None,
            collection: DEFAULT_COLLECTION.to_string(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            layout: CollectionLayout::default(),
        }
    }
}

/// The vector index on a Qdrant server. See the module docs.
pub struct QdrantServerIndex {
    client: Qdrant,
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
    url: String,
    collection: String,
    layout: CollectionLayout,
    dim: usize,
    /// Hashes thread ids in payloads and filters (derived from the
    /// collection name, so every node sharing it agrees).
    key: PayloadKey,
}

impl std::fmt::Debug for QdrantServerIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantServerIndex")
            .field("url", &self.url)
            .field("collection", &self.collection)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl Drop for QdrantServerIndex {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn keyword(field: &str, value: &str) -> Condition {
    Condition::matches(field, value.to_string())
}

fn keyword_any(field: &str, values: Vec<String>) -> Condition {
    Condition::matches(field, values)
}

fn owner_filter(owner: &Owner) -> Filter {
    Filter::must([keyword(F_OWNER, owner.as_str())])
}

/// Translates an [`IndexFilter`] into a Qdrant filter, or `None` when it can
/// match nothing (as in the embedded index).
fn translate_filter(filter: &IndexFilter, key: &PayloadKey) -> Option<Filter> {
    let kf = keyword_filter(filter, key)?;
    let clauses = kf
        .clauses
        .iter()
        .map(|c| Condition::from(Filter::must(c.iter().map(|(f, v)| keyword(f, v)))));
    let mut must: Vec<Condition> = match kf.clauses.as_slice() {
        // One clause (what a search sends, see `IndexFilter::per_clause`):
        // its keys go straight into `must`, where the planner's cardinality
        // estimate is the owner index's exact count.
        [only] => only.iter().map(|(f, v)| keyword(f, v)).collect(),
        _ => vec![Condition::from(Filter::should(clauses))],
    };
    must.extend(kf.any_of.into_iter().map(|(f, v)| keyword_any(f, v)));
    Some(Filter::must(must))
}

fn point_uuid(id: Option<PointId>) -> Result<Uuid> {
    match id.and_then(|p| p.point_id_options) {
        Some(PointIdOptions::Uuid(s)) => Uuid::parse_str(&s).map_err(|e| {
            VectorError::invalid(format!("the server returned a malformed point id: {e}"))
        }),
        Some(PointIdOptions::Num(n)) => Err(VectorError::invalid(format!(
            "unexpected numeric point id {n} (points are keyed by memory UUID)"
        ))),
        None => Err(VectorError::invalid(
            "the server returned a point without id",
        )),
    }
}

fn write_ordering() -> WriteOrdering {
    WriteOrdering {
        r#type: WriteOrderingType::Medium as i32,
    }
}

fn consistency(kind: ReadConsistencyType) -> read_consistency::Value {
    read_consistency::Value::Type(kind as i32)
}

impl QdrantServerIndex {
    /// Connects, creates the collection and its payload indexes when they
    /// are missing, and checks that an existing collection holds
    /// `dim`-dimensional cosine vectors. Fails with `Unavailable` when the
    /// server cannot be reached.
    pub fn connect(config: &QdrantServerConfig, dim: usize) -> Result<Self> {
        Self::connect_inner(config, dim, false)
    }

    /// As [`connect`](Self::connect), but an existing collection with
    /// another vector configuration is dropped and recreated (the model
    /// changed: `mnemo reindex` re-embeds everything into it). This affects
    /// every node sharing the collection.
    pub fn connect_replacing(config: &QdrantServerConfig, dim: usize) -> Result<Self> {
        Self::connect_inner(config, dim, true)
    }

    fn connect_inner(config: &QdrantServerConfig, dim: usize, replace: bool) -> Result<Self> {
        if dim == 0 {
            return Err(VectorError::invalid("vector dimension must be positive"));
        }
        if config.collection.is_empty() {
            return Err(Error::Config {
                key: "qdrant collection".into(),
                message: "the collection name must not be empty".into(),
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mnemo-qdrant")
            .enable_all()
            .build()
            .map_err(|e| VectorError::Engine {
                context: "cannot start the Qdrant client runtime".into(),
                source: e.into(),
            })?;
        let client = {
            let _enter = runtime.enter();
            Qdrant::from_url(&config.url)
                .api_key(config.api_key.clone())
                .timeout(config.timeout)
                .connect_timeout(config.connect_timeout)
                .skip_compatibility_check()
                .build()
                .map_err(|e| Error::Config {
                    key: "qdrant url".into(),
                    message: format!("`{}`: {e}", config.url),
                })?
        };
        let index = QdrantServerIndex {
            client,
            runtime: Some(runtime),
            url: config.url.clone(),
            collection: config.collection.clone(),
            layout: config.layout,
            dim,
            key: PayloadKey::derived(&config.collection),
        };
        index.ensure_collection(replace)?;
        Ok(index)
    }

    /// The collection this index uses.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// Where each shard of the collection lives, as the peer this client
    /// talks to sees it: shard id → (peer id, replica state) for every
    /// replica, local and remote (a state this client does not know reads as
    /// `Dead`).
    pub fn shard_replicas(
        &self,
    ) -> Result<std::collections::BTreeMap<u32, Vec<(u64, ReplicaState)>>> {
        let name = self.collection.clone();
        let info = self.run("reading the collection's shards", move |c| async move {
            c.collection_cluster_info(name).await
        })?;
        let state = |s: i32| ReplicaState::try_from(s).unwrap_or(ReplicaState::Dead);
        let mut shards: std::collections::BTreeMap<u32, Vec<(u64, ReplicaState)>> =
            Default::default();
        for local in &info.local_shards {
            shards
                .entry(local.shard_id)
                .or_default()
                .push((info.peer_id, state(local.state)));
        }
        for remote in &info.remote_shards {
            shards
                .entry(remote.shard_id)
                .or_default()
                .push((remote.peer_id, state(remote.state)));
        }
        Ok(shards)
    }

    /// Runs a request on the index's runtime and waits for it.
    fn run<T, F>(&self, what: &str, make: impl FnOnce(Qdrant) -> F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, QdrantError>> + Send + 'static,
    {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| VectorError::invalid("the Qdrant client runtime is shut down"))?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let fut = make(self.client.clone());
        runtime.spawn(async move {
            // The receiver only goes away if the caller's thread died.
            let _ = tx.send(fut.await);
        });
        let result = rx.recv().map_err(|_| {
            VectorError::invalid(format!(
                "the Qdrant request ({what}) was dropped unanswered"
            ))
        })?;
        result.map_err(|e| self.error(what, e))
    }

    fn error(&self, what: &str, e: QdrantError) -> Error {
        if let QdrantError::ResponseError { status } = &e {
            // The client reports a refused connection as `Internal`
            // "Failed to connect to …".
            let unreachable = matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
            ) || status.message().starts_with("Failed to connect");
            if unreachable {
                return Error::Unavailable(format!(
                    "the Qdrant server at {} is unreachable ({what}): {}",
                    self.url,
                    status.message()
                ));
            }
        }
        VectorError::Server {
            context: format!(
                "{what} (Qdrant server {}, collection `{}`)",
                self.url, self.collection
            ),
            source: Box::new(e),
        }
        .into()
    }

    fn ensure_collection(&self, replace: bool) -> Result<()> {
        let name = self.collection.clone();
        let exists = self.run("checking the collection", move |c| async move {
            c.collection_exists(name).await
        })?;
        match (exists, replace) {
            (false, _) => self.create_collection()?,
            (true, false) => self.check_vectors()?,
            (true, true) => {
                if self.check_vectors().is_err() {
                    tracing::warn!(
                        collection = %self.collection,
                        "the Qdrant collection holds vectors of another model: recreating it"
                    );
                    self.drop_collection()?;
                    self.create_collection()?;
                }
            }
        }
        self.ensure_payload_indexes()
    }

    fn create_collection(&self) -> Result<()> {
        let mut builder = CreateCollectionBuilder::new(&self.collection)
            .vectors_config(VectorParamsBuilder::new(self.dim as u64, Distance::Cosine))
            .hnsw_config(HnswConfigDiffBuilder::default().payload_m(16));
        if let Some(n) = self.layout.shard_number {
            builder = builder.shard_number(n);
        }
        if let Some(n) = self.layout.replication_factor {
            builder = builder.replication_factor(n);
        }
        if let Some(n) = self.layout.write_consistency_factor {
            builder = builder.write_consistency_factor(n);
        }
        let request = builder.build();
        let created = self.run("creating the collection", move |c| async move {
            c.create_collection(request).await
        });
        match created {
            Ok(_) => Ok(()),
            // Another node created it in the meantime: check it instead.
            Err(e @ Error::Vector(_)) if e.to_string().contains("already exists") => {
                self.check_vectors()
            }
            Err(e) => Err(e),
        }
    }

    fn check_vectors(&self) -> Result<()> {
        let request = GetCollectionInfoRequest {
            collection_name: self.collection.clone(),
        };
        let info = self.run("reading the collection", move |c| async move {
            c.collection_info(request).await
        })?;
        let params = info
            .result
            .and_then(|r| r.config)
            .and_then(|c| c.params)
            .and_then(|p| p.vectors_config)
            .and_then(|v| v.config);
        match params {
            Some(vectors_config::Config::Params(p))
                if p.size == self.dim as u64 && p.distance == Distance::Cosine as i32 =>
            {
                Ok(())
            }
            Some(vectors_config::Config::Params(p)) if p.size != self.dim as u64 => {
                Err(VectorError::invalid(format!(
                    "Qdrant collection `{}` holds {}-dimensional vectors but the embedder produces \
                     {}-dimensional ones; changing the model requires a reindex",
                    self.collection, p.size, self.dim
                )))
            }
            other => Err(VectorError::invalid(format!(
                "Qdrant collection `{}` has an unexpected vector config ({other:?}); expected one \
                 unnamed {}-dimensional cosine vector",
                self.collection, self.dim
            ))),
        }
    }

    fn ensure_payload_indexes(&self) -> Result<()> {
        for (field, is_tenant) in [
            (F_OWNER, true),
            (F_TIER, false),
            (F_THREAD, false),
            (F_STATUS, false),
            (F_KIND, false),
        ] {
            let params = KeywordIndexParamsBuilder::default()
                .is_tenant(is_tenant)
                .enable_hnsw(is_tenant)
                .build();
            // Creating an index that exists with the same schema is a no-op
            // on the server, so every node can do this at start.
            let request =
                CreateFieldIndexCollectionBuilder::new(&self.collection, field, FieldType::Keyword)
                    .field_index_params(params)
                    .wait(true)
                    .build();
            self.run(
                &format!("creating payload index `{field}`"),
                move |c| async move { c.create_field_index(request).await },
            )?;
        }
        Ok(())
    }

    /// Deletes the collection, points and all (evaluation runs and tests
    /// drop the temporary collections they create).
    pub fn drop_collection(&self) -> Result<()> {
        let request = DeleteCollectionBuilder::new(&self.collection).build();
        self.run("deleting the collection", move |c| async move {
            c.delete_collection(request).await
        })?;
        Ok(())
    }

    fn count(&self, filter: Filter, what: &str) -> Result<usize> {
        let request = CountPointsBuilder::new(&self.collection)
            .filter(filter)
            .exact(true)
            .read_consistency(consistency(ReadConsistencyType::All))
            .build();
        let n = self.run(what, move |c| async move { c.count(request).await })?;
        Ok(n.result.map_or(0, |r| r.count as usize))
    }
}

impl VectorIndex for QdrantServerIndex {
    fn dim(&self) -> usize {
        self.dim
    }

    fn upsert(&self, points: Vec<VectorPoint>) -> Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        check_points_dim(&points, self.dim)?;
        let points = points
            .into_iter()
            .map(|p| {
                let payload = Payload::try_from(payload_json(&p, &self.key))
                    .map_err(|e| Error::internal(format!("building a point payload: {e}")))?;
                Ok(PointStruct::new(p.id, p.vector, payload))
            })
            .collect::<Result<Vec<_>>>()?;
        let request = UpsertPointsBuilder::new(&self.collection, points)
            .wait(true)
            .ordering(write_ordering())
            .build();
        self.run("upserting points", move |c| async move {
            c.upsert_points(request).await
        })?;
        Ok(())
    }

    fn delete(&self, ids: &[Uuid]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<PointId> = ids.iter().map(|id| PointId::from(*id)).collect();
        let request = DeletePointsBuilder::new(&self.collection)
            .points(PointsIdsList { ids })
            .wait(true)
            .ordering(write_ordering())
            .build();
        self.run("deleting points", move |c| async move {
            c.delete_points(request).await
        })?;
        Ok(())
    }

    fn delete_owner(&self, owner: &Owner) -> Result<usize> {
        // Unlike the embedded index, another node may add a point between
        // the count and the delete: the count is what existed just before.
        let count = self.count(owner_filter(owner), "counting an owner's points")?;
        if count > 0 {
            let request = DeletePointsBuilder::new(&self.collection)
                .points(owner_filter(owner))
                .wait(true)
                .ordering(write_ordering())
                .build();
            self.run("deleting an owner's points", move |c| async move {
                c.delete_points(request).await
            })?;
        }
        Ok(count)
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
        // One query per scope clause, planned on its own cardinality as in
        // the embedded index, sent as one batch (one round trip).
        let queries: Vec<_> = filter
            .per_clause()
            .filter_map(|clause| translate_filter(&clause, &self.key))
            .map(|f| {
                QueryPointsBuilder::new(&self.collection)
                    .query(Query::new_nearest(vector.to_vec()))
                    .filter(f)
                    .limit(limit as u64)
                    .params(
                        SearchParamsBuilder::default().acorn(AcornSearchParamsBuilder::new(true)),
                    )
                    .with_payload(false)
                    .with_vectors(false)
                    .build()
            })
            .collect();
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let request = QueryBatchPointsBuilder::new(&self.collection, queries).build();
        let response = self.run(
            "searching",
            move |c| async move { c.query_batch(request).await },
        )?;
        let lists = response
            .result
            .into_iter()
            .map(|batch| {
                batch
                    .result
                    .into_iter()
                    .map(|p| Ok((point_uuid(p.id)?, p.score)))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(merge_nearest(lists, limit))
    }

    fn entries(&self) -> Result<Vec<(Uuid, i64)>> {
        let mut out = Vec::new();
        let mut offset: Option<PointId> = None;
        loop {
            let mut request = ScrollPointsBuilder::new(&self.collection)
                .limit(SCROLL_PAGE)
                .with_payload(PayloadIncludeSelector::from(vec![F_VERSION.to_string()]))
                .with_vectors(false)
                .read_consistency(consistency(ReadConsistencyType::Majority));
            if let Some(o) = offset.take() {
                request = request.offset(o);
            }
            let request = request.build();
            let page = self.run(
                "listing points",
                move |c| async move { c.scroll(request).await },
            )?;
            for p in page.result {
                let version = match p.payload.get(F_VERSION).and_then(|v| v.kind.as_ref()) {
                    Some(ValueKind::IntegerValue(v)) => Some(*v),
                    _ => None,
                };
                let id = point_uuid(p.id)?;
                let version = version.ok_or_else(|| {
                    VectorError::invalid(format!("point {id} has no integer `version` payload"))
                })?;
                out.push((id, version));
            }
            match page.next_page_offset {
                Some(next) => offset = Some(next),
                None => break,
            }
        }
        Ok(out)
    }

    fn versions(&self, ids: &[Uuid]) -> Result<std::collections::HashMap<Uuid, i64>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let point_ids: Vec<PointId> = ids.iter().map(|id| PointId::from(*id)).collect();
        let request = qdrant_client::qdrant::GetPointsBuilder::new(&self.collection, point_ids)
            .with_payload(PayloadIncludeSelector::from(vec![F_VERSION.to_string()]))
            .with_vectors(false)
            .read_consistency(consistency(ReadConsistencyType::Majority))
            .build();
        let found = self.run("retrieving points", move |c| async move {
            c.get_points(request).await
        })?;
        found
            .result
            .into_iter()
            .map(|p| {
                let version = match p.payload.get(F_VERSION).and_then(|v| v.kind.as_ref()) {
                    Some(ValueKind::IntegerValue(v)) => Some(*v),
                    _ => None,
                };
                let id = point_uuid(p.id)?;
                let version = version.ok_or_else(|| {
                    VectorError::invalid(format!("point {id} has no integer `version` payload"))
                })?;
                Ok((id, version))
            })
            .collect()
    }

    fn entry_count(&self) -> Result<usize> {
        self.count(Filter::default(), "counting the points")
    }

    fn count_owner(&self, owner: &Owner) -> Result<usize> {
        self.count(owner_filter(owner), "counting an owner's points")
    }

    fn flush(&self) -> Result<()> {
        // Acknowledged writes (`wait: true`) are already in the server's WAL.
        Ok(())
    }

    fn optimize(&self) -> Result<()> {
        // The server's optimizers build HNSW and merge segments on their own.
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        self.drop_collection()?;
        self.create_collection()?;
        self.ensure_payload_indexes()
    }
}

/// The server the Qdrant tests run against (the unit contract suite and
/// the clustered end-to-end tests): `MNEMO_TEST_QDRANT_URL` (optional
/// `MNEMO_TEST_QDRANT_API_KEY`), a fresh collection named `prefix_<uuid>`
/// (tests run in parallel and drop their own), and on a cluster the layout
/// from `MNEMO_TEST_QDRANT_{SHARDS,REPLICATION_FACTOR,WRITE_CONSISTENCY}`, as
/// `make test-qdrant` sets them. Panics (the tests fail loudly, never pass
/// silently) when no server is named.
#[doc(hidden)]
pub fn test_server_config(prefix: &str) -> QdrantServerConfig {
    let url = std::env::var("MNEMO_TEST_QDRANT_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            panic!("MNEMO_TEST_QDRANT_URL is not set: this test needs a Qdrant server")
        });
    let env_u32 = |name: &str| {
        let v = std::env::var(name).ok().filter(|v| !v.is_empty())?;
        Some(
            v.parse::<u32>()
                .unwrap_or_else(|_| panic!("{name}={v} is not a whole number")),
        )
    };
    let mut config = QdrantServerConfig::new(url);
    config.api_key = std::env::var("MNEMO_TEST_QDRANT_API_KEY").ok();
    config.collection = format!("{prefix}_{}", Uuid::new_v4().simple());
    config.layout = CollectionLayout {
        shard_number: env_u32("MNEMO_TEST_QDRANT_SHARDS"),
        replication_factor: env_u32("MNEMO_TEST_QDRANT_REPLICATION_FACTOR"),
        write_consistency_factor: env_u32("MNEMO_TEST_QDRANT_WRITE_CONSISTENCY"),
    };
    config
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::domain::{Kind, Status, Tier};
    use crate::vector::contract::*;

    fn server_config() -> QdrantServerConfig {
        super::test_server_config("mnemo_test")
    }

    fn server_fixture(dim: usize) -> Fixture {
        let idx = Arc::new(QdrantServerIndex::connect(&server_config(), dim).unwrap());
        let owner = idx.clone();
        Fixture::new(idx).on_drop(move || {
            if let Err(e) = owner.drop_collection() {
                eprintln!("could not drop test collection {}: {e}", owner.collection());
            }
        })
    }

    /// The contract every vector backend passes, against a real server.
    mod contract {
        use super::server_fixture;
        crate::vector::contract::vector_contract_tests!(
            server_fixture,
            #[ignore = "needs MNEMO_TEST_QDRANT_URL (a Qdrant server)"]
        );
    }

    #[test]
    #[ignore = "needs MNEMO_TEST_QDRANT_URL (a Qdrant server)"]
    fn a_second_node_sees_the_first_nodes_writes_and_a_dimension_mismatch_is_named() {
        let config = server_config();
        let a = QdrantServerIndex::connect(&config, 4).unwrap();
        // A second client on the same collection, as another mnemo node.
        let b = QdrantServerIndex::connect(&config, 4).unwrap();
        let id = Uuid::now_v7();
        a.upsert(vec![point(id, vec![1.0; 4], &alice(), Tier::LongTerm)])
            .unwrap();
        assert_eq!(b.entries().unwrap(), vec![(id, 1)]);
        assert_eq!(
            ids(&b.search(&[1.0; 4], &alice_long_term(), 3).unwrap()),
            vec![id]
        );
        assert_eq!(b.delete_owner(&alice()).unwrap(), 1);
        assert_eq!(a.count_owner(&alice()).unwrap(), 0);
        let err = QdrantServerIndex::connect(&config, 384).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("4-dimensional") && msg.contains("384"),
            "{msg}"
        );
        a.drop_collection().unwrap();
    }

    /// On a cluster, the collection is laid out as configured: every shard
    /// has `replication_factor` active replicas on distinct peers.
    #[test]
    #[ignore = "needs MNEMO_TEST_QDRANT_URL and MNEMO_TEST_QDRANT_REPLICATION_FACTOR (a Qdrant cluster)"]
    fn a_cluster_collection_has_the_configured_shards_and_replicas() {
        let config = server_config();
        let replicas = config
            .layout
            .replication_factor
            .expect("set MNEMO_TEST_QDRANT_REPLICATION_FACTOR for this test");
        let idx = QdrantServerIndex::connect(&config, 4).unwrap();
        let shards = idx.shard_replicas().unwrap();
        // The servers' storage is temporary: a failed assertion leaking the
        // collection is harmless.
        if let Some(n) = config.layout.shard_number {
            assert_eq!(shards.len(), n as usize, "{shards:?}");
        }
        for (shard, placed) in &shards {
            let peers: std::collections::BTreeSet<u64> = placed.iter().map(|p| p.0).collect();
            assert_eq!(peers.len(), replicas as usize, "shard {shard}: {placed:?}");
            assert!(
                placed.iter().all(|p| p.1 == ReplicaState::Active),
                "shard {shard} not active: {placed:?}"
            );
        }
        idx.drop_collection().unwrap();
    }

    #[test]
    fn an_unreachable_server_is_unavailable_and_names_its_url() {
        // Port 1 on loopback: nothing listens there, the connection is refused.
        let mut config = QdrantServerConfig::new("http://127.0.0.1:1");
        config.connect_timeout = Duration::from_secs(2);
        config.timeout = Duration::from_secs(2);
        let err = QdrantServerIndex::connect(&config, 4).unwrap_err();
        assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
        assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    }

    #[test]
    fn a_bad_configuration_is_refused_before_any_request() {
        let err = QdrantServerIndex::connect(&QdrantServerConfig::new("not a url"), 4).unwrap_err();
        assert!(matches!(err, Error::Config { .. }), "{err:?}");
        let mut config = QdrantServerConfig::new("http://127.0.0.1:1");
        config.collection = String::new();
        assert!(matches!(
            QdrantServerIndex::connect(&config, 4),
            Err(Error::Config { .. })
        ));
        assert!(
            QdrantServerIndex::connect(&QdrantServerConfig::new("http://127.0.0.1:1"), 0).is_err()
        );
        // The API key never shows in debug output (logs).
        let mut config = QdrantServerConfig::new("http://127.0.0.1:1");
        config.api_key = Some("s3cret".into());
        assert!(!format!("{config:?}").contains("s3cret"));
    }

    #[test]
    fn the_payload_keeps_integers_integral_and_omits_an_absent_thread() {
        let key = PayloadKey::derived("mnemo_memories");
        let mut p = point(Uuid::now_v7(), vec![0.0; 2], &alice(), Tier::Working);
        p.version = 7;
        p.kind = Kind::Event;
        p.status = Status::Pending;
        let payload: std::collections::HashMap<String, qdrant_client::qdrant::Value> =
            Payload::try_from(payload_json(&p, &key)).unwrap().into();
        let kind = |k: &str| payload.get(k).and_then(|v| v.kind.clone());
        assert_eq!(kind(F_VERSION), Some(ValueKind::IntegerValue(7)));
        assert_eq!(
            kind(F_OWNER),
            Some(ValueKind::StringValue(alice().as_str().to_string()))
        );
        assert_eq!(
            kind(F_STATUS),
            Some(ValueKind::StringValue("pending".into()))
        );
        assert!(!payload.contains_key(F_THREAD));
        p.thread_id = Some("t1".into());
        let payload: std::collections::HashMap<String, qdrant_client::qdrant::Value> =
            Payload::try_from(payload_json(&p, &key)).unwrap().into();
        assert_eq!(
            payload.get(F_THREAD).and_then(|v| v.kind.clone()),
            Some(ValueKind::StringValue(key.thread(&alice(), "t1")))
        );
    }

    #[test]
    fn filters_that_match_nothing_never_reach_the_server() {
        let key = PayloadKey::derived("mnemo_memories");
        let full = alice_long_term();
        assert!(translate_filter(&full, &key).is_some());
        let none = IndexFilter {
            clauses: vec![],
            ..full.clone()
        };
        assert!(translate_filter(&none, &key).is_none());
        let none = IndexFilter {
            statuses: vec![],
            ..full
        };
        assert!(translate_filter(&none, &key).is_none());
    }
}
