//! Coalesced purges: erasures that finish together share one purge.
//!
//! An erasure's purge (`VACUUM`, see [`super::Dialect::purge_erased`]) must
//! start after the erasure's rows were deleted, or it could copy them into
//! the rewritten file. That is the only requirement, so an erasure that asks
//! while another's purge is running does not need a purge of its own once
//! the next one has run: ten erasures queued by an operator cost two purges,
//! not ten (each a rewrite of the whole SQLite file, during which other
//! writes wait).
//!
//! Runs are numbered as they start. A caller that asks when `n` runs have
//! started is served by any run numbered above `n` that completed; runs are
//! one at a time (the mutex), and a failed run serves nobody.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Mutex;

use crate::error::Result;

#[derive(Debug, Default)]
pub(crate) struct PurgeGate {
    /// How many runs have started; only incremented under `completed`'s lock.
    started: AtomicU64,
    /// The number of the latest run that completed; held while a run runs.
    completed: Mutex<u64>,
}

impl PurgeGate {
    /// Runs `purge`, unless a run that started after this call completes
    /// first (then returns at once, with that run's success). `Ok(true)` when
    /// this call ran it.
    pub(crate) async fn run<F, Fut>(&self, purge: F) -> Result<bool>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<()>>,
    {
        let started_before = self.started.load(Ordering::SeqCst);
        let mut completed = self.completed.lock().await;
        if *completed > started_before {
            return Ok(false);
        }
        let number = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        purge().await?;
        *completed = number;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::error::Error;

    /// A purge that takes `ms` and counts its runs.
    async fn purge(runs: &AtomicUsize, ms: u64) -> Result<()> {
        runs.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(())
    }

    #[tokio::test]
    async fn callers_waiting_for_a_running_purge_share_the_next_one() {
        let gate = Arc::new(PurgeGate::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let first = {
            let (gate, runs) = (gate.clone(), runs.clone());
            tokio::spawn(async move { gate.run(|| purge(&runs, 200)).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Eight callers arrive while the first purge runs: it started before
        // them, so it cannot serve them; one more run serves all eight.
        let waiting: Vec<_> = (0..8)
            .map(|_| {
                let (gate, runs) = (gate.clone(), runs.clone());
                tokio::spawn(async move { gate.run(|| purge(&runs, 50)).await })
            })
            .collect();
        assert!(first.await.unwrap().unwrap());
        let mut ran = 0;
        for w in waiting {
            ran += usize::from(w.await.unwrap().unwrap());
        }
        assert_eq!(ran, 1);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // A caller after all of that runs its own.
        assert!(gate.run(|| purge(&runs, 0)).await.unwrap());
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_failed_purge_serves_nobody() {
        let gate = PurgeGate::default();
        let err = gate
            .run(|| async { Err(Error::Unavailable("busy".into())) })
            .await;
        assert!(err.is_err());
        let runs = AtomicUsize::new(0);
        assert!(gate.run(|| purge(&runs, 0)).await.unwrap());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
