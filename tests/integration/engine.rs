//! The engine's write and read paths, and its validation, end to end.

use std::sync::Arc;

use mnemo::domain::Actor;
use mnemo::domain::{MemoryPatch, NewMemory, Scope, Status, Tier};
use mnemo::service::SearchRequest;
use mnemo::Error;

use crate::common::*;

fn cli() -> Actor {
    Actor::local("test")
}

#[tokio::test]
async fn add_search_update_delete_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let added = engine
        .add(
            &cli(),
            vec![long_term(
                "alice",
                "Alice keeps a sourdough starter named Bubbles",
            )],
            true,
        )
        .await
        .unwrap();
    let id = added[0].id;
    assert_eq!(added[0].status, Status::Active);

    let hits = engine
        .search(SearchRequest::new(
            Scope::user("alice"),
            "sourdough starter",
        ))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits[0].memory.id, id);
    let b = &hits[0].breakdown;
    assert_eq!(b.bm25_rank, Some(1));
    assert!(b.final_score > 0.0 && b.fused_score > 0.0);

    let patch = MemoryPatch {
        text: Some("Alice keeps a rye starter named Bubbles".into()),
        ..Default::default()
    };
    let updated = engine.update(&cli(), id, patch, true).await.unwrap();
    assert_eq!(updated.version, 2);
    let hits = engine
        .search(SearchRequest::new(Scope::user("alice"), "sourdough"))
        .await
        .unwrap()
        .hits;
    // Every memory is a candidate (no similarity floor), but the old text
    // is no longer in the lexical index.
    assert!(
        hits.iter()
            .all(|h| h.memory.id != id || h.breakdown.bm25_rank.is_none()),
        "old text must not match"
    );
    let hits = engine
        .search(SearchRequest::new(Scope::user("alice"), "rye"))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits[0].memory.id, id);

    engine.delete(&cli(), id).await.unwrap();
    let hits = engine
        .search(SearchRequest::new(
            Scope::user("alice"),
            "rye starter Bubbles",
        ))
        .await
        .unwrap()
        .hits;
    assert!(hits.is_empty(), "a deleted memory must not come back");
    // Soft: still readable with its history.
    let m = engine.get(&cli(), id).await.unwrap();
    assert_eq!(m.status, Status::Deleted);
    let actions: Vec<_> = engine
        .history(&cli(), id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.action.as_str())
        .collect();
    assert_eq!(actions, ["create", "update", "delete"]);
}

#[tokio::test]
async fn bad_input_is_rejected_whole_and_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let big = "x".repeat(engine.policy().limits.max_text_bytes + 1);
    let cases: Vec<(NewMemory, &str)> = vec![
        (long_term("alice", "   "), "text"),
        (long_term("alice", &big), "text"),
        (
            NewMemory {
                user_id: None,
                ..long_term("alice", "no user")
            },
            "user_id",
        ),
        (
            NewMemory {
                importance: Some(1.5),
                ..long_term("alice", "too important")
            },
            "importance",
        ),
        (
            NewMemory {
                confidence: Some(-0.1),
                ..long_term("alice", "unsure")
            },
            "confidence",
        ),
        (
            NewMemory {
                tier: Some(Tier::Working),
                ..long_term("alice", "a turn without a thread")
            },
            "thread_id",
        ),
        (
            NewMemory {
                tier: Some(Tier::Reference),
                ..long_term("alice", "reference with a user")
            },
            "user_id",
        ),
    ];
    for (bad, field) in cases {
        // A good memory first in the same batch: nothing may be half-written.
        let batch = vec![long_term("alice", "a perfectly good memory"), bad];
        let err = engine.add(&cli(), batch, true).await.unwrap_err();
        assert_eq!(err.field(), Some(field), "{err}");
        assert!(err.is_user_error());
    }
    let stats = engine.stats().await.unwrap();
    assert_eq!(stats.store.total(), 0, "no partial writes");
    assert_eq!(stats.lexical_docs + stats.vector_points, 0);
}

#[tokio::test]
async fn low_confidence_waits_as_pending() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let m = NewMemory {
        confidence: Some(0.3),
        ..long_term("alice", "Alice might move to Lisbon")
    };
    let added = engine.add(&cli(), vec![m], true).await.unwrap();
    assert_eq!(added[0].status, Status::Pending);
    let mut scope = Scope::user("alice");
    let hits = engine
        .search(SearchRequest::new(scope.clone(), "Lisbon"))
        .await
        .unwrap()
        .hits;
    assert!(hits.is_empty());
    scope.include_pending = true;
    let hits = engine
        .search(SearchRequest::new(scope, "Lisbon"))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 1);
}

#[tokio::test]
async fn a_user_key_cannot_reach_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let bob_mem = engine
        .add(
            &cli(),
            vec![long_term("bob", "Bob's locker code is 4417")],
            true,
        )
        .await
        .unwrap()[0]
        .id;
    let alice = Actor {
        user_id: Some("alice".into()),
        admin: false,
        ..Actor::local("alice-key")
    };
    assert!(matches!(
        engine.get(&alice, bob_mem).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        engine.delete(&alice, bob_mem).await,
        Err(Error::NotFound { .. })
    ));
    let err = engine
        .add(&alice, vec![long_term("bob", "written as bob")], true)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)));
    let reference = NewMemory {
        tier: Some(Tier::Reference),
        user_id: None,
        ..long_term("", "Opening hours are 9 to 5")
    };
    assert!(matches!(
        engine.add(&alice, vec![reference], true).await,
        Err(Error::Forbidden(_))
    ));
}

#[tokio::test]
async fn chinese_and_mixed_text_are_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let added = engine
        .add(
            &cli(),
            vec![
                long_term("li", "我家的咖啡机又坏了"),
                long_term("li", "下周三我要去上海出差"),
                long_term("li", "My favourite 茶 is Longjing green tea"),
            ],
            true,
        )
        .await
        .unwrap();
    let search = |q: &'static str| {
        let engine = engine.clone();
        async move {
            let mut req = SearchRequest::new(Scope::user("li"), q);
            req.legs = mnemo::service::Legs::Lexical;
            engine.search(req).await.unwrap().hits
        }
    };
    assert_eq!(search("咖啡机").await[0].memory.id, added[0].id);
    assert_eq!(search("上海 business trip").await[0].memory.id, added[1].id);
    assert_eq!(search("green 茶").await[0].memory.id, added[2].id);
    assert_eq!(search("longjing").await[0].memory.id, added[2].id);
}
