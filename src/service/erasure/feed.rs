//! Pruning the change feed (`index_changes`), so that it does not keep the
//! memory ids of erased users (nor grow) forever.
//!
//! **What it deletes.** Feed rows every live node has applied, up to a head
//! position read at least [`FEED_PRUNE_GRACE`] ago. **Why that is safe.** A
//! node follows the feed from a cursor it takes when it starts (it reads the
//! head, reconciles with the store, then registers with that head as its
//! applied position; see [`crate::service::cluster`]), so rows below every registered
//! live node's cursor are never read again; a node that is starting is not
//! registered yet, and the grace keeps the rows after the head it read (it
//! registers within the grace unless its reconcile takes longer). A dead node
//! is not waited for: it restarts from the head. On a single node nobody
//! follows the feed, and everything older than the grace goes.
//!
//! Mark (remember the head), grace, purge: each [`FeedPruner::run_once`]
//! prunes up to the head it saw at least one grace ago and remembers the
//! current one. Run by the erasure sweep ([`super::ErasureSweep`]).

use std::time::{Duration, Instant};

use crate::error::Result;
use crate::store::MemoryStore;

/// How long a feed head is remembered before rows up to it are pruned.
pub const FEED_PRUNE_GRACE: Duration = Duration::from_secs(15 * 60);

/// See the module docs.
#[derive(Debug)]
pub struct FeedPruner {
    grace: Duration,
    /// The head seen at a time, not yet pruned up to.
    marked: Option<(Instant, i64)>,
    pub pruned_total: u64,
}

impl FeedPruner {
    pub fn new(grace: Duration) -> Self {
        FeedPruner {
            grace,
            marked: None,
            pruned_total: 0,
        }
    }

    /// Prunes up to the head marked at least a grace ago (if any), then marks
    /// the current head when nothing is marked. Returns rows deleted.
    pub async fn run_once(
        &mut self,
        store: &dyn MemoryStore,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64> {
        let mut deleted = 0;
        if let Some((at, head)) = self.marked {
            if at.elapsed() < self.grace {
                return Ok(0);
            }
            let live_since = now
                - chrono::Duration::from_std(crate::service::cluster::NODE_LIVENESS)
                    .map_err(crate::error::Error::internal)?;
            deleted = store.prune_index_changes(head, live_since).await?;
            self.pruned_total += deleted;
            if deleted > 0 {
                tracing::info!(rows = deleted, "change feed pruned");
            }
        }
        self.marked = Some((Instant::now(), store.change_feed_head().await?));
        Ok(deleted)
    }
}
