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
pub mod error;
pub mod payload_key;
pub mod qdrant;

#[cfg(test)]
pub(crate) mod contract;

use serde_json::json;
use uuid::Uuid;

use crate::domain::scope::IndexFilter;
use crate::domain::{Kind, Owner, Status, Tier};
use crate::error::Result;

pub use self::error::VectorError;
pub use self::payload_key::PayloadKey;
pub use self::qdrant::{CollectionLayout, QdrantServerConfig, QdrantServerIndex};

/// Where the vectors live.
#[derive(Clone, Debug, Default)]
pub enum VectorBackend {
    /// qdrant-edge in the data directory (one node).
    #[default]
    Embedded,
    /// A collection on a Qdrant server or cluster, shared by every node.
    Server(QdrantServerConfig),
}

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
    /// The versions of the points among `ids` that exist (the repair loop's
    /// check by id and version, `repair.rs`). The default scans `entries`;
    /// backends override it with a lookup by id.
    fn versions(&self, ids: &[Uuid]) -> Result<std::collections::HashMap<Uuid, i64>> {
        let wanted: std::collections::HashSet<&Uuid> = ids.iter().collect();
        Ok(self
            .entries()?
            .into_iter()
            .filter(|(id, _)| wanted.contains(id))
            .collect())
    }
    /// How many points there are (`mnemo stats`, the inspector). The
    /// default counts `entries`; backends override it with their own count.
    fn entry_count(&self) -> Result<usize> {
        Ok(self.entries()?.len())
    }
    /// How many points an owner has (for erasure verification).
    fn count_owner(&self, owner: &Owner) -> Result<usize>;
    /// Makes every write so far durable.
    fn flush(&self) -> Result<()>;
    /// Builds search structures (HNSW) and merges segments. Called by a
    /// background task, never on the request path.
    fn optimize(&self) -> Result<()>;
    /// Points not yet in a search structure (HNSW): what `optimize` would
    /// index. The background optimiser asks this, not only its own count of
    /// writes, so that an index opened with unindexed points (a shard left
    /// by an older build's rebuild, or restored) is indexed without waiting
    /// for new writes. 0 where the server indexes by itself.
    fn unindexed(&self) -> Result<usize> {
        Ok(0)
    }
    /// Removes every point (used by `reindex`).
    fn clear(&self) -> Result<()>;
    /// Makes deleted points physically gone from the files this process
    /// owns, once an owner's points were deleted (an erasure): returns how
    /// many bytes of old index files it removed, 0 when there was nothing to
    /// purge or the files are not ours (the Qdrant server's WAL and segments
    /// are its operator's, see docs/guide/forget-all.md).
    fn purge_deleted(&self) -> Result<u64> {
        Ok(0)
    }
    /// [`VectorIndex::purge_deleted`] whether or not an owner delete was
    /// recorded: for a resumed erasure, whose first run may have died after
    /// the index lost track of the user's last points (a kill -9 can leave
    /// points qdrant-edge applied but had not flushed out of its id tracker,
    /// so they count as absent, while their vectors and payloads stay in its
    /// WAL and segment files). The same as `purge_deleted` where the files
    /// are not ours.
    fn purge_unconditionally(&self) -> Result<u64> {
        self.purge_deleted()
    }
}

/// The best `limit` of several hit lists (one per scope clause, see
/// [`IndexFilter::per_clause`]), best first, each id once: the top of a
/// union is the top of its parts' tops, as the scores of one index compare
/// across its filters. Ties keep the earlier list's hit first.
pub(crate) fn merge_nearest(lists: Vec<Vec<(Uuid, f32)>>, limit: usize) -> Vec<(Uuid, f32)> {
    let mut lists = lists.into_iter();
    let Some(mut all) = lists.next() else {
        return Vec::new();
    };
    for more in lists {
        all.extend(more);
    }
    // Stable: equal scores keep their order, the first list's first.
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut seen = std::collections::HashSet::with_capacity(all.len());
    all.retain(|(id, _)| seen.insert(*id));
    all.truncate(limit);
    all
}

/// Refuses a query vector of the wrong dimension (never truncated).
pub(crate) fn check_query_dim(vector: &[f32], dim: usize) -> Result<()> {
    if vector.len() != dim {
        return Err(crate::vector::VectorError::invalid(format!(
            "query vector has {} dimensions; the index holds {dim}-dimensional ones",
            vector.len()
        )));
    }
    Ok(())
}

/// Refuses a batch holding a vector of the wrong dimension.
pub(crate) fn check_points_dim(points: &[VectorPoint], dim: usize) -> Result<()> {
    match points.iter().find(|p| p.vector.len() != dim) {
        Some(bad) => Err(crate::vector::VectorError::invalid(format!(
            "point {} has a {}-dimensional vector; the index holds {dim}-dimensional ones",
            bad.id,
            bad.vector.len()
        ))),
        None => Ok(()),
    }
}

// The payload every backend stores, and its keys.
pub(crate) const F_OWNER: &str = "owner";
pub(crate) const F_TIER: &str = "tier";
pub(crate) const F_THREAD: &str = "thread_id";
pub(crate) const F_STATUS: &str = "status";
pub(crate) const F_KIND: &str = "kind";
pub(crate) const F_CREATED: &str = "created_at_ms";
pub(crate) const F_IMPORTANCE: &str = "importance";
pub(crate) const F_VERSION: &str = "version";

/// A point's payload as JSON: `owner`, `tier`, `status`, `kind` (keywords),
/// `thread_id` (hashed with `key`, absent when none), `created_at_ms`,
/// `version` (integers) and `importance` (float).
pub(crate) fn payload_json(p: &VectorPoint, key: &PayloadKey) -> serde_json::Value {
    let mut v = json!({
        F_OWNER: p.owner.as_str(),
        F_TIER: p.tier.as_str(),
        F_STATUS: p.status.as_str(),
        F_KIND: p.kind.as_str(),
        F_CREATED: p.created_at_ms,
        F_IMPORTANCE: p.importance,
        F_VERSION: p.version,
    });
    if let Some(thread) = &p.thread_id {
        v[F_THREAD] = json!(key.thread(&p.owner, thread));
    }
    v
}

/// An [`IndexFilter`] reduced to keyword matches (thread ids hashed as in
/// [`payload_json`]), which each backend writes
/// in its own filter types: a point passes when it matches every key of at
/// least one clause, and one of the values of every `any_of` key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeywordFilter {
    pub clauses: Vec<Vec<(&'static str, String)>>,
    pub any_of: Vec<(&'static str, Vec<String>)>,
}

/// `None` when the filter can match nothing (no clauses, no statuses, or an
/// empty kind list): an empty `should` or `any` must never reach an engine.
pub(crate) fn keyword_filter(filter: &IndexFilter, key: &PayloadKey) -> Option<KeywordFilter> {
    if filter.clauses.is_empty()
        || filter.statuses.is_empty()
        || filter.kinds.as_ref().is_some_and(|k| k.is_empty())
    {
        return None;
    }
    let clauses = filter
        .clauses
        .iter()
        .map(|c| {
            let mut must = vec![
                (F_OWNER, c.owner.as_str().to_string()),
                (F_TIER, c.tier.as_str().to_string()),
            ];
            if let Some(thread) = &c.thread_id {
                must.push((F_THREAD, key.thread(&c.owner, thread)));
            }
            must
        })
        .collect();
    let mut any_of = vec![(
        F_STATUS,
        filter
            .statuses
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
    )];
    if let Some(kinds) = &filter.kinds {
        any_of.push((
            F_KIND,
            kinds.iter().map(|k| k.as_str().to_string()).collect(),
        ));
    }
    Some(KeywordFilter { clauses, any_of })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn merging_keeps_the_best_of_every_list_once() {
        let mine = vec![(id(1), 0.9), (id(2), 0.4)];
        let shared = vec![(id(3), 0.8), (id(1), 0.9), (id(4), 0.5)];
        let merged = merge_nearest(vec![mine, shared], 3);
        assert_eq!(merged, vec![(id(1), 0.9), (id(3), 0.8), (id(4), 0.5)]);
    }

    #[test]
    fn merging_nothing_or_one_list() {
        assert!(merge_nearest(vec![], 5).is_empty());
        let one = vec![(id(1), 0.3), (id(2), 0.2)];
        assert_eq!(merge_nearest(vec![one.clone()], 5), one);
        assert_eq!(merge_nearest(vec![one], 1), vec![(id(1), 0.3)]);
    }
}
