//! Scope filters that every point of a shard passes, so that a search can
//! walk the graph without checking them.
//!
//! **Why.** A search's clause names an owner, its tier and the statuses it
//! admits; the engine checks those keyword conditions on every point its
//! graph walk visits (reading each point's values from the payload index and
//! comparing strings). In the reference partition of a single-tenant
//! deployment every point passes them, and the checks were most of the
//! walk: at 1M memories (200,000 reference chunks, e5, `hnsw_ef` 256,
//! `examples/vector_probe.rs --conditions 3` against `0` on a copy of the
//! partition) 2.61 ms p50 filtered against about 0.7 ms without the filter.
//!
//! The same holds in the users partition of a deployment with one user (the
//! 10k REST benchmark's: 1.09 ms p50 filtered against about 0.54 ms, one
//! user's 10,000 memories, same probe).
//!
//! **When a filter is dropped.** Only when the shard holds no point outside
//! it: first the payload index's estimate of the filter's points must reach
//! the shard's point count (a user's clause in a partition of many users
//! stops there, reading no point), then an exact count of the points failing
//! it (`must_not`) must be 0. That count reads every point, so the answer is
//! cached per *state* of the shard, and a state is known by two counters of
//! writes, begun and ended ([`Implied::begin_write`], [`Implied::end_write`]):
//! - an answer is kept only if no write began between the moment `ended` was
//!   read before its check and the moment `begun` was read after it (every
//!   write that had begun by then had also ended before the check started,
//!   so the shard did not change under it); its state is that value of
//!   `ended`;
//! - a search may drop a filter only when `ended` still equals the cached
//!   state, and it re-runs with the filter if `begun` moved while it
//!   searched ([`Implied::unchanged_since`]).
//!
//! After a write, the next search checks again, but at most once per
//! [`RECOUNT_EVERY`] (a bulk of writes would otherwise pay a full count per
//! search); until then searches keep their filters, which is always correct.
//! The service re-checks every hit's scope in the store as well (the store
//! is the truth); this keeps the index's own contract exact.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The shortest time between two recounts of a changed shard.
pub(super) const RECOUNT_EVERY: Duration = Duration::from_secs(1);

/// Filters kept per state; more are recounted each time (a shard that is
/// searched with many distinct filters is not one whose filters are implied).
const MAX_FILTERS: usize = 64;

/// See the module docs.
#[derive(Debug, Default)]
pub(super) struct Implied {
    begun: AtomicU64,
    ended: AtomicU64,
    cache: Mutex<Cache>,
}

#[derive(Debug, Default)]
struct Cache {
    /// The value of `ended` the answers hold for.
    state: u64,
    /// Filter (by its `Debug` form) → every point passes it.
    answers: HashMap<String, bool>,
    /// When a count last ran.
    counted_at: Option<Instant>,
}

/// A search's view of the shard's state, taken before it searches.
#[derive(Clone, Copy, Debug)]
pub(super) struct Snapshot(u64);

impl Implied {
    /// Before any change to the shard's points (and before a swap of the
    /// shard).
    pub(super) fn begin_write(&self) {
        self.begun.fetch_add(1, Ordering::SeqCst);
    }

    /// After the change [`begin_write`](Self::begin_write) announced, whether
    /// it succeeded or not.
    pub(super) fn end_write(&self) {
        self.ended.fetch_add(1, Ordering::SeqCst);
    }

    /// A change no search can overlap (a swap of the shard, under its
    /// exclusive lock): later searches see a new state.
    pub(super) fn replaced(&self) {
        self.begin_write();
        self.end_write();
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot(self.ended.load(Ordering::SeqCst))
    }

    /// True when no write began since `snapshot` was taken, nor was running
    /// then: the shard is as it was.
    pub(super) fn unchanged_since(&self, snapshot: Snapshot) -> bool {
        self.begun.load(Ordering::SeqCst) == snapshot.0
    }

    /// Whether every point passes the filter keyed `key`, as of `snapshot`:
    /// the cached answer, or `check` run (and its answer kept) when the
    /// cache is of an older state and the last check is old enough. `false`
    /// when unknown. `check` must answer `true` only when no point fails the
    /// filter.
    pub(super) fn every_point_passes<E>(
        &self,
        key: &str,
        snapshot: Snapshot,
        check: impl FnOnce() -> Result<bool, E>,
    ) -> Result<bool, E> {
        {
            let mut cache = self.cache.lock();
            if cache.state == snapshot.0 {
                if let Some(&answer) = cache.answers.get(key) {
                    return Ok(answer);
                }
            } else if cache
                .counted_at
                .is_some_and(|at| at.elapsed() < RECOUNT_EVERY)
            {
                return Ok(false);
            }
            cache.counted_at = Some(Instant::now());
        }
        let answer = check()?;
        if !self.unchanged_since(snapshot) {
            // A write began during the check: it may not have seen it.
            return Ok(false);
        }
        let mut cache = self.cache.lock();
        if cache.state != snapshot.0 {
            cache.state = snapshot.0;
            cache.answers.clear();
        }
        if cache.answers.len() < MAX_FILTERS {
            cache.answers.insert(key.to_string(), answer);
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(answer: bool) -> impl FnOnce() -> Result<bool, ()> {
        move || Ok(answer)
    }

    #[test]
    fn an_answer_holds_until_a_write_begins() {
        let implied = Implied::default();
        let s = implied.snapshot();
        assert!(implied.every_point_passes("f", s, check(true)).unwrap());
        // Cached: the count is not run again.
        let s = implied.snapshot();
        assert!(implied
            .every_point_passes("f", s, || -> Result<bool, ()> { panic!("recounted") })
            .unwrap());
        assert!(implied.unchanged_since(s));
        implied.begin_write();
        // A search that began before the write must not trust its walk.
        assert!(!implied.unchanged_since(s));
        implied.end_write();
        // A new state within RECOUNT_EVERY of the last count: unknown.
        let s = implied.snapshot();
        assert!(!implied
            .every_point_passes("f", s, || -> Result<bool, ()> { panic!("recounted") })
            .unwrap());
    }

    #[test]
    fn a_count_a_write_overlapped_is_not_kept() {
        let implied = Implied::default();
        implied.begin_write();
        // The snapshot is taken while the write runs: begun is ahead.
        let s = implied.snapshot();
        assert!(!implied.every_point_passes("f", s, check(true)).unwrap());
        implied.end_write();
        let implied = Implied::default();
        let s = implied.snapshot();
        let answer = implied
            .every_point_passes("f", s, || {
                implied.begin_write();
                Ok::<_, ()>(true)
            })
            .unwrap();
        assert!(!answer, "the write began during the count");
    }

    #[test]
    fn a_failing_point_keeps_the_filter() {
        let implied = Implied::default();
        let s = implied.snapshot();
        assert!(!implied.every_point_passes("f", s, check(false)).unwrap());
        assert!(!implied
            .every_point_passes("f", s, || -> Result<bool, ()> { panic!("recounted") })
            .unwrap());
    }
}
