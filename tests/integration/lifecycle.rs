//! The memory lifecycle end to end on the real backends: pending candidates
//! and their review, reinforcement instead of duplicates, corrections that
//! supersede, the TTL sweep and the weekly cleanup driven by a manual clock
//! (a simulated month runs in milliseconds), leases, dry runs and restore.
//! Similarity-based rules run with the real ONNX embedder.

use std::sync::Arc;

use chrono::{Duration, Utc};
use mnemo::clock::{ManualClock, SharedClock};
use mnemo::domain::Actor;
use mnemo::domain::{Memory, NewMemory, Scope, Status, Tier};
use mnemo::embed::onnx::OnnxEmbedder;
use mnemo::jobs::{self, JobName};
use mnemo::policy::Policy;
use mnemo::service::Outcome;
use mnemo::service::SearchRequest;
use mnemo::store::{AuditAction, ListQuery};
use mnemo::{Engine, Error};
use uuid::Uuid;

use crate::common::*;

fn cli() -> Actor {
    Actor::local("test")
}

async fn real_engine(dir: &std::path::Path, clock: SharedClock) -> Engine {
    let assets = crate::real_embedder::ensure_assets();
    let embedder =
        OnnxEmbedder::for_policy(&assets, &Policy::default()).expect("real embedder loads");
    let engine = Engine::builder(dir)
        .embedder(embedder)
        .clock(clock)
        .build()
        .await
        .unwrap()
        .engine;
    engine
}

async fn found(engine: &Engine, user: &str, query: &str, pending: bool) -> Vec<Uuid> {
    let mut scope = Scope::user(user);
    scope.include_pending = pending;
    let mut req = SearchRequest::new(scope, query);
    req.record_access = false;
    engine
        .search(req)
        .await
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.memory.id)
        .collect()
}

async fn with_status(engine: &Engine, user: &str, status: Status) -> Vec<Uuid> {
    let q = ListQuery {
        user_id: Some(user.into()),
        status: Some(status),
        limit: 1000,
        ..Default::default()
    };
    engine
        .list(&cli(), q)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect()
}

fn candidate(user: &str, text: &str) -> NewMemory {
    NewMemory {
        confidence: Some(0.3),
        ..long_term(user, text)
    }
}

async fn add_one(engine: &Engine, m: NewMemory) -> mnemo::service::Remembered {
    engine
        .remember(&cli(), vec![m], true)
        .await
        .unwrap()
        .remove(0)
}

fn actions(history: &[mnemo::store::AuditEvent]) -> Vec<AuditAction> {
    history.iter().map(|e| e.action).collect()
}

// ----- pending candidates ----------------------------------------------------

#[tokio::test]
async fn a_pending_candidate_is_hidden_until_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let m = add_one(&engine, candidate("u", "The user may be moving to Lisbon")).await;
    assert_eq!(m.outcome, Outcome::Created);
    assert_eq!(m.memory.status, Status::Pending);
    let id = m.memory.id;
    assert!(found(&engine, "u", "moving Lisbon", false).await.is_empty());
    assert_eq!(found(&engine, "u", "moving Lisbon", true).await, vec![id]);
    let review = engine.pending(&cli(), Some("u"), None, 10).await.unwrap();
    assert_eq!(review.iter().map(|m| m.id).collect::<Vec<_>>(), vec![id]);

    let confirmed = engine.confirm(&cli(), id).await.unwrap();
    assert_eq!(confirmed.status, Status::Active);
    assert_eq!(found(&engine, "u", "moving Lisbon", false).await, vec![id]);
    assert!(matches!(
        engine.confirm(&cli(), id).await,
        Err(Error::Conflict(_))
    ));
    let h = engine.history(&cli(), id).await.unwrap();
    assert_eq!(actions(&h), [AuditAction::Create, AuditAction::Confirm]);
    assert_eq!(h[1].actor, "test");
}

#[tokio::test]
async fn reject_soft_deletes_a_candidate_and_restore_brings_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let id = add_one(&engine, candidate("u", "The user might own a kayak"))
        .await
        .memory
        .id;
    let rejected = engine.reject(&cli(), id).await.unwrap();
    assert_eq!(rejected.status, Status::Deleted);
    assert!(found(&engine, "u", "kayak", true).await.is_empty());
    assert!(engine
        .pending(&cli(), Some("u"), None, 10)
        .await
        .unwrap()
        .is_empty());
    // another user's key cannot touch it
    let bob = Actor {
        user_id: Some("bob".into()),
        admin: false,
        ..cli()
    };
    assert!(matches!(
        engine.restore(&bob, id).await,
        Err(Error::NotFound { .. })
    ));
    let restored = engine.restore(&cli(), id).await.unwrap();
    assert_eq!(restored.status, Status::Active);
    assert_eq!(found(&engine, "u", "kayak", false).await, vec![id]);
    let h = engine.history(&cli(), id).await.unwrap();
    assert_eq!(
        actions(&h),
        [
            AuditAction::Create,
            AuditAction::Reject,
            AuditAction::Restore
        ]
    );
}

// ----- reinforcement (real embedder) -----------------------------------------

#[tokio::test]
async fn repetition_promotes_a_pending_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let engine = real_engine(dir.path(), Arc::new(manual())).await;
    let first = add_one(&engine, candidate("u", "The user is allergic to peanuts")).await;
    assert_eq!(first.memory.status, Status::Pending);
    let again = add_one(&engine, candidate("u", "User is allergic to peanuts.")).await;
    assert_eq!(again.outcome, Outcome::Promoted);
    assert_eq!(again.memory.id, first.memory.id);
    assert_eq!(again.memory.status, Status::Active);
    assert_eq!(again.memory.metadata["mention_count"], 2);
    assert_eq!(
        found(&engine, "u", "peanut allergy", false).await,
        vec![first.memory.id]
    );
    // another user's identical candidate is theirs alone
    let other = add_one(&engine, candidate("v", "The user is allergic to peanuts")).await;
    assert_eq!(other.outcome, Outcome::Created);
    assert_eq!(other.memory.status, Status::Pending);
    let h = engine.history(&cli(), first.memory.id).await.unwrap();
    assert_eq!(
        actions(&h),
        [
            AuditAction::Create,
            AuditAction::Reinforce,
            AuditAction::Confirm
        ]
    );
}

#[tokio::test]
async fn a_duplicate_reinforces_instead_of_copying() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = real_engine(dir.path(), Arc::new(clock.clone())).await;
    let first = add_one(&engine, long_term("u", "The user prefers green tea")).await;
    clock.advance(Duration::days(3));
    let added = engine
        .add(
            &cli(),
            vec![long_term("u", "User prefers green tea.")],
            true,
        )
        .await
        .unwrap();
    assert_eq!(
        added[0].id, first.memory.id,
        "add returns the existing memory"
    );
    let m = &added[0];
    assert_eq!(m.metadata["mention_count"], 2);
    assert!((m.importance - 0.55).abs() < 1e-6, "{}", m.importance);
    assert_eq!(m.updated_at, clock_now(&clock));
    assert_eq!(with_status(&engine, "u", Status::Active).await.len(), 1);
    let again = add_one(&engine, long_term("u", "The user prefers green tea")).await;
    assert_eq!(again.outcome, Outcome::Reinforced);
    assert_eq!(again.memory.metadata["mention_count"], 3);
    let h = engine.history(&cli(), first.memory.id).await.unwrap();
    assert_eq!(h[1].action, AuditAction::Reinforce);
    assert_eq!(h[1].after_text.as_deref(), Some("User prefers green tea."));
    assert_eq!(found(&engine, "u", "green tea", false).await.len(), 1);
}

fn clock_now(c: &ManualClock) -> chrono::DateTime<Utc> {
    use mnemo::clock::Clock;
    c.now()
}

#[tokio::test]
async fn a_near_duplicate_with_different_meaning_does_not_merge() {
    let dir = tempfile::tempdir().unwrap();
    let engine = real_engine(dir.path(), Arc::new(manual())).await;
    let pairs = [
        ("The user likes green tea", "The user dislikes green tea"),
        (
            "Dentist appointment at 3pm on Friday",
            "Dentist appointment at 5pm on Friday",
        ),
        (
            "The user's sister is called Maria",
            "The user's brother is called Mario",
        ),
        ("The user lives in Paris", "The user works in Paris"),
    ];
    for (a, b) in pairs {
        add_one(&engine, long_term("u", a)).await;
        let second = add_one(&engine, long_term("u", b)).await;
        assert_eq!(second.outcome, Outcome::Created, "{a} / {b}");
    }
    assert_eq!(with_status(&engine, "u", Status::Active).await.len(), 8);
}

// ----- corrections -----------------------------------------------------------

#[tokio::test]
async fn explicit_supersede_links_both_and_hides_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let old = add_one(&engine, long_term("u", "The user's gym is FitZone Central"))
        .await
        .memory;
    let new = engine
        .supersede(&cli(), old.id, "The user's gym is Atlas Climbing")
        .await
        .unwrap();
    assert_eq!(new.outcome, Outcome::Superseded { old: old.id });
    assert_eq!(new.memory.supersedes, Some(old.id));
    let old_now = engine.get(&cli(), old.id).await.unwrap();
    assert_eq!(old_now.status, Status::Superseded);
    assert_eq!(old_now.superseded_by, Some(new.memory.id));
    assert_eq!(found(&engine, "u", "gym", true).await, vec![new.memory.id]);
    let lineage = engine.lineage(&cli(), new.memory.id).await.unwrap();
    assert_eq!(
        lineage.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![old.id, new.memory.id]
    );
    let h = engine.history(&cli(), old.id).await.unwrap();
    assert_eq!(actions(&h), [AuditAction::Create, AuditAction::Supersede]);
    assert_eq!(
        h[1].before_text.as_deref(),
        Some("The user's gym is FitZone Central")
    );
    assert_eq!(
        h[1].after_text.as_deref(),
        Some("The user's gym is Atlas Climbing")
    );
    assert!(matches!(
        engine.supersede(&cli(), old.id, "again").await,
        Err(Error::Conflict(_))
    ));

    // the same through add with `supersedes`
    let third = NewMemory {
        supersedes: Some(new.memory.id),
        ..long_term("u", "The user's gym is the university pool")
    };
    let third = add_one(&engine, third).await;
    assert_eq!(third.outcome, Outcome::Superseded { old: new.memory.id });
    let lineage = engine.lineage(&cli(), old.id).await.unwrap();
    assert_eq!(lineage.len(), 3);
    assert_eq!(with_status(&engine, "u", Status::Superseded).await.len(), 2);
    // another user's memory cannot be superseded
    let bob = add_one(&engine, long_term("bob", "Bob's gym")).await.memory;
    let steal = NewMemory {
        supersedes: Some(bob.id),
        ..long_term("u", "mine now")
    };
    let alice = Actor {
        user_id: Some("u".into()),
        admin: false,
        ..cli()
    };
    assert!(engine.add(&alice, vec![steal], true).await.is_err());
}

#[tokio::test]
async fn corrections_are_detected_in_english_and_chinese() {
    let dir = tempfile::tempdir().unwrap();
    let engine = real_engine(dir.path(), Arc::new(manual())).await;
    let cases = [
        (
            "The user lives in Paris",
            "Actually, the user lives in Berlin",
        ),
        (
            "The user's team standup is on Monday",
            "No, it's on Tuesday: the user's team standup is on Tuesday",
        ),
        ("用户住在上海", "我之前说错了，改成用户住在北京"),
        ("用户每周三开组会", "不对，是每周四开组会"),
    ];
    let bystander = add_one(&engine, long_term("u", "The user has a cat named Tom"))
        .await
        .memory;
    for (before, correction) in cases {
        let old = add_one(&engine, long_term("u", before)).await.memory;
        let new = add_one(&engine, long_term("u", correction)).await;
        assert_eq!(
            new.outcome,
            Outcome::Superseded { old: old.id },
            "{correction}"
        );
        let h = engine.history(&cli(), old.id).await.unwrap();
        assert_eq!(h.last().unwrap().action, AuditAction::Supersede);
        assert!(h.last().unwrap().details["detected_cue"].is_string());
    }
    assert_eq!(
        engine.get(&cli(), bystander.id).await.unwrap().status,
        Status::Active
    );
    let hits = found(&engine, "u", "where does the user live", false).await;
    let texts: Vec<String> = engine
        .store()
        .get_many(&hits)
        .await
        .unwrap()
        .into_values()
        .map(|m| m.text)
        .collect();
    assert!(!texts.iter().any(|t| t.contains("Paris")), "{texts:?}");
    // no cue, a different fact: nothing superseded
    let works = add_one(&engine, long_term("u", "The user works in Berlin")).await;
    assert_eq!(works.outcome, Outcome::Created);
    // a low-confidence correction supersedes nothing
    let unsure = add_one(&engine, candidate("u", "Actually, the cat is named Tim")).await;
    assert_eq!(unsure.outcome, Outcome::Created);
    assert_eq!(
        engine.get(&cli(), bystander.id).await.unwrap().status,
        Status::Active
    );
}

// ----- TTL sweep ---------------------------------------------------------------

#[tokio::test]
async fn ttl_sweep_over_a_simulated_month() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let leave = NewMemory {
        expires_at: Some(t0() + Duration::days(2)),
        ..long_term("u", "the user is on leave this Wednesday")
    };
    let leave = add_one(&engine, leave).await.memory.id;
    let keep = add_one(&engine, long_term("u", "the user takes leave in August"))
        .await
        .memory
        .id;
    let maybe = add_one(&engine, candidate("u", "the user may take leave in May"))
        .await
        .memory
        .id;
    let status = |id| {
        let engine = engine.clone();
        async move { engine.store().get(id).await.unwrap().map(|m| m.status) }
    };
    let mut first_seen: Vec<(i64, Uuid, Option<Status>)> = Vec::new();
    let mut last = std::collections::HashMap::new();
    for day in 0..=75 {
        clock.set(t0() + Duration::days(day) + Duration::hours(1));
        let stats = jobs::run(&engine, JobName::TtlSweep, false).await.unwrap();
        assert_eq!(stats.conflicts, 0);
        for id in [leave, keep, maybe] {
            let s = status(id).await;
            if last.get(&id) != Some(&s) {
                first_seen.push((day, id, s));
                last.insert(id, s);
            }
        }
        let hits = found(&engine, "u", "leave", true).await;
        if day >= 2 {
            // gone from retrieval within a week (at once, in fact)
            assert!(!hits.contains(&leave), "day {day}");
        }
        if day == 3 {
            assert_eq!(
                with_status(&engine, "u", Status::Expired).await,
                vec![leave]
            );
        }
        assert!(hits.contains(&keep), "day {day}");
    }
    let expected = vec![
        (0, leave, Some(Status::Active)),
        (0, keep, Some(Status::Active)),
        (0, maybe, Some(Status::Pending)),
        (2, leave, Some(Status::Expired)),
        (9, leave, Some(Status::Archived)),
        (30, maybe, Some(Status::Expired)),
        (37, maybe, Some(Status::Archived)),
        (39, leave, Some(Status::Deleted)),
        (67, maybe, Some(Status::Deleted)),
        (69, leave, None),
    ];
    assert_eq!(first_seen, expected);
    // purged: physically gone, the audit trail kept without text
    assert!(matches!(
        engine.get(&cli(), leave).await,
        Err(Error::NotFound { .. })
    ));
    let trail = engine.store().history(leave).await.unwrap();
    assert_eq!(
        actions(&trail),
        [
            AuditAction::Create,
            AuditAction::Expire,
            AuditAction::Archive,
            AuditAction::Delete
        ]
    );
    assert!(trail
        .iter()
        .all(|e| e.before_text.is_none() && e.after_text.is_none()));
    assert!(trail[1..].iter().all(|e| e.actor == "system"));
    // restorable while only soft-deleted
    let restored = engine.restore(&cli(), maybe).await.unwrap();
    assert_eq!(restored.status, Status::Active);
    clock.advance(Duration::days(40));
    jobs::run(&engine, JobName::TtlSweep, false).await.unwrap();
    assert_eq!(status(maybe).await, Some(Status::Active));
    // idempotent: running again at the same time changes nothing
    let again = jobs::run(&engine, JobName::TtlSweep, false).await.unwrap();
    assert!(again.counts.values().all(|n| *n == 0), "{again}");
}

#[tokio::test]
async fn working_memory_expires_by_policy() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let turn = NewMemory {
        tier: Some(Tier::Working),
        thread_id: Some("t1".into()),
        ..long_term("u", "we talked about train tickets")
    };
    let id = add_one(&engine, turn).await.memory.id;
    clock.advance(Duration::days(31));
    let stats = jobs::run(&engine, JobName::TtlSweep, false).await.unwrap();
    assert_eq!(stats.count("expire"), 1);
    assert_eq!(
        engine.get(&cli(), id).await.unwrap().status,
        Status::Expired
    );
}

// ----- weekly cleanup ------------------------------------------------------------

/// A store of long-term memories of different importance, age and use.
async fn seed_for_cleanup(engine: &Engine) -> [Uuid; 4] {
    let mk = |text: &str, importance: f32, days_old: i64| NewMemory {
        importance: Some(importance),
        created_at: Some(t0() - Duration::days(days_old)),
        ..long_term("u", text)
    };
    let items = vec![
        mk("old trivia: the user once tried kombucha", 0.2, 400),
        mk("the user reads the allergy notes every week", 0.2, 400),
        mk("the user is a nurse", 0.9, 400),
        mk("the user likes window seats", 0.5, 20),
    ];
    let added = engine.add(&cli(), items, true).await.unwrap();
    let reference = NewMemory {
        tier: Some(Tier::Reference),
        importance: Some(0.01),
        created_at: Some(t0() - Duration::days(900)),
        text: "Returns are accepted within 30 days".into(),
        ..Default::default()
    };
    let r = engine.add(&cli(), vec![reference], true).await.unwrap();
    [added[0].id, added[1].id, added[2].id, r[0].id]
}

/// The weekly cleanup ends with the store's file purge: bytes in the free
/// space of the database's pages (where a b-tree rebalance leaves stale
/// copies of rows the TTL sweep purged) are gone from the files after it.
#[tokio::test]
async fn weekly_cleanup_clears_stale_bytes_from_the_store_files() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    seed_for_cleanup(&engine).await;
    let db = dir.path().join("mnemo.db");
    let marker = b"A-STALE-COPY-OF-A-PURGED-MEMORY";
    plant_in_free_space(&db, marker);
    let raw = rusqlite::Connection::open(&db).unwrap();
    let holds = |name: &str| file_holds(&dir.path().join(name), marker);
    assert!(holds("mnemo.db"), "the marker was not planted");

    jobs::run(&engine, JobName::WeeklyCleanup, true)
        .await
        .unwrap();
    assert!(holds("mnemo.db"), "a dry run writes nothing");
    jobs::run(&engine, JobName::WeeklyCleanup, false)
        .await
        .unwrap();
    assert!(!holds("mnemo.db") && !holds("mnemo.db-wal"));
    let ok: String = raw
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

#[tokio::test]
async fn weekly_cleanup_recomputes_importance_and_deletes_the_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let [trivia, used, nurse, reference] = seed_for_cleanup(&engine).await;
    let before_ref = engine.get(&cli(), reference).await.unwrap();
    // Never run: the first check, a week before the first run below, records
    // the first run as due one interval later (not at once, as a first
    // start would otherwise run it), and a check before then does not move it.
    let first_check = clock_now(&clock) - Duration::weeks(1);
    assert!(!jobs::cleanup_due(&engine, first_check).await.unwrap());
    assert!(
        !jobs::cleanup_due(&engine, clock_now(&clock) - Duration::seconds(1))
            .await
            .unwrap()
    );
    let state = engine
        .job_store()
        .job_state("weekly-cleanup")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.first_due_at, Some(clock_now(&clock)));
    for week in 0..5 {
        clock.set(t0() + Duration::weeks(week));
        engine
            .store()
            .record_access(&[used], clock_now(&clock))
            .await
            .unwrap();
        assert!(jobs::cleanup_due(&engine, clock_now(&clock)).await.unwrap());
        let stats = jobs::run(&engine, JobName::WeeklyCleanup, false)
            .await
            .unwrap();
        assert!(!jobs::cleanup_due(&engine, clock_now(&clock)).await.unwrap());
        if week == 0 {
            assert_eq!(stats.count("delete"), 1, "{stats}");
        } else {
            assert_eq!(stats.count("delete"), 0, "{stats}");
        }
    }
    let t = engine.get(&cli(), trivia).await.unwrap();
    assert_eq!(t.status, Status::Deleted);
    let h = engine.history(&cli(), trivia).await.unwrap();
    assert_eq!(h.last().unwrap().action, AuditAction::Delete);
    assert_eq!(h.last().unwrap().actor, "system");
    let u = engine.get(&cli(), used).await.unwrap();
    assert_eq!(u.status, Status::Active, "read every week: kept");
    let age_days = (clock_now(&clock) - u.created_at).num_days() as f64;
    let cold = mnemo::domain::lifecycle::recomputed_importance(
        0.2,
        0.0,
        age_days,
        engine.policy().cleanup.importance_rule(),
    );
    assert!(
        u.importance > cold,
        "heat raised it: {} vs {cold}",
        u.importance
    );
    let n = engine.get(&cli(), nurse).await.unwrap();
    assert_eq!(n.status, Status::Active);
    assert!(n.importance < 0.9 && n.importance > 0.5, "{}", n.importance);
    assert_eq!(engine.get(&cli(), reference).await.unwrap(), before_ref);
    // idempotent at the same instant
    let again = jobs::run(&engine, JobName::WeeklyCleanup, false)
        .await
        .unwrap();
    assert_eq!(
        again.count("reweight") + again.count("delete"),
        0,
        "{again}"
    );
    // heat cools once the reading stops
    clock.advance(Duration::days(60));
    let stats = jobs::run(&engine, JobName::WeeklyCleanup, false)
        .await
        .unwrap();
    assert_eq!(stats.count("cool"), 1, "{stats}");
    let cooled = engine.get(&cli(), used).await.unwrap();
    assert!(cooled.access_count < u.access_count);
    // deleted by cleanup, restorable
    engine.restore(&cli(), trivia).await.unwrap();
}

#[tokio::test]
async fn dry_run_changes_nothing_and_prints_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let [_, used, _, _] = seed_for_cleanup(&engine).await;
    let expiring = NewMemory {
        expires_at: Some(t0() + Duration::days(5)),
        ..long_term("u", "the user is on leave this Wednesday")
    };
    add_one(&engine, expiring).await;
    add_one(&engine, candidate("u", "the user may have a dog")).await;
    // a month of use: one memory is read every day
    for day in 0..30 {
        clock.set(t0() + Duration::days(day));
        engine
            .store()
            .record_access(&[used], clock_now(&clock))
            .await
            .unwrap();
    }
    clock.set(t0() + Duration::days(31));
    let snapshot = || async {
        let mut all: Vec<Memory> = Vec::new();
        for s in Status::ALL {
            let q = ListQuery {
                status: Some(s),
                limit: 1000,
                ..Default::default()
            };
            all.extend(engine.list(&cli(), q).await.unwrap());
        }
        all.sort_by_key(|m| m.id);
        all
    };
    let before = snapshot().await;
    let cleanup = jobs::run(&engine, JobName::WeeklyCleanup, true)
        .await
        .unwrap();
    let sweep = jobs::run(&engine, JobName::TtlSweep, true).await.unwrap();
    for stats in [&cleanup, &sweep] {
        println!("--- {} --dry-run", stats.job);
        for c in &stats.changes {
            println!("would {:<10} {}  {}", c.action, c.id, c.detail);
        }
        println!("{stats}");
    }
    assert_eq!(cleanup.count("delete"), 1);
    assert!(cleanup.count("reweight") >= 3, "{cleanup}");
    assert_eq!(sweep.count("expire"), 1);
    assert_eq!(sweep.count("expire_pending"), 1);
    assert_eq!(snapshot().await, before, "a dry run changed something");
    assert!(engine
        .store()
        .job_state("weekly-cleanup")
        .await
        .unwrap()
        .is_none());
    // the real run does what the dry run said
    let real = jobs::run(&engine, JobName::WeeklyCleanup, false)
        .await
        .unwrap();
    assert_eq!(real.counts, cleanup.counts);
}

// ----- leases ------------------------------------------------------------------

#[tokio::test]
async fn a_lease_prevents_concurrent_runs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let now = clock_now(&clock);
    assert!(engine
        .store()
        .acquire_lease(
            "ttl-sweep",
            "other-runner",
            now,
            now + Duration::minutes(10)
        )
        .await
        .unwrap());
    let err = jobs::run(&engine, JobName::TtlSweep, false)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains("already running")),
        "{err}"
    );
    // other jobs are not blocked
    jobs::run(&engine, JobName::WeeklyCleanup, false)
        .await
        .unwrap();
    // a dry run needs no lease
    jobs::run(&engine, JobName::TtlSweep, true).await.unwrap();
    // the holder crashed: its lease expires and the next run takes over
    clock.advance(Duration::minutes(11));
    jobs::run(&engine, JobName::TtlSweep, false).await.unwrap();
    let state = engine
        .store()
        .job_state("ttl-sweep")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.holder, None, "released after the run");
    assert!(state.last_completed_at.is_some());
    // two runners at once: exactly one wins
    let (a, b) = tokio::join!(
        jobs::run(&engine, JobName::TtlSweep, false),
        jobs::run(&engine, JobName::TtlSweep, false)
    );
    assert!(a.is_ok() || b.is_ok());
}

// ----- 100k ------------------------------------------------------------------------

/// The weekly cleanup over 100k long-term memories, inserted directly through
/// the store. `cargo test --test integration weekly_cleanup_over_100k -- --ignored --nocapture`
#[tokio::test]
#[ignore]
async fn weekly_cleanup_over_100k_memories() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let n = 100_000usize;
    let started = std::time::Instant::now();
    let template = engine
        .add(&cli(), vec![long_term("u0", "template")], true)
        .await
        .unwrap()
        .remove(0);
    for chunk in (0..n).collect::<Vec<_>>().chunks(5000) {
        let batch: Vec<Memory> = chunk
            .iter()
            .map(|&i| {
                let created = t0() - Duration::days((i % 730) as i64);
                Memory {
                    id: Uuid::now_v7(),
                    user_id: Some(format!("u{}", i % 500)),
                    text: format!("memory number {i} about topic {}", i % 97),
                    importance: (i % 10) as f32 / 10.0,
                    created_at: created,
                    updated_at: created,
                    access_count: (i % 7) as u64,
                    last_accessed_at: (i % 3 == 0).then(|| t0() - Duration::days((i % 200) as i64)),
                    ..template.clone()
                }
            })
            .collect();
        engine.store().insert(&batch, &[]).await.unwrap();
    }
    println!("inserted {n} memories in {:.1?}", started.elapsed());
    let dry = std::time::Instant::now();
    let plan = jobs::run(&engine, JobName::WeeklyCleanup, true)
        .await
        .unwrap();
    println!("dry run: {plan} ({:.1?})", dry.elapsed());
    let t = std::time::Instant::now();
    let stats = jobs::run(&engine, JobName::WeeklyCleanup, false)
        .await
        .unwrap();
    println!("weekly cleanup: {stats} ({:.1?})", t.elapsed());
    assert_eq!(stats.scanned, n as u64 + 1);
    let t = std::time::Instant::now();
    let again = jobs::run(&engine, JobName::WeeklyCleanup, false)
        .await
        .unwrap();
    println!("second run (nothing to do): {again} ({:.1?})", t.elapsed());
    assert_eq!(
        again.counts.values().sum::<u64>(),
        0,
        "not idempotent: {again}"
    );
}
