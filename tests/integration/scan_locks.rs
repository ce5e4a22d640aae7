//! Issue 52, item 1, against the real binary: the erasure route's file scan
//! (`GET /v1/users/{id}/erasure?files=true`) runs inside `mnemo serve` and
//! reads the SQLite files. Closing any descriptor of a file drops every
//! POSIX lock the process holds on it; if the scan did that, the next
//! process to open the database (`mnemo keys list`, beside a live server)
//! would take itself for the last connection, checkpoint and delete the WAL
//! under the server, and a write acknowledged after that would be lost at a
//! kill -9. This checks, after the scan: the server still holds its locks
//! on `mnemo.db` and `mnemo.db-shm` (`/proc/locks`, by inode); after `mnemo
//! keys list` the server's WAL is not deleted; and a memory acknowledged
//! then is there after a kill -9 and a restart.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::kill9::{admin_key, serve};
use crate::over_http::{call, http};

/// The POSIX locks `pid` holds on the file at `path` (by inode).
fn locks_held(pid: u32, path: &Path) -> usize {
    let ino = std::fs::metadata(path).unwrap().ino();
    std::fs::read_to_string("/proc/locks")
        .unwrap()
        .lines()
        .filter(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // "1: POSIX  ADVISORY  READ 1234 08:01:5678 128 128", or with
            // "->" after the number for a blocked request.
            let Some(at) = f.iter().position(|w| *w == "POSIX") else {
                return false;
            };
            let (Some(p), Some(dev_ino)) = (f.get(at + 3), f.get(at + 4)) else {
                return false;
            };
            *p == pid.to_string() && dev_ino.rsplit(':').next() == Some(&ino.to_string())
        })
        .count()
}

/// The server's open descriptors of SQLite files whose file was deleted.
fn deleted_store_files(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.contains("mnemo.db") && p.ends_with("(deleted)"))
        .collect()
}

#[tokio::test]
async fn the_file_scan_keeps_the_servers_sqlite_locks_and_wal() {
    let assets = crate::real_embedder::ensure_assets();
    let http = http();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let key = admin_key(&data);
    let mut server = serve(&http, &data, &assets, &log).await;
    let pid = server.child.id();
    let write = |text: &'static str| {
        let (http, base, key) = (http.clone(), server.base.clone(), key.clone());
        async move {
            let body = json!({"user_id": "ann", "text": text});
            let (status, body) = call(
                &http,
                Method::POST,
                &format!("{base}/v1/memories"),
                &key,
                Some(body),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            body["ids"][0].as_str().unwrap().to_string()
        }
    };
    write("ann keeps bees on the roof").await;
    let (db, shm, wal) = (
        data.join("mnemo.db"),
        data.join("mnemo.db-shm"),
        data.join("mnemo.db-wal"),
    );
    let before = (locks_held(pid, &db), locks_held(pid, &shm));
    assert!(
        before.0 > 0 && before.1 > 0,
        "the server holds no lock to lose: {before:?}"
    );

    let url = format!("{}/v1/users/ann/erasure?files=true", server.base);
    let (status, body) = call(&http, Method::GET, &url, &key, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body["files"]["stores"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["store"] == "store" && s["files_scanned"].as_u64() >= Some(2)),
        "the scan read the SQLite files: {body}"
    );
    let after = (locks_held(pid, &db), locks_held(pid, &shm));
    assert!(
        after.0 > 0 && after.1 > 0,
        "the scan dropped the server's SQLite locks: db and shm {before:?} -> {after:?}"
    );

    // Another process opens and closes the store, as an operator's `mnemo
    // keys list` beside the live server does.
    let wal_ino = std::fs::metadata(&wal).unwrap().ino();
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["keys", "list", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        deleted_store_files(pid),
        Vec::<String>::new(),
        "another process deleted the server's SQLite files"
    );
    assert_eq!(
        std::fs::metadata(&wal).map(|m| m.ino()).ok(),
        Some(wal_ino),
        "the server's WAL was deleted or replaced"
    );

    // A write acknowledged now survives a kill -9.
    let id = write("ann repaints the hives every spring").await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(server);
    let server = serve(&http, &data, &assets, &log).await;
    let url = format!("{}/v1/memories/{id}", server.base);
    let (status, body) = call(&http, Method::GET, &url, &key, None).await;
    assert_eq!(status, StatusCode::OK, "acknowledged write lost: {body}");
    assert_eq!(body["text"], "ann repaints the hives every spring");
}
