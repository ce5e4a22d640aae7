//! Access recording, off the request path: searches send the ids they
//! returned to a bounded channel (dropped when it is full, see
//! `Engine::search`); one task drains it and writes the counts.
//!
//! The task gathers the searches of up to [`GATHER`] after the first one
//! (at most [`MAX_DRAIN`]; a flush ends the round at once) and writes them
//! as few statements as the counts allow — ids seen once in one statement,
//! ids seen twice in a second one, and so on (`record_access` adds one per
//! statement) — with the latest time, instead of one write per search.
//! Counts stay exact; `last_accessed_at` is the newest search of the
//! round, written at most [`GATHER`] late.
//!
//! Why gather over time and not only what is waiting: on SQLite every
//! commit changes the WAL, and a reader whose next transaction sees a
//! changed WAL drops its page cache and unmaps its whole memory map
//! (`pagerBeginReadTransaction`). With one write per search, every search's
//! hydration re-faulted the pages it read: about half of hydration's time
//! was `munmap`, page faults and `pread` of WAL frames, and each write was
//! an fsync (`synchronous = FULL`). Gathered, the reads of a second share
//! one view of the file.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::store::MemoryStore;

/// Most searches merged into one round of writes.
pub const MAX_DRAIN: usize = 256;

/// How long a round gathers searches after its first one.
pub const GATHER: Duration = Duration::from_secs(1);

/// One search's returned ids and its time.
pub type Access = (Vec<Uuid>, DateTime<Utc>);

/// What the recorder's channel carries.
pub enum Message {
    Access(Access),
    /// Answered once everything sent before it is written: what
    /// `Engine::shutdown` waits for before it closes the store (otherwise
    /// the searches of the last moments were written to a closed pool, and
    /// lost).
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Runs until the channel closes.
pub async fn record(store: std::sync::Arc<dyn MemoryStore>, mut rx: mpsc::Receiver<Message>) {
    while let Some(first) = rx.recv().await {
        let deadline = tokio::time::Instant::now() + GATHER;
        let mut drained = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Access(a) => drained.push(a),
                // Nothing after a flush joins this round: its answer must
                // not wait for later searches.
                Message::Flush(done) => {
                    flushes.push(done);
                    break;
                }
            }
            if drained.len() < MAX_DRAIN {
                // The next search of the round, until the time is up or the
                // channel closes.
                next = tokio::time::timeout_at(deadline, rx.recv())
                    .await
                    .ok()
                    .flatten();
            }
        }
        for (ids, at) in merge(drained) {
            if let Err(e) = store.record_access(&ids, at).await {
                tracing::warn!(error = %e, "recording access failed");
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// The writes that add each id's number of occurrences: statement *k* holds
/// the ids seen more than *k* times (each once), all at the latest time.
pub fn merge(drained: Vec<Access>) -> Vec<Access> {
    let Some(at) = drained.iter().map(|(_, at)| *at).max() else {
        return Vec::new();
    };
    let mut counts: HashMap<Uuid, usize> = HashMap::new();
    let mut order: Vec<Uuid> = Vec::new();
    for (ids, _) in drained {
        for id in ids {
            let c = counts.entry(id).or_insert(0);
            if *c == 0 {
                order.push(id);
            }
            *c += 1;
        }
    }
    let rounds = counts.values().copied().max().unwrap_or(0);
    (0..rounds)
        .map(|k| {
            let ids = order.iter().copied().filter(|id| counts[id] > k).collect();
            (ids, at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn merged_writes_add_each_ids_count_at_the_latest_time() {
        let t = |s| Utc.timestamp_opt(s, 0).unwrap();
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let out = merge(vec![
            (vec![a, b], t(10)),
            (vec![b, c], t(30)),
            (vec![b], t(20)),
        ]);
        assert_eq!(
            out,
            vec![(vec![a, b, c], t(30)), (vec![b], t(30)), (vec![b], t(30))]
        );
        // Every id gets exactly its number of occurrences.
        let mut total: HashMap<Uuid, usize> = HashMap::new();
        for (ids, _) in &out {
            for id in ids {
                *total.entry(*id).or_default() += 1;
            }
        }
        assert_eq!((total[&a], total[&b], total[&c]), (1, 3, 1));
        assert!(merge(Vec::new()).is_empty());
    }
}
