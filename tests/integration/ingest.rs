//! Bulk ingest and the search path under it: the pipelined `add_bulk`
//! writes what consecutive `add` calls write, embedding each text once;
//! writes cannot take the embedding permits reserved for searches; the
//! access recorder's merged writes count every search.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use mnemo::clock::SystemClock;
use mnemo::domain::Actor;
use mnemo::domain::Scope;
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::embed::Embedder;
use mnemo::service::{SearchRequest, SEARCH_RESERVED_PERMITS};
use mnemo::{Engine, Error};

use crate::common::{long_term, HookedEmbedder};

async fn engine(dir: &std::path::Path, embedder: impl Embedder + 'static) -> Engine {
    let clock = Arc::new(SystemClock);
    let engine = Engine::builder(dir)
        .policy(crate::common::on_hashing_scale(
            mnemo::policy::Policy::default(),
        ))
        .embedder(Arc::new(embedder))
        .clock(clock)
        .build()
        .await
        .unwrap()
        .engine;
    engine
}

#[tokio::test]
async fn add_bulk_writes_every_item_in_order_and_embeds_each_text_once() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = Arc::new(AtomicUsize::new(0));
    let counter = embedded.clone();
    let embedder = HookedEmbedder {
        inner: HashingEmbedder::new(64),
        before_passages: move |texts: &[&str]| {
            counter.fetch_add(texts.len(), Ordering::SeqCst);
        },
    };
    let engine = engine(dir.path(), embedder).await;
    let actor = Actor::local("t");
    let items: Vec<_> = (0..300)
        .map(|i| long_term("u", &format!("memory number {i} about topic {}", i * 7)))
        .collect();
    let mut progress = Vec::new();
    let n = mnemo::service::ingest::add_bulk(&engine, &actor, items, 64, |k| progress.push(k))
        .await
        .unwrap();
    assert_eq!(n, 300);
    assert_eq!(progress, vec![64, 64, 64, 64, 44]);
    // Embedded ahead of each write into the cache; the write found it there.
    assert_eq!(embedded.load(Ordering::SeqCst), 300);
    engine.commit().await.unwrap();
    let stored = engine
        .list(
            &actor,
            mnemo::store::ListQuery {
                user_id: Some("u".into()),
                limit: 1000,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(stored.len(), 300);
    let mut texts: Vec<&str> = stored.iter().map(|m| m.text.as_str()).collect();
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), 300, "each item once");
    let hits = engine
        .search(SearchRequest::new(
            Scope::user("u"),
            "memory number 123 about topic 861",
        ))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits[0].memory.text, "memory number 123 about topic 861");
    // A bad item fails its batch like `add` does; earlier batches stay.
    let mut items: Vec<_> = (0..10).map(|i| long_term("v", &format!("v {i}"))).collect();
    items[7].text = String::new();
    let err = mnemo::service::ingest::add_bulk(&engine, &actor, items, 5, |_| {}).await;
    assert!(matches!(err, Err(Error::Invalid { .. })), "{err:?}");
}

#[tokio::test]
async fn writes_filling_the_embedding_queue_leave_permits_to_searches() {
    let dir = tempfile::tempdir().unwrap();
    // Every passage embedding waits for the gate; the counter says how many
    // writes hold a permit and are waiting.
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let waiting = Arc::new(AtomicUsize::new(0));
    let (g, w) = (gate.clone(), waiting.clone());
    let embedder = HookedEmbedder {
        inner: HashingEmbedder::new(64),
        before_passages: move |_: &[&str]| {
            w.fetch_add(1, Ordering::SeqCst);
            let (open, cv) = &*g;
            let mut open = open.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
        },
    };
    let engine = engine(dir.path(), embedder).await;
    let writers = 64 - SEARCH_RESERVED_PERMITS;
    let mut held = Vec::new();
    for i in 0..writers {
        let e = engine.clone();
        held.push(tokio::spawn(async move {
            e.add(
                &Actor::local("t"),
                vec![long_term("u", &format!("w {i}"))],
                false,
            )
            .await
        }));
    }
    for _ in 0..500 {
        if waiting.load(Ordering::SeqCst) == writers {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(waiting.load(Ordering::SeqCst), writers);
    // One more write is refused ...
    let refused = engine
        .add(&Actor::local("t"), vec![long_term("u", "one more")], false)
        .await;
    assert!(
        matches!(refused, Err(Error::Overloaded { .. })),
        "{refused:?}"
    );
    // ... while searches still get an embedding permit.
    for _ in 0..3 {
        let r = engine
            .search(SearchRequest::new(Scope::user("u"), "anything"))
            .await;
        assert!(r.is_ok(), "{r:?}");
    }
    {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
    for h in held {
        h.await.unwrap().unwrap();
    }
}

/// One long-term memory of user `u`.
async fn one_memory(engine: &Engine, actor: &Actor, text: &str) -> mnemo::domain::Memory {
    engine
        .add(actor, vec![long_term("u", text)], true)
        .await
        .unwrap()
        .remove(0)
}

/// `n` searches of user `u` at once; each one's number of hits.
async fn searches_together(engine: &Engine, n: usize, query: &str) -> Vec<usize> {
    let searches: Vec<_> = (0..n)
        .map(|_| {
            let (e, q) = (engine.clone(), query.to_string());
            tokio::spawn(async move {
                e.search(SearchRequest::new(Scope::user("u"), q))
                    .await
                    .unwrap()
                    .hits
                    .len()
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for s in searches {
        out.push(s.await.unwrap());
    }
    out
}

#[tokio::test]
async fn concurrent_searches_count_every_access() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), HashingEmbedder::new(64)).await;
    let actor = Actor::local("t");
    let m = one_memory(&engine, &actor, "the user likes green tea").await;
    // Searches ending together: the recorder merges them into few writes,
    // and the count must still be one per search.
    for hits in searches_together(&engine, 20, "green tea").await {
        assert_eq!(hits, 1);
    }
    let mut count = 0;
    for _ in 0..200 {
        count = engine.get(&actor, m.id).await.unwrap().access_count;
        if count == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(count, 20);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let m = engine.get(&actor, m.id).await.unwrap();
    assert_eq!(m.access_count, 20, "not counted twice");
    assert!(m.last_accessed_at.is_some());
}

/// `shutdown` writes the counts of the searches that ended just before it:
/// the recorder is drained before the store closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_writes_the_last_searches_access_counts() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), HashingEmbedder::new(64)).await;
    let actor = Actor::local("t");
    let m = one_memory(&engine, &actor, "the user likes oat milk").await;
    // Rounds of searches ending together (within the embedding permits).
    let mut found = 0;
    for _ in 0..5 {
        found += searches_together(&engine, 16, "oat milk")
            .await
            .into_iter()
            .sum::<usize>();
    }
    // At once, without waiting for the recorder.
    engine.shutdown().await.unwrap();
    drop(engine);
    let engine = self::engine(dir.path(), HashingEmbedder::new(64)).await;
    let count = engine.get(&actor, m.id).await.unwrap().access_count;
    assert_eq!(
        count as usize, found,
        "every search counted, none lost at shutdown"
    );
    assert!(found > 0);
    engine.shutdown().await.unwrap();
}

fn mnemo_ingest(
    data: &std::path::Path,
    corpus: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--data-dir")
        .arg(data)
        .arg("ingest")
        .arg(corpus)
        .args(extra)
        .env("MNEMO_ASSETS_DIR", crate::real_embedder::ensure_assets())
        .env_remove("MNEMO_DATABASE_URL")
        .output()
        .expect("mnemo runs")
}

/// `mnemo ingest` checks the whole file before it writes anything, then
/// streams it in batches (so a million-line file is not held in memory):
/// a bad line stops it with nothing written, or is skipped and named. A
/// load without index failures records a clean close, and every load ends
/// with the store's file purge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mnemo_ingest_checks_the_whole_file_then_streams_it() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.jsonl");
    let mut lines: Vec<String> = (0..7)
        .map(|i| {
            serde_json::json!({"id": format!("d{i}"), "text": format!("ingested fact number {i} about kayaks"), "user_id": "ann"})
                .to_string()
        })
        .collect();
    lines.insert(4, "{\"id\": \"broken\", \"text\": ".to_string());
    std::fs::write(&corpus, lines.join("\n") + "\n").unwrap();
    let data = dir.path().join("data");

    let out = mnemo_ingest(&data, &corpus, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("corpus.jsonl:5:") && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert!(
        !data.join("mnemo.db").exists(),
        "a refused file writes nothing"
    );

    let out = mnemo_ingest(&data, &corpus, &["--on-error", "skip", "--batch", "2"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("ingested 7 memories"), "{stdout}");
    assert!(
        stderr.contains("skipped") && stderr.contains("corpus.jsonl:5:"),
        "{stderr}"
    );

    // It closed as a clean `mnemo serve` stop does: the next trusted start
    // skips the full reconcile, and the search below needs nothing from one.
    assert!(
        data.join(mnemo::service::clean_shutdown::FILE).exists(),
        "a bulk load without index failures records a clean close"
    );
    let embedder = mnemo::embed::onnx::OnnxEmbedder::for_policy(
        &crate::real_embedder::ensure_assets(),
        &mnemo::policy::Policy::default(),
    )
    .unwrap();
    let opened = Engine::builder(&data)
        .embedder(embedder)
        .trust_clean_shutdown(true)
        .build()
        .await
        .unwrap();
    assert!(opened.reconciled.from_clean_shutdown);
    let engine = opened.engine;
    let hits = engine
        .search(SearchRequest {
            top_k: Some(20),
            ..SearchRequest::new(Scope::user("ann"), "kayaks")
        })
        .await
        .unwrap()
        .hits;
    let mut texts: Vec<String> = hits.into_iter().map(|h| h.memory.text).collect();
    texts.sort();
    let want: Vec<String> = (0..7)
        .map(|i| format!("ingested fact number {i} about kayaks"))
        .collect();
    assert_eq!(
        texts, want,
        "every valid line, once, in the store and the indexes"
    );
    engine.shutdown().await.unwrap();
    drop(engine);

    // A load ends with the store's file purge: a stale copy in a page's free
    // space (as the page splits of a bulk load leave them) is gone after it,
    // from the file and its WAL.
    let db = data.join("mnemo.db");
    let marker = b"A-STALE-COPY-LEFT-BY-A-PAGE-SPLIT";
    crate::common::plant_in_free_space(&db, marker);
    let more = dir.path().join("more.jsonl");
    std::fs::write(
        &more,
        serde_json::json!({"id": "d7", "text": "one more fact about kayaks", "user_id": "ann"})
            .to_string()
            + "\n",
    )
    .unwrap();
    let out = mnemo_ingest(&data, &more, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!crate::common::file_holds(&db, marker));
    assert!(!crate::common::file_holds(
        &data.join("mnemo.db-wal"),
        marker
    ));
}

/// The passages an embedder was given, in order.
type Seen = Arc<Mutex<Vec<String>>>;

/// An embedder that records every passage it embeds, after `delay`.
fn recording_embedder(delay: Duration) -> (HookedEmbedder<impl Fn(&[&str]) + Send + Sync>, Seen) {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let embedder = HookedEmbedder {
        inner: HashingEmbedder::new(64),
        before_passages: move |texts: &[&str]| {
            std::thread::sleep(delay);
            log.lock()
                .unwrap()
                .extend(texts.iter().map(|t| t.to_string()));
        },
    };
    (embedder, seen)
}

/// `[indexing] embed_previous_turn`: a turn of a conversation is embedded
/// after the turn before it — from its own batch, or from the store for the
/// first turn of a later write — and nothing else is.
#[tokio::test]
async fn a_turn_is_embedded_with_the_turn_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (embedder, seen) = recording_embedder(Duration::ZERO);
    let engine = engine(dir.path(), embedder).await;
    let actor = Actor::local("t");
    let turn = |user: &str, text: &str| mnemo::domain::NewMemory {
        thread_id: Some("s1".into()),
        ..long_term(user, text)
    };
    let embedded = || {
        let mut got: Vec<String> = seen.lock().unwrap().drain(..).collect();
        got.sort();
        got.dedup();
        got
    };
    engine
        .add(
            &actor,
            vec![
                turn("u", "A: tea or coffee?"),
                turn("u", "B: green tea"),
                long_term("u", "B keeps bees"),
                turn("v", "C: another user's turn"),
            ],
            true,
        )
        .await
        .unwrap();
    assert_eq!(
        embedded(),
        vec![
            "A: tea or coffee?",
            "A: tea or coffee?\nB: green tea",
            "B keeps bees",
            "C: another user's turn",
        ]
    );
    // A later write: its first turn's previous turn is read from the store.
    engine
        .add(&actor, vec![turn("u", "A: noted")], true)
        .await
        .unwrap();
    assert_eq!(embedded(), vec!["B: green tea\nA: noted"]);
    // A deleted turn is no one's previous turn.
    let last = engine
        .add(&actor, vec![turn("u", "B: bye")], true)
        .await
        .unwrap();
    assert_eq!(embedded(), vec!["A: noted\nB: bye"]);
    engine.delete(&actor, last[0].id).await.unwrap();
    engine
        .add(&actor, vec![turn("u", "A: see you")], true)
        .await
        .unwrap();
    assert_eq!(embedded(), vec!["A: noted\nA: see you"]);
}

/// Bulk ingest embeds a batch ahead of its write while the batch before is
/// still being written: a turn whose previous turn is in that batch is still
/// embedded once, with that turn (not with an older one from the store and
/// then again by its write).
#[tokio::test]
async fn bulk_ingest_embeds_each_turn_once_across_batches() {
    let dir = tempfile::tempdir().unwrap();
    // Slow enough that the next batch is embedded while this one is still
    // being written.
    let (embedder, seen) = recording_embedder(Duration::from_millis(20));
    let engine = engine(dir.path(), embedder).await;
    let actor = Actor::local("t");
    // Two conversations interleaved, so each batch of 4 starts both anew.
    let mut items = Vec::new();
    let mut expected = Vec::new();
    for n in 0..12 {
        for thread in ["a", "b"] {
            let text = format!("{thread} turn {n}");
            expected.push(if n == 0 {
                text.clone()
            } else {
                format!("{thread} turn {}\n{text}", n - 1)
            });
            items.push(mnemo::domain::NewMemory {
                thread_id: Some(thread.into()),
                ..long_term("u", &text)
            });
        }
    }
    mnemo::service::ingest::add_bulk(&engine, &actor, items, 4, |_| {})
        .await
        .unwrap();
    let mut embedded = seen.lock().unwrap().clone();
    embedded.sort();
    expected.sort();
    assert_eq!(
        embedded, expected,
        "each turn embedded once, with its previous turn"
    );
}

/// Issue 52, item 14: a write cancelled while its texts are being embedded
/// (a client that hangs up) leaves the embedding running on a blocking
/// thread; its permit stays taken until that work ends, so the queue stays
/// bounded under cancellations.
#[tokio::test]
async fn a_cancelled_write_keeps_its_embedding_permit_until_the_embedding_ends() {
    let dir = tempfile::tempdir().unwrap();
    let gate: Arc<(Mutex<(bool, bool)>, Condvar)> = Arc::default();
    let held = gate.clone();
    let embedder = HookedEmbedder {
        inner: HashingEmbedder::new(64),
        before_passages: move |texts: &[&str]| {
            if !texts.iter().any(|t| t.contains("zqxslow")) {
                return;
            }
            let (lock, cv) = &*held;
            let mut g = lock.lock().unwrap();
            g.0 = true; // entered
            cv.notify_all();
            while !g.1 {
                g = cv.wait(g).unwrap();
            }
        },
    };
    let engine = engine(dir.path(), embedder).await;
    let writer = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let actor = Actor::local("t");
            engine
                .add(&actor, vec![long_term("u", "zqxslow text to embed")], false)
                .await
        })
    };
    // Wait until the embedding runs, then cancel the request.
    let entered = {
        let gate = gate.clone();
        tokio::task::spawn_blocking(move || {
            let (lock, cv) = &*gate;
            let g = lock.lock().unwrap();
            let (g, _) = cv
                .wait_timeout_while(g, Duration::from_secs(30), |g| !g.0)
                .unwrap();
            g.0
        })
        .await
        .unwrap()
    };
    assert!(entered, "the embedding never started");
    writer.abort();
    assert!(writer.await.unwrap_err().is_cancelled());
    let depth = engine.embedding_queue_depth();
    {
        let (lock, cv) = &*gate;
        lock.lock().unwrap().1 = true;
        cv.notify_all();
    }
    assert_eq!(
        depth, 1,
        "the cancelled request's embedding still runs and must stay counted"
    );
    let started = std::time::Instant::now();
    while engine.embedding_queue_depth() != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "permit never released"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
