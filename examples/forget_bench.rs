//! "Forget all my data" benchmark: one user with N long-term memories (each
//! with its audit history) among other users' memories and reference
//! memories, then a timed `forget_user`, with the time of each step (lexical
//! delete + purge, vector delete + flush, store) from the engine's log line.
//!
//! ```text
//! cargo run --release --example forget_bench -- --memories 10000 --others 10000 --reference 40000 [--users 1]
//! ```
//! `--users N` spreads the others' memories over N users, each user's written
//! together (a million memories as the scale benchmark lays them out:
//! `--memories 8 --others 800000 --users 100000 --reference 200000`).
//! `--then N` erases N more of those users afterwards, one by one (the
//! first erasure of a store also scrubs free space its whole history left).
//! `--searches N` first runs N searches, each for one of those users picked
//! at random, and prints the p50 / p95 of the search and of its lexical and
//! vector legs (the hashing embedder's queries: index cost, not quality).
//! Erasure does not embed anything, so this uses the hashing embedder (same
//! dimension as the real model: the vector index does the same work) to keep
//! set-up fast. The three groups are written in interleaved batches. Writes
//! nothing outside a temporary directory (and `--save DIR`).

use std::sync::Arc;
use std::time::Instant;

use mnemo::domain::Actor;
use mnemo::domain::{NewMemory, Tier};
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::Engine;

#[path = "common/args.rs"]
mod args;
use args::number;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "mnemo::service::erasure=info",
        ))
        .init();
    let memories = number("--memories", 10_000);
    let others = number("--others", 10_000);
    let reference = number("--reference", 40_000);
    let users = number("--users", 1).max(1);
    let per_user = others.div_ceil(users).max(1);
    // The name of the other users' i-th (one user: "keep-me").
    let other = |i: usize| {
        if users > 1 {
            format!("keep-me-{i}")
        } else {
            "keep-me".to_string()
        }
    };
    let dir = tempfile::tempdir()?;
    // `--from DIR` starts from a copy of a data directory an earlier run left
    // with `--save DIR` (set-up is most of the run's time).
    let saved = |flag: &str| {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let from = saved("--from");
    if let Some(from) = &from {
        copy_dir(std::path::Path::new(from), dir.path())?;
    }
    let engine = Engine::builder(dir.path())
        .embedder(Arc::new(HashingEmbedder::new(384)))
        .build()
        .await?
        .engine;
    let actor = Actor::local("bench");

    let groups = [
        (Tier::LongTerm, Some("forget-me"), memories),
        (Tier::LongTerm, Some("keep-me"), others),
        (Tier::Reference, None, reference),
    ];
    let started = Instant::now();
    let mut serial = 0;
    let groups = if from.is_some() {
        Vec::new()
    } else {
        groups.to_vec()
    };
    // Batches of the three groups interleave in proportion (the group with
    // the largest share still to write goes next), as users' writes do over
    // time: the forgotten user's rows are spread through every table and
    // index rather than stored in one run.
    let mut left: Vec<usize> = groups.iter().map(|g| g.2).collect();
    let mut written = vec![0usize; groups.len()];
    while let Some(g) = (0..groups.len()).filter(|&g| left[g] > 0).max_by(|&a, &b| {
        let share = |g: usize| left[g] as f64 / groups[g].2 as f64;
        share(a).total_cmp(&share(b))
    }) {
        let (tier, user, _) = groups[g];
        let batch: Vec<NewMemory> = (0..left[g].min(500))
            .map(|_| {
                serial += 1;
                written[g] += 1;
                let user_id = match user {
                    Some("keep-me") => Some(other((written[g] - 1) / per_user)),
                    user => user.map(str::to_string),
                };
                NewMemory {
                    tier: Some(tier),
                    user_id,
                    text: format!("memory number {serial} about topic {}", serial % 97),
                    ..Default::default()
                }
            })
            .collect();
        left[g] -= batch.len();
        engine.add(&actor, batch, false).await?;
    }
    engine.commit().await?;
    engine.optimize().await?;
    println!(
        "set-up: {memories} memories to forget, {others} of {users} other user(s), {reference} reference, in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    if let Some(to) = saved("--save") {
        engine.shutdown().await?;
        drop(engine); // flushes the vector index and joins the lexical writer
        copy_dir(dir.path(), std::path::Path::new(&to))?;
        println!("saved the data directory to {to}");
        return Ok(());
    }

    let searches = number("--searches", 0);
    if searches > 0 {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let (mut took, mut lexical, mut vector) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..searches {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let user = other((rng % users as u64) as usize);
            let query = format!("memory number {} about topic {}", rng % 1000, i % 97);
            let t = Instant::now();
            let r = engine
                .search(mnemo::service::SearchRequest {
                    record_access: false,
                    ..mnemo::service::SearchRequest::new(mnemo::domain::Scope::user(&user), query)
                })
                .await?;
            took.push(t.elapsed().as_secs_f64() * 1e3);
            lexical.push(r.stages.lexical_ms);
            vector.push(r.stages.vector_ms);
        }
        let pct = |v: &mut Vec<f64>, p: f64| {
            v.sort_by(f64::total_cmp);
            v[((v.len() as f64 - 1.0) * p).round() as usize]
        };
        println!(
            "{searches} searches (one user each, their scope with the reference tier): \
             took p50 {:.2} / p95 {:.2} ms, lexical {:.2} / {:.2} ms, vector {:.2} / {:.2} ms",
            pct(&mut took, 0.5),
            pct(&mut took, 0.95),
            pct(&mut lexical, 0.5),
            pct(&mut lexical, 0.95),
            pct(&mut vector, 0.5),
            pct(&mut vector, 0.95),
        );
    }

    let t = Instant::now();
    let receipt = engine.forget_user(&actor, "forget-me").await?;
    println!(
        "forget-all: {} memories, {} audit events, {} lexical docs, {} vectors erased in {:.0} ms",
        receipt.erased.memories,
        receipt.erased.audit_events,
        receipt.erased.lexical_docs,
        receipt.erased.vectors,
        t.elapsed().as_secs_f64() * 1e3
    );
    // The first erasure of a store also scrubs what its whole history left
    // in free space; the next ones show an erasure's own cost.
    for k in 0..number("--then", 0) {
        let user = other((k * 7919 + 13) % users);
        let t = Instant::now();
        let receipt = engine.forget_user(&actor, &user).await?;
        println!(
            "then forget-all of another user: {} memories erased in {:.0} ms",
            receipt.erased.memories,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    engine.shutdown().await?;
    Ok(())
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            // On disk before the timed erasure starts: otherwise the copy's
            // write-back competes with the erasure's own writes and syncs.
            std::fs::File::open(&target)?.sync_all()?;
        }
    }
    Ok(())
}
