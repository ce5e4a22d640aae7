//! The repair loop (`src/repair.rs`) heals real index failures without a
//! restart. The indexes are the real tantivy and qdrant-edge ones behind a
//! decorator whose writes fail while a switch is on (the failpoint); the
//! store is SQLite, and PostgreSQL for the engine-level test.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use mnemo::domain::scope::IndexFilter;
use mnemo::domain::Actor;
use mnemo::domain::{Owner, Scope};
use mnemo::lexical::{LexicalDoc, LexicalIndex};
use mnemo::service::repair::Repairer;
use mnemo::service::{Legs, Parts, SearchRequest};
use mnemo::vector::{VectorIndex, VectorPoint};
use mnemo::{Engine, Error};
use serde_json::{json, Value};
use tower::ServiceExt;
use uuid::Uuid;

use crate::common::*;

/// Fails every write while `fail` is set; reads pass through.
struct FlakyLexical {
    inner: Arc<dyn LexicalIndex>,
    fail: Arc<AtomicBool>,
}

fn injected() -> Error {
    Error::Lexical(mnemo::error::LexicalError::Other(
        "injected index failure".into(),
    ))
}

impl LexicalIndex for FlakyLexical {
    fn upsert(&self, docs: Vec<LexicalDoc>) -> mnemo::Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(injected());
        }
        self.inner.upsert(docs)
    }
    fn delete(&self, ids: &[Uuid]) -> mnemo::Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(injected());
        }
        self.inner.delete(ids)
    }
    fn delete_owner(&self, owner: &Owner) -> mnemo::Result<usize> {
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
        q: &[String],
        f: &IndexFilter,
        n: usize,
    ) -> mnemo::Result<Vec<(Uuid, f32)>> {
        self.inner.search_tokens(q, f, n)
    }
    fn entries(&self) -> mnemo::Result<Vec<(Uuid, i64)>> {
        self.inner.entries()
    }
    fn versions(&self, ids: &[Uuid]) -> mnemo::Result<std::collections::HashMap<Uuid, i64>> {
        self.inner.versions(ids)
    }
    fn count_owner(&self, owner: &Owner) -> mnemo::Result<usize> {
        self.inner.count_owner(owner)
    }
    fn clear(&self) -> mnemo::Result<()> {
        self.inner.clear()
    }
}

struct FlakyVectors {
    inner: Arc<dyn VectorIndex>,
    fail: Arc<AtomicBool>,
}

impl VectorIndex for FlakyVectors {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn upsert(&self, points: Vec<VectorPoint>) -> mnemo::Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(mnemo::vector::VectorError::invalid(
                "injected index failure",
            ));
        }
        self.inner.upsert(points)
    }
    fn delete(&self, ids: &[Uuid]) -> mnemo::Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(mnemo::vector::VectorError::invalid(
                "injected index failure",
            ));
        }
        self.inner.delete(ids)
    }
    fn delete_owner(&self, owner: &Owner) -> mnemo::Result<usize> {
        self.inner.delete_owner(owner)
    }
    fn search(&self, v: &[f32], f: &IndexFilter, n: usize) -> mnemo::Result<Vec<(Uuid, f32)>> {
        self.inner.search(v, f, n)
    }
    fn entries(&self) -> mnemo::Result<Vec<(Uuid, i64)>> {
        self.inner.entries()
    }
    fn versions(&self, ids: &[Uuid]) -> mnemo::Result<std::collections::HashMap<Uuid, i64>> {
        self.inner.versions(ids)
    }
    fn count_owner(&self, owner: &Owner) -> mnemo::Result<usize> {
        self.inner.count_owner(owner)
    }
    fn flush(&self) -> mnemo::Result<()> {
        self.inner.flush()
    }
    fn optimize(&self) -> mnemo::Result<()> {
        self.inner.optimize()
    }
    fn clear(&self) -> mnemo::Result<()> {
        self.inner.clear()
    }
}

/// `base`'s store and real indexes, behind the failpoint.
fn flaky(base: &Engine) -> (Engine, Arc<AtomicBool>) {
    let fail = Arc::new(AtomicBool::new(false));
    let engine = Engine::new(Parts {
        store: base.store().clone(),
        lexical: Arc::new(FlakyLexical {
            inner: base.lexical().clone(),
            fail: fail.clone(),
        }),
        vectors: Arc::new(FlakyVectors {
            inner: base.vectors().clone(),
            fail: fail.clone(),
        }),
        embedder: base.embedder().clone(),
        policy: Arc::new(base.policy().clone()),
        clock: base.clock().clone(),
    });
    (engine, fail)
}

/// Adds a memory through `base`'s store while its index writes fail: the
/// store and the change feed have it, the indexes do not.
async fn add_unindexed(base: &Engine, actor: &Actor, user: &str, text: &str) -> Uuid {
    let (engine, fail) = flaky(base);
    fail.store(true, Ordering::SeqCst);
    let added = engine
        .add(actor, vec![long_term(user, text)], true)
        .await
        .unwrap();
    // Counted: a command's clean close must not vouch for these indexes.
    assert_eq!(engine.repair_status().failed_index_writes(), 1);
    added[0].id
}

async fn finds(engine: &Engine, user: &str, query: &str, legs: Legs) -> Vec<Uuid> {
    let mut req = SearchRequest::new(Scope::user(user), query);
    req.legs = legs;
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

async fn call(app: &axum::Router, req: Request<Body>) -> (StatusCode, Option<String>, Value) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let indexed = resp
        .headers()
        .get("x-mnemo-indexed")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, indexed, body)
}

async fn readyz(app: &axum::Router) -> Value {
    let (status, _, body) = call(app, Request::get("/readyz").body(Body::empty()).unwrap()).await;
    assert!(status.is_success() || status == StatusCode::SERVICE_UNAVAILABLE);
    body["index_lag"].clone()
}

/// Polls until `cond` holds (at most 20 s); returns how long it took.
async fn until<F, Fut>(what: &str, mut cond: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !cond().await {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what}: not within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_index_write_is_healed_without_a_restart_and_readyz_shows_the_lag() {
    let dir = tempfile::tempdir().unwrap();
    let base = engine_in(dir.path(), Arc::new(manual())).await;
    let (engine, fail) = flaky(&base);
    let state = mnemo::api::AppState::new(engine.clone(), mnemo::api::AuthMode::InsecureDev);
    let app = mnemo::api::app(state);
    let repair = Repairer::new(engine.clone())
        .await
        .unwrap()
        .spawn(Duration::from_millis(200));
    assert_eq!(readyz(&app).await["changes"], 0);

    fail.store(true, Ordering::SeqCst);
    let (status, indexed, body) = call(
        &app,
        Request::post("/v1/memories")
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"user_id": "ann", "text": "the quokka zebrafish lives on Rottnest", "refresh": true})
                    .to_string(),
            ))
            .unwrap(),
    )
    .await;
    // The write committed: success, and the response says it is not indexed.
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(indexed.as_deref(), Some("false"));
    let id: Uuid = body["memories"][0]["id"].as_str().unwrap().parse().unwrap();
    assert!(engine.store().get(id).await.unwrap().is_some());
    assert!(finds(&engine, "ann", "quokka zebrafish", Legs::Lexical)
        .await
        .is_empty());
    assert!(finds(&engine, "ann", "quokka zebrafish", Legs::Vector)
        .await
        .is_empty());

    // While the index keeps failing, /readyz shows the lag and the failure.
    until("readyz reports the lag and the failure", || async {
        let lag = readyz(&app).await;
        lag["changes"].as_i64().unwrap_or(0) >= 1
            && lag["seconds"].as_f64().unwrap_or(0.0) > 0.3
            && lag["last_failure"]
                .as_str()
                .is_some_and(|f| f.contains("injected"))
    })
    .await;

    // Heal the index: the loop repairs it, no restart.
    fail.store(false, Ordering::SeqCst);
    let healed = until("the loop indexes the memory", || async {
        finds(&engine, "ann", "quokka zebrafish", Legs::Lexical).await == vec![id]
            && finds(&engine, "ann", "quokka zebrafish", Legs::Vector).await == vec![id]
    })
    .await;
    eprintln!("repair latency after healing the index: {healed:?}");
    assert!(healed < Duration::from_secs(5), "{healed:?}");
    until("readyz lag back to 0", || async {
        let lag = readyz(&app).await;
        lag["changes"] == 0 && lag["seconds"] == 0.0
    })
    .await;

    // A committed status change whose index delete fails: success, marked,
    // and the loop removes it from both indexes.
    fail.store(true, Ordering::SeqCst);
    let (status, indexed, _) = call(
        &app,
        Request::delete(format!("/v1/memories/{id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(indexed.as_deref(), Some("false"));
    assert!(engine.lexical().versions(&[id]).unwrap().contains_key(&id));
    fail.store(false, Ordering::SeqCst);
    until("the loop removes the deleted memory", || async {
        engine.lexical().versions(&[id]).unwrap().is_empty()
            && engine.vectors().versions(&[id]).unwrap().is_empty()
    })
    .await;

    // A write with healthy indexes carries no marker.
    let (status, indexed, _) = call(
        &app,
        Request::post(format!("/v1/memories/{id}/restore"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(indexed, None);
    repair.abort();
}

/// The loop's decisions on a store both nodes share: a stale version is
/// replaced, a deleted memory removed, and an index entry of a memory
/// restored (and indexed) after the feed entry was written is left alone.
async fn repairs_by_id_and_version(engine: Engine, fail: Arc<AtomicBool>) {
    let actor = Actor::local("t");
    let mut repairer = Repairer::new(engine.clone()).await.unwrap();
    let a = engine
        .add(&actor, vec![long_term("bo", "alpha wombat")], true)
        .await
        .unwrap()[0]
        .clone();
    let b = engine
        .add(&actor, vec![long_term("bo", "beta numbat")], true)
        .await
        .unwrap()[0]
        .clone();
    // Nothing to repair when every write reached the indexes.
    let s = repairer.catch_up().await.unwrap();
    assert_eq!((s.lexical_repaired(), s.vector_repaired()), (0, 0), "{s:?}");
    assert!(s.checked >= 2);

    fail.store(true, Ordering::SeqCst);
    let patch = mnemo::domain::MemoryPatch {
        text: Some("alpha wombat, version two".into()),
        ..Default::default()
    };
    let a2 = engine.update(&actor, a.id, patch, true).await.unwrap();
    engine.delete(&actor, b.id).await.unwrap();
    fail.store(false, Ordering::SeqCst);
    assert_eq!(
        engine.lexical().versions(&[a.id]).unwrap()[&a.id],
        a.version
    );
    assert!(engine
        .vectors()
        .versions(&[b.id])
        .unwrap()
        .contains_key(&b.id));

    let s = repairer.catch_up().await.unwrap();
    assert_eq!((s.lexical_upserted, s.vector_upserted), (1, 1), "{s:?}");
    assert_eq!((s.lexical_removed, s.vector_removed), (1, 1), "{s:?}");
    assert_eq!(
        engine.lexical().versions(&[a.id]).unwrap()[&a.id],
        a2.version
    );
    assert_eq!(
        engine.vectors().versions(&[a.id]).unwrap()[&a.id],
        a2.version
    );
    assert!(engine.lexical().versions(&[b.id]).unwrap().is_empty());
    assert!(engine.vectors().versions(&[b.id]).unwrap().is_empty());
    // Applying again changes nothing.
    let s = repairer.catch_up().await.unwrap();
    assert_eq!((s.lexical_repaired(), s.vector_repaired()), (0, 0), "{s:?}");

    // A memory never indexed, then deleted and restored before the loop
    // reads its entries: it ends indexed at its latest version (its delete
    // entry removes nothing, since the store is read after the feed).
    fail.store(true, Ordering::SeqCst);
    let c = engine
        .add(&actor, vec![long_term("bo", "gamma quoll")], true)
        .await
        .unwrap()[0]
        .clone();
    fail.store(false, Ordering::SeqCst);
    engine.delete(&actor, c.id).await.unwrap();
    engine.restore(&actor, c.id).await.unwrap();
    let s = repairer.catch_up().await.unwrap();
    assert_eq!((s.lexical_removed, s.vector_removed), (0, 0), "{s:?}");
    let now = engine.store().get(c.id).await.unwrap().unwrap();
    assert_eq!(
        engine.lexical().versions(&[c.id]).unwrap()[&c.id],
        now.version
    );
    assert_eq!(
        engine.vectors().versions(&[c.id]).unwrap()[&c.id],
        now.version
    );
    assert_eq!(engine.repair_status().lag().changes, 0);
}

#[tokio::test]
async fn repairs_by_id_and_version_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let base = engine_in(dir.path(), Arc::new(manual())).await;
    let (engine, fail) = flaky(&base);
    repairs_by_id_and_version(engine, fail).await;
}

#[tokio::test]
async fn repairs_by_id_and_version_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let (base, _schema) = engine_on_postgres(dir.path(), Arc::new(manual())).await;
    let (engine, fail) = flaky(&base);
    repairs_by_id_and_version(engine, fail).await;
}

/// After a clean stop, the next trusted start skips the full reconcile and
/// the repair loop applies what changed since (here a memory whose index
/// updates were lost while the node was down); without the record the start
/// reconciles fully.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_shutdown_replaces_the_start_up_reconcile() {
    use mnemo::node::{Node, NodeParts};
    use mnemo::service::clean_shutdown::FILE;

    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join(FILE);
    let mut policy = crate::common::on_hashing_scale(mnemo::policy::Policy::default());
    policy.indexing.repair_interval_secs = 1;
    let open = |trust: bool| {
        Engine::builder(dir.path())
            .policy(policy.clone())
            .embedder(Arc::new(mnemo::embed::hashing::HashingEmbedder::new(64)))
            .trust_clean_shutdown(trust)
            .build()
    };
    let parts = || NodeParts {
        follower: None,
        agent: None,
        clean_shutdown_dir: Some(dir.path().to_path_buf()),
    };
    let actor = Actor::local("test");

    // First start: nothing recorded, the full reconcile runs.
    let opened = open(true).await.unwrap();
    assert!(!opened.reconciled.from_clean_shutdown);
    let node = Node::start(opened.engine.clone(), parts()).await.unwrap();
    opened
        .engine
        .add(&actor, vec![long_term("cy", "alpha wombat")], true)
        .await
        .unwrap();
    node.stop().await.unwrap();
    drop(opened);
    assert!(
        marker.exists(),
        "a clean stop records where the indexes agree"
    );

    // Down time: a command (no repair loop, an untrusted open) writes a
    // memory whose index updates fail. The store and the feed have it.
    let lost = {
        let base = open(false).await.unwrap().engine;
        let id = add_unindexed(&base, &actor, "cy", "gamma quoll").await;
        base.shutdown().await.unwrap();
        id
    };
    assert!(marker.exists(), "an untrusted open leaves the record alone");

    // Trusted start: the record is used up, no reconcile ran (the lost
    // memory is not indexed yet), and the repair loop indexes it.
    let opened = open(true).await.unwrap();
    assert!(opened.reconciled.from_clean_shutdown);
    assert!(!marker.exists(), "a record is used once");
    let engine = opened.engine.clone();
    assert!(finds(&engine, "cy", "gamma quoll", Legs::Lexical)
        .await
        .is_empty());
    let node = Node::start(engine.clone(), parts()).await.unwrap();
    until(
        "the repair loop indexes the memory written while down",
        || async {
            finds(&engine, "cy", "gamma quoll", Legs::Lexical).await == vec![lost]
                && finds(&engine, "cy", "gamma quoll", Legs::Vector)
                    .await
                    .contains(&lost)
        },
    )
    .await;
    node.stop().await.unwrap();
    drop((opened, engine));

    // No record (a crash, or removed by hand): the start reconciles fully.
    std::fs::remove_file(&marker).unwrap();
    let opened = open(true).await.unwrap();
    assert!(!opened.reconciled.from_clean_shutdown);
    assert_eq!(opened.reconciled.store_indexed, 2);
    opened.engine.shutdown().await.unwrap();
}

/// A command-line command (`mnemo add`, `search`, `jobs run`, …) opens as a
/// clean `mnemo serve` start does: it uses up the record of a clean close
/// and, having no repair loop, applies the changes since before it returns
/// (here a memory whose index updates were lost while nothing ran); its
/// close records a clean close again. Without a record it reconciles fully.
#[tokio::test]
async fn a_command_catches_up_from_a_clean_close_and_records_one_again() {
    use mnemo::service::clean_shutdown::FILE;
    use mnemo::service::command_engine::CommandEngine;

    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join(FILE);
    let policy = crate::common::on_hashing_scale(mnemo::policy::Policy::default());
    let builder = || {
        Engine::builder(dir.path())
            .policy(policy.clone())
            .embedder(Arc::new(mnemo::embed::hashing::HashingEmbedder::new(64)))
    };
    let actor = Actor::local("test");

    // Nothing recorded: the full reconcile; the close records.
    let command = CommandEngine::open(builder()).await.unwrap();
    assert!(!command.reconciled().from_clean_shutdown);
    command
        .add(&actor, vec![long_term("cy", "alpha wombat")], true)
        .await
        .unwrap();
    command.close().await.unwrap();
    assert!(marker.exists(), "a command's clean close is recorded");

    // An untrusted open writes a memory whose index updates fail: the store
    // and the feed have it, the indexes do not.
    let lost = {
        let base = builder().build().await.unwrap().engine;
        let id = add_unindexed(&base, &actor, "cy", "gamma quoll").await;
        base.shutdown().await.unwrap();
        id
    };
    assert!(marker.exists(), "an untrusted open leaves the record alone");

    // The next command uses the record up and has indexed the lost memory
    // before it returns: no reconcile ran and no loop is running.
    let command = CommandEngine::open(builder()).await.unwrap();
    assert!(command.reconciled().from_clean_shutdown);
    assert_eq!(command.reconciled().store_indexed, 0, "no full reconcile");
    assert!(!marker.exists(), "a record is used once");
    assert_eq!(
        finds(&command, "cy", "gamma quoll", Legs::Lexical).await,
        vec![lost]
    );
    assert!(finds(&command, "cy", "gamma quoll", Legs::Vector)
        .await
        .contains(&lost));
    command.close().await.unwrap();
    assert!(marker.exists(), "recorded again at the close");

    // A command that ends without its close (an error, a kill) leaves no
    // record: the next open reconciles fully.
    let command = CommandEngine::open(builder()).await.unwrap();
    command.shutdown().await.unwrap();
    drop(command);
    assert!(!marker.exists());
    let command = CommandEngine::open(builder()).await.unwrap();
    assert!(!command.reconciled().from_clean_shutdown);
    assert_eq!(command.reconciled().store_indexed, 2);
    command.close().await.unwrap();
}
