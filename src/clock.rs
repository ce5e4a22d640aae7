//! Time, behind a trait so that decay, TTLs and jobs are testable without
//! sleeping. Production uses [`SystemClock`]; tests and the evaluation tool
//! (which replays a question's `asked_at`) use [`ManualClock`].

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use parking_lot::Mutex;

pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<DateTime<Utc>>>);

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock(Arc::new(Mutex::new(start)))
    }

    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock() = at;
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock();
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock()
    }
}

pub type SharedClock = Arc<dyn Clock>;
