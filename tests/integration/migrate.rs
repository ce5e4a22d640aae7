//! `mnemo migrate`: an embedded deployment's SQLite store copied into
//! PostgreSQL, then served from there. The copy is verified by counts,
//! refuses a non-empty target, resumes without duplicating, and the target
//! node builds its indexes from the copied embedding cache without
//! embedding anything again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemo::domain::Actor;
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::migrate::{copy_store, CopyOptions};
use mnemo::service::SearchRequest;
use mnemo::store::tables::TABLES;
use mnemo::store::{EmbeddingCache, ErasureStore, Memories, TableCopy};
use mnemo::Engine;
use mnemo::Error;

use crate::backends::PgSchema;
use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_store_moves_to_postgres_and_serves_from_there() {
    // An embedded deployment with some history.
    let old_dir = tempfile::tempdir().unwrap();
    let engine = engine_in(old_dir.path(), std::sync::Arc::new(manual())).await;
    let admin = Actor::local("admin");
    let items = (0..120)
        .map(|i| {
            long_term(
                ["ann", "ben", "cho"][i % 3],
                &format!("note {i} about the river"),
            )
        })
        .collect();
    let added = engine.add(&admin, items, true).await.unwrap();
    engine.delete(&admin, added[0].id).await.unwrap();
    engine.forget_user(&admin, "cho").await.unwrap();
    engine.shutdown().await.unwrap();
    drop(engine);
    let source = mnemo::store::sqlite::SqliteStore::open(&old_dir.path().join("mnemo.db"))
        .await
        .unwrap();

    let schema = PgSchema::create().await;
    let target = schema.connect().await;
    let mut seen = Vec::new();
    let report = copy_store(
        &source,
        &target,
        CopyOptions {
            batch: 16,
            resume: false,
        },
        |p| seen.push((p.done, p.total)),
    )
    .await
    .unwrap();
    assert!(report.verified(), "{report:?}");
    let memories = &report.tables[0];
    assert_eq!(
        (memories.table, memories.source, memories.copied),
        ("memories", 80, 80)
    );
    for t in &report.tables {
        assert_eq!(t.copied, t.source, "{}", t.table);
    }
    let receipts = report
        .tables
        .iter()
        .find(|t| t.table == "erasure_receipts")
        .unwrap();
    assert_eq!(receipts.target, 1, "the erasure tombstone travels");
    let (done, total) = *seen.last().unwrap();
    assert_eq!(done, total);
    assert!(
        seen.windows(2).all(|w| w[0].0 <= w[1].0),
        "progress only grows"
    );

    // A second run: refused without --resume, a no-op with it.
    let err = copy_store(&source, &target, CopyOptions::default(), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains("--resume")),
        "{err}"
    );
    let again = copy_store(
        &source,
        &target,
        CopyOptions {
            batch: 50,
            resume: true,
        },
        |_| {},
    )
    .await
    .unwrap();
    assert!(again.verified());
    assert!(again.tables.iter().all(|t| t.copied == 0), "{again:?}");
    for table in TABLES {
        assert_eq!(
            target.count_rows(table).await.unwrap(),
            source.count_rows(table).await.unwrap()
        );
    }

    // A node on the PostgreSQL store builds its indexes from it, with the
    // copied embedding cache: nothing is embedded again.
    let new_dir = tempfile::tempdir().unwrap();
    let passages = Arc::new(AtomicUsize::new(0));
    let counted = passages.clone();
    let embedder = Arc::new(HookedEmbedder {
        inner: HashingEmbedder::new(64),
        before_passages: move |texts: &[&str]| {
            counted.fetch_add(texts.len(), Ordering::Relaxed);
        },
    });
    let opened = Engine::builder(new_dir.path())
        .store(Arc::new(target))
        .policy(crate::common::on_hashing_scale(
            mnemo::policy::Policy::default(),
        ))
        .embedder(embedder.clone())
        .clock(Arc::new(manual()))
        .build()
        .await
        .unwrap();
    let (engine, report) = (opened.engine, opened.reconciled);
    assert_eq!(report.store_indexed, 79);
    assert_eq!((report.vector_added, report.lexical_added), (79, 79));
    assert_eq!(passages.load(Ordering::Relaxed), 0, "no re-embedding");
    engine.commit().await.unwrap();
    let hits = engine
        .search(SearchRequest::new(
            mnemo::domain::Scope::user("ben"),
            "river",
        ))
        .await
        .unwrap()
        .hits;
    assert!(!hits.is_empty());
    assert!(hits
        .iter()
        .all(|h| h.memory.user_id.as_deref() == Some("ben")));
    let history = engine.history(&admin, added[1].id).await.unwrap();
    assert_eq!(history.len(), 1, "audit history travels");
    assert!(engine.verify_erasure(&admin, "cho").await.unwrap().erased);
    // New writes on the target continue the copied sequences.
    engine
        .add(&admin, vec![long_term("ann", "after the move")], true)
        .await
        .unwrap();
    engine.shutdown().await.unwrap();
}

fn mnemo(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .env_remove("MNEMO_DATABASE_URL")
        .output()
        .expect("mnemo runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migrate_command_copies_verifies_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), std::sync::Arc::new(manual())).await;
    let items = (0..30)
        .map(|i| long_term("ann", &format!("fact {i}")))
        .collect();
    engine
        .add(&Actor::local("admin"), items, true)
        .await
        .unwrap();
    engine.shutdown().await.unwrap();
    drop(engine);
    let from = format!("sqlite://{}", dir.path().join("mnemo.db").display());
    let schema = PgSchema::create().await;
    let to = schema.url();

    let out = mnemo(&[
        "migrate",
        "--from",
        &from,
        "--to",
        &to,
        "--vectors-to",
        "http://127.0.0.1:1",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unreachable") && stderr.contains("http://127.0.0.1:1"),
        "{stderr}"
    );
    // Checked before copying: the target is still empty (the copy below is
    // not refused as a non-empty target).

    let out = mnemo(&["migrate", "--from", &from, "--to", &to, "--batch", "7"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.lines().find(|l| l.starts_with("memories")).unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        ["memories", "30", "30", "30", "ok"]
    );

    let out = mnemo(&["migrate", "--from", &from, "--to", &to]);
    assert!(!out.status.success(), "a non-empty target is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
    // Resuming copies nothing again; --vectors-to DIR builds a node's
    // indexes from the target (the real model: the source's cache was
    // written by the hashing embedder, so these 30 are embedded here).
    let node = tempfile::tempdir().unwrap();
    let node_dir = node.path().join("node1");
    let out = mnemo(&[
        "migrate",
        "--from",
        &from,
        "--to",
        &to,
        "--resume",
        "--vectors-to",
        node_dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.lines().find(|l| l.starts_with("memories")).unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        ["memories", "30", "30", "0", "ok"]
    );
    assert!(
        stdout.contains("30 vectors, 30 lexical documents for 30 indexed memories"),
        "{stdout}"
    );
    assert!(node_dir.join("vectors").is_dir() && node_dir.join("lexical").is_dir());

    // A count that differs fails the run: the target got a row the source lacks.
    let target = schema.connect().await;
    let extra = mnemo::domain::Memory::sample(
        mnemo::domain::Tier::LongTerm,
        Some("zed"),
        "only in the target",
        t0(),
    );
    target.insert(&[extra], &[]).await.unwrap();
    let out = mnemo(&["migrate", "--from", &from, "--to", &to, "--resume"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("MISMATCH"));

    let missing = format!("sqlite://{}", dir.path().join("nope.db").display());
    let out = mnemo(&["migrate", "--from", &missing, "--to", &to]);
    assert!(!out.status.success());
    assert!(
        !dir.path().join("nope.db").exists(),
        "no empty source is created"
    );
}

/// The figure in docs/guide/deployment.md: 100k memories (each with its create event and a
/// cached 384-dimension embedding) copied from SQLite into PostgreSQL.
/// `cargo test --test integration migrate_100k -- --ignored --nocapture`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn migrate_100k_memories() {
    use mnemo::domain::{Memory, Tier};
    use mnemo::store::{text_hash, AuditAction, AuditEvent};
    let n = 100_000usize;
    let dir = tempfile::tempdir().unwrap();
    let source = mnemo::store::sqlite::SqliteStore::open(&dir.path().join("mnemo.db"))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let memories: Vec<Memory> = chunk
            .iter()
            .map(|i| {
                Memory::sample(
                    Tier::LongTerm,
                    Some(&format!("user-{}", i % 1000)),
                    &format!(
                        "memory number {i}: the user mentioned a preference for item {}",
                        i * 7
                    ),
                    t0(),
                )
            })
            .collect();
        let events: Vec<AuditEvent> = memories
            .iter()
            .map(|m| AuditEvent::for_memory(m, AuditAction::Create, "bench", t0()))
            .collect();
        source.insert(&memories, &events).await.unwrap();
        for m in &memories {
            let owner = mnemo::store::CacheOwner::of(m);
            source
                .cache_embeddings(
                    &owner,
                    "bench-model",
                    &[(text_hash(&m.text), vec![0.01; 384])],
                    None,
                )
                .await
                .unwrap();
        }
    }
    eprintln!("source built in {:.1} s", started.elapsed().as_secs_f64());

    let schema = PgSchema::create().await;
    let target = schema.connect().await;
    let started = std::time::Instant::now();
    let report = copy_store(&source, &target, CopyOptions::default(), |_| {})
        .await
        .unwrap();
    let secs = started.elapsed().as_secs_f64();
    assert!(report.verified(), "{report:?}");
    for t in &report.tables {
        eprintln!("{:<18} {:>8} {:>8}", t.table, t.source, t.target);
    }
    eprintln!(
        "copied {n} memories (+ events and cached embeddings) SQLite -> PostgreSQL in {secs:.1} s ({:.0} memories/s)",
        n as f64 / secs
    );
    let started = std::time::Instant::now();
    target.erase_user("default", "user-1").await.unwrap();
    eprintln!(
        "erase_user of 100 memories with VACUUM on the 100k tables: {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
}
