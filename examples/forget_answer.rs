//! The forget-all protocol over a real socket: how long `DELETE
//! /v1/users/{user_id}` takes to answer for a user with N memories among
//! other users' memories (the deployment size), and whether an erasure
//! whose client disconnects at once still completes.
//!
//! ```text
//! cargo run --example forget_answer -- --memories 10000 --others 20000
//! ```
//! Two users with N long-term memories each and the others' are written
//! straight into the store in interleaved batches (with their audit events),
//! then the engine opens on it and its start-up repair indexes them all
//! (lexical and vector; the hashing embedder stands in, erasure embeds
//! nothing). The API (`mnemo::api::app`,
//! default 1 s erasure wait, `--insecure-dev` auth) listens on loopback;
//! requests are raw HTTP/1.1 on a TCP socket:
//! - **answer**: `DELETE /v1/users/erase-a` and the time until the status
//!   line arrives (200 with the receipt when done within the wait, else 202
//!   with the status URL), then the time until `GET .../erasure` says
//!   `erased: true`;
//! - **disconnect**: `DELETE /v1/users/erase-b` written and the socket closed
//!   50 ms later without reading the answer (what `curl --max-time 0.05`
//!   does), then the time until `GET .../erasure` says `erased: true`.
//!
//! A client that closes its socket in the same instant as it sends the
//! request (FIN right behind the request bytes) may get nothing done: hyper
//! (HTTP/1, `half_close` off) drops the request before the handler has
//! recorded the intent. Such a client saw no answer and must retry, as for
//! any request lost before the server read it.
//!
//! Exits non-zero when an answer takes more than 2.5 s or an erasure does
//! not complete within 5 minutes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo::embed::hashing::HashingEmbedder;
use mnemo::store::MemoryStore;
use mnemo::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "common/args.rs"]
mod args;
use args::number;

#[path = "common/seed.rs"]
mod seed;

/// Sends one request; returns (status, body) once the response is complete
/// (the server closes the connection: `Connection: close`).
async fn request(addr: &str, method: &str, path: &str) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no status line in {text:?}"))?;
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    Ok((status, body))
}

/// Polls the erasure's status until `erased: true`; returns the time taken.
async fn until_erased(addr: &str, user: &str, since: Instant) -> anyhow::Result<Duration> {
    loop {
        let (status, body) = request(addr, "GET", &format!("/v1/users/{user}/erasure")).await?;
        anyhow::ensure!(status == 200, "status {status}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body)?;
        if v["erased"] == true {
            return Ok(since.elapsed());
        }
        anyhow::ensure!(
            since.elapsed() < Duration::from_secs(300),
            "not erased after 5 minutes: {v}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let memories = number("--memories", 10_000);
    let others = number("--others", 20_000);
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn MemoryStore> =
        Arc::new(mnemo::store::sqlite::SqliteStore::open(&dir.path().join("mnemo.db")).await?);
    let started = Instant::now();
    let now = chrono::Utc::now();
    let groups = [
        ("erase-a", memories),
        ("erase-b", memories),
        ("keep", others),
    ];
    let rounds = groups.iter().map(|g| g.1.div_ceil(2000)).max().unwrap_or(0);
    for round in 0..rounds {
        for (user, n) in groups {
            seed::insert_memories(
                store.as_ref(),
                user,
                round * 2000..((round + 1) * 2000).min(n),
                now,
            )
            .await?;
        }
    }
    // The start-up repair indexes what the store holds.
    let engine = Engine::builder(dir.path())
        .store(store)
        .embedder(Arc::new(HashingEmbedder::new(384)))
        .build()
        .await?
        .engine;
    engine.commit().await?;
    println!(
        "set-up: 2 users with {memories} memories each, {others} of another user, in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let app = mnemo::api::app(mnemo::api::AppState::new(
        engine.clone(),
        mnemo::api::AuthMode::InsecureDev,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let t = Instant::now();
    let (status, body) = request(&addr, "DELETE", "/v1/users/erase-a").await?;
    let answered = t.elapsed();
    anyhow::ensure!(status == 200 || status == 202, "status {status}: {body}");
    let done = until_erased(&addr, "erase-a", t).await?;
    println!(
        "answer: DELETE of {memories} memories answered {status} in {:.0} ms; erased after {:.0} ms",
        answered.as_secs_f64() * 1e3,
        done.as_secs_f64() * 1e3
    );

    let t = Instant::now();
    {
        let mut s = TcpStream::connect(&addr).await?;
        s.write_all(
            format!("DELETE /v1/users/erase-b HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes(),
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    } // closed: the client is gone before any answer
    let done = until_erased(&addr, "erase-b", t).await?;
    println!(
        "disconnect: client gone after 50 ms, {memories} memories erased after {:.0} ms",
        done.as_secs_f64() * 1e3
    );
    server.abort();
    let _ = server.await;
    engine.shutdown().await?;
    anyhow::ensure!(
        answered <= Duration::from_millis(2500),
        "the DELETE took {answered:?} to answer"
    );
    Ok(())
}
