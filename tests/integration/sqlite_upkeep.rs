//! Issue 52, item 2: SQLite's `TRUNCATE` checkpoint (at start, after each
//! erasure, at shutdown) cannot complete while another process holds a read
//! snapshot (a backup, Litestream, a `sqlite3` shell), and while it waits it
//! holds the WAL's write lock. It is bounded in time, settles for what a
//! `PASSIVE` checkpoint copied, and says so in `/readyz` and `/metrics`.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use mnemo::store::sqlite::SqliteStore;
use mnemo::store::MemoryStore;

use crate::api::{api, call};

#[tokio::test]
async fn a_checkpoint_beside_a_long_reader_gives_up_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let write = |name: &'static str| {
        sqlx::query("INSERT INTO job_leases (name, first_due_at) VALUES ($1, 0)")
            .bind(name)
            .execute(store.pool())
    };
    write("before-the-reader").await.unwrap();
    // Another connection (as another process would) reads and keeps its
    // snapshot open.
    let reader = rusqlite::Connection::open(&path).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let n: i64 = reader
        .query_row("SELECT count(*) FROM job_leases", [], |r| r.get(0))
        .unwrap();
    assert!(n >= 1);
    write("after-the-reader").await.unwrap();

    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(60), store.close())
        .await
        .expect("the shutdown checkpoint waited more than a minute for the reader")
        .unwrap();
    let took = started.elapsed();
    assert!(
        took < mnemo::store::sqlite::CHECKPOINT_BUDGET + Duration::from_secs(5),
        "the checkpoint took {took:?}"
    );
    let upkeep = store.upkeep();
    assert_eq!(upkeep.checkpoints, 2, "at open and at close: {upkeep:?}");
    assert_eq!(upkeep.checkpoints_incomplete, 1, "{upkeep:?}");
    assert_eq!(upkeep.last_checkpoint_complete, Some(false));
    reader.execute_batch("COMMIT").unwrap();
}

#[tokio::test]
async fn readyz_and_metrics_report_the_stores_upkeep() {
    let api = api().await;
    let r = call(&api.app, Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let store = &r.body["details"]["store"];
    assert_eq!(store["checkpoints"], 1, "the one at open: {store}");
    assert_eq!(store["checkpoints_incomplete"], 0);
    assert_eq!(store["last_checkpoint_complete"], true);
    assert_eq!(store["purge_vacuum_fallbacks"], 0);
    let r = call(&api.app, Method::GET, "/metrics", Some(&api.admin), None).await;
    assert_eq!(r.status, StatusCode::OK);
    let text = r.body.as_str().unwrap();
    for line in [
        "mnemo_sqlite_checkpoints 1\n",
        "mnemo_sqlite_checkpoints_incomplete 0\n",
        "mnemo_sqlite_last_checkpoint_complete 1\n",
        "mnemo_store_purge_vacuum_fallbacks 0\n",
    ] {
        assert!(text.contains(line), "{line:?} not in {text}");
    }
}
