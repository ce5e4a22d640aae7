//! The engine on the PostgreSQL store, end to end, and several nodes sharing
//! one database: each node has its own connections and (embedded) indexes,
//! the store is common. Jobs run once across the nodes (database leases);
//! an erasure on one node is seen by every node's store at once, and a
//! node's own indexes drop the user at its next reconcile.

use std::sync::Arc;

use mnemo::domain::Actor;
use mnemo::domain::Scope;
use mnemo::jobs::{self, JobName};
use mnemo::service::SearchRequest;
use mnemo::store::ListQuery;
use mnemo::Error;

use crate::common::*;

async fn texts(engine: &mnemo::Engine, user: &str, q: &str) -> Vec<String> {
    engine
        .search(SearchRequest::new(Scope::user(user), q))
        .await
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.memory.text)
        .collect()
}

#[tokio::test]
async fn engine_on_postgres_adds_searches_forgets_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _schema) = engine_on_postgres(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    engine
        .add(
            &admin,
            vec![
                long_term("alice", "alice drinks oolong tea"),
                long_term("alice", "alice lives in Porto"),
                long_term("bob", "bob drinks black tea"),
            ],
            true,
        )
        .await
        .unwrap();
    engine.commit().await.unwrap();
    // The best first; every candidate of the user's, and only hers.
    assert_eq!(
        texts(&engine, "alice", "tea").await,
        ["alice drinks oolong tea", "alice lives in Porto"]
    );
    assert_eq!(texts(&engine, "bob", "tea").await, ["bob drinks black tea"]);

    // Alice's key is deleted with her (no row keeps her id); bob's stays.
    let store = engine.store().clone();
    let role = mnemo::store::Role::User;
    let (alice_key, alice_secret) =
        mnemo::service::keys::create(store.as_ref(), "default", Some("alice"), role, t0())
            .await
            .unwrap();
    let (_, bob_secret) =
        mnemo::service::keys::create(store.as_ref(), "default", Some("bob"), role, t0())
            .await
            .unwrap();
    let receipt = engine.forget_user(&admin, "alice").await.unwrap();
    assert_eq!(receipt.erased.memories, 2);
    assert_eq!(receipt.erased.api_keys, 1);
    assert!(
        mnemo::service::keys::authenticate(store.as_ref(), &alice_secret)
            .await
            .is_err()
    );
    assert_eq!(
        store
            .api_key_by_hash(&alice_key.secret_sha256)
            .await
            .unwrap(),
        None
    );
    assert!(
        mnemo::service::keys::authenticate(store.as_ref(), &bob_secret)
            .await
            .is_ok()
    );
    assert_eq!(
        (receipt.erased.lexical_docs, receipt.erased.vectors),
        (2, 2)
    );
    let v = engine.verify_erasure(&admin, "alice").await.unwrap();
    assert!(v.erased, "{v:?}");
    assert!(v.last_erasure_at.is_some());
    assert_eq!(v.api_keys, 0);
    assert!(texts(&engine, "alice", "tea Porto").await.is_empty());
    let listed = engine
        .list(
            &admin,
            ListQuery {
                user_id: Some("alice".into()),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(listed.is_empty());
    assert_eq!(texts(&engine, "bob", "tea").await, ["bob drinks black tea"]);
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn two_nodes_share_memories_and_erasures() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let clock = Arc::new(manual());
    let (a, schema) = engine_on_postgres(dir_a.path(), clock.clone()).await;
    let b = engine_on_schema(dir_b.path(), clock.clone(), &schema).await;
    let admin = Actor::local("admin");
    let added = a
        .add(
            &admin,
            vec![long_term("carol", "carol plays the cello")],
            true,
        )
        .await
        .unwrap();
    // The store is shared: node B reads it at once.
    assert_eq!(
        b.get(&admin, added[0].id).await.unwrap().text,
        "carol plays the cello"
    );
    // B's own indexes learn it at reconcile (run at start and on repair).
    b.reconcile().await.unwrap();
    b.commit().await.unwrap();
    assert_eq!(texts(&b, "carol", "cello").await, ["carol plays the cello"]);

    a.forget_user(&admin, "carol").await.unwrap();
    assert!(a.verify_erasure(&admin, "carol").await.unwrap().erased);
    // B: the store is clean at once, so B's search returns nothing (hits are
    // read from the store); B's index entries go at its next reconcile.
    assert!(texts(&b, "carol", "cello").await.is_empty());
    let v = b.verify_erasure(&admin, "carol").await.unwrap();
    assert_eq!((v.memories, v.audit_events), (0, 0));
    b.reconcile().await.unwrap();
    let v = b.verify_erasure(&admin, "carol").await.unwrap();
    assert!(v.erased, "{v:?}");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_one_node_at_a_time() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let clock = Arc::new(manual());
    let (a, schema) = engine_on_postgres(dir_a.path(), clock.clone()).await;
    let b = engine_on_schema(dir_b.path(), clock.clone(), &schema).await;
    // Node A holds the lease (as if mid-run): node B is refused.
    let now = mnemo::clock::Clock::now(clock.as_ref());
    assert!(a
        .store()
        .acquire_lease(
            "ttl-sweep",
            "node-a",
            now,
            now + chrono::Duration::minutes(10)
        )
        .await
        .unwrap());
    let err = jobs::run(&b, JobName::TtlSweep, false).await.unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains("already running")),
        "{err}"
    );
    a.store()
        .release_lease("ttl-sweep", "node-a", None)
        .await
        .unwrap();
    // Both nodes at once: at least one runs, and a loser says why.
    for _ in 0..5 {
        let (ra, rb) = tokio::join!(
            jobs::run(&a, JobName::TtlSweep, false),
            jobs::run(&b, JobName::TtlSweep, false)
        );
        assert!(ra.is_ok() || rb.is_ok());
        for r in [ra, rb] {
            if let Err(e) = r {
                assert!(
                    matches!(&e, Error::Conflict(m) if m.contains("already running")),
                    "{e}"
                );
            }
        }
    }
    let state = b.store().job_state("ttl-sweep").await.unwrap().unwrap();
    assert_eq!(state.holder, None);
    assert!(state.last_completed_at.is_some());
}

/// The one input PostgreSQL cannot store and SQLite can: U+0000 in a JSON
/// string. It is refused as invalid input (400), not a store failure (500).
#[tokio::test]
async fn a_nul_in_metadata_is_invalid_input_on_postgres() {
    let schema = crate::backends::PgSchema::create().await;
    let store = schema.connect().await;
    let mut m =
        mnemo::domain::Memory::sample(mnemo::domain::Tier::LongTerm, Some("u"), "text", t0());
    m.metadata.insert("k".into(), "a\u{0}b".into());
    let err = mnemo::store::Memories::insert(&store, &[m.clone()], &[])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Invalid {
                field: "metadata",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        mnemo::store::Memories::get(&store, m.id).await.unwrap(),
        None
    );
}
