//! One runner for background work. A [`PeriodicTask`] is a struct with a
//! name, an interval and `run_once`; [`Runner::spawn`] runs it every
//! interval until the runner's [`CancellationToken`] is cancelled, counting
//! runs, failures and the last run's duration ([`TaskCounters`], exported at
//! `/metrics` as `mnemo_task_runs_total`, `mnemo_task_failures_total` and
//! `mnemo_task_last_run_duration_seconds`).
//!
//! One-shot work started by a request (an evaluation, an export's writer)
//! runs through a [`Spawner`], the runner's cloneable handle: counted under
//! its name the same way (one run per job), given the runner's token, and
//! waited for by [`Runner::stop`].
//!
//! Threading: each task is one tokio task. Stopping cancels the token and
//! waits for every task: a run in progress finishes (it is never cut off
//! half way, as `abort()` did), and no new run starts; one-shot work
//! returns once it sees the token cancelled.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// Background work that runs every [`interval`](Self::interval).
#[async_trait]
pub trait PeriodicTask: Send + 'static {
    /// The task's name in logs and on `/metrics` (kebab-case).
    fn name(&self) -> &'static str;

    fn interval(&self) -> Duration;

    /// Whether the first run is at start (`true`) or after one interval.
    fn run_at_start(&self) -> bool {
        true
    }

    /// One run. An error is logged and counted; the next tick runs again.
    async fn run_once(&mut self) -> Result<()>;
}

/// Runs, failures and the last run's duration of one task in this process.
#[derive(Debug, Default)]
pub struct TaskCounters {
    runs: AtomicU64,
    failures: AtomicU64,
    last_duration_micros: AtomicU64,
}

impl TaskCounters {
    /// The counters of `name`, shared by every task of that name in this
    /// process (so a restarted task keeps counting).
    pub fn of(name: &'static str) -> Arc<TaskCounters> {
        registry().lock().entry(name).or_default().clone()
    }

    /// Records one run that took `took`.
    pub fn record(&self, took: Duration, failed: bool) {
        self.runs.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        self.last_duration_micros.store(
            took.as_micros().min(u64::MAX as u128) as u64,
            Ordering::Relaxed,
        );
    }

    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    pub fn last_duration(&self) -> Duration {
        Duration::from_micros(self.last_duration_micros.load(Ordering::Relaxed))
    }
}

fn registry() -> &'static Mutex<BTreeMap<&'static str, Arc<TaskCounters>>> {
    static TASKS: OnceLock<Mutex<BTreeMap<&'static str, Arc<TaskCounters>>>> = OnceLock::new();
    TASKS.get_or_init(Default::default)
}

/// (name, runs, failures, last duration) of every task this process has
/// run, by name; read by `/metrics` at each scrape.
pub fn snapshot() -> Vec<(&'static str, u64, u64, Duration)> {
    registry()
        .lock()
        .iter()
        .map(|(name, c)| (*name, c.runs(), c.failures(), c.last_duration()))
        .collect()
}

/// Starts tasks and stops them all at once.
pub struct Runner {
    cancel: CancellationToken,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
    oneshots: Spawner,
}

/// Runs one-shot background work on a [`Runner`]: cloneable, so request
/// handlers hold one (`AppState::tasks`). A spawner not taken from a runner
/// (tests) has its own token, never cancelled.
#[derive(Clone, Debug, Default)]
pub struct Spawner {
    cancel: CancellationToken,
    running: Arc<Mutex<JoinSet<()>>>,
}

impl Spawner {
    /// Runs `work` once, counted under `name` at `/metrics` like the
    /// periodic tasks (a failure is logged and counted). `work` is given the
    /// runner's token and must return soon after it is cancelled; the
    /// runner's `stop` waits for it.
    pub fn spawn<F, Fut>(&self, name: &'static str, work: F)
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        let counters = TaskCounters::of(name);
        let run = work(self.cancel.clone());
        let mut running = self.running.lock();
        // Forget the work that has finished (a panic was already reported).
        while running.try_join_next().is_some() {}
        running.spawn(async move {
            let started = Instant::now();
            let result = run.await;
            counters.record(started.elapsed(), result.is_err());
            if let Err(e) = result {
                tracing::warn!(task = name, error = %e, "background work failed");
            }
        });
    }

    /// One-shot work still running.
    pub fn running(&self) -> usize {
        let mut running = self.running.lock();
        while running.try_join_next().is_some() {}
        running.len()
    }

    /// Waits for every piece of work started so far to return.
    async fn wait(&self) {
        let mut all = std::mem::take(&mut *self.running.lock());
        while let Some(done) = all.join_next().await {
            if let Err(e) = done {
                tracing::error!(error = %e, "one-shot background work panicked");
            }
        }
    }
}

impl Default for Runner {
    fn default() -> Self {
        Self::new()
    }
}

impl Runner {
    pub fn new() -> Self {
        let cancel = CancellationToken::new();
        Runner {
            oneshots: Spawner {
                cancel: cancel.clone(),
                running: Default::default(),
            },
            cancel,
            tasks: Vec::new(),
        }
    }

    /// The handle that runs one-shot work on this runner.
    pub fn spawner(&self) -> Spawner {
        self.oneshots.clone()
    }

    /// The token every task of this runner stops on.
    pub fn token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Runs `task` every interval until [`stop`](Self::stop).
    pub fn spawn(&mut self, mut task: impl PeriodicTask) {
        let name = task.name();
        let counters = TaskCounters::of(name);
        let cancel = self.cancel.clone();
        let every = task.interval().max(Duration::from_millis(1));
        let handle = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            if !task.run_at_start() {
                tick.tick().await;
            }
            loop {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let started = Instant::now();
                let result = task.run_once().await;
                counters.record(started.elapsed(), result.is_err());
                if let Err(e) = result {
                    tracing::warn!(task = name, error = %e, "background task failed; the next tick runs it again");
                }
            }
        });
        self.tasks.push((name, handle));
    }

    /// Cancels every task and waits for each to return (a run in progress
    /// finishes first), then for the one-shot work (told by the same token).
    pub async fn stop(self) {
        self.cancel.cancel();
        for (name, handle) in self.tasks {
            if let Err(e) = handle.await {
                tracing::error!(task = name, error = %e, "background task panicked");
            }
        }
        let running = self.oneshots.running();
        if running > 0 {
            tracing::info!(running, "waiting for one-shot background work to stop");
        }
        self.oneshots.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    struct Flaky {
        name: &'static str,
        n: u32,
    }

    #[async_trait]
    impl PeriodicTask for Flaky {
        fn name(&self) -> &'static str {
            self.name
        }
        fn interval(&self) -> Duration {
            Duration::from_millis(5)
        }
        async fn run_once(&mut self) -> Result<()> {
            self.n += 1;
            if self.n.is_multiple_of(2) {
                Err(Error::internal("every second run fails"))
            } else {
                Ok(())
            }
        }
    }

    #[tokio::test]
    async fn runs_are_counted_and_stop_waits_for_the_task() {
        let mut runner = Runner::new();
        runner.spawn(Flaky {
            name: "runner-test-flaky",
            n: 0,
        });
        let counters = TaskCounters::of("runner-test-flaky");
        while counters.runs() < 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        runner.stop().await;
        let (runs, failures) = (counters.runs(), counters.failures());
        assert!(runs >= 4);
        assert_eq!(failures, runs / 2, "every second run failed");
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(counters.runs(), runs, "no run after stop");
        assert!(snapshot()
            .iter()
            .any(|(n, r, f, _)| *n == "runner-test-flaky" && *r == runs && *f == failures));
    }

    #[tokio::test]
    async fn one_shot_work_is_counted_cancelled_and_waited_for_at_stop() {
        let runner = Runner::new();
        let spawner = runner.spawner();
        spawner.spawn("runner-test-once", |_| async { Ok(()) });
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = finished.clone();
        spawner.spawn("runner-test-long", move |cancel| async move {
            let _ = started_tx.send(());
            // Runs until told to stop, then needs a moment to wind down.
            cancel.cancelled().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            seen.store(true, Ordering::SeqCst);
            Err(Error::Unavailable("cancelled".into()))
        });
        started_rx.await.unwrap();
        assert!(spawner.running() >= 1);
        runner.stop().await;
        assert!(finished.load(Ordering::SeqCst), "stop waited for the work");
        assert_eq!(spawner.running(), 0);
        let once = TaskCounters::of("runner-test-once");
        assert_eq!((once.runs(), once.failures()), (1, 0));
        let long = TaskCounters::of("runner-test-long");
        assert_eq!((long.runs(), long.failures()), (1, 1));
    }

    #[tokio::test]
    async fn a_task_that_waits_an_interval_does_not_run_at_start() {
        struct Late;
        #[async_trait]
        impl PeriodicTask for Late {
            fn name(&self) -> &'static str {
                "runner-test-late"
            }
            fn interval(&self) -> Duration {
                Duration::from_secs(3600)
            }
            fn run_at_start(&self) -> bool {
                false
            }
            async fn run_once(&mut self) -> Result<()> {
                Ok(())
            }
        }
        let mut runner = Runner::new();
        runner.spawn(Late);
        tokio::time::sleep(Duration::from_millis(20)).await;
        runner.stop().await;
        assert_eq!(TaskCounters::of("runner-test-late").runs(), 0);
    }
}
