//! Per-key rate limits: a token bucket per authenticated key (policy
//! `[limits] requests_per_second_per_key`, refilled continuously, holding at
//! most `burst_per_key` tokens). Every authenticated request takes one
//! token; without one it is refused with 429 `rate_limited` and a
//! `Retry-After` saying when the next token arrives. Keyless requests of
//! `--insecure-dev` share the local operator's bucket.
//!
//! Buckets are kept per node (several nodes behind a load balancer each
//! allow the rate) and only for keys that authenticated, so the map is
//! bounded by the number of keys; idle buckets (full again) are dropped when
//! it grows past [`MAX_BUCKETS`].
//!
//! Threading: one short `parking_lot` lock per request, never held across an
//! `.await`.

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::policy::Policy;

/// Past this many buckets, full (idle) ones are dropped.
pub const MAX_BUCKETS: usize = 10_000;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The per-key limiter; `None` rate = unlimited.
pub struct RateLimiter {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    /// From the policy; `None` when `requests_per_second_per_key` is 0 (off).
    pub fn from_policy(policy: &Policy) -> Option<Self> {
        let l = &policy.limits;
        Self::new(l.requests_per_second_per_key, l.burst_per_key)
    }

    /// `per_sec` tokens a second, at most `burst` at once; `None` when
    /// `per_sec` is 0.
    pub fn new(per_sec: f64, burst: u32) -> Option<Self> {
        (per_sec > 0.0).then(|| RateLimiter {
            per_sec,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        })
    }

    /// Takes a token for `key` at `now`, or says how long to wait.
    pub fn check_at(&self, key: &str, now: Instant) -> Result<()> {
        let mut buckets = self.buckets.lock();
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(key) {
            let (per_sec, burst) = (self.per_sec, self.burst);
            buckets.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_sec < burst
            });
        }
        let bucket = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.per_sec).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = (1.0 - bucket.tokens) / self.per_sec;
        Err(Error::RateLimited {
            message: format!(
                "this key is over its rate limit ({} requests per second, bursts of {}; policy \
                 limits.requests_per_second_per_key and burst_per_key): retry after Retry-After seconds",
                self.per_sec, self.burst
            ),
            retry_after_secs: wait.ceil().max(1.0) as u64,
        })
    }

    pub fn check(&self, key: &str) -> Result<()> {
        self.check_at(key, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_then_the_rate_per_key() {
        let limiter = RateLimiter::new(2.0, 3).unwrap();
        let t = Instant::now();
        for _ in 0..3 {
            limiter.check_at("a", t).unwrap();
        }
        let Err(Error::RateLimited {
            retry_after_secs, ..
        }) = limiter.check_at("a", t)
        else {
            panic!("the fourth request at once must be refused")
        };
        assert_eq!(retry_after_secs, 1);
        // Another key has its own bucket.
        limiter.check_at("b", t).unwrap();
        // Half a second later one token is back (2 per second), not two.
        let later = t + Duration::from_millis(500);
        limiter.check_at("a", later).unwrap();
        assert!(limiter.check_at("a", later).is_err());
        // Idle for long: back to the burst, never beyond.
        let much_later = t + Duration::from_secs(60);
        for _ in 0..3 {
            limiter.check_at("a", much_later).unwrap();
        }
        assert!(limiter.check_at("a", much_later).is_err());
        assert!(RateLimiter::new(0.0, 10).is_none(), "0 turns it off");
    }

    #[test]
    fn slow_rates_say_how_long_to_wait() {
        let limiter = RateLimiter::new(0.1, 1).unwrap();
        let t = Instant::now();
        limiter.check_at("a", t).unwrap();
        let Err(Error::RateLimited {
            retry_after_secs, ..
        }) = limiter.check_at("a", t)
        else {
            panic!("refused")
        };
        assert_eq!(retry_after_secs, 10);
    }

    #[test]
    fn idle_buckets_are_dropped_when_there_are_too_many() {
        let limiter = RateLimiter::new(1000.0, 1).unwrap();
        let t = Instant::now();
        for i in 0..MAX_BUCKETS {
            limiter.check_at(&format!("k{i}"), t).unwrap();
        }
        let later = t + Duration::from_secs(1);
        limiter.check_at("new", later).unwrap();
        assert!(limiter.buckets.lock().len() < MAX_BUCKETS);
    }
}
