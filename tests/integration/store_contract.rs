//! The `MemoryStore` contract, one suite for every backend: each test below
//! is a function over a [`Backend`], and `contract_tests!` instantiates it for
//! SQLite (`store_contract::sqlite::…`) and PostgreSQL
//! (`store_contract::postgres::…`). A behaviour that differs between the two
//! fails one of them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{Duration, TimeZone};
use mnemo::clock::ManualClock;
use mnemo::domain::lifecycle::SweepStep;
use mnemo::domain::owner::DEFAULT_TENANT;
use mnemo::domain::thread::{
    ExtractionState, MessageRole, NewMessage, Payload, Summary, Thread, ToolSummary,
};
use mnemo::domain::{Kind, Memory, Owner, Scope, Source, Status, Tier};
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::lexical::tantivy::TantivyIndex;
use mnemo::policy::Policy;
use mnemo::service::cluster::{LexicalFollower, NODE_LIVENESS};
use mnemo::service::{Legs, Parts, SearchRequest};
use mnemo::store::{
    text_hash, ApiKey, AuditAction, AuditEvent, CacheOwner, ChangeKind, HeatUpdate, ListQuery,
    MemoryStore, Role, ThreadRef, TurnsBeside,
};
use mnemo::vector::edge::EdgeVectorIndex;
use mnemo::vector::VectorIndex;
use mnemo::{Actor, Engine, Error};
use tempfile::TempDir;
use uuid::Uuid;

use crate::backends::Backend;
use crate::common::{long_term, t0};

macro_rules! contract_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::backends::Backend::sqlite().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(crate::backends::Backend::postgres().await).await;
                }
            )*
        }
    };
}

contract_tests!(
    insert_then_get_round_trips_every_field,
    get_many_reads_every_id_and_the_last_commit,
    turns_beside_are_the_neighbours_within_one_conversation,
    a_failing_insert_writes_nothing,
    update_is_optimistic_and_all_or_nothing,
    an_importance_change_moves_the_base_importance,
    list_filters_and_paginates,
    history_lists_events_in_order,
    indexed_versions_and_scan_cover_active_and_pending,
    record_access_counts_without_a_version_change,
    find_by_text_hash_is_scoped_to_the_owner,
    stats_count_by_tier_and_status,
    embedding_cache_round_trips_and_overwrites,
    api_keys_insert_lookup_revoke,
    write_is_one_transaction,
    a_write_from_a_thread_lands_only_while_the_thread_exists,
    due_for_sweep_selects_by_state_and_time,
    purge_deletes_only_soft_deleted_and_scrubs_audit_text,
    write_heat_cools_without_a_version_change,
    leases_exclude_renew_expire_and_release,
    two_nodes_racing_for_a_lease_one_wins,
    a_first_run_is_scheduled_once,
    erase_user_leaves_nothing_and_spares_others,
    erase_user_works_in_batches_and_lets_other_users_write,
    export_and_import_rows_copy_a_store,
    user_rows_export_and_import_one_user_all_or_nothing,
    no_memory_lands_for_a_user_being_erased,
    threads_messages_payloads_round_trip,
    turn_leases_and_extraction_claims,
    compaction_takes_only_extracted_messages,
    the_change_feed_lists_every_change_in_order,
    the_change_feed_never_skips_a_change_under_concurrent_writers,
    the_node_registry_tracks_heartbeats_and_erasure_progress,
    a_node_follows_another_nodes_writes_and_ranks_them_identically,
    an_erasure_reaches_every_node_and_verification_waits_for_them,
    a_node_that_stopped_heartbeating_is_not_waited_for,
    tombstones_lose_the_user_hash_once_retained_and_applied,
);

fn owner(user: Option<&str>) -> CacheOwner {
    CacheOwner {
        tenant_id: "default".into(),
        user_id: user.map(str::to_string),
    }
}

fn memory(user: Option<&str>, tier: Tier, text: &str) -> Memory {
    Memory::sample(tier, user, text, t0())
}

fn created(m: &Memory) -> AuditEvent {
    let mut e = AuditEvent::for_memory(m, AuditAction::Create, "test", m.created_at);
    e.after_text = Some(m.text.clone());
    e
}

async fn insert(store: &dyn MemoryStore, memories: &[Memory]) {
    let events: Vec<_> = memories.iter().map(created).collect();
    store.insert(memories, &events).await.unwrap();
}

fn query(user: Option<&str>) -> ListQuery {
    ListQuery {
        tenant_id: "default".into(),
        user_id: user.map(str::to_string),
        limit: 1000,
        ..Default::default()
    }
}

async fn insert_then_get_round_trips_every_field(b: Backend) {
    let s = b.store.as_ref();
    let mut m = memory(Some("alice"), Tier::Working, "prefers green tea");
    m.thread_id = Some("th-1".into());
    m.kind = Kind::Preference;
    m.importance = 0.75;
    m.confidence = 0.25;
    m.status = Status::Pending;
    m.updated_at = t0() + Duration::milliseconds(1234);
    m.last_accessed_at = Some(t0() + Duration::seconds(5));
    m.access_count = 7;
    m.expires_at = Some(t0() + Duration::days(3));
    m.source = Source {
        thread_id: Some("th-1".into()),
        message_id: Some("msg-9".into()),
        document_id: Some("doc-1".into()),
        chunk_index: Some(4),
    };
    m.metadata.insert(
        "lang".into(),
        serde_json::json!({"code": "en", "n": [1, 2]}),
    );
    m.embedding_model = Some("model-x".into());
    m.version = 3;
    m.supersedes = Some(Uuid::now_v7());
    m.superseded_by = Some(Uuid::now_v7());
    let plain = memory(None, Tier::Reference, "opening hours: nine to five");
    insert(s, &[m.clone(), plain.clone()]).await;

    assert_eq!(s.get(m.id).await.unwrap(), Some(m.clone()));
    assert_eq!(s.get(plain.id).await.unwrap(), Some(plain.clone()));
    assert_eq!(s.get(Uuid::now_v7()).await.unwrap(), None);
    let many = s.get_many(&[m.id, Uuid::now_v7(), plain.id]).await.unwrap();
    assert_eq!(many.len(), 2);
    assert_eq!(many[&m.id], m);
    assert!(s.get_many(&[]).await.unwrap().is_empty());
}

/// `get_many` (SQLite reads it on connections of its own) returns every
/// asked id at any count, in the pool's last committed state.
async fn get_many_reads_every_id_and_the_last_commit(b: Backend) {
    let s = b.store.as_ref();
    let ms: Vec<Memory> = (0..1_200)
        .map(|i| {
            let mut m = memory(Some("u"), Tier::LongTerm, &format!("用户喜欢绿茶 {i}"));
            m.metadata.insert("i".into(), serde_json::json!(i));
            m
        })
        .collect();
    insert(s, &ms).await;
    let ids: Vec<Uuid> = ms.iter().map(|m| m.id).collect();
    let many = s.get_many(&ids).await.unwrap();
    assert_eq!(many.len(), ms.len());
    for m in &ms {
        assert_eq!(many[&m.id], *m);
    }

    // A change committed through the pool is what the next read sees.
    let mut edited = ms[7].clone();
    edited.text = "edited".into();
    edited.status = Status::Deleted;
    s.update(&[(edited.clone(), 1)], &[]).await.unwrap();
    let again = s.get_many(&[edited.id, ms[8].id]).await.unwrap();
    assert_eq!(again[&edited.id].text, "edited");
    assert_eq!(again[&edited.id].status, Status::Deleted);
    assert_eq!(again[&edited.id].version, 2);
    assert_eq!(again[&ms[8].id], ms[8]);

    // The same read on the calling thread (a search's vector leg does it
    // on its blocking thread): SQLite's direct reader offers it, PostgreSQL
    // reads only asynchronously.
    let store = b.store.clone();
    let asked = vec![edited.id, ms[8].id, Uuid::now_v7()];
    let here = tokio::task::spawn_blocking(move || store.get_many_here(&asked))
        .await
        .unwrap();
    match here {
        Some(read) => {
            assert!(b.is_sqlite(), "only SQLite reads on the calling thread");
            let read = read.unwrap();
            assert_eq!(read.len(), 2);
            assert_eq!(read[&edited.id], again[&edited.id]);
            assert_eq!(read[&ms[8].id], ms[8]);
        }
        None => assert!(!b.is_sqlite(), "SQLite reads on the calling thread"),
    }
}

/// A conversation is one owner's memories of one `thread_id`, in id order;
/// a turn's neighbours skip inactive turns and never cross into another
/// thread, user or tenant.
async fn turns_beside_are_the_neighbours_within_one_conversation(b: Backend) {
    let s = b.store.as_ref();
    let turn = |user: &str, thread: &str, n: u128| {
        let mut m = memory(Some(user), Tier::LongTerm, &format!("{thread} turn {n}"));
        m.thread_id = Some(thread.into());
        // Ids interleave the two threads; order within a thread is by id.
        m.id = Uuid::from_u128((1 << 100) + n);
        m
    };
    let t: Vec<Memory> = (0..6).map(|n| turn("alice", "s1", n * 2)).collect();
    let other_thread = turn("alice", "s2", 3);
    let other_user = turn("bob", "s1", 5);
    let mut other_tenant = turn("alice", "s1", 7);
    other_tenant.tenant_id = "tenant-b".into();
    let mut deleted = t[3].clone();
    deleted.status = Status::Deleted;
    let unthreaded = memory(Some("alice"), Tier::LongTerm, "no thread");
    let mut rows = t.clone();
    rows[3] = deleted;
    rows.extend([
        other_thread.clone(),
        other_user,
        other_tenant,
        unthreaded.clone(),
    ]);
    insert(s, &rows).await;

    let ask = [
        t[0].id,
        t[2].id,
        t[4].id,
        t[5].id,
        other_thread.id,
        unthreaded.id,
    ];
    let mut got = s.turns_beside(&ask).await.unwrap();
    got.sort_by_key(|b| b.id);
    let want = |id: &Memory, before: Option<&Memory>, after: Option<&Memory>| TurnsBeside {
        id: id.id,
        before: before.map(|m| m.id),
        after: after.map(|m| m.id),
    };
    let mut expected = vec![
        want(&t[0], None, Some(&t[1])),
        want(&t[2], Some(&t[1]), Some(&t[4])), // t[3] is deleted
        want(&t[4], Some(&t[2]), Some(&t[5])),
        want(&t[5], Some(&t[4]), None),
        want(&other_thread, None, None),
    ];
    expected.sort_by_key(|b| b.id);
    assert_eq!(got, expected);
    assert!(s.turns_beside(&[]).await.unwrap().is_empty());

    // The turn before an id, stored or not: the same order and rules.
    let before = |id: Uuid| async move {
        s.turn_before(DEFAULT_TENANT, "alice", "s1", id)
            .await
            .unwrap()
    };
    assert_eq!(before(t[4].id).await, Some(t[2].text.clone()));
    assert_eq!(before(t[0].id).await, None);
    let unstored = Uuid::from_u128((1 << 100) + 99);
    assert_eq!(before(unstored).await, Some(t[5].text.clone()));
    assert_eq!(
        s.turn_before(DEFAULT_TENANT, "alice", "s2", unstored)
            .await
            .unwrap(),
        Some(other_thread.text.clone())
    );
}

async fn a_failing_insert_writes_nothing(b: Backend) {
    let s = b.store.as_ref();
    let first = memory(Some("alice"), Tier::LongTerm, "first");
    insert(s, std::slice::from_ref(&first)).await;
    // A new memory and a duplicate id in one batch: the batch fails whole.
    let fresh = memory(Some("alice"), Tier::LongTerm, "fresh");
    let dup = Memory {
        text: "duplicate".into(),
        ..first.clone()
    };
    let err = s
        .insert(
            &[fresh.clone(), dup.clone()],
            &[created(&fresh), created(&dup)],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert_eq!(s.get(fresh.id).await.unwrap(), None);
    assert!(s.history(fresh.id).await.unwrap().is_empty());
    assert_eq!(s.history(first.id).await.unwrap().len(), 1);
    assert_eq!(s.get(first.id).await.unwrap().unwrap().text, "first");
    // A constraint violation (reference memory with an owner) too.
    let bad = Memory {
        tier: Tier::Reference,
        ..memory(Some("alice"), Tier::LongTerm, "bad")
    };
    let other = memory(Some("alice"), Tier::LongTerm, "other");
    assert!(s
        .insert(&[other.clone(), bad.clone()], &[created(&other)])
        .await
        .is_err());
    assert_eq!(s.get(other.id).await.unwrap(), None);
    assert_eq!(s.stats().await.unwrap().audit_events, 1);
}

async fn update_is_optimistic_and_all_or_nothing(b: Backend) {
    let s = b.store.as_ref();
    let a = memory(Some("u"), Tier::LongTerm, "a");
    let c = memory(Some("u"), Tier::LongTerm, "c");
    insert(s, &[a.clone(), c.clone()]).await;

    let mut a2 = a.clone();
    a2.text = "a, edited".into();
    let mut ev = AuditEvent::for_memory(&a2, AuditAction::Update, "test", t0());
    ev.before_text = Some("a".into());
    ev.after_text = Some(a2.text.clone());
    s.update(&[(a2.clone(), 1)], &[ev]).await.unwrap();
    let stored = s.get(a.id).await.unwrap().unwrap();
    assert_eq!(stored.version, 2);
    assert_eq!(stored.text, "a, edited");
    let dedup = s
        .find_by_text_hash("default", Some("u"), &text_hash("a, edited"))
        .await
        .unwrap();
    assert_eq!(dedup.len(), 1, "the text hash follows the text");

    // A writer that read version 1 loses.
    let mut stale = a.clone();
    stale.text = "lost".into();
    let err = s.update(&[(stale, 1)], &[]).await.unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");

    // One stale change fails the batch: the good one is not applied either.
    let mut c2 = c.clone();
    c2.text = "c, edited".into();
    let mut a3 = stored.clone();
    a3.text = "a, third".into();
    let ev = AuditEvent::for_memory(&c2, AuditAction::Update, "test", t0());
    let err = s.update(&[(c2, 1), (a3, 1)], &[ev]).await.unwrap_err();
    assert!(matches!(err, Error::Conflict(_)));
    assert_eq!(s.get(c.id).await.unwrap().unwrap().text, "c");
    assert_eq!(s.get(c.id).await.unwrap().unwrap().version, 1);
    assert_eq!(s.history(c.id).await.unwrap().len(), 1, "no event written");
    assert_eq!(s.get(a.id).await.unwrap().unwrap().text, "a, edited");
}

async fn an_importance_change_moves_the_base_importance(b: Backend) {
    let s = b.store.as_ref();
    let m = memory(Some("u"), Tier::LongTerm, "base");
    insert(s, std::slice::from_ref(&m)).await;
    let base = |rows: Vec<mnemo::store::CleanupRow>| rows[0].base_importance;
    assert_eq!(base(s.scan_for_cleanup(None, 10).await.unwrap()), 0.5);
    s.write_heat(&[HeatUpdate {
        id: m.id,
        importance: 0.4,
        base_importance: 0.9,
        access_count: None,
        cooled_at: t0(),
    }])
    .await
    .unwrap();
    let mut m2 = s.get(m.id).await.unwrap().unwrap();
    assert_eq!(m2.importance, 0.4);
    m2.importance = 0.6;
    s.update(&[(m2.clone(), m2.version)], &[]).await.unwrap();
    let got = base(s.scan_for_cleanup(None, 10).await.unwrap());
    assert!((got - 1.1).abs() < 1e-5, "0.9 + (0.6 - 0.4), got {got}");
    // Clamped to [0, 2].
    let mut m3 = s.get(m.id).await.unwrap().unwrap();
    m3.importance = 2.0;
    s.update(&[(m3.clone(), m3.version)], &[]).await.unwrap();
    assert_eq!(base(s.scan_for_cleanup(None, 10).await.unwrap()), 2.0);
}

async fn list_filters_and_paginates(b: Backend) {
    let s = b.store.as_ref();
    let mut all = Vec::new();
    for i in 0..30 {
        let user = if i % 3 == 0 { "bob" } else { "alice" };
        let tier = if i % 5 == 0 {
            Tier::Working
        } else {
            Tier::LongTerm
        };
        let mut m = memory(Some(user), tier, &format!("memory {i}"));
        m.thread_id = (i % 2 == 0).then(|| "th-even".to_string());
        m.kind = if i % 4 == 0 { Kind::Event } else { Kind::Fact };
        m.status = if i % 7 == 0 {
            Status::Deleted
        } else {
            Status::Active
        };
        m.source.document_id = (i % 6 == 0).then(|| "doc-6".to_string());
        all.push(m);
    }
    let reference = memory(None, Tier::Reference, "shared");
    let mut other_tenant = memory(Some("alice"), Tier::LongTerm, "elsewhere");
    other_tenant.tenant_id = "other".into();
    insert(s, &all).await;
    insert(s, &[reference.clone(), other_tenant.clone()]).await;

    let ids = |v: Vec<Memory>| v.into_iter().map(|m| m.id).collect::<Vec<_>>();
    let expect = |f: &dyn Fn(&Memory) -> bool| {
        let mut v: Vec<Uuid> = all.iter().filter(|m| f(m)).map(|m| m.id).collect();
        v.sort();
        v
    };
    // Pagination: pages of 4 in id order cover alice exactly once.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = s
            .list(&ListQuery {
                after,
                limit: 4,
                ..query(Some("alice"))
            })
            .await
            .unwrap();
        assert!(page.len() <= 4);
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        seen.extend(ids(page));
    }
    assert_eq!(seen, expect(&|m| m.user_id.as_deref() == Some("alice")));

    let run = |q: ListQuery| async move { ids(s.list(&q).await.unwrap()) };
    assert_eq!(
        run(ListQuery {
            tier: Some(Tier::Working),
            ..query(Some("alice"))
        })
        .await,
        expect(&|m| m.user_id.as_deref() == Some("alice") && m.tier == Tier::Working)
    );
    assert_eq!(
        run(ListQuery {
            status: Some(Status::Deleted),
            ..query(Some("bob"))
        })
        .await,
        expect(&|m| m.user_id.as_deref() == Some("bob") && m.status == Status::Deleted)
    );
    assert_eq!(
        run(ListQuery {
            thread_id: Some("th-even".into()),
            kind: Some(Kind::Event),
            ..query(Some("alice"))
        })
        .await,
        expect(&|m| {
            m.user_id.as_deref() == Some("alice") && m.thread_id.is_some() && m.kind == Kind::Event
        })
    );
    assert_eq!(
        run(ListQuery {
            document_id: Some("doc-6".into()),
            ..query(None)
        })
        .await,
        expect(&|m| m.source.document_id.is_some())
    );
    // No user: every owner of the tenant (admin listing), reference included.
    let tenant_wide = run(query(None)).await;
    assert_eq!(tenant_wide.len(), all.len() + 1);
    assert!(!tenant_wide.contains(&other_tenant.id));
    // Reference tier without a user: reference memory only.
    assert_eq!(
        run(ListQuery {
            tier: Some(Tier::Reference),
            ..query(None)
        })
        .await,
        vec![reference.id]
    );
    assert_eq!(
        run(ListQuery {
            tenant_id: "other".into(),
            ..query(Some("alice"))
        })
        .await,
        vec![other_tenant.id]
    );
    assert!(run(query(Some("nobody"))).await.is_empty());
}

async fn history_lists_events_in_order(b: Backend) {
    let s = b.store.as_ref();
    let m = memory(Some("u"), Tier::LongTerm, "v1");
    insert(s, std::slice::from_ref(&m)).await;
    let actions = [
        AuditAction::Update,
        AuditAction::Confirm,
        AuditAction::Access,
        AuditAction::Delete,
        AuditAction::Restore,
    ];
    for (i, action) in actions.iter().enumerate() {
        let mut e =
            AuditEvent::for_memory(&m, *action, "actor", t0() + Duration::seconds(i as i64));
        e.details = serde_json::json!({"step": i});
        e.before_text = Some(format!("before {i}"));
        s.update(&[], &[e]).await.unwrap();
    }
    let history = s.history(m.id).await.unwrap();
    assert_eq!(history.len(), 6);
    assert_eq!(history[0], created(&m));
    for (i, (e, action)) in history[1..].iter().zip(actions).enumerate() {
        assert_eq!(e.action, action);
        assert_eq!(e.details, serde_json::json!({"step": i}));
        assert_eq!(
            e.before_text.as_deref(),
            Some(format!("before {i}").as_str())
        );
        assert_eq!(e.at, t0() + Duration::seconds(i as i64));
    }
    assert!(s.history(Uuid::now_v7()).await.unwrap().is_empty());
}

async fn indexed_versions_and_scan_cover_active_and_pending(b: Backend) {
    let s = b.store.as_ref();
    let mut expected = Vec::new();
    for (i, status) in Status::ALL.iter().cycle().take(24).enumerate() {
        let mut m = memory(Some("u"), Tier::LongTerm, &format!("m{i}"));
        m.status = *status;
        m.version = i as i64 + 1;
        if status.is_indexed() {
            expected.push((m.id, m.version));
        }
        insert(s, &[m]).await;
    }
    expected.sort();
    let mut versions = s.indexed_versions().await.unwrap();
    versions.sort();
    assert_eq!(versions, expected);
    let mut scanned = Vec::new();
    let mut after = None;
    loop {
        let batch = s.scan_indexed(after, 3).await.unwrap();
        let Some(last) = batch.last() else { break };
        after = Some(last.id);
        scanned.extend(batch.into_iter().map(|m| (m.id, m.version)));
    }
    assert_eq!(scanned, expected, "in id order, each once");
}

async fn record_access_counts_without_a_version_change(b: Backend) {
    let s = b.store.as_ref();
    let a = memory(Some("u"), Tier::LongTerm, "a");
    let c = memory(Some("u"), Tier::LongTerm, "c");
    insert(s, &[a.clone(), c.clone()]).await;
    let at = t0() + Duration::hours(2);
    s.record_access(&[a.id], at).await.unwrap();
    s.record_access(&[a.id, c.id], at).await.unwrap();
    s.record_access(&[], at).await.unwrap();
    let a2 = s.get(a.id).await.unwrap().unwrap();
    assert_eq!((a2.access_count, a2.version), (2, 1));
    assert_eq!(a2.last_accessed_at, Some(at));
    assert_eq!(s.get(c.id).await.unwrap().unwrap().access_count, 1);
    assert_eq!(s.history(a.id).await.unwrap().len(), 1, "not audited");
}

async fn find_by_text_hash_is_scoped_to_the_owner(b: Backend) {
    let s = b.store.as_ref();
    let text = "same words";
    let mine = memory(Some("alice"), Tier::LongTerm, text);
    let theirs = memory(Some("bob"), Tier::LongTerm, text);
    let shared = memory(None, Tier::Reference, text);
    let mut gone = memory(Some("alice"), Tier::LongTerm, text);
    gone.status = Status::Deleted;
    insert(s, &[mine.clone(), theirs, shared.clone(), gone]).await;
    let h = text_hash(text);
    let ids = |v: Vec<Memory>| v.into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(
        ids(s
            .find_by_text_hash("default", Some("alice"), &h)
            .await
            .unwrap()),
        vec![mine.id]
    );
    assert_eq!(
        ids(s.find_by_text_hash("default", None, &h).await.unwrap()),
        vec![shared.id]
    );
    assert!(s
        .find_by_text_hash("other", Some("alice"), &h)
        .await
        .unwrap()
        .is_empty());
}

async fn stats_count_by_tier_and_status(b: Backend) {
    let s = b.store.as_ref();
    assert_eq!(s.stats().await.unwrap().total(), 0);
    let mut pending = memory(Some("u"), Tier::LongTerm, "p");
    pending.status = Status::Pending;
    insert(
        s,
        &[
            memory(Some("u"), Tier::LongTerm, "a"),
            memory(Some("u"), Tier::LongTerm, "b"),
            pending,
            memory(None, Tier::Reference, "r"),
        ],
    )
    .await;
    s.cache_embeddings(&owner(Some("u")), "m", &[("h".into(), vec![0.5])], None)
        .await
        .unwrap();
    let stats = s.stats().await.unwrap();
    let mut rows = stats.by_tier_status.clone();
    rows.sort_by_key(|(t, st, _)| (t.as_str(), st.as_str()));
    assert_eq!(
        rows,
        vec![
            (Tier::LongTerm, Status::Active, 2),
            (Tier::LongTerm, Status::Pending, 1),
            (Tier::Reference, Status::Active, 1),
        ]
    );
    assert_eq!((stats.audit_events, stats.cached_embeddings), (4, 1));
    // `/metrics` counts the memories alone, to the same figures.
    let mut counted = s.count_by_tier_status().await.unwrap();
    counted.sort_by_key(|(t, st, _)| (t.as_str(), st.as_str()));
    assert_eq!(counted, rows);
}

async fn embedding_cache_round_trips_and_overwrites(b: Backend) {
    let s = b.store.as_ref();
    let (alice, bob, reference) = (owner(Some("alice")), owner(Some("bob")), owner(None));
    // Stored in half precision: within 2^-11 relative of what was cached.
    let v1 = vec![0.1f32, -0.5, 0.033, 1.0];
    let close = |a: &[f32], b: &[f32]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= x.abs() / 2048.0 + 1e-7)
    };
    s.cache_embeddings(
        &alice,
        "model-a",
        &[("h1".into(), v1.clone()), ("h2".into(), vec![1.0])],
        None,
    )
    .await
    .unwrap();
    s.cache_embeddings(&alice, "model-b", &[("h1".into(), vec![0.25])], None)
        .await
        .unwrap();
    s.cache_embeddings(&reference, "model-a", &[("h2".into(), vec![-0.75])], None)
        .await
        .unwrap();
    let got = s
        .cached_embeddings(&alice, "model-a", &["h1".into(), "h3".into()])
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert!(close(&got["h1"], &v1), "{:?}", got["h1"]);
    // Kept per owner: bob sees none of alice's entries, reference its own.
    assert!(s
        .cached_embeddings(&bob, "model-a", &["h1".into(), "h2".into()])
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        s.cached_embeddings(&reference, "model-a", &["h1".into(), "h2".into()])
            .await
            .unwrap(),
        HashMap::from([("h2".to_string(), vec![-0.75])])
    );
    s.cache_embeddings(&alice, "model-a", &[("h1".into(), vec![0.5])], None)
        .await
        .unwrap();
    let got = s
        .cached_embeddings(&alice, "model-a", &["h1".into(), "h2".into()])
        .await
        .unwrap();
    assert_eq!(
        (got["h1"].clone(), got["h2"].clone()),
        (vec![0.5], vec![1.0])
    );
    assert_eq!(
        s.cached_embeddings(&alice, "model-b", &["h1".into()])
            .await
            .unwrap()["h1"],
        vec![0.25]
    );
    assert!(s
        .cached_embeddings(&alice, "model-a", &[])
        .await
        .unwrap()
        .is_empty());
}

fn key(id: &str, hash: &str, role: Role, user: Option<&str>, at_secs: i64) -> ApiKey {
    ApiKey {
        id: id.into(),
        tenant_id: "default".into(),
        user_id: user.map(str::to_string),
        role,
        secret_sha256: hash.into(),
        created_at: t0() + Duration::seconds(at_secs),
        revoked_at: None,
    }
}

async fn api_keys_insert_lookup_revoke(b: Backend) {
    let s = b.store.as_ref();
    let admin = key("k-admin", "h-admin", Role::Admin, None, 2);
    let user = key("k-user", "h-user", Role::User, Some("alice"), 1);
    s.insert_api_key(&admin).await.unwrap();
    s.insert_api_key(&user).await.unwrap();
    for dup in [
        key("k-admin", "h-other", Role::Admin, None, 3),
        key("k-other", "h-admin", Role::Admin, None, 3),
    ] {
        let err = s.insert_api_key(&dup).await.unwrap_err();
        assert!(matches!(err, Error::Conflict(_)), "{err}");
    }
    // A user key needs a user: the store refuses it too.
    assert!(s
        .insert_api_key(&key("k-bad", "h-bad", Role::User, None, 3))
        .await
        .is_err());
    assert_eq!(
        s.api_key_by_hash("h-user").await.unwrap(),
        Some(user.clone())
    );
    assert_eq!(s.api_key_by_hash("nope").await.unwrap(), None);
    assert_eq!(
        s.list_api_keys().await.unwrap(),
        vec![user.clone(), admin.clone()],
        "oldest first"
    );
    assert_eq!(s.count_active_api_keys().await.unwrap(), 2);
    let at = t0() + Duration::days(1);
    assert!(s.revoke_api_key("k-user", at).await.unwrap());
    assert!(
        !s.revoke_api_key("k-user", at).await.unwrap(),
        "already revoked"
    );
    assert!(!s.revoke_api_key("k-none", at).await.unwrap());
    assert_eq!(
        s.api_key_by_hash("h-user")
            .await
            .unwrap()
            .unwrap()
            .revoked_at,
        Some(at)
    );
    assert_eq!(s.count_active_api_keys().await.unwrap(), 1);
}

async fn write_is_one_transaction(b: Backend) {
    let s = b.store.as_ref();
    let old = memory(Some("u"), Tier::LongTerm, "old fact");
    insert(s, std::slice::from_ref(&old)).await;
    let new = memory(Some("u"), Tier::LongTerm, "corrected fact");
    let mut superseded = old.clone();
    superseded.status = Status::Superseded;
    superseded.superseded_by = Some(new.id);
    // A stale change: nothing of the write happens.
    let err = s
        .write(
            std::slice::from_ref(&new),
            &[(superseded.clone(), 5)],
            &[created(&new)],
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)));
    assert_eq!(s.get(new.id).await.unwrap(), None);
    assert!(s.history(new.id).await.unwrap().is_empty());
    // The right version: all of it.
    let ev = AuditEvent::for_memory(&superseded, AuditAction::Supersede, "t", t0());
    s.write(
        std::slice::from_ref(&new),
        &[(superseded.clone(), 1)],
        &[created(&new), ev],
        None,
    )
    .await
    .unwrap();
    assert_eq!(s.get(new.id).await.unwrap(), Some(new.clone()));
    let stored = s.get(old.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.superseded_by, stored.version),
        (Status::Superseded, Some(new.id), 2)
    );
    assert_eq!(s.history(old.id).await.unwrap().len(), 2);
}

async fn a_write_from_a_thread_lands_only_while_the_thread_exists(b: Backend) {
    let s = b.store.as_ref();
    let t = thread("erin");
    s.insert_thread(&t).await.unwrap();
    let from = ThreadRef {
        tenant_id: "default",
        id: t.id,
    };
    let first = memory(Some("erin"), Tier::LongTerm, "erin said this in the thread");
    s.write(
        std::slice::from_ref(&first),
        &[],
        &[created(&first)],
        Some(from),
    )
    .await
    .unwrap();
    assert!(s.get(first.id).await.unwrap().is_some());
    // Another tenant's view of the same id is not the thread.
    let elsewhere = ThreadRef {
        tenant_id: "other",
        id: t.id,
    };
    let stray = memory(Some("erin"), Tier::LongTerm, "a stray write");
    let refused = s
        .write(
            std::slice::from_ref(&stray),
            &[],
            &[created(&stray)],
            Some(elsewhere),
        )
        .await;
    assert!(
        matches!(refused, Err(Error::NotFound { .. })),
        "{refused:?}"
    );
    // Erased (the erasure completed: no intent left to refuse the write).
    s.begin_erasure("default", "erin", "admin", t0())
        .await
        .unwrap();
    s.erase_user("default", "erin").await.unwrap();
    s.complete_erasure("default", "erin", &serde_json::json!({}), "admin", t0())
        .await
        .unwrap();
    let late = memory(Some("erin"), Tier::LongTerm, "extracted after the erasure");
    let refused = s
        .write(
            std::slice::from_ref(&late),
            &[],
            &[created(&late)],
            Some(from),
        )
        .await;
    assert!(
        matches!(refused, Err(Error::NotFound { .. })),
        "{refused:?}"
    );
    assert_eq!(s.get(late.id).await.unwrap(), None);
    assert!(s.history(late.id).await.unwrap().is_empty());
    assert_eq!(
        s.user_footprint("default", "erin").await.unwrap(),
        Default::default()
    );
}

async fn due_for_sweep_selects_by_state_and_time(b: Backend) {
    let s = b.store.as_ref();
    let day = Duration::days(1);
    let cutoff = t0() + day * 10;
    let mk = |status: Status, created: i32, updated: i32, expires: Option<i32>| {
        let mut m = memory(Some("u"), Tier::LongTerm, "x");
        m.status = status;
        m.created_at = t0() + day * created;
        m.updated_at = t0() + day * updated;
        m.expires_at = expires.map(|d| t0() + day * d);
        m
    };
    let expire_yes = mk(Status::Active, 0, 0, Some(10));
    let expire_pending = mk(Status::Pending, 0, 0, Some(5));
    let expire_no = mk(Status::Active, 0, 0, Some(11));
    let never = mk(Status::Active, 0, 0, None);
    let pending_old = mk(Status::Pending, 9, 12, None);
    let pending_new = mk(Status::Pending, 11, 11, None);
    let expired_old = mk(Status::Expired, 0, 10, Some(1));
    let expired_new = mk(Status::Expired, 0, 11, Some(1));
    let archived_old = mk(Status::Archived, 0, 3, None);
    let deleted_old = mk(Status::Deleted, 0, 2, None);
    let deleted_new = mk(Status::Deleted, 0, 20, None);
    let all = [
        &expire_yes,
        &expire_pending,
        &expire_no,
        &never,
        &pending_old,
        &pending_new,
        &expired_old,
        &expired_new,
        &archived_old,
        &deleted_old,
        &deleted_new,
    ];
    insert(s, &all.iter().map(|m| (*m).clone()).collect::<Vec<_>>()).await;
    let due = |step| async move {
        let mut ids: Vec<Uuid> = s
            .due_for_sweep(step, cutoff, None, 100)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        ids.sort();
        ids
    };
    let sorted = |v: &[&Memory]| {
        let mut ids: Vec<Uuid> = v.iter().map(|m| m.id).collect();
        ids.sort();
        ids
    };
    assert_eq!(
        due(SweepStep::Expire).await,
        sorted(&[&expire_yes, &expire_pending])
    );
    assert_eq!(
        due(SweepStep::ExpirePending).await,
        sorted(&[&expire_pending, &pending_old])
    );
    assert_eq!(due(SweepStep::Archive).await, sorted(&[&expired_old]));
    assert_eq!(due(SweepStep::Delete).await, sorted(&[&archived_old]));
    assert_eq!(due(SweepStep::Purge).await, sorted(&[&deleted_old]));
    // Paging with `after`.
    let first = s
        .due_for_sweep(SweepStep::Expire, cutoff, None, 1)
        .await
        .unwrap();
    let rest = s
        .due_for_sweep(SweepStep::Expire, cutoff, Some(first[0].id), 10)
        .await
        .unwrap();
    assert_eq!(first.len() + rest.len(), 2);
    assert_ne!(first[0].id, rest[0].id);
}

async fn purge_deletes_only_soft_deleted_and_scrubs_audit_text(b: Backend) {
    let s = b.store.as_ref();
    let mut gone = memory(Some("u"), Tier::LongTerm, "secret purge text");
    gone.status = Status::Deleted;
    let mut gone_shared = memory(Some("u"), Tier::LongTerm, "shared text");
    gone_shared.status = Status::Deleted;
    let keeper = memory(Some("u"), Tier::LongTerm, "shared text");
    let live = memory(Some("u"), Tier::LongTerm, "live text");
    let other = memory(Some("v"), Tier::LongTerm, "secret purge text");
    insert(
        s,
        &[
            gone.clone(),
            gone_shared.clone(),
            keeper.clone(),
            live.clone(),
            other,
        ],
    )
    .await;
    let cache: Vec<(String, Vec<f32>)> = ["secret purge text", "shared text", "live text"]
        .iter()
        .map(|t| (text_hash(t), vec![1.0]))
        .collect();
    s.cache_embeddings(&owner(Some("u")), "m", &cache, None)
        .await
        .unwrap();
    s.cache_embeddings(&owner(Some("v")), "m", &cache[..1], None)
        .await
        .unwrap();

    let purged = s
        .purge(&[gone.id, gone_shared.id, live.id, Uuid::now_v7()])
        .await
        .unwrap();
    assert_eq!(purged, 2, "only soft-deleted memories");
    assert_eq!(s.get(gone.id).await.unwrap(), None);
    assert!(s.get(live.id).await.unwrap().is_some());
    let history = s.history(gone.id).await.unwrap();
    assert_eq!(history.len(), 1, "the event stays");
    assert_eq!(
        (
            history[0].before_text.clone(),
            history[0].after_text.clone()
        ),
        (None, None)
    );
    assert_eq!(history[0].action, AuditAction::Create);
    let hashes: Vec<String> = cache.iter().map(|(h, _)| h.clone()).collect();
    let left = s
        .cached_embeddings(&owner(Some("u")), "m", &hashes)
        .await
        .unwrap();
    let left: HashSet<String> = left.into_keys().collect();
    assert_eq!(
        left,
        HashSet::from([text_hash("shared text"), text_hash("live text")]),
        "a cached vector another memory of the owner uses stays"
    );
    assert_eq!(
        s.cached_embeddings(&owner(Some("v")), "m", &hashes)
            .await
            .unwrap()
            .len(),
        1,
        "another owner's entry for the purged text stays"
    );
    assert_eq!(s.purge(&[]).await.unwrap(), 0);
}

async fn write_heat_cools_without_a_version_change(b: Backend) {
    let s = b.store.as_ref();
    let mut m = memory(Some("u"), Tier::LongTerm, "hot");
    m.access_count = 40;
    let other = memory(Some("u"), Tier::LongTerm, "other");
    insert(s, &[m.clone(), other.clone()]).await;
    let at = t0() + Duration::days(7);
    s.write_heat(&[
        HeatUpdate {
            id: m.id,
            importance: 0.8,
            base_importance: 0.6,
            access_count: Some(20),
            cooled_at: at,
        },
        HeatUpdate {
            id: other.id,
            importance: 0.3,
            base_importance: 0.3,
            access_count: None,
            cooled_at: at,
        },
    ])
    .await
    .unwrap();
    let rows = s.scan_for_cleanup(None, 10).await.unwrap();
    let row = rows.iter().find(|r| r.memory.id == m.id).unwrap();
    assert_eq!(
        (
            row.memory.importance,
            row.base_importance,
            row.memory.access_count
        ),
        (0.8, 0.6, 20)
    );
    assert_eq!((row.cooled_at, row.memory.version), (Some(at), 1));
    let row = rows.iter().find(|r| r.memory.id == other.id).unwrap();
    assert_eq!((row.cooled_at, row.memory.access_count), (None, 0));
    // Only active long-term memories are scanned.
    let mut working = memory(Some("u"), Tier::Working, "w");
    working.thread_id = Some("t".into());
    insert(s, &[working]).await;
    assert_eq!(s.scan_for_cleanup(None, 10).await.unwrap().len(), 2);
}

async fn leases_exclude_renew_expire_and_release(b: Backend) {
    let s = b.store.as_ref();
    let now = t0();
    let min = Duration::minutes(1);
    assert_eq!(s.job_state("ttl-sweep").await.unwrap(), None);
    assert!(s
        .acquire_lease("ttl-sweep", "a", now, now + min * 10)
        .await
        .unwrap());
    assert!(!s
        .acquire_lease("ttl-sweep", "b", now + min, now + min * 11)
        .await
        .unwrap());
    assert!(
        s.acquire_lease("weekly-cleanup", "b", now, now + min)
            .await
            .unwrap(),
        "another job is free"
    );
    // Renewal by the holder.
    assert!(s
        .acquire_lease("ttl-sweep", "a", now + min * 5, now + min * 20)
        .await
        .unwrap());
    assert!(
        !s.acquire_lease("ttl-sweep", "b", now + min * 15, now + min * 25)
            .await
            .unwrap(),
        "the renewal moved the expiry"
    );
    // Expired: someone else takes over.
    assert!(s
        .acquire_lease("ttl-sweep", "b", now + min * 20, now + min * 30)
        .await
        .unwrap());
    let state = s.job_state("ttl-sweep").await.unwrap().unwrap();
    assert_eq!(state.holder.as_deref(), Some("b"));
    assert_eq!(state.lease_expires_at, Some(now + min * 30));
    // Only the holder releases.
    s.release_lease("ttl-sweep", "a", Some((now, serde_json::json!({"x": 1}))))
        .await
        .unwrap();
    assert_eq!(
        s.job_state("ttl-sweep")
            .await
            .unwrap()
            .unwrap()
            .holder
            .as_deref(),
        Some("b")
    );
    let stats = serde_json::json!({"expired": 3, "purged": 1});
    s.release_lease("ttl-sweep", "b", Some((now + min * 21, stats.clone())))
        .await
        .unwrap();
    let state = s.job_state("ttl-sweep").await.unwrap().unwrap();
    assert_eq!(
        state,
        mnemo::store::JobState {
            holder: None,
            lease_expires_at: None,
            last_completed_at: Some(now + min * 21),
            last_stats: Some(stats.clone()),
            first_due_at: None,
        }
    );
    // A release without completion keeps the last run's record.
    assert!(s
        .acquire_lease("ttl-sweep", "c", now + min * 22, now + min * 23)
        .await
        .unwrap());
    s.release_lease("ttl-sweep", "c", None).await.unwrap();
    let state = s.job_state("ttl-sweep").await.unwrap().unwrap();
    assert_eq!((state.holder, state.last_stats), (None, Some(stats)));
}

/// The first recorded due time stays: a later call (a restart, or another
/// node) gets it back instead of moving it, and a lease neither sets nor
/// clears it.
async fn a_first_run_is_scheduled_once(b: Backend) {
    let s = b.store.as_ref();
    let now = t0();
    let week = Duration::weeks(1);
    assert_eq!(
        s.schedule_first_run("weekly-cleanup", now + week)
            .await
            .unwrap(),
        now + week
    );
    assert_eq!(
        s.schedule_first_run("weekly-cleanup", now + week * 2)
            .await
            .unwrap(),
        now + week,
        "an earlier record wins"
    );
    let other = b.second_node().await;
    assert_eq!(
        other
            .schedule_first_run("weekly-cleanup", now + week * 3)
            .await
            .unwrap(),
        now + week
    );
    assert!(s
        .acquire_lease(
            "weekly-cleanup",
            "a",
            now + week,
            now + week + Duration::minutes(5)
        )
        .await
        .unwrap());
    s.release_lease("weekly-cleanup", "a", None).await.unwrap();
    let state = s.job_state("weekly-cleanup").await.unwrap().unwrap();
    assert_eq!(
        (state.first_due_at, state.last_completed_at, state.holder),
        (Some(now + week), None, None)
    );
    // A job with a lease row but no record gets one.
    assert!(s
        .acquire_lease("ttl-sweep", "a", now, now + Duration::minutes(5))
        .await
        .unwrap());
    assert_eq!(
        s.schedule_first_run("ttl-sweep", now + week).await.unwrap(),
        now + week
    );
    assert_eq!(
        s.job_state("ttl-sweep")
            .await
            .unwrap()
            .unwrap()
            .holder
            .as_deref(),
        Some("a"),
        "scheduling leaves the lease alone"
    );
}

async fn two_nodes_racing_for_a_lease_one_wins(b: Backend) {
    let node_a = b.store.clone();
    let node_b = b.second_node().await;
    let now = t0();
    for round in 0..40 {
        let job = format!("job-{round}");
        let (ja, jb) = (job.clone(), job.clone());
        let (a, bb) = (node_a.clone(), node_b.clone());
        let ta = tokio::spawn(async move {
            a.acquire_lease(&ja, "node-a", now, now + Duration::minutes(5))
                .await
                .unwrap()
        });
        let tb = tokio::spawn(async move {
            bb.acquire_lease(&jb, "node-b", now, now + Duration::minutes(5))
                .await
                .unwrap()
        });
        let (won_a, won_b) = (ta.await.unwrap(), tb.await.unwrap());
        assert!(
            won_a ^ won_b,
            "round {round}: exactly one node wins ({won_a}, {won_b})"
        );
        let holder = node_b.job_state(&job).await.unwrap().unwrap().holder;
        let expected = if won_a { "node-a" } else { "node-b" };
        assert_eq!(
            holder.as_deref(),
            Some(expected),
            "both nodes see the winner"
        );
    }
}

async fn erase_user_leaves_nothing_and_spares_others(b: Backend) {
    let s = b.store.as_ref();
    let mut alice = vec![
        memory(Some("alice"), Tier::LongTerm, "alice unique one"),
        memory(Some("alice"), Tier::LongTerm, "common phrase"),
        memory(Some("alice"), Tier::LongTerm, "alice only text"),
    ];
    alice[2].status = Status::Pending;
    let mut deleted = memory(Some("alice"), Tier::LongTerm, "alice deleted");
    deleted.status = Status::Deleted;
    alice.push(deleted);
    let bob = memory(Some("bob"), Tier::LongTerm, "common phrase");
    let mut other_tenant = memory(Some("alice"), Tier::LongTerm, "alice elsewhere");
    other_tenant.tenant_id = "other".into();
    insert(s, &alice).await;
    insert(s, &[bob.clone(), other_tenant.clone()]).await;
    let cache: Vec<(String, Vec<f32>)> = alice
        .iter()
        .map(|m| (text_hash(&m.text), vec![0.5]))
        .collect();
    s.cache_embeddings(&owner(Some("alice")), "m", &cache, None)
        .await
        .unwrap();
    let bob_cache = [(text_hash(&bob.text), vec![0.25])];
    s.cache_embeddings(&owner(Some("bob")), "m", &bob_cache, None)
        .await
        .unwrap();
    let alice_elsewhere = CacheOwner {
        tenant_id: "other".into(),
        user_id: Some("alice".into()),
    };
    s.cache_embeddings(&alice_elsewhere, "m", &cache[..1], None)
        .await
        .unwrap();

    let alice_thread = thread("alice");
    s.insert_thread(&alice_thread).await.unwrap();
    s.append_message(
        &message(&alice_thread, MessageRole::User, "alice says"),
        None,
    )
    .await
    .unwrap();
    let payload = Payload {
        id: Uuid::now_v7(),
        payload: serde_json::json!({"rows": ["alice tool output"]}),
    };
    s.append_message(
        &message(&alice_thread, MessageRole::Tool, "tool ran"),
        Some(&payload),
    )
    .await
    .unwrap();
    let bob_thread = thread("bob");
    s.insert_thread(&bob_thread).await.unwrap();
    // Alice's keys (one revoked already), bob's, and alice's in another tenant.
    s.insert_api_key(&key("k-alice", "h-alice", Role::User, Some("alice"), 1))
        .await
        .unwrap();
    s.insert_api_key(&key(
        "k-alice-agent",
        "h-alice-agent",
        Role::Agent,
        Some("alice"),
        2,
    ))
    .await
    .unwrap();
    s.revoke_api_key("k-alice-agent", t0()).await.unwrap();
    let bob_key = key("k-bob", "h-bob", Role::User, Some("bob"), 3);
    s.insert_api_key(&bob_key).await.unwrap();
    let alice_elsewhere_key = ApiKey {
        tenant_id: "other".into(),
        ..key(
            "k-alice-other",
            "h-alice-other",
            Role::User,
            Some("alice"),
            4,
        )
    };
    s.insert_api_key(&alice_elsewhere_key).await.unwrap();
    assert_eq!(
        s.user_footprint("default", "alice").await.unwrap().api_keys,
        2
    );

    s.begin_erasure("default", "alice", "admin", t0())
        .await
        .unwrap();
    s.begin_erasure("default", "alice", "admin", t0())
        .await
        .unwrap();
    assert_eq!(
        s.pending_erasures().await.unwrap(),
        vec![("default".into(), "alice".into(), "admin".into())]
    );
    let rows = s.erase_user("default", "alice").await.unwrap();
    assert_eq!(
        rows,
        mnemo::store::ErasedRows {
            memories: 4,
            candidates: 1,
            audit_events: 4,
            cached_embeddings: 4,
            threads: 1,
            messages: 3,
            api_keys: 2,
        }
    );
    // Her keys are gone (none authenticates, no row keeps her id); the
    // others' stay.
    assert_eq!(s.api_key_by_hash("h-alice").await.unwrap(), None);
    assert_eq!(s.api_key_by_hash("h-alice-agent").await.unwrap(), None);
    assert_eq!(s.api_key_by_hash("h-bob").await.unwrap(), Some(bob_key));
    assert_eq!(
        s.api_key_by_hash("h-alice-other").await.unwrap(),
        Some(alice_elsewhere_key)
    );
    assert!(s
        .list_api_keys()
        .await
        .unwrap()
        .iter()
        .all(|k| !(k.tenant_id == "default" && k.user_id.as_deref() == Some("alice"))));
    let footprint = s.user_footprint("default", "alice").await.unwrap();
    assert_eq!((footprint.memories, footprint.audit_events), (0, 0));
    assert_eq!(footprint.pending_erasures, 1, "until completed");
    assert_eq!(s.last_erasure("default", "alice").await.unwrap(), None);
    let at = t0() + Duration::minutes(1);
    s.complete_erasure(
        "default",
        "alice",
        &serde_json::json!({"memories": 4}),
        "admin",
        at,
    )
    .await
    .unwrap();
    assert_eq!(
        s.user_footprint("default", "alice").await.unwrap(),
        Default::default()
    );
    assert!(s.pending_erasures().await.unwrap().is_empty());
    assert_eq!(s.last_erasure("default", "alice").await.unwrap(), Some(at));
    assert_eq!(s.last_erasure("default", "bob").await.unwrap(), None);
    // Idempotent.
    assert_eq!(
        s.erase_user("default", "alice").await.unwrap(),
        Default::default()
    );
    // Others untouched: bob (same text), the same user id in another tenant,
    // and the cached vector bob's memory still uses.
    assert_eq!(s.get(bob.id).await.unwrap(), Some(bob.clone()));
    assert!(s
        .get_thread("default", alice_thread.id)
        .await
        .unwrap()
        .is_none());
    assert!(s
        .get_payload(alice_thread.id, payload.id)
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        s.get_thread("default", bob_thread.id).await.unwrap(),
        Some(bob_thread)
    );
    assert_eq!(s.get(other_tenant.id).await.unwrap(), Some(other_tenant));
    assert_eq!(s.history(bob.id).await.unwrap().len(), 1);
    let hashes: Vec<String> = cache.iter().map(|(h, _)| h.clone()).collect();
    assert!(s
        .cached_embeddings(&owner(Some("alice")), "m", &hashes)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        s.cached_embeddings(&owner(Some("bob")), "m", &hashes)
            .await
            .unwrap()
            .into_keys()
            .collect::<Vec<_>>(),
        vec![text_hash("common phrase")],
        "bob's entry for the same text stays"
    );
    assert_eq!(
        s.cached_embeddings(&alice_elsewhere, "m", &hashes)
            .await
            .unwrap()
            .len(),
        1
    );
    // Nothing of alice's text is left in any table's live rows.
    for table in mnemo::store::tables::TABLES {
        let mut after = None;
        loop {
            let rows = s.export_rows(table, after.as_deref(), 500).await.unwrap();
            let Some(last) = rows.last() else { break };
            after = Some(table.key_of(last));
            for row in &rows {
                let text = format!("{row:?}");
                assert!(
                    !text.contains("alice unique") && !text.contains("alice only"),
                    "{}: {text}",
                    table.name
                );
            }
        }
    }
}

async fn export_and_import_rows_copy_a_store(b: Backend) {
    use mnemo::store::tables::TABLES;
    // The source is always SQLite (what `mnemo migrate` reads); the target
    // is the backend under test.
    let source = Backend::sqlite().await;
    let src = source.store.as_ref();
    let mut ms = Vec::new();
    for i in 0..25 {
        let mut m = memory(Some("u"), Tier::LongTerm, &format!("copied {i}"));
        m.metadata.insert("i".into(), serde_json::json!(i));
        m.source.document_id = Some(format!("d{}", i % 3));
        ms.push(m);
    }
    insert(src, &ms).await;
    insert(src, &[memory(None, Tier::Reference, "ref")]).await;
    src.write_heat(&[HeatUpdate {
        id: ms[0].id,
        importance: 0.2,
        base_importance: 0.7,
        access_count: Some(3),
        cooled_at: t0(),
    }])
    .await
    .unwrap();
    src.cache_embeddings(
        &owner(Some("u")),
        "m",
        &[("h".into(), vec![0.25, -1.0])],
        None,
    )
    .await
    .unwrap();
    src.insert_api_key(&key("k1", "h1", Role::Agent, Some("u"), 0))
        .await
        .unwrap();
    src.begin_erasure("default", "x", "admin", t0())
        .await
        .unwrap();
    src.complete_erasure("default", "y", &serde_json::json!({"n": 1}), "admin", t0())
        .await
        .unwrap();
    src.acquire_lease("ttl-sweep", "n1", t0(), t0())
        .await
        .unwrap();
    src.release_lease(
        "ttl-sweep",
        "n1",
        Some((t0(), serde_json::json!({"ok": true}))),
    )
    .await
    .unwrap();

    let dst = b.store.as_ref();
    for round in 0..2 {
        for table in TABLES {
            let mut after = None;
            let mut copied = 0;
            loop {
                let rows = src.export_rows(table, after.as_deref(), 7).await.unwrap();
                let Some(last) = rows.last() else { break };
                after = Some(table.key_of(last));
                copied += dst.import_rows(table, &rows).await.unwrap();
            }
            let expected = if round == 0 {
                src.count_rows(table).await.unwrap()
            } else {
                0
            };
            assert_eq!(copied, expected, "{} round {round}", table.name);
            assert_eq!(
                dst.count_rows(table).await.unwrap(),
                src.count_rows(table).await.unwrap(),
                "{}",
                table.name
            );
        }
    }
    // Same content, read back through the trait.
    for m in &ms {
        assert_eq!(dst.get(m.id).await.unwrap(), src.get(m.id).await.unwrap());
        assert_eq!(
            dst.history(m.id).await.unwrap(),
            src.history(m.id).await.unwrap()
        );
    }
    assert_eq!(dst.get(ms[1].id).await.unwrap().as_ref(), Some(&ms[1]));
    assert_eq!(
        dst.scan_for_cleanup(None, 100).await.unwrap(),
        src.scan_for_cleanup(None, 100).await.unwrap()
    );
    assert_eq!(
        dst.list(&ListQuery {
            document_id: Some("d1".into()),
            ..query(Some("u"))
        })
        .await
        .unwrap()
        .len(),
        8
    );
    assert_eq!(
        dst.list_api_keys().await.unwrap(),
        src.list_api_keys().await.unwrap()
    );
    assert_eq!(
        dst.pending_erasures().await.unwrap(),
        src.pending_erasures().await.unwrap()
    );
    assert_eq!(dst.last_erasure("default", "y").await.unwrap(), Some(t0()));
    assert_eq!(
        dst.job_state("ttl-sweep").await.unwrap(),
        src.job_state("ttl-sweep").await.unwrap()
    );
    assert_eq!(
        dst.cached_embeddings(&owner(Some("u")), "m", &["h".into()])
            .await
            .unwrap()["h"],
        vec![0.25, -1.0]
    );
    // New events after the copy continue the sequence instead of colliding.
    let m = memory(Some("u"), Tier::LongTerm, "after the copy");
    insert(dst, std::slice::from_ref(&m)).await;
    assert_eq!(dst.history(m.id).await.unwrap().len(), 1);
    dst.complete_erasure("default", "z", &serde_json::json!({}), "admin", t0())
        .await
        .unwrap();
}

fn thread(user: &str) -> Thread {
    Thread {
        id: Uuid::now_v7(),
        tenant_id: "default".into(),
        user_id: user.into(),
        goal: Some(format!("{user}'s goal")),
        summary: Summary::default(),
        summary_upto_seq: 0,
        created_at: t0(),
        updated_at: t0(),
        last_activity_at: t0(),
        last_compacted_at: None,
    }
}

fn message(t: &Thread, role: MessageRole, content: &str) -> NewMessage {
    NewMessage {
        thread_id: t.id,
        tenant_id: t.tenant_id.clone(),
        user_id: t.user_id.clone(),
        role,
        content: content.into(),
        tool: None,
        created_at: t0() + Duration::seconds(1),
    }
}

async fn no_memory_lands_for_a_user_being_erased(b: Backend) {
    let s = b.store.as_ref();
    s.begin_erasure("default", "carol", "admin", t0())
        .await
        .unwrap();
    let carol = memory(Some("carol"), Tier::LongTerm, "written mid-erasure");
    let refused = s
        .insert(std::slice::from_ref(&carol), &[created(&carol)])
        .await;
    assert!(matches!(refused, Err(Error::Conflict(_))), "{refused:?}");
    assert!(s.get(carol.id).await.unwrap().is_none());
    // Nor a cached vector of her text.
    let entry = [(text_hash(&carol.text), vec![0.5])];
    let refused = s
        .cache_embeddings(&owner(Some("carol")), "m", &entry, None)
        .await;
    assert!(matches!(refused, Err(Error::Conflict(_))), "{refused:?}");
    assert!(s
        .cached_embeddings(&owner(Some("carol")), "m", &[entry[0].0.clone()])
        .await
        .unwrap()
        .is_empty());
    s.cache_embeddings(&owner(None), "m", &entry, None)
        .await
        .unwrap();
    // Nor a thread (on every node: the guard is in the insert's transaction).
    let carols_thread = thread("carol");
    let refused = s.insert_thread(&carols_thread).await;
    assert!(matches!(refused, Err(Error::Conflict(_))), "{refused:?}");
    assert!(s
        .get_thread("default", carols_thread.id)
        .await
        .unwrap()
        .is_none());
    // Other users, and reference memories, are not held up.
    s.insert_thread(&thread("dan")).await.unwrap();
    insert(s, &[memory(Some("dan"), Tier::LongTerm, "dan is fine")]).await;
    insert(s, &[memory(None, Tier::Reference, "a reference")]).await;
    s.complete_erasure("default", "carol", &serde_json::json!({}), "admin", t0())
        .await
        .unwrap();
    insert(s, &[carol]).await;
    s.insert_thread(&carols_thread).await.unwrap();
}

async fn threads_messages_payloads_round_trip(b: Backend) {
    let s = b.store.as_ref();
    let t = thread("alice");
    s.insert_thread(&t).await.unwrap();
    assert!(matches!(s.insert_thread(&t).await, Err(Error::Conflict(_))));
    assert_eq!(
        s.get_thread("default", t.id).await.unwrap(),
        Some(t.clone())
    );
    assert_eq!(
        s.get_thread("other", t.id).await.unwrap(),
        None,
        "tenant-scoped"
    );
    let user = s
        .append_message(&message(&t, MessageRole::User, "我喜欢绿茶"), None)
        .await
        .unwrap();
    assert_eq!(user.extraction_state, ExtractionState::Pending);
    let payload = Payload {
        id: Uuid::now_v7(),
        payload: serde_json::json!({"rows": [1, 2, 3]}),
    };
    let mut tool = message(&t, MessageRole::Tool, "[search · ok] 3 rows");
    tool.tool = Some(ToolSummary {
        name: "search".into(),
        status: "ok".into(),
        summary: "3 rows".into(),
        key_fields: Default::default(),
        payload_id: Some(payload.id),
    });
    let tool = s.append_message(&tool, Some(&payload)).await.unwrap();
    assert_eq!(tool.extraction_state, ExtractionState::Skipped);
    assert!(tool.seq > user.seq);
    assert_eq!(
        s.thread_messages(t.id, false).await.unwrap(),
        vec![user.clone(), tool.clone()]
    );
    assert_eq!(
        s.get_payload(t.id, payload.id).await.unwrap(),
        Some(payload.payload.clone())
    );
    assert_eq!(
        s.get_payload(Uuid::now_v7(), payload.id).await.unwrap(),
        None
    );
    let touched = s.get_thread("default", t.id).await.unwrap().unwrap();
    assert_eq!(touched.last_activity_at, t0() + Duration::seconds(1));
    // A message for a thread that does not exist writes nothing.
    let ghost = thread("alice");
    assert!(matches!(
        s.append_message(&message(&ghost, MessageRole::User, "lost"), None)
            .await,
        Err(Error::NotFound { .. })
    ));
    assert!(s.thread_messages(ghost.id, false).await.unwrap().is_empty());
}

async fn turn_leases_and_extraction_claims(b: Backend) {
    let s = b.store.as_ref();
    let t = thread("alice");
    s.insert_thread(&t).await.unwrap();
    let later = |m: i64| t0() + Duration::minutes(m);
    assert!(s.acquire_turn(t.id, "a", t0(), later(1)).await.unwrap());
    assert!(!s.acquire_turn(t.id, "b", t0(), later(1)).await.unwrap());
    assert!(
        s.acquire_turn(t.id, "b", later(2), later(3)).await.unwrap(),
        "expired"
    );
    s.release_turn(t.id, "a").await.unwrap(); // not the holder: no effect
    assert!(!s.acquire_turn(t.id, "c", later(2), later(3)).await.unwrap());
    s.release_turn(t.id, "b").await.unwrap();
    assert!(s.acquire_turn(t.id, "c", later(2), later(3)).await.unwrap());

    let m1 = s
        .append_message(&message(&t, MessageRole::User, "one"), None)
        .await
        .unwrap();
    let m2 = s
        .append_message(&message(&t, MessageRole::User, "two"), None)
        .await
        .unwrap();
    let claimed = s.claim_extraction(t.id, t0(), later(5)).await.unwrap();
    assert_eq!(
        claimed.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![m1.seq, m2.seq]
    );
    assert!(s
        .claim_extraction(t.id, t0(), later(5))
        .await
        .unwrap()
        .is_empty());
    s.finish_extraction(&[m1.seq], true).await.unwrap();
    s.finish_extraction(&[m2.seq], false).await.unwrap();
    let again = s.claim_extraction(t.id, t0(), later(5)).await.unwrap();
    assert_eq!(
        again.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![m2.seq]
    );
    // An abandoned claim can be taken again once it expires.
    let expired = s.claim_extraction(t.id, later(6), later(10)).await.unwrap();
    assert_eq!(
        expired.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![m2.seq]
    );
}

async fn compaction_takes_only_extracted_messages(b: Backend) {
    let s = b.store.as_ref();
    let t = thread("alice");
    s.insert_thread(&t).await.unwrap();
    let mut seqs = Vec::new();
    for text in ["one", "two", "three"] {
        let m = s
            .append_message(&message(&t, MessageRole::User, text), None)
            .await
            .unwrap();
        seqs.push(m.seq);
    }
    let summary = Summary {
        text: "one and two".into(),
        open_todos: vec!["call back".into()],
        commitments: Vec::new(),
    };
    let at = t0() + Duration::minutes(10);
    // Not extracted yet: compaction refuses and changes nothing.
    assert!(!s
        .compact_thread(t.id, 0, seqs[1], &summary, at)
        .await
        .unwrap());
    let claimed = s.claim_extraction(t.id, t0(), at).await.unwrap();
    s.finish_extraction(&claimed.iter().map(|m| m.seq).collect::<Vec<_>>(), true)
        .await
        .unwrap();
    assert!(s
        .compact_thread(t.id, 0, seqs[1], &summary, at)
        .await
        .unwrap());
    // A second compaction from the old starting point lost the race.
    assert!(!s
        .compact_thread(t.id, 0, seqs[1], &summary, at)
        .await
        .unwrap());
    let after = s.get_thread("default", t.id).await.unwrap().unwrap();
    assert_eq!(after.summary, summary);
    assert_eq!(after.summary_upto_seq, seqs[1]);
    assert_eq!(after.last_compacted_at, Some(at));
    let left = s.thread_messages(t.id, true).await.unwrap();
    assert_eq!(
        left.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![seqs[2]]
    );
    assert_eq!(s.thread_messages(t.id, false).await.unwrap().len(), 3);
    // Idle selection: idle and cooled, with more uncompacted messages than kept.
    let idle = s.idle_threads(at, at, 0, 10).await.unwrap();
    assert_eq!(idle, vec![("default".to_string(), t.id)]);
    assert!(s.idle_threads(at, at, 1, 10).await.unwrap().is_empty());
}

// ----- the change feed and its followers (clustered mode) ---------------

/// A whole erasure of a user of the default tenant, as the service runs it.
async fn erase(s: &dyn MemoryStore, user: &str) {
    s.begin_erasure("default", user, "admin", t0())
        .await
        .unwrap();
    s.erase_user("default", user).await.unwrap();
    s.complete_erasure("default", user, &serde_json::json!({}), "admin", t0())
        .await
        .unwrap();
}

/// Every change in feed order, paged; the erasure entry carries the owner key
/// the indexes use (`Owner::as_str`), as the triggers derive it.
async fn the_change_feed_lists_every_change_in_order(b: Backend) {
    let s = b.store.as_ref();
    assert_eq!(s.change_feed_head().await.unwrap(), 0);
    assert!(s.index_changes(0, 100).await.unwrap().is_empty());

    let one = memory(Some("alice"), Tier::LongTerm, "alice one");
    let two = memory(Some("bob"), Tier::LongTerm, "bob two");
    insert(s, &[one.clone(), two.clone()]).await;
    let mut changed = one.clone();
    changed.text = "alice one, changed".into();
    let event = AuditEvent::for_memory(&changed, AuditAction::Update, "test", t0());
    s.update(&[(changed, one.version)], &[event]).await.unwrap();
    erase(s, "alice").await;

    let changes = s.index_changes(0, 100).await.unwrap();
    let kinds: Vec<ChangeKind> = changes.iter().map(|c| c.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            ChangeKind::Memory(one.id),
            ChangeKind::Memory(two.id),
            ChangeKind::Memory(one.id),
            ChangeKind::Erasure(Owner::user("default", "alice").as_str().to_string()),
        ]
    );
    let positions: Vec<i64> = changes.iter().map(|c| c.position).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert_eq!(s.change_feed_head().await.unwrap(), positions[3]);
    // Paging: `after` is exclusive, `limit` is honoured.
    assert_eq!(s.index_changes(0, 1).await.unwrap(), changes[..1]);
    assert_eq!(
        s.index_changes(positions[0], 2).await.unwrap(),
        changes[1..3]
    );
    assert!(s.index_changes(positions[3], 100).await.unwrap().is_empty());
}

/// Many writers on their own connections commit at once while a follower
/// reads the feed with a small batch: it must see every change, none skipped
/// (PostgreSQL's sequence values would otherwise commit out of order).
async fn the_change_feed_never_skips_a_change_under_concurrent_writers(b: Backend) {
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let store = b.second_node().await;
        let done = done.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..EACH {
                let user = format!("writer-{w}");
                let m = memory(Some(&user), Tier::LongTerm, &format!("note {i} of {user}"));
                insert(store.as_ref(), &[m]).await;
            }
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
    }
    let follower = b.store.as_ref();
    let (mut cursor, mut seen) = (0, Vec::new());
    loop {
        let finished = done.load(std::sync::atomic::Ordering::SeqCst) == WRITERS;
        let batch = follower.index_changes(cursor, 7).await.unwrap();
        if let Some(last) = batch.last() {
            cursor = last.position;
        }
        let empty = batch.is_empty();
        seen.extend(batch);
        if finished && empty {
            break;
        }
        tokio::task::yield_now().await;
    }
    for w in writers {
        w.await.unwrap();
    }
    let everything = follower.index_changes(0, 10_000).await.unwrap();
    assert_eq!(everything.len(), WRITERS * EACH);
    assert_eq!(
        seen, everything,
        "the follower skipped or repeated a change"
    );
}

/// Heartbeats register nodes; erasure progress names the live nodes that
/// have not applied the owner's latest erasure; removed nodes are gone.
async fn the_node_registry_tracks_heartbeats_and_erasure_progress(b: Backend) {
    let s = b.store.as_ref();
    let owner_key = Owner::user("default", "alice").as_str().to_string();
    let progress = s.erasure_progress(&owner_key, t0()).await.unwrap();
    assert_eq!((progress.live_nodes, progress.behind.len()), (0, 0));

    s.node_heartbeat("node-b", 0, t0()).await.unwrap();
    s.node_heartbeat("node-a", 0, t0()).await.unwrap();
    // No erasure of alice yet: nobody is behind.
    let progress = s.erasure_progress(&owner_key, t0()).await.unwrap();
    assert_eq!(progress.live_nodes, 2);
    assert!(progress.behind.is_empty(), "{progress:?}");

    insert(s, &[memory(Some("alice"), Tier::LongTerm, "alice's note")]).await;
    erase(s, "alice").await;
    let erased_at = s.change_feed_head().await.unwrap();
    let progress = s.erasure_progress(&owner_key, t0()).await.unwrap();
    assert_eq!(progress.live_nodes, 2);
    assert_eq!(progress.behind, vec!["node-a", "node-b"]);

    // node-a applies the feed up to the erasure (a later heartbeat); node-b
    // still lags. Another owner's erasure progress is not held up.
    let later = t0() + Duration::seconds(10);
    s.node_heartbeat("node-a", erased_at, later).await.unwrap();
    let progress = s.erasure_progress(&owner_key, t0()).await.unwrap();
    assert_eq!(progress.behind, vec!["node-b"]);
    let bob_key = Owner::user("default", "bob").as_str().to_string();
    assert!(s
        .erasure_progress(&bob_key, t0())
        .await
        .unwrap()
        .behind
        .is_empty());
    // Only heartbeats since `live_since` count as live.
    let progress = s.erasure_progress(&owner_key, later).await.unwrap();
    assert_eq!((progress.live_nodes, progress.behind.len()), (1, 0));

    s.remove_node("node-a").await.unwrap();
    let progress = s.erasure_progress(&owner_key, t0()).await.unwrap();
    assert_eq!(progress.live_nodes, 1);
    assert_eq!(progress.behind, vec!["node-b"]);
}

/// Two nodes over one store and one (shared) vector index, each with its
/// own lexical index: the clustered topology in one process.
struct Cluster {
    clock: ManualClock,
    store: Arc<dyn MemoryStore>,
    a: Engine,
    b: Engine,
    /// Last: the indexes are flushed on drop, into this directory, and the
    /// store's database is dropped after them.
    _dir: TempDir,
    _backend: Backend,
}

async fn cluster(backend: Backend) -> Cluster {
    let dir = TempDir::new().unwrap();
    let clock = ManualClock::new(chrono::Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap());
    let store = backend.store.clone();
    let embedder = Arc::new(HashingEmbedder::new(32));
    let vectors: Arc<dyn VectorIndex> =
        Arc::new(EdgeVectorIndex::open(&dir.path().join("vectors"), 32).unwrap());
    let node = |name: &str| {
        let lexical =
            TantivyIndex::open(&dir.path().join(name), std::time::Duration::from_millis(50))
                .unwrap();
        Engine::new(Parts {
            store: store.clone(),
            lexical: Arc::new(lexical),
            vectors: vectors.clone(),
            embedder: embedder.clone(),
            policy: Arc::new(crate::common::on_hashing_scale(Policy::default())),
            clock: Arc::new(clock.clone()),
        })
    };
    let (a, b) = (node("lexical-a"), node("lexical-b"));
    Cluster {
        clock,
        store,
        a,
        b,
        _dir: dir,
        _backend: backend,
    }
}

async fn lexical_ids(engine: &Engine, user: &str, query: &str) -> Vec<Uuid> {
    let mut req = SearchRequest::new(Scope::user(user), query);
    req.legs = Legs::Lexical;
    req.record_access = false;
    let hits = engine.search(req).await.unwrap().hits;
    hits.into_iter().map(|h| h.memory.id).collect()
}

fn count_owner(engine: &Engine, user: &str) -> usize {
    let lexical = engine.lexical();
    lexical.commit().unwrap();
    lexical
        .count_owner(&Owner::user(DEFAULT_TENANT, user))
        .unwrap()
}

async fn a_node_follows_another_nodes_writes_and_ranks_them_identically(b: Backend) {
    let c = cluster(b).await;
    let actor = Actor::local("test");
    let head = c.store.change_feed_head().await.unwrap();
    let mut b = LexicalFollower::register(c.b.clone(), "node-b".into(), head)
        .await
        .unwrap();
    let added =
        c.a.add(
            &actor,
            vec![
                long_term("alice", "the espresso machine in the kitchen broke"),
                long_term("alice", "我家的咖啡机又坏了"),
                long_term("bob", "espresso tastes bitter to bob"),
            ],
            true,
        )
        .await
        .unwrap();
    // A indexed its own writes; B's lexical index has not seen them.
    assert_eq!(
        lexical_ids(&c.a, "alice", "espresso").await,
        vec![added[0].id]
    );
    assert!(lexical_ids(&c.b, "alice", "espresso").await.is_empty());

    let stats = b.step().await.unwrap();
    assert_eq!((stats.changes, stats.upserted, stats.removed), (3, 3, 0));
    assert_eq!(stats.position, c.store.change_feed_head().await.unwrap());
    assert_eq!(
        lexical_ids(&c.b, "alice", "espresso").await,
        vec![added[0].id]
    );
    assert_eq!(
        lexical_ids(&c.b, "alice", "咖啡机").await,
        vec![added[1].id]
    );
    // Isolation holds on the follower too.
    assert_eq!(
        lexical_ids(&c.b, "bob", "espresso").await,
        vec![added[2].id]
    );

    // The same hybrid ranking, score breakdown included, on both nodes.
    for query in ["espresso machine", "咖啡机", "kitchen"] {
        let mut req = SearchRequest::new(Scope::user("alice"), query);
        req.record_access = false;
        let on = |e: &Engine| {
            let req = req.clone();
            let e = e.clone();
            async move {
                let hits = e.search(req).await.unwrap().hits;
                hits.into_iter()
                    .map(|h| (h.memory.id, h.score, h.breakdown))
                    .collect::<Vec<_>>()
            }
        };
        let (on_a, on_b) = (on(&c.a).await, on(&c.b).await);
        assert!(!on_a.is_empty(), "{query}");
        assert_eq!(on_a, on_b, "{query}");
    }

    // A soft delete on A reaches B; a second step has nothing to do.
    c.a.delete(&actor, added[0].id).await.unwrap();
    let stats = b.step().await.unwrap();
    assert_eq!((stats.changes, stats.upserted, stats.removed), (1, 0, 1));
    assert!(lexical_ids(&c.b, "alice", "espresso").await.is_empty());
    let stats = b.step().await.unwrap();
    assert_eq!(stats.changes, 0);
    assert_eq!(b.position(), stats.position);
}

async fn an_erasure_reaches_every_node_and_verification_waits_for_them(b: Backend) {
    let c = cluster(b).await;
    let actor = Actor::local("test");
    let head = c.store.change_feed_head().await.unwrap();
    let mut a = LexicalFollower::register(c.a.clone(), "node-a".into(), head)
        .await
        .unwrap();
    let mut b = LexicalFollower::register(c.b.clone(), "node-b".into(), head)
        .await
        .unwrap();
    c.a.add(
        &actor,
        vec![
            long_term("alice", "alice keeps her passport in the blue drawer"),
            long_term("alice", "alice is allergic to peanuts"),
            long_term("bob", "bob keeps his passport at the office"),
        ],
        true,
    )
    .await
    .unwrap();
    a.step().await.unwrap();
    b.step().await.unwrap();
    assert_eq!(count_owner(&c.b, "alice"), 2);

    c.a.forget_user(&actor, "alice").await.unwrap();
    // A erased its own lexical index at once; B still holds the text.
    assert_eq!(count_owner(&c.a, "alice"), 0);
    assert_eq!(count_owner(&c.b, "alice"), 2);
    let v = c.a.verify_erasure(&actor, "alice").await.unwrap();
    assert_eq!(v.memories, 0);
    assert_eq!(v.live_nodes, 2);
    assert_eq!(
        v.nodes_behind,
        vec!["node-a".to_string(), "node-b".to_string()]
    );
    assert!(!v.erased, "not erased while live nodes lag: {v:?}");

    a.step().await.unwrap();
    let v = c.a.verify_erasure(&actor, "alice").await.unwrap();
    assert_eq!(v.nodes_behind, vec!["node-b".to_string()]);
    assert!(!v.erased);

    let stats = b.step().await.unwrap();
    assert_eq!(stats.erasures, 1);
    assert_eq!(count_owner(&c.b, "alice"), 0);
    assert!(lexical_ids(&c.b, "alice", "passport").await.is_empty());
    // Bob is untouched on both nodes.
    assert_eq!(count_owner(&c.b, "bob"), 1);
    let v = c.b.verify_erasure(&actor, "alice").await.unwrap();
    assert_eq!((v.live_nodes, v.nodes_behind.len()), (2, 0));
    assert!(v.erased, "{v:?}");

    // A user erased and then writing again: the new memory survives the
    // erasure on the follower (changes apply in feed order).
    c.a.forget_user(&actor, "bob").await.unwrap();
    let fresh =
        c.a.add(
            &actor,
            vec![long_term("bob", "bob started a new notebook")],
            true,
        )
        .await
        .unwrap();
    let stats = b.step().await.unwrap();
    assert_eq!(stats.erasures, 1);
    assert_eq!(
        lexical_ids(&c.b, "bob", "notebook").await,
        vec![fresh[0].id]
    );
    assert_eq!(count_owner(&c.b, "bob"), 1);
}

async fn a_node_that_stopped_heartbeating_is_not_waited_for(b: Backend) {
    let c = cluster(b).await;
    let actor = Actor::local("test");
    let head = c.store.change_feed_head().await.unwrap();
    let mut b = LexicalFollower::register(c.b.clone(), "node-b".into(), head)
        .await
        .unwrap();
    // Node "gone" registers and never steps again.
    LexicalFollower::register(c.a.clone(), "gone".into(), head)
        .await
        .unwrap();
    c.a.add(&actor, vec![long_term("carol", "carol likes tea")], true)
        .await
        .unwrap();
    c.a.forget_user(&actor, "carol").await.unwrap();
    b.step().await.unwrap();
    let v = c.a.verify_erasure(&actor, "carol").await.unwrap();
    assert_eq!(v.nodes_behind, vec!["gone".to_string()]);
    c.clock
        .advance(chrono::Duration::from_std(NODE_LIVENESS * 2).unwrap());
    b.step().await.unwrap();
    let v = c.a.verify_erasure(&actor, "carol").await.unwrap();
    assert_eq!((v.live_nodes, v.nodes_behind.len()), (1, 0), "{v:?}");
    assert!(v.erased);
    // A node that leaves cleanly is gone from the registry at once.
    c.store.remove_node("node-b").await.unwrap();
    let v = c.a.verify_erasure(&actor, "carol").await.unwrap();
    assert_eq!(v.live_nodes, 0);
}

async fn user_rows_export_and_import_one_user_all_or_nothing(b: Backend) {
    use mnemo::store::tables::{Table, Value, USER_TABLES};
    let s = b.store.as_ref();
    let mut ms = Vec::new();
    for i in 0..7 {
        ms.push(memory(Some("u"), Tier::LongTerm, &format!("mine {i}")));
    }
    insert(s, &ms).await;
    insert(s, &[memory(Some("other"), Tier::LongTerm, "not mine")]).await;
    let th = thread("u");
    s.insert_thread(&th).await.unwrap();
    let mut seqs = Vec::new();
    for i in 0..3 {
        let m = message(&th, MessageRole::User, &format!("m{i}"));
        seqs.push(s.append_message(&m, None).await.unwrap().seq);
    }
    // A summary up to the second message.
    let at = t0() + Duration::minutes(1);
    let claimed = s.claim_extraction(th.id, t0(), at).await.unwrap();
    s.finish_extraction(&claimed.iter().map(|m| m.seq).collect::<Vec<_>>(), true)
        .await
        .unwrap();
    let summary = Summary {
        text: "so far".into(),
        ..Default::default()
    };
    assert!(s
        .compact_thread(th.id, 0, seqs[1], &summary, at)
        .await
        .unwrap());
    // Keyset pages of 3 give every row of the user once, and none of others.
    let mut exported: Vec<(&Table, Vec<Vec<Value>>)> = Vec::new();
    for name in USER_TABLES {
        let t = Table::by_name(name).unwrap();
        let mut rows = Vec::new();
        let mut after: Option<Vec<Value>> = None;
        loop {
            let page = s
                .export_user_rows(t, "default", "u", after.as_deref(), 3)
                .await
                .unwrap();
            let Some(last) = page.last() else { break };
            after = Some(t.key_of(last));
            rows.extend(page);
        }
        exported.push((t, rows));
    }
    let count = |name: &str| {
        exported
            .iter()
            .find(|(t, _)| t.name == name)
            .unwrap()
            .1
            .len()
    };
    assert_eq!(count("memories"), 7);
    assert_eq!(count("audit_events"), 7);
    assert_eq!(count("threads"), 1);
    assert_eq!(count("messages"), 3);
    // While the rows exist, an import is a conflict and writes nothing more.
    let err = s
        .import_user_rows("default", "u", &exported)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert_eq!(s.user_footprint("default", "u").await.unwrap().memories, 7);
    // A row of another user is refused.
    assert!(s
        .import_user_rows("default", "other", &exported)
        .await
        .is_err());
    // After an erasure the rows come back, same ids and fields.
    s.erase_user("default", "u").await.unwrap();
    // Another user's messages take the next sequence numbers meanwhile.
    let elsewhere = thread("other");
    s.insert_thread(&elsewhere).await.unwrap();
    for i in 0..5 {
        let m = message(&elsewhere, MessageRole::User, &format!("o{i}"));
        s.append_message(&m, None).await.unwrap();
    }
    let written = s.import_user_rows("default", "u", &exported).await.unwrap();
    assert_eq!(written, 7 + 7 + 1 + 3);
    let back = s
        .get_many(&ms.iter().map(|m| m.id).collect::<Vec<_>>())
        .await
        .unwrap();
    for m in &ms {
        assert_eq!(back.get(&m.id), Some(m));
    }
    assert_eq!(s.history(ms[0].id).await.unwrap().len(), 1);
    let back = s.thread_messages(th.id, false).await.unwrap();
    assert_eq!(
        back.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
        ["m0", "m1", "m2"]
    );
    assert!(back[0].seq > seqs[2], "renumbered after the other user's");
    let restored = s.get_thread("default", th.id).await.unwrap().unwrap();
    assert_eq!(restored.summary, summary);
    assert_eq!(
        restored.summary_upto_seq, back[1].seq,
        "the summary bound follows"
    );
    assert_eq!(s.thread_messages(th.id, true).await.unwrap().len(), 1);
    // No import while the user is being erased.
    s.erase_user("default", "u").await.unwrap();
    s.begin_erasure("default", "u", "admin", t0())
        .await
        .unwrap();
    let err = s
        .import_user_rows("default", "u", &exported)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert_eq!(s.user_footprint("default", "u").await.unwrap().memories, 0);
}

/// Erasure deletes in batches of 500 rows, each its own transaction: every
/// row of a user with several batches is gone, a second erasure deletes
/// nothing, and another user's write commits while the erasure runs
/// (one transaction for everything would hold SQLite's write lock until
/// the end).
async fn erase_user_works_in_batches_and_lets_other_users_write(b: Backend) {
    let s = b.store.clone();
    const N: usize = 12_000;
    let dora: Vec<Memory> = (0..N)
        .map(|i| memory(Some("dora"), Tier::LongTerm, &format!("dora note {i}")))
        .collect();
    for chunk in dora.chunks(2000) {
        insert(s.as_ref(), chunk).await;
    }
    let cache: Vec<(String, Vec<f32>)> = dora
        .iter()
        .map(|m| (text_hash(&m.text), vec![0.5]))
        .collect();
    s.cache_embeddings(&owner(Some("dora")), "m", &cache, None)
        .await
        .unwrap();
    s.begin_erasure("default", "dora", "admin", t0())
        .await
        .unwrap();
    let erasing = {
        let s = s.clone();
        tokio::spawn(async move { s.erase_user("default", "dora").await.unwrap() })
    };
    // Another user's writes while the erasure runs.
    let mut landed_during = 0;
    let mut i = 0;
    while !erasing.is_finished() {
        let m = memory(Some("bob"), Tier::LongTerm, &format!("bob note {i}"));
        insert(s.as_ref(), &[m]).await;
        if !erasing.is_finished() {
            landed_during += 1;
        }
        i += 1;
    }
    let rows = erasing.await.unwrap();
    assert_eq!(
        (rows.memories, rows.audit_events, rows.cached_embeddings),
        (N as u64, N as u64, N as u64)
    );
    assert!(
        landed_during >= 2,
        "another user's writes should commit between erasure batches ({landed_during} did)"
    );
    let footprint = s.user_footprint("default", "dora").await.unwrap();
    assert_eq!((footprint.memories, footprint.audit_events), (0, 0));
    assert!(s
        .cached_embeddings(&owner(Some("dora")), "m", &[cache[0].0.clone()])
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        s.count_user_memories("default", "bob").await.unwrap(),
        i as u64
    );
    // Erasing again finds nothing and deletes nothing.
    assert_eq!(
        s.erase_user("default", "dora").await.unwrap(),
        Default::default()
    );
}

/// The tombstone keeps the hashed user id (verification's `last_erasure_at`)
/// only while it is needed: scrubbed once older than the cut-off and once the
/// erasure's change-feed entry is pruned (every live node applied it). The
/// receipt row itself stays, content-free.
async fn tombstones_lose_the_user_hash_once_retained_and_applied(b: Backend) {
    let s = b.store.as_ref();
    insert(s, &[memory(Some("alice"), Tier::LongTerm, "alice's note")]).await;
    erase(s, "alice").await;
    erase(s, "bob").await;
    assert_eq!(
        s.last_erasure("default", "alice").await.unwrap(),
        Some(t0())
    );
    // Too recent: nothing scrubbed.
    assert_eq!(s.scrub_erasure_tombstones(t0()).await.unwrap(), 0);
    // Old enough, but the feed still holds the erasures (a node may be
    // applying them): kept.
    let later = t0() + Duration::days(2);
    assert_eq!(s.scrub_erasure_tombstones(later).await.unwrap(), 0);
    assert_eq!(
        s.last_erasure("default", "alice").await.unwrap(),
        Some(t0())
    );
    // The feed pruned (no live node): both hashes go, once.
    let head = s.change_feed_head().await.unwrap();
    assert!(s.prune_index_changes(head, later).await.unwrap() > 0);
    assert_eq!(s.scrub_erasure_tombstones(later).await.unwrap(), 2);
    assert_eq!(s.scrub_erasure_tombstones(later).await.unwrap(), 0);
    assert_eq!(s.last_erasure("default", "alice").await.unwrap(), None);
    assert_eq!(s.last_erasure("default", "bob").await.unwrap(), None);
    // No row of any table holds the user's hash any more; the receipts stay.
    let hash = mnemo::store::user_hash("default", "alice");
    let mut receipts = 0;
    for table in mnemo::store::tables::TABLES {
        let rows = s.export_rows(table, None, 500).await.unwrap();
        if table.name == "erasure_receipts" {
            receipts = rows.len();
        }
        for row in &rows {
            let text = format!("{row:?}");
            assert!(!text.contains(&hash[..32]), "{}: {text}", table.name);
        }
    }
    assert_eq!(receipts, 2);
}
