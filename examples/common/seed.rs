//! Seeding shared by the erasure examples (`erasure_stall`, `forget_answer`):
//! memories written straight into the store with their create events, so that
//! set-up takes seconds, not an embedding run.

use mnemo::domain::{Memory, Tier};
use mnemo::store::{AuditAction, AuditEvent, MemoryStore};

/// Inserts the long-term memories `range` of `user` ("{user} memory {i} about
/// topic {i % 97}") with one create event each, and returns them.
pub async fn insert_memories(
    store: &dyn MemoryStore,
    user: &str,
    range: std::ops::Range<usize>,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Vec<Memory>> {
    let batch: Vec<Memory> = range
        .map(|i| {
            Memory::sample(
                Tier::LongTerm,
                Some(user),
                &format!("{user} memory {i} about topic {}", i % 97),
                now,
            )
        })
        .collect();
    let events: Vec<_> = batch
        .iter()
        .map(|m| AuditEvent::for_memory(m, AuditAction::Create, "bench", now))
        .collect();
    store.insert(&batch, &events).await?;
    Ok(batch)
}
