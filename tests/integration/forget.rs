//! "Forget all my data", verified against every store: the APIs return
//! nothing, a raw byte scan of the data directory (SQLite files and both index
//! directories) finds none of the user's unique markers, other users are
//! untouched, and an erasure interrupted by a crash completes at restart.

use std::path::Path;
use std::sync::Arc;

use mnemo::agent::threads::{AppendMessage, CreateThread, ToolResult};
use mnemo::agent::Agent;
use mnemo::domain::thread::MessageRole;
use mnemo::domain::Actor;
use mnemo::domain::{MemoryPatch, NewMemory, Owner, Scope, Status, Tier};
use mnemo::service::erasure::scan::{scan_dir, Needle, StoreFiles};
use mnemo::service::SearchRequest;
use mnemo::store::ListQuery;
use mnemo::Error;

use crate::common::*;

/// Alice's indexed texts as `populate` leaves them (the deleted one and the
/// pre-edit text are not indexed any more).
fn indexed_texts(marker: &str) -> Vec<String> {
    [
        "working turn {m}w1",
        "prefers tea {m}lt1",
        "lives in Porto {m}lt2",
        "edited text {m}lt4b",
        "maybe moving {m}pend",
    ]
    .iter()
    .map(|t| t.replace("{m}", marker))
    .collect()
}

/// Needles for the vectors of `texts` under the test embedder: the raw
/// little-endian f32 bytes and the unit-normalised ones (cosine storage).
fn vector_needles(texts: &[String]) -> Vec<Needle> {
    use mnemo::embed::Embedder;
    let embedder = mnemo::embed::hashing::HashingEmbedder::new(64);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for (i, v) in embedder
        .embed_passages(&refs)
        .unwrap()
        .into_iter()
        .enumerate()
    {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let unit: Vec<f32> = v.iter().map(|x| x / norm).collect();
        out.push(Needle::vector_prefix(format!("vector{i}:raw"), &v, v.len()));
        out.push(Needle::vector_prefix(
            format!("vector{i}:unit"),
            &unit,
            v.len(),
        ));
    }
    out
}

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
    // Alice's vectors, her thread id (raw, and hashed as vector payloads
    // carry it) and owner key: the scan sees each before the erasure.
    let key = mnemo::vector::PayloadKey::load(&dir.path().join("vectors/users/payload.key"))
        .unwrap()
        .expect("the vector index keeps its payload key");
    let owner = Owner::user("default", "alice");
    let mut needles = vector_needles(&indexed_texts("zqxalice"));
    needles.push(Needle::text("thread", "thread-alice"));
    needles.push(Needle::text(
        "thread-hash",
        &key.thread(&owner, "thread-alice"),
    ));
    needles.push(Needle::text("owner-key", owner.as_str()));
    let before = scan_dir(dir.path(), &needles).unwrap();
    for i in 0..indexed_texts("zqxalice").len() {
        assert!(
            before.hits.iter().any(|h| h.store == StoreFiles::Vectors
                && h.found
                    .iter()
                    .any(|f| f.starts_with(&format!("vector{i}:")))),
            "vector {i} must be visible in the vector files before erasure: {:?}",
            before.hits
        );
    }
    for label in ["thread", "thread-hash", "owner-key"] {
        assert!(
            !before.files_with(label).is_empty(),
            "{label} before erasure"
        );
    }
    // The raw thread id never reaches the index files.
    assert!(before
        .files_with("thread")
        .iter()
        .all(|h| h.store == StoreFiles::Store));

    // Alice's API keys (and bob's): hers are deleted with her, so none
    // authenticates and no row (nor file) keeps them.
    let store = engine.store().clone();
    let mut alice_keys = Vec::new();
    for role in [mnemo::store::Role::User, mnemo::store::Role::Agent] {
        let (k, secret) =
            mnemo::service::keys::create(store.as_ref(), "default", Some("alice"), role, t0())
                .await
                .unwrap();
        alice_keys.push((k, secret));
    }
    let (_, bob_secret) = mnemo::service::keys::create(
        store.as_ref(),
        "default",
        Some("bob"),
        mnemo::store::Role::User,
        t0(),
    )
    .await
    .unwrap();
    assert_eq!(
        engine
            .verify_erasure(&admin, "alice")
            .await
            .unwrap()
            .api_keys,
        2
    );
    engine.commit().await.unwrap();
    assert!(!files_containing(dir.path(), &alice_keys[0].0.secret_sha256).is_empty());

    // Alice's own key erases Alice.
    let (_, alice) = mnemo::service::keys::authenticate(store.as_ref(), &alice_keys[0].1)
        .await
        .unwrap();
    let receipt = engine.forget_user(&alice, "alice").await.unwrap();
    assert_eq!(receipt.erased.api_keys, 2);
    for (k, secret) in &alice_keys {
        assert!(matches!(
            mnemo::service::keys::authenticate(store.as_ref(), secret).await,
            Err(Error::Unauthenticated(_))
        ));
        assert_eq!(
            files_containing(dir.path(), &k.secret_sha256),
            Vec::<String>::new(),
            "a key row of the erased user is left in the files"
        );
    }
    assert!(store
        .list_api_keys()
        .await
        .unwrap()
        .iter()
        .all(|k| k.user_id.as_deref() != Some("alice")));
    assert!(
        mnemo::service::keys::authenticate(store.as_ref(), &bob_secret)
            .await
            .is_ok(),
        "bob's key still works"
    );
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
    assert_eq!(verification.api_keys, 0);
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

    // (2) no byte of Alice's text, vectors or thread ids is left in any
    // file; her owner key only in the store's tombstone (a hash).
    assert_eq!(
        files_containing(dir.path(), "zqxalice"),
        Vec::<String>::new()
    );
    let after = scan_dir(dir.path(), &needles).unwrap();
    // Figures for the record (`--nocapture`): files holding any needle.
    for (when, r) in [("before", &before), ("after", &after)] {
        let per: Vec<_> = r
            .stores
            .iter()
            .map(|s| (s.store, s.files_with_residue))
            .collect();
        println!("residue {when} erasure: {per:?}");
    }
    let residue: Vec<_> = after
        .hits
        .iter()
        .filter(|h| !(h.store == StoreFiles::Store && h.found == ["owner-key"]))
        .collect();
    assert!(residue.is_empty(), "{residue:?}");

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

/// Issue 52, items 7 and 9: a message, a tool payload or a key of the user
/// that arrives while the user's erasure runs is refused (409), so none
/// survives it, and verification then says erased with nothing left.
#[tokio::test]
async fn messages_payloads_and_keys_of_a_user_being_erased_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    let agent = Agent::new(engine.clone(), None);
    let thread = agent
        .create_thread(
            &admin,
            CreateThread {
                user_id: Some("dora".into()),
                goal: None,
            },
        )
        .await
        .unwrap();
    let hello = || AppendMessage {
        role: MessageRole::User,
        content: "zqxdora hello".into(),
        tool: None,
    };
    agent.append(&admin, thread.id, hello()).await.unwrap();
    // The erasure is under way (its intent recorded, the rows not yet gone).
    engine
        .store()
        .begin_erasure("default", "dora", "admin", t0())
        .await
        .unwrap();
    let message = agent.append(&admin, thread.id, hello()).await;
    assert!(matches!(message, Err(Error::Conflict(_))), "{message:?}");
    let tool = AppendMessage {
        role: MessageRole::Tool,
        content: String::new(),
        tool: Some(ToolResult {
            name: "search".into(),
            status: "ok".into(),
            summary: Some("zqxdora found".into()),
            payload: Some(serde_json::json!({"raw": "zqxdora payload"})),
            ..Default::default()
        }),
    };
    let payload = agent.append(&admin, thread.id, tool).await;
    assert!(matches!(payload, Err(Error::Conflict(_))), "{payload:?}");
    let key = mnemo::service::keys::create(
        engine.store().as_ref(),
        "default",
        Some("dora"),
        mnemo::store::Role::User,
        t0(),
    )
    .await;
    assert!(matches!(key, Err(Error::Conflict(_))), "{key:?}");
    // Other users' keys are not held up.
    mnemo::service::keys::create(
        engine.store().as_ref(),
        "default",
        Some("erin"),
        mnemo::store::Role::User,
        t0(),
    )
    .await
    .unwrap();

    engine.resume_erasures().await.unwrap();
    let v = engine.verify_erasure(&admin, "dora").await.unwrap();
    assert!(v.erased, "{v:?}");
    let keys = engine.store().list_api_keys().await.unwrap();
    assert!(
        !keys.iter().any(|k| k.user_id.as_deref() == Some("dora")),
        "a key of the erased user survived"
    );
    let payloads = engine
        .store()
        .get_payload(thread.id, uuid::Uuid::nil())
        .await
        .unwrap();
    assert!(payloads.is_none());
    assert!(engine
        .store()
        .thread_messages(thread.id, false)
        .await
        .unwrap()
        .is_empty());
}

// ----- forget-all as a durable job ------------------------------------------

/// A lexical index whose `delete_owner` waits until released: holds an
/// erasure in the middle, after its intent is recorded.
struct HeldLexical {
    inner: Arc<dyn mnemo::lexical::LexicalIndex>,
    hold: Arc<Hold>,
}

#[derive(Default)]
struct Hold {
    held: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
    entered: std::sync::atomic::AtomicUsize,
}

impl Hold {
    fn release(&self) {
        *self.held.lock().unwrap() = false;
        self.cv.notify_all();
    }

    fn entered(&self) -> usize {
        self.entered.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (up to 20 s) until `n` erasures are inside `delete_owner`.
    async fn until_entered(&self, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.entered() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "the erasure never reached the index"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

/// Releases the hold when the test ends, even by a panic (a held blocking
/// thread would keep the runtime from shutting down).
struct ReleaseOnDrop(Arc<Hold>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl mnemo::lexical::LexicalIndex for HeldLexical {
    fn upsert(&self, docs: Vec<mnemo::lexical::LexicalDoc>) -> mnemo::Result<()> {
        self.inner.upsert(docs)
    }
    fn delete(&self, ids: &[uuid::Uuid]) -> mnemo::Result<()> {
        self.inner.delete(ids)
    }
    fn delete_owner(&self, owner: &mnemo::domain::Owner) -> mnemo::Result<usize> {
        self.hold
            .entered
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut held = self.hold.held.lock().unwrap();
        while *held {
            held = self.hold.cv.wait(held).unwrap();
        }
        drop(held);
        self.inner.delete_owner(owner)
    }
    fn commit(&self) -> mnemo::Result<()> {
        self.inner.commit()
    }
    fn purge(&self) -> mnemo::Result<()> {
        self.inner.purge()
    }
    fn search_tokens(
        &self,
        tokens: &[String],
        filter: &mnemo::domain::scope::IndexFilter,
        limit: usize,
    ) -> mnemo::Result<Vec<(uuid::Uuid, f32)>> {
        self.inner.search_tokens(tokens, filter, limit)
    }
    fn entries(&self) -> mnemo::Result<Vec<(uuid::Uuid, i64)>> {
        self.inner.entries()
    }
    fn count_owner(&self, owner: &mnemo::domain::Owner) -> mnemo::Result<usize> {
        self.inner.count_owner(owner)
    }
    fn clear(&self) -> mnemo::Result<()> {
        self.inner.clear()
    }
}

/// The same store and indexes as `engine`, with erasures held in the lexical
/// step until the returned hold is released.
fn held(engine: &mnemo::Engine) -> (mnemo::Engine, Arc<Hold>, ReleaseOnDrop) {
    let hold = Arc::new(Hold::default());
    *hold.held.lock().unwrap() = true;
    let held = mnemo::Engine::new(mnemo::service::Parts {
        store: engine.store().clone(),
        lexical: Arc::new(HeldLexical {
            inner: engine.lexical().clone(),
            hold: hold.clone(),
        }),
        vectors: engine.vectors().clone(),
        embedder: engine.embedder().clone(),
        policy: Arc::new(engine.policy().clone()),
        clock: engine.clock().clone(),
    });
    (held, hold.clone(), ReleaseOnDrop(hold))
}

fn dev_app(engine: &mnemo::Engine, wait: std::time::Duration) -> axum::Router {
    let state = mnemo::api::AppState::new(engine.clone(), mnemo::api::AuthMode::InsecureDev)
        .with_erasure_wait(wait);
    mnemo::api::app(state)
}

#[tokio::test]
async fn a_client_that_disconnects_does_not_stop_its_erasure() {
    use tower::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let admin = Actor::local("admin");
    let base = engine_in(dir.path(), Arc::new(manual())).await;
    populate(&base, &admin, "gina", "zqxgina").await;
    base.commit().await.unwrap();
    let (engine, hold, _release) = held(&base);
    // Long enough that the request is still waiting when the client leaves.
    let app = dev_app(&engine, std::time::Duration::from_secs(25));
    let req = axum::http::Request::delete("/v1/users/gina")
        .body(axum::body::Body::empty())
        .unwrap();
    let request = tokio::spawn(app.oneshot(req));
    // The intent is committed and the erasure is inside the lexical step…
    hold.until_entered(1).await;
    // … when the client goes away (what a disconnect or the request timeout
    // does to the handler's future).
    request.abort();
    assert!(request.await.unwrap_err().is_cancelled());
    let v = engine.verify_erasure(&admin, "gina").await.unwrap();
    assert_eq!(
        v.status,
        mnemo::service::erasure::ErasureStatus::InProgress,
        "{v:?}"
    );
    assert!(v.pending_erasure);
    hold.release();
    // What shutdown waits for.
    engine.wait_erasures().await;
    let v = engine.verify_erasure(&admin, "gina").await.unwrap();
    assert!(v.erased, "{v:?}");
    assert_eq!(v.status, mnemo::service::erasure::ErasureStatus::Erased);
    assert_eq!(hold.entered(), 1);
    assert_eq!(
        files_containing(dir.path(), "zqxgina"),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn a_second_delete_joins_the_running_erasure_and_threads_wait_for_it() {
    use axum::http::{Method, StatusCode};
    let dir = tempfile::tempdir().unwrap();
    let admin = Actor::local("admin");
    let base = engine_in(dir.path(), Arc::new(manual())).await;
    populate(&base, &admin, "hank", "zqxhank").await;
    let (engine, hold, _release) = held(&base);
    let app = dev_app(&engine, std::time::Duration::from_millis(100));

    // Not done within the wait: 202 with where to follow it.
    let r = crate::api::call(&app, Method::DELETE, "/v1/users/hank", None, None).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["status"], "in_progress");
    assert_eq!(r.body["user_id"], "hank");
    assert_eq!(r.body["status_url"], "/v1/users/hank/erasure");
    assert_eq!(r.headers["location"], "/v1/users/hank/erasure");
    let status = crate::api::call(&app, Method::GET, "/v1/users/hank/erasure", None, None).await;
    assert_eq!(status.status, StatusCode::OK);
    assert_eq!(status.body["status"], "in_progress", "{}", status.body);
    assert_eq!(status.body["pending_erasure"], true);
    assert_eq!(status.body["erased"], false);

    // A second DELETE joins it: no second erasure starts.
    let r = crate::api::call(&app, Method::DELETE, "/v1/users/hank", None, None).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(engine.erasure_jobs().running(), 1);
    hold.until_entered(1).await;

    // A thread started now would outlive the erasure: refused like a memory write.
    let r = crate::api::call(
        &app,
        Method::POST,
        "/v1/threads",
        None,
        Some(serde_json::json!({"user_id": "hank", "goal": "zqxhanklate"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "conflict");
    let r = crate::api::call(
        &app,
        Method::POST,
        "/v1/memories",
        None,
        Some(serde_json::json!({"user_id": "hank", "text": "zqxhanklate"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);

    // A caller waiting for the receipt joins too, and gets the running
    // erasure's counts (a fresh erasure after it would count zero).
    let joined = {
        let engine = engine.clone();
        let admin = admin.clone();
        tokio::spawn(async move { engine.forget_user(&admin, "hank").await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    hold.release();
    let receipt = joined.await.unwrap().unwrap();
    assert_eq!(receipt.erased.memories, 6, "{receipt:?}");
    assert_eq!(receipt.erased.threads, 1);
    assert_eq!(hold.entered(), 1, "exactly one erasure ran");
    engine.wait_erasures().await;
    let status = crate::api::call(&app, Method::GET, "/v1/users/hank/erasure", None, None).await;
    assert_eq!(status.body["status"], "erased", "{}", status.body);
    assert_eq!(status.body["erased"], true);
    assert_eq!(
        files_containing(dir.path(), "zqxhank"),
        Vec::<String>::new()
    );

    // Done within the wait: 200 with the receipt; threads are allowed again.
    let app = dev_app(&engine, std::time::Duration::from_secs(20));
    let r = crate::api::call(&app, Method::DELETE, "/v1/users/hank", None, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["erased"]["memories"], 0);
    let r = crate::api::call(
        &app,
        Method::POST,
        "/v1/threads",
        None,
        Some(serde_json::json!({"user_id": "hank"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test]
async fn a_stalled_intent_is_resumed_by_the_sweep_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    populate(&engine, &admin, "ivy", "zqxivy").await;
    engine.commit().await.unwrap();
    // An intent whose task is gone (its node died, or it failed).
    engine
        .store()
        .begin_erasure("default", "ivy", "admin", t0())
        .await
        .unwrap();
    // The first pass only notes it: it may be another node's running erasure.
    assert_eq!(engine.sweep_erasures().await.unwrap(), 0);
    assert!(
        engine
            .verify_erasure(&admin, "ivy")
            .await
            .unwrap()
            .pending_erasure,
        "nothing was resumed yet"
    );
    let mut sweep = mnemo::runner::Runner::new();
    sweep.spawn(mnemo::service::erasure::ErasureSweep::every(
        engine.clone(),
        std::time::Duration::from_millis(50),
    ));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let v = engine.verify_erasure(&admin, "ivy").await.unwrap();
        if v.erased {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sweep did not resume it: {v:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sweep.stop().await;
    engine.wait_erasures().await;
    assert_eq!(files_containing(dir.path(), "zqxivy"), Vec::<String>::new());
    // Writes are accepted again.
    engine
        .add(&admin, vec![long_term("ivy", "ivy starts over")], false)
        .await
        .unwrap();
}

/// The change feed forgets erased users' memory ids: rows every live node
/// applied are pruned after the grace, rows a live node still needs stay.
#[tokio::test]
async fn the_change_feed_is_pruned_once_every_live_node_applied_it() {
    use mnemo::clock::Clock;
    use mnemo::service::erasure::feed::FeedPruner;
    use mnemo::store::ChangeKind;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(manual());
    let engine = engine_in(dir.path(), clock.clone()).await;
    let admin = Actor::local("admin");
    let added = engine
        .add(
            &admin,
            (0..4)
                .map(|i| long_term("alice", &format!("feed note {i}")))
                .collect(),
            true,
        )
        .await
        .unwrap();
    let store = engine.store().clone();
    let feed = store.index_changes(0, 100).await.unwrap();
    assert!(feed
        .iter()
        .any(|c| matches!(c.kind, ChangeKind::Memory(id) if id == added[0].id)));
    engine.forget_user(&admin, "alice").await.unwrap();
    let head = store.change_feed_head().await.unwrap();
    assert!(head >= 5);
    // A live node that has applied only the first two changes.
    store
        .node_heartbeat("node-a", 2, clock.now())
        .await
        .unwrap();
    let mut pruner = FeedPruner::new(std::time::Duration::ZERO);
    assert_eq!(
        pruner.run_once(store.as_ref(), clock.now()).await.unwrap(),
        0,
        "marks first"
    );
    assert_eq!(
        pruner.run_once(store.as_ref(), clock.now()).await.unwrap(),
        2
    );
    let left = store.index_changes(0, 100).await.unwrap();
    assert_eq!(left.first().map(|c| c.position), Some(3));
    // The node catches up: everything it applied goes, erased ids included.
    store
        .node_heartbeat("node-a", head, clock.now())
        .await
        .unwrap();
    pruner.run_once(store.as_ref(), clock.now()).await.unwrap();
    assert!(store.index_changes(0, 100).await.unwrap().is_empty());
    // A node whose heartbeat is stale is not waited for.
    engine
        .add(&admin, vec![long_term("bob", "later note")], true)
        .await
        .unwrap();
    clock.advance(chrono::Duration::minutes(5));
    pruner.run_once(store.as_ref(), clock.now()).await.unwrap();
    pruner.run_once(store.as_ref(), clock.now()).await.unwrap();
    assert!(store.index_changes(0, 100).await.unwrap().is_empty());
}

/// `GET /v1/users/{user_id}/erasure?files=true`: the byte scan `mnemo
/// verify-erasure` adds, for admin keys, where the data directory holds
/// every store; refused elsewhere and for other keys.
#[tokio::test]
async fn verification_over_http_scans_the_files_for_admins() {
    use axum::http::{Method, StatusCode};
    use mnemo::store::Role;
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let user = "user-zqxiris";
    populate(&engine, &Actor::local("admin"), user, "zqxiris").await;
    engine.commit().await.unwrap();
    let admin = crate::api::key(&engine, "default", None, Role::Admin).await;
    let agent = crate::api::key(&engine, "default", None, Role::Agent).await;
    // The DELETE below must answer 200 (done), not 202: the vector purge
    // (qdrant-edge 0.9's vacuum of the user's segment) takes about 1.1 s
    // in a debug build, past the 1 s default.
    let state = mnemo::api::AppState::new(engine.clone(), mnemo::api::AuthMode::Keys)
        .with_erasure_files(Some(dir.path().to_path_buf()))
        .with_erasure_wait(std::time::Duration::from_secs(30));
    let app = mnemo::api::app(state);
    let uri = format!("/v1/users/{user}/erasure?files=true");

    let r = crate::api::call(&app, Method::GET, &uri, Some(&admin), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["files"]["clean"], false, "{}", r.body);
    assert!(r.body["memories"].as_u64().unwrap() > 0);
    let r = crate::api::call(&app, Method::GET, &uri, Some(&agent), None).await;
    crate::api::assert_error(&r, StatusCode::FORBIDDEN, "forbidden");

    let r = crate::api::call(
        &app,
        Method::DELETE,
        &format!("/v1/users/{user}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = crate::api::call(&app, Method::GET, &uri, Some(&admin), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["erased"], true, "{}", r.body);
    assert_eq!(r.body["files"]["clean"], true, "{}", r.body);
    let scanned: Vec<&str> = r.body["files"]["stores"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["files_scanned"].as_u64().unwrap() > 0)
        .map(|s| s["store"].as_str().unwrap())
        .collect();
    for store in ["store", "lexical", "vectors"] {
        assert!(scanned.contains(&store), "{store} not scanned: {scanned:?}");
    }
    // Without the flag: the counts only.
    let r = crate::api::call(
        &app,
        Method::GET,
        &format!("/v1/users/{user}/erasure"),
        Some(&admin),
        None,
    )
    .await;
    assert!(r.body.get("files").is_none(), "{}", r.body);

    // A deployment whose data directory does not hold the stores refuses it.
    let elsewhere = mnemo::api::app(mnemo::api::AppState::new(
        engine.clone(),
        mnemo::api::AuthMode::Keys,
    ));
    let r = crate::api::call(&elsewhere, Method::GET, &uri, Some(&admin), None).await;
    crate::api::assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
}

/// The erasure sweep scrubs the tombstone's user hash a day after the
/// erasure, once its change-feed row is gone: verification then no longer
/// names a last erasure, and the store no longer confirms the user id.
#[tokio::test]
async fn the_sweep_scrubs_tombstones_after_their_retention() {
    use mnemo::runner::PeriodicTask;
    use mnemo::service::erasure::feed::FeedPruner;
    use mnemo::service::erasure::{ErasureSweep, ERASURE_TOMBSTONE_RETENTION};
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(manual());
    let engine = engine_in(dir.path(), clock.clone()).await;
    let admin = Actor::local("admin");
    engine
        .add(&admin, vec![long_term("alice", "alice's note")], true)
        .await
        .unwrap();
    engine.forget_user(&admin, "alice").await.unwrap();
    let last = |engine: mnemo::Engine| async move {
        engine
            .verify_erasure(&Actor::local("admin"), "alice")
            .await
            .unwrap()
            .last_erasure_at
    };
    // Within the retention: kept.
    ErasureSweep::every(engine.clone(), std::time::Duration::from_secs(1))
        .run_once()
        .await
        .unwrap();
    assert!(last(engine.clone()).await.is_some());
    // Past it, but the feed still holds the erasure: kept.
    clock.advance(chrono::Duration::from_std(ERASURE_TOMBSTONE_RETENTION).unwrap());
    clock.advance(chrono::Duration::minutes(1));
    ErasureSweep::every(engine.clone(), std::time::Duration::from_secs(1))
        .run_once()
        .await
        .unwrap();
    assert!(last(engine.clone()).await.is_some());
    let hash = mnemo::store::user_hash("default", "alice");
    assert!(
        !files_containing(dir.path(), &hash).is_empty(),
        "the tombstone holds the hash"
    );
    // The feed pruned (single node): the next sweep scrubs it.
    let store = engine.store().clone();
    let mut pruner = FeedPruner::new(std::time::Duration::ZERO);
    let now = mnemo::clock::Clock::now(clock.as_ref());
    pruner.run_once(store.as_ref(), now).await.unwrap();
    assert!(pruner.run_once(store.as_ref(), now).await.unwrap() > 0);
    ErasureSweep::every(engine.clone(), std::time::Duration::from_secs(1))
        .run_once()
        .await
        .unwrap();
    let v = engine.verify_erasure(&admin, "alice").await.unwrap();
    assert!(v.erased, "{v:?}");
    assert_eq!(v.last_erasure_at, None);
    engine.commit().await.unwrap();
    assert_eq!(files_containing(dir.path(), &hash), Vec::<String>::new());
}
