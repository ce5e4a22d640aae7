//! Crash safety: the store is the source of truth. A store commit whose index
//! update never happened (the process died in between) is repaired at the next
//! start; an index entry whose memory the store no longer indexes is removed.

use std::sync::Arc;

use chrono::Utc;
use mnemo::domain::Actor;
use mnemo::domain::{Memory, Scope, Status, Tier};
use mnemo::service::SearchRequest;
use mnemo::store::sqlite::SqliteStore;
use mnemo::store::{AuditAction, AuditEvent, Memories, MemoryStore};
use mnemo::Engine;
use uuid::Uuid;

use crate::common::*;

fn raw_memory(user: &str, text: &str) -> Memory {
    Memory::sample(Tier::LongTerm, Some(user), text, Utc::now())
}

#[tokio::test]
async fn a_store_commit_without_its_index_update_is_repaired_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(manual());
    // 1. A normal engine writes one memory, then goes away.
    let engine = engine_in(dir.path(), clock.clone()).await;
    let kept = engine
        .add(
            &Actor::local("t"),
            vec![long_term("u", "kept memory about kayaks")],
            true,
        )
        .await
        .unwrap()[0]
        .id;
    let deleted = engine
        .add(
            &Actor::local("t"),
            vec![long_term("u", "memory about kayaks to be deleted")],
            true,
        )
        .await
        .unwrap()[0]
        .id;
    engine.shutdown().await.unwrap();
    drop(engine);

    // 2. "Crash": the store commits changes, the indexes never hear of them.
    let store = SqliteStore::open(&dir.path().join("mnemo.db"))
        .await
        .unwrap();
    let orphan = raw_memory("u", "orphan memory about kayaks");
    let ev = AuditEvent::for_memory(&orphan, AuditAction::Create, "t", orphan.created_at);
    store
        .insert(std::slice::from_ref(&orphan), &[ev])
        .await
        .unwrap();
    let mut gone = store.get(deleted).await.unwrap().unwrap();
    gone.status = Status::Deleted;
    store
        .update(&[(gone.clone(), gone.version)], &[])
        .await
        .unwrap();
    store.close().await.unwrap();

    // 3. The next start reconciles.
    let opened = Engine::builder(dir.path())
        .policy(crate::common::on_hashing_scale(
            mnemo::policy::Policy::default(),
        ))
        .embedder(Arc::new(mnemo::embed::hashing::HashingEmbedder::new(64)))
        .clock(clock)
        .build()
        .await
        .unwrap();
    let (engine, report) = (opened.engine, opened.reconciled);
    assert_eq!(report.store_indexed, 2);
    assert_eq!((report.lexical_added, report.vector_added), (1, 1));
    assert_eq!((report.lexical_removed, report.vector_removed), (1, 1));
    let ids: Vec<Uuid> = engine
        .search(SearchRequest::new(Scope::user("u"), "kayaks"))
        .await
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.memory.id)
        .collect();
    assert!(ids.contains(&kept));
    assert!(ids.contains(&orphan.id), "the orphan is found again");
    assert!(
        !ids.contains(&deleted),
        "the deleted memory is not resurrected"
    );
    let stats = engine.stats().await.unwrap();
    assert_eq!((stats.lexical_docs, stats.vector_points), (2, 2));
}

#[tokio::test]
async fn reindex_rebuilds_both_indexes_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let items = (0..50)
        .map(|i| long_term("u", &format!("note number {i} about rivers")))
        .collect();
    engine.add(&Actor::local("t"), items, true).await.unwrap();
    let n = engine.reindex(|_, _| {}).await.unwrap();
    assert_eq!(n, 50);
    let stats = engine.stats().await.unwrap();
    assert_eq!((stats.lexical_docs, stats.vector_points), (50, 50));
}
