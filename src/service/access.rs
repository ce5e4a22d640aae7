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
        let round = gather(first, &mut rx, GATHER).await;
        for (ids, at) in merge(round.accesses) {
            if let Err(e) = store.record_access(&ids, at).await {
                tracing::warn!(error = %e, "recording access failed");
            }
        }
        for done in round.flushes {
            let _ = done.send(());
        }
    }
}

/// What one round writes, and the flushes it answers once written.
struct Round {
    accesses: Vec<Access>,
    flushes: Vec<tokio::sync::oneshot::Sender<()>>,
}

/// The round that starts with `first`: the messages of the next `window`
/// ([`GATHER`]), at most [`MAX_DRAIN`] searches; a flush or the channel's
/// end closes it at once.
async fn gather(first: Message, rx: &mut mpsc::Receiver<Message>, window: Duration) -> Round {
    let deadline = tokio::time::Instant::now() + window;
    let mut round = Round {
        accesses: Vec::new(),
        flushes: Vec::new(),
    };
    let mut next = Some(first);
    while let Some(message) = next.take() {
        match message {
            Message::Access(a) => round.accesses.push(a),
            // Nothing after a flush joins this round: its answer must not
            // wait for later searches.
            Message::Flush(done) => {
                round.flushes.push(done);
                break;
            }
        }
        if round.accesses.len() < MAX_DRAIN {
            next = tokio::time::timeout_at(deadline, rx.recv())
                .await
                .ok()
                .flatten();
        }
    }
    round
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

    fn access(n: u128) -> Message {
        Message::Access((vec![Uuid::from_u128(n)], Utc::now()))
    }

    /// A round takes what arrives within its window of the first search,
    /// not only what was waiting; a flush ends it at once; `MAX_DRAIN` caps
    /// it. (Real time: the sends are hundreds of ms from the window's end.)
    #[tokio::test]
    async fn a_round_gathers_the_searches_of_its_window() {
        let window = Duration::from_millis(600);
        let (tx, mut rx) = mpsc::channel(4096);
        let sender = tokio::spawn({
            let tx = tx.clone();
            async move {
                for (n, after_ms) in [(2, 50), (3, 100), (4, 1350)] {
                    tokio::time::sleep(Duration::from_millis(after_ms)).await;
                    tx.send(access(n)).await.unwrap();
                }
            }
        });
        let started = tokio::time::Instant::now();
        let round = gather(access(1), &mut rx, window).await;
        let took = started.elapsed();
        // Searches at 0.05 and 0.15 s joined; the one at 1.5 s did not.
        let ids: Vec<u128> = round.accesses.iter().map(|(i, _)| i[0].as_u128()).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert!(took >= window, "{took:?}");
        sender.await.unwrap();
        let Some(first) = rx.recv().await else {
            panic!("the fourth search")
        };
        let (done, answered) = tokio::sync::oneshot::channel();
        tx.send(Message::Flush(done)).await.unwrap();
        tx.send(access(5)).await.unwrap();
        let started = tokio::time::Instant::now();
        let round = gather(first, &mut rx, Duration::from_secs(5)).await;
        assert_eq!(round.accesses.len(), 1, "the search after the flush waits");
        assert_eq!(round.flushes.len(), 1);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a flush ends the round"
        );
        drop(round);
        assert!(answered.await.is_err(), "dropped unanswered here");
        let Some(first) = rx.recv().await else {
            panic!("the fifth search")
        };
        for n in 0..MAX_DRAIN as u128 + 10 {
            tx.send(access(100 + n)).await.unwrap();
        }
        let round = gather(first, &mut rx, Duration::from_secs(5)).await;
        assert_eq!(round.accesses.len(), MAX_DRAIN);
        drop(tx);
        let first = rx.recv().await.unwrap();
        let rest = gather(first, &mut rx, Duration::from_secs(5)).await;
        assert_eq!(
            rest.accesses.len(),
            11,
            "the channel's end closes the round"
        );
    }

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
