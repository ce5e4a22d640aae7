//! "Forget all my data", verified against every store: the APIs return
//! nothing, a raw byte scan of the data directory (SQLite files and both index
//! directories) finds none of the user's unique markers, other users are
//! untouched, and an erasure interrupted by a crash completes at restart.

use std::path::Path;
use std::sync::Arc;

use mnemo::agent::threads::{AppendMessage, CreateThread, ToolResult};
use mnemo::agent::Agent;
use mnemo::domain::thread::MessageRole;
use mnemo::domain::{MemoryPatch, NewMemory, Scope, Status, Tier};
use mnemo::service::{Actor, SearchRequest};
use mnemo::store::ListQuery;
use mnemo::Error;

use crate::common::*;

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    found
}

async fn populate(engine: &mnemo::Engine, actor: &Actor, user: &str, marker: &str) -> usize {
    let mk = |tier: Tier, text: String| NewMemory {
        tier: Some(tier),
        user_id: Some(user.to_string()),
        thread_id: (tier == Tier::Working).then(|| format!("thread-{user}")),
        text,
        ..Default::default()
    };
    let mut items = vec![
        mk(Tier::Working, format!("working turn {marker}w1")),
        mk(Tier::LongTerm, format!("prefers tea {marker}lt1")),
        mk(Tier::LongTerm, format!("lives in Porto {marker}lt2")),
        mk(Tier::LongTerm, format!("to be deleted {marker}lt3")),
        mk(Tier::LongTerm, format!("to be edited {marker}lt4")),
    ];
    items.push(NewMemory {
        confidence: Some(0.2),
        ..mk(Tier::LongTerm, format!("maybe moving {marker}pend"))
    });
    let added = engine.add(actor, items, true).await.unwrap();
    engine.delete(actor, added[3].id).await.unwrap();
    let patch = MemoryPatch {
        text: Some(format!("edited text {marker}lt4b")),
        ..Default::default()
    };
    engine
        .update(actor, added[4].id, patch, true)
        .await
        .unwrap();
    // A thread with a goal, a message and a tool result with its payload.
    let agent = Agent::new(engine.clone(), None);
    let thread = agent
        .create_thread(
            actor,
            CreateThread {
                user_id: Some(user.to_string()),
                goal: Some(format!("goal {marker}goal")),
            },
        )
        .await
        .unwrap();
    let message = AppendMessage {
        role: MessageRole::User,
        content: format!("hello {marker}msg"),
        tool: None,
    };
    agent.append(actor, thread.id, message).await.unwrap();
    let tool = AppendMessage {
        role: MessageRole::Tool,
        content: String::new(),
        tool: Some(ToolResult {
            name: "search".into(),
            status: "ok".into(),
            summary: Some(format!("found {marker}tool")),
            payload: Some(serde_json::json!({"raw": format!("{marker}payload")})),
            ..Default::default()
        }),
    };
    agent.append(actor, thread.id, tool).await.unwrap();
    agent.wait_idle().await;
    added.len()
}

#[tokio::test]
async fn forget_erases_every_store_and_spares_others() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    populate(&engine, &admin, "alice", "zqxalice").await;
    populate(&engine, &admin, "bob", "zqxbob").await;
    let reference = NewMemory {
        tier: Some(Tier::Reference),
        text: "Store opens at nine zqxshared".into(),
        ..Default::default()
    };
    engine.add(&admin, vec![reference], true).await.unwrap();
    engine.commit().await.unwrap();
    assert!(
        !files_containing(dir.path(), "zqxalice").is_empty(),
        "the scan must be able to see the marker before erasure"
    );

    // Alice's own key erases Alice.
    let alice = Actor {
        user_id: Some("alice".into()),
        admin: false,
        ..Actor::local("alice-key")
    };
    let receipt = engine.forget_user(&alice, "alice").await.unwrap();
    assert_eq!(receipt.user_id, "alice");
    assert_eq!(receipt.erased.memories, 6);
    assert_eq!(receipt.erased.candidates, 1);
    // create ×6 + delete + update
    assert_eq!(receipt.erased.audit_events, 8);
    // active or pending ones were indexed: 6 - 1 deleted
    assert_eq!(receipt.erased.lexical_docs, 5);
    assert_eq!(receipt.erased.vectors, 5);
    assert_eq!(receipt.erased.threads, 1);
    // Two messages and the tool result's payload.
    assert_eq!(receipt.erased.messages, 3);

    // (1) every API returns nothing for Alice.
    let verification = engine.verify_erasure(&admin, "alice").await.unwrap();
    assert!(verification.erased, "{verification:?}");
    assert!(verification.last_erasure_at.is_some());
    let mut scope = Scope::user("alice").with_thread("thread-alice");
    scope.include_pending = true;
    scope.tiers = vec![Tier::Working, Tier::LongTerm];
    let hits = engine
        .search(SearchRequest::new(scope, "tea Porto working edited moving"))
        .await
        .unwrap()
        .hits;
    assert!(hits.is_empty());
    let listed = engine
        .list(
            &admin,
            ListQuery {
                user_id: Some("alice".into()),
                limit: 100,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(listed.is_empty());

    // (2) no byte of Alice's text is left in any file.
    assert_eq!(
        files_containing(dir.path(), "zqxalice"),
        Vec::<String>::new()
    );

    // (3) Bob and the shared reference memory are untouched.
    let bob = engine.verify_erasure(&admin, "bob").await.unwrap();
    assert_eq!((bob.memories, bob.lexical_docs, bob.vectors), (6, 5, 5));
    assert_eq!((bob.threads, bob.messages), (1, 3));
    let hits = engine
        .search(SearchRequest::new(Scope::user("bob"), "tea"))
        .await
        .unwrap()
        .hits;
    assert!(hits.iter().any(|h| h.memory.text.contains("zqxboblt1")));
    assert!(!files_containing(dir.path(), "zqxbob").is_empty());
    for part in ["goal", "msg", "tool", "payload"] {
        assert!(
            !files_containing(dir.path(), &format!("zqxbob{part}")).is_empty(),
            "bob's thread {part} is still stored"
        );
    }
    assert!(!files_containing(dir.path(), "zqxshared").is_empty());
    let bob_deleted = engine
        .list(
            &admin,
            ListQuery {
                user_id: Some("bob".into()),
                status: Some(Status::Deleted),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        bob_deleted.len(),
        1,
        "bob's soft-deleted memory is still restorable"
    );
}

#[tokio::test]
async fn a_user_key_cannot_erase_someone_else() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    populate(&engine, &Actor::local("admin"), "bob", "zqxbob").await;
    let alice = Actor {
        user_id: Some("alice".into()),
        admin: false,
        ..Actor::local("alice-key")
    };
    assert!(matches!(
        engine.forget_user(&alice, "bob").await,
        Err(Error::Forbidden(_))
    ));
    let bob = engine
        .verify_erasure(&Actor::local("admin"), "bob")
        .await
        .unwrap();
    assert_eq!(bob.memories, 6);
}

#[tokio::test]
async fn an_interrupted_erasure_completes_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(manual());
    let engine = engine_in(dir.path(), clock.clone()).await;
    populate(&engine, &Actor::local("admin"), "carol", "zqxcarol").await;
    // The crash: the intent is recorded, nothing else happens.
    engine
        .store()
        .begin_erasure("default", "carol", "admin", t0())
        .await
        .unwrap();
    engine.shutdown().await.unwrap();
    drop(engine);

    let engine = engine_in(dir.path(), clock).await;
    let v = engine
        .verify_erasure(&Actor::local("admin"), "carol")
        .await
        .unwrap();
    assert!(v.erased, "{v:?}");
    assert_eq!(
        files_containing(dir.path(), "zqxcarol"),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn nothing_new_lands_for_a_user_while_their_erasure_is_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    engine
        .store()
        .begin_erasure("default", "dave", "admin", t0())
        .await
        .unwrap();
    let write = engine
        .add(
            &admin,
            vec![long_term("dave", "zqxdave written mid-erasure")],
            false,
        )
        .await;
    assert!(matches!(write, Err(Error::Conflict(_))), "{write:?}");
    // Other users are not held up.
    engine
        .add(&admin, vec![long_term("erin", "erin is fine")], false)
        .await
        .unwrap();

    engine.resume_erasures().await.unwrap();
    assert!(engine.verify_erasure(&admin, "dave").await.unwrap().erased);
    // Once erased, the user may start again.
    engine
        .add(&admin, vec![long_term("dave", "dave starts over")], false)
        .await
        .unwrap();
}
