//! The vector index: dense embeddings of memory text with the scoping payload
//! (owner, tier, thread, status, kind), searched under an [`IndexFilter`].
//!
//! Contract, for every backend:
//! - The index is *derived* from the store. It may lag or be rebuilt at any
//!   time; it never holds anything the store does not.
//! - `upsert` replaces a point with the same id; `delete` of an unknown id is
//!   not an error. Both are durable once `flush` returns.
//! - `search` applies the filter inside the search (never post-filters), so a
//!   point outside the filter is never returned, whatever `limit` is.
//! - `entries` lists every point's id and version, for reconciliation.
//! - Methods are synchronous and may block: call them off the async runtime.

pub mod edge;

use uuid::Uuid;

use crate::domain::scope::IndexFilter;
use crate::domain::{Kind, Owner, Status, Tier};
use crate::error::Result;

/// The payload a point carries besides its vector.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorPoint {
    pub id: Uuid,
    pub vector: Vec<f32>,
    pub owner: Owner,
    pub tier: Tier,
    pub thread_id: Option<String>,
    pub status: Status,
    pub kind: Kind,
    pub created_at_ms: i64,
    pub importance: f32,
    /// The memory version this point was built from.
    pub version: i64,
}

pub trait VectorIndex: Send + Sync {
    /// The dimension every vector must have.
    fn dim(&self) -> usize;
    fn upsert(&self, points: Vec<VectorPoint>) -> Result<()>;
    fn delete(&self, ids: &[Uuid]) -> Result<()>;
    /// Deletes every point of an owner; returns how many there were.
    fn delete_owner(&self, owner: &Owner) -> Result<usize>;
    /// The `limit` nearest points passing `filter`, best first, as (id, cosine).
    fn search(
        &self,
        vector: &[f32],
        filter: &IndexFilter,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>>;
    /// Every point as (id, version).
    fn entries(&self) -> Result<Vec<(Uuid, i64)>>;
    /// How many points an owner has (for erasure verification).
    fn count_owner(&self, owner: &Owner) -> Result<usize>;
    /// Makes every write so far durable.
    fn flush(&self) -> Result<()>;
    /// Builds search structures (HNSW) and merges segments. Called by a
    /// background task, never on the request path.
    fn optimize(&self) -> Result<()>;
    /// Removes every point (used by `reindex`).
    fn clear(&self) -> Result<()>;
}
