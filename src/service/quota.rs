//! Per-user quotas of the policy (`[limits]`):
//! - `max_memories_per_user`: memories one user may hold (rows in any status
//!   until purged); a write that would pass it answers 409 `quota_exceeded`
//!   and writes nothing. Checked before the write's transaction, so
//!   concurrent writes of one user may pass it by their batch sizes.
//! - `model_calls_per_user_per_minute`: calls to the configured chat model
//!   made for one user in any 60 s (turns, the proxy, model extraction and
//!   summaries), per node. A request over it (a turn, a proxied completion)
//!   answers 429 `rate_limited` with `Retry-After`; background extraction and
//!   compaction over it fall back to the offline rules (rule extraction,
//!   extractive summary) instead of calling the model.
//!
//! Threading: [`ModelCallQuota`] is a mutex-guarded map of sliding windows,
//! held by the engine; each call is O(calls in the window).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::service::Engine;

const WINDOW: Duration = Duration::from_secs(60);
/// Users tracked before idle windows are dropped.
const PRUNE_ABOVE: usize = 10_000;

/// Model calls per user in the last minute (per node).
pub struct ModelCallQuota {
    per_minute: u32,
    windows: Mutex<HashMap<(String, String), VecDeque<Instant>>>,
}

impl ModelCallQuota {
    /// `per_minute` 0 = no quota.
    pub fn new(per_minute: u32) -> Self {
        ModelCallQuota {
            per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one call for the user if the quota allows it; otherwise the
    /// seconds until it will.
    pub fn try_take(&self, tenant_id: &str, user_id: &str) -> std::result::Result<(), u64> {
        self.try_take_at(tenant_id, user_id, Instant::now())
    }

    fn try_take_at(
        &self,
        tenant_id: &str,
        user_id: &str,
        now: Instant,
    ) -> std::result::Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() > PRUNE_ABOVE {
            windows.retain(|_, w| w.back().is_some_and(|t| now.duration_since(*t) < WINDOW));
        }
        let window = windows
            .entry((tenant_id.to_string(), user_id.to_string()))
            .or_default();
        while window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            window.pop_front();
        }
        if window.len() >= self.per_minute as usize {
            let oldest = window.front().copied().unwrap_or(now);
            let wait = WINDOW.saturating_sub(now.duration_since(oldest));
            return Err(wait.as_secs().max(1));
        }
        window.push_back(now);
        Ok(())
    }

    /// As [`try_take`](Self::try_take), as the 429 a request answers.
    pub fn take(&self, tenant_id: &str, user_id: &str) -> Result<()> {
        self.try_take(tenant_id, user_id)
            .map_err(|retry_after_secs| Error::RateLimited {
                message: format!(
                    "this user made {} model calls in the last minute: the quota (policy \
                     limits.model_calls_per_user_per_minute) is reached",
                    self.per_minute
                ),
                retry_after_secs,
            })
    }
}

impl Engine {
    /// [`Engine::check_memory_quota`] for each user a batch of new memories
    /// belongs to (reference memory has no user and no quota).
    pub(crate) async fn check_memory_quotas(
        &self,
        memories: &[crate::domain::Memory],
    ) -> Result<()> {
        let mut per_user: HashMap<(&str, &str), usize> = HashMap::new();
        for m in memories {
            if let Some(u) = &m.user_id {
                *per_user
                    .entry((m.tenant_id.as_str(), u.as_str()))
                    .or_default() += 1;
            }
        }
        for ((tenant, user), n) in per_user {
            self.check_memory_quota(tenant, user, n).await?;
        }
        Ok(())
    }

    /// Refuses (409 `quota_exceeded`) adding `adding` memories for a user
    /// who would then hold more than `limits.max_memories_per_user`.
    pub(crate) async fn check_memory_quota(
        &self,
        tenant_id: &str,
        user_id: &str,
        adding: usize,
    ) -> Result<()> {
        let quota = self.policy().limits.max_memories_per_user;
        if quota == 0 || adding == 0 {
            return Ok(());
        }
        let held = self.store().count_user_memories(tenant_id, user_id).await?;
        if held + adding as u64 > quota {
            return Err(Error::QuotaExceeded(format!(
                "this user holds {held} memories and the request adds {adding}: the quota \
                 (policy limits.max_memories_per_user) is {quota}"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides_and_users_are_apart() {
        let q = ModelCallQuota::new(2);
        let t = Instant::now();
        assert!(q.try_take_at("t", "a", t).is_ok());
        assert!(q.try_take_at("t", "a", t + Duration::from_secs(10)).is_ok());
        let wait = q
            .try_take_at("t", "a", t + Duration::from_secs(20))
            .unwrap_err();
        assert_eq!(wait, 40);
        assert!(q.try_take_at("t", "b", t + Duration::from_secs(20)).is_ok());
        assert!(q.try_take_at("u", "a", t + Duration::from_secs(20)).is_ok());
        assert!(q.try_take_at("t", "a", t + Duration::from_secs(60)).is_ok());
        assert!(ModelCallQuota::new(0).try_take("t", "a").is_ok());
    }
}
