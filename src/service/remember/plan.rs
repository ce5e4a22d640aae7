//! What a write does with each item, decided before anything is written:
//! the lifecycle plan (inserts, changes of stored memories, audit events and
//! each item's outcome). Pure: the service gathers the items' vectors, their
//! stored neighbours and the memories they name, this decides, and the
//! service writes the plan in one transaction (`mod.rs`). The rules
//! themselves (same fact, correction) are in [`crate::domain::lifecycle`].

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Outcome;
use crate::domain::lifecycle::{correction_cue, corrects, same_fact, CorrectionRule, MatchRule};
use crate::domain::{Actor, Memory, Status, Tier};
use crate::error::{Error, Result};
use crate::policy::Policy;
use crate::store::{AuditAction, AuditEvent};

/// The lifecycle rules in force.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    pub reinforce_duplicates: bool,
    pub detect_corrections: bool,
    pub same_fact: MatchRule,
    pub correction: CorrectionRule,
    pub reinforce_importance_step: f32,
}

impl Rules {
    pub fn of(policy: &Policy) -> Self {
        let lc = &policy.lifecycle;
        Rules {
            reinforce_duplicates: lc.reinforce_duplicates,
            detect_corrections: lc.detect_corrections,
            same_fact: policy.match_rule(),
            correction: policy.correction_rule(),
            reinforce_importance_step: lc.reinforce_importance_step,
        }
    }
}

/// A write's plan: what to store, and what happened to each item (the
/// memory to return for it).
pub struct Plan {
    pub(super) batch: Batch,
    pub(super) outcomes: Vec<(Outcome, Uuid)>,
}

/// The changes a write batch accumulates before its one transaction.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) inserts: Vec<(Memory, Vec<f32>)>,
    /// Changed stored memories by id: (new state, version read).
    pub(super) changed: HashMap<Uuid, (Memory, i64)>,
    pub(super) order: Vec<Uuid>,
    pub(super) events: Vec<AuditEvent>,
}

impl Batch {
    /// The current state of a stored memory: changed in this batch or as read.
    fn current(&self, m: &Memory) -> Memory {
        self.changed
            .get(&m.id)
            .map_or_else(|| m.clone(), |(c, _)| c.clone())
    }

    fn change(&mut self, old: &Memory, mut new: Memory) {
        new.version = old.version + 1;
        match self.changed.get_mut(&old.id) {
            Some((c, _)) => *c = new,
            None => {
                self.order.push(old.id);
                self.changed.insert(old.id, (new, old.version));
            }
        }
    }
}

/// Decides what each prepared item does: supersede the memory it names or
/// corrects, reinforce (or promote) the stored memory stating the same fact,
/// or be created. `neighbours` holds, per eligible item (by position), its
/// nearest stored memories of the same owner with their similarity;
/// `stored` every memory named there or by `supersedes`.
#[allow(clippy::too_many_arguments)]
pub fn plan(
    memories: Vec<Memory>,
    vectors: Vec<Vec<f32>>,
    mut neighbours: HashMap<usize, Vec<(Uuid, f32)>>,
    stored: &HashMap<Uuid, Memory>,
    rules: &Rules,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Plan> {
    let mut batch = Batch::default();
    let mut results: Vec<(Outcome, Uuid)> = Vec::with_capacity(memories.len());
    for (i, (mut m, v)) in memories.into_iter().zip(vectors).enumerate() {
        if let Some(old_id) = m.supersedes {
            let old = stored
                .get(&old_id)
                .filter(|o| actor.can_read(o))
                .ok_or_else(|| Error::not_found(format!("memory {old_id}")))?;
            let old = batch.current(old);
            if !actor.can_write(&old) {
                return Err(Error::Forbidden(
                    "only admin keys may change reference memory".into(),
                ));
            }
            if !matches!(old.status, Status::Active | Status::Pending) {
                return Err(Error::Conflict(format!(
                    "memory {old_id} is {}; only an active or pending memory can be superseded",
                    old.status
                )));
            }
            if old.tenant_id != m.tenant_id || old.user_id != m.user_id {
                return Err(Error::invalid(
                    "supersedes",
                    "a memory can only supersede a memory of the same owner",
                ));
            }
            m.status = Status::Active;
            supersede_into(&mut batch, &old, &mut m, actor, now, None);
            results.push((Outcome::Superseded { old: old_id }, m.id));
            batch.inserts.push((m, v));
            continue;
        }
        let mut near: Vec<(Memory, f32)> = neighbours
            .remove(&i)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(id, sim)| stored.get(&id).map(|s| (batch.current(s), sim)))
            .filter(|(s, _)| {
                s.tenant_id == m.tenant_id
                    && s.user_id == m.user_id
                    && s.tier == Tier::LongTerm
                    && s.kind == m.kind
                    && matches!(s.status, Status::Active | Status::Pending)
                    && s.expires_at.is_none_or(|e| e > now)
            })
            .collect();
        near.sort_by(|a, b| b.1.total_cmp(&a.1));

        let is_fact = |s: &Memory, sim: f32| same_fact(sim, &m.text, &s.text, rules.same_fact);
        if rules.detect_corrections && m.status == Status::Active {
            if let Some(cue) = correction_cue(&m.text) {
                let target = near.iter().find(|(s, sim)| {
                    corrects(*sim, &m.text, &s.text, rules.correction) && !is_fact(s, *sim)
                });
                if let Some((old, _)) = target {
                    let old = old.clone();
                    supersede_into(&mut batch, &old, &mut m, actor, now, Some(cue));
                    results.push((Outcome::Superseded { old: old.id }, m.id));
                    batch.inserts.push((m, v));
                    continue;
                }
            }
        }
        if rules.reinforce_duplicates {
            // Prefer an active memory to a pending one, then similarity.
            let same = near
                .iter()
                .filter(|(s, sim)| is_fact(s, *sim))
                .min_by_key(|(s, _)| s.status != Status::Active);
            if let Some((existing, sim)) = same {
                let promote = existing.status == Status::Pending;
                reinforce_into(
                    &mut batch,
                    existing,
                    &m,
                    *sim,
                    rules.reinforce_importance_step,
                    actor,
                    now,
                );
                let outcome = if promote {
                    Outcome::Promoted
                } else {
                    Outcome::Reinforced
                };
                results.push((outcome, existing.id));
                continue;
            }
        }
        let mut e = AuditEvent::for_memory(&m, AuditAction::Create, &actor.id, now);
        e.after_text = Some(m.text.clone());
        batch.events.push(e);
        results.push((Outcome::Created, m.id));
        batch.inserts.push((m, v));
    }
    Ok(Plan {
        batch,
        outcomes: results,
    })
}

/// Links `new` as the successor of `old` and marks `old` superseded.
fn supersede_into(
    batch: &mut Batch,
    old: &Memory,
    new: &mut Memory,
    actor: &Actor,
    now: chrono::DateTime<chrono::Utc>,
    cue: Option<&str>,
) {
    new.supersedes = Some(old.id);
    let mut replaced = old.clone();
    replaced.status = Status::Superseded;
    replaced.superseded_by = Some(new.id);
    replaced.updated_at = now;
    let mut e = AuditEvent::for_memory(old, AuditAction::Supersede, &actor.id, now);
    e.before_text = Some(old.text.clone());
    e.after_text = Some(new.text.clone());
    e.details = serde_json::json!({
        "from": old.status, "to": Status::Superseded,
        "superseded_by": new.id, "detected_cue": cue,
    });
    batch.events.push(e);
    let mut c = AuditEvent::for_memory(new, AuditAction::Create, &actor.id, now);
    c.after_text = Some(new.text.clone());
    c.details = serde_json::json!({ "supersedes": old.id, "detected_cue": cue });
    batch.events.push(c);
    batch.change(old, replaced);
}

/// Reinforces `existing` with a new observation of the same fact.
#[allow(clippy::too_many_arguments)]
fn reinforce_into(
    batch: &mut Batch,
    existing: &Memory,
    observed: &Memory,
    similarity: f32,
    step: f32,
    actor: &Actor,
    now: chrono::DateTime<chrono::Utc>,
) {
    let mut r = existing.clone();
    let mentions = existing
        .metadata
        .get("mention_count")
        .and_then(|v| v.as_u64())
        .unwrap_or(1)
        + 1;
    r.metadata.insert("mention_count".into(), mentions.into());
    r.metadata
        .insert("last_seen_at".into(), now.to_rfc3339().into());
    r.importance = (existing.importance + step).min(1.0);
    r.confidence = existing.confidence.max(observed.confidence);
    r.updated_at = now;
    let promote = existing.status == Status::Pending;
    if promote {
        r.status = Status::Active;
    }
    let mut e = AuditEvent::for_memory(existing, AuditAction::Reinforce, &actor.id, now);
    e.after_text = Some(observed.text.clone());
    e.details = serde_json::json!({
        "mention_count": mentions,
        "similarity": similarity,
        "importance": { "from": existing.importance, "to": r.importance },
    });
    batch.events.push(e);
    if promote {
        let mut c = AuditEvent::for_memory(existing, AuditAction::Confirm, &actor.id, now);
        c.details = serde_json::json!({
            "from": Status::Pending, "to": Status::Active, "reason": "repeated",
        });
        batch.events.push(c);
    }
    batch.change(existing, r);
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 7, 1, 9, 0, 0).unwrap()
    }

    fn rules() -> Rules {
        Rules::of(&Policy::default())
    }

    fn memory(user: &str, text: &str) -> Memory {
        Memory::sample(Tier::LongTerm, Some(user), text, now())
    }

    #[test]
    fn a_new_fact_is_created_with_its_audit_event() {
        let m = memory("u", "I play badminton on Saturdays");
        let id = m.id;
        let p = plan(
            vec![m],
            vec![vec![1.0]],
            HashMap::new(),
            &HashMap::new(),
            &rules(),
            &Actor::local("t"),
            now(),
        )
        .unwrap();
        assert_eq!(p.outcomes, vec![(Outcome::Created, id)]);
        assert_eq!(p.batch.inserts.len(), 1);
        assert_eq!(p.batch.events.len(), 1);
        assert!(p.batch.changed.is_empty());
    }

    #[test]
    fn the_same_fact_again_reinforces_and_promotes_a_pending_one() {
        let mut stored = memory("u", "I play badminton on Saturdays");
        stored.status = Status::Pending;
        let again = memory("u", "I play badminton on Saturdays");
        let neighbours = [(0, vec![(stored.id, 1.0)])].into_iter().collect();
        let by_id = [(stored.id, stored.clone())].into_iter().collect();
        let p = plan(
            vec![again],
            vec![vec![1.0]],
            neighbours,
            &by_id,
            &rules(),
            &Actor::local("t"),
            now(),
        )
        .unwrap();
        assert_eq!(p.outcomes, vec![(Outcome::Promoted, stored.id)]);
        assert!(p.batch.inserts.is_empty());
        let (changed, read) = &p.batch.changed[&stored.id];
        assert_eq!(*read, stored.version);
        assert_eq!(changed.status, Status::Active);
        assert_eq!(changed.version, stored.version + 1);
    }

    #[test]
    fn superseding_another_users_memory_is_refused() {
        let theirs = memory("someone-else", "I live in Lisbon");
        let mut mine = memory("u", "I live in Porto");
        mine.supersedes = Some(theirs.id);
        let by_id = [(theirs.id, theirs.clone())].into_iter().collect();
        let err = plan(
            vec![mine],
            vec![vec![1.0]],
            HashMap::new(),
            &by_id,
            &rules(),
            &Actor::local("t"),
            now(),
        );
        assert!(err.is_err());
    }

    proptest! {
        /// Whatever the neighbours say, every item gets one outcome, every
        /// insert is an item, and every changed stored memory is recorded
        /// with the version read and a newer one.
        #[test]
        fn every_item_gets_one_outcome(
            texts in prop::collection::vec(prop::sample::select(vec![
                "I drive a Mazda", "actually I drive an EV now", "My sister lives in Lisbon",
                "I drive a Mazda", "不对，是周三晚上打羽毛球", "周三晚上打羽毛球",
            ]), 1..8),
            sims in prop::collection::vec(0.0f32..1.0, 8),
        ) {
            let stored: Vec<Memory> = ["I drive a Mazda", "周二晚上打羽毛球"].iter().map(|t| memory("u", t)).collect();
            let by_id: HashMap<Uuid, Memory> = stored.iter().map(|m| (m.id, m.clone())).collect();
            let items: Vec<Memory> = texts.iter().map(|t| memory("u", t)).collect();
            let neighbours: HashMap<usize, Vec<(Uuid, f32)>> = (0..items.len())
                .map(|i| (i, stored.iter().enumerate().map(|(j, s)| (s.id, sims[(i + j) % 8])).collect()))
                .collect();
            let ids: Vec<Uuid> = items.iter().map(|m| m.id).collect();
            let vectors = vec![vec![1.0]; items.len()];
            let p = plan(items, vectors, neighbours, &by_id, &rules(), &Actor::local("t"), now()).unwrap();
            prop_assert_eq!(p.outcomes.len(), ids.len());
            prop_assert!(p.batch.inserts.iter().all(|(m, _)| ids.contains(&m.id)));
            prop_assert_eq!(p.batch.order.len(), p.batch.changed.len());
            for (id, (m, read)) in &p.batch.changed {
                prop_assert_eq!(*read, by_id[id].version);
                prop_assert!(m.version > *read);
            }
        }
    }
}
