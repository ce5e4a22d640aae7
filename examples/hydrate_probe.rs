//! What hydrating a search's candidates costs: `get_many` of `--ids`
//! random memories of an existing SQLite database, through the store (on
//! SQLite, its direct reader) and, for comparison, the same `SELECT`
//! through sqlx's pool (fetched and decoded by sqlx, as `get_many` did
//! before the direct reader).
//!
//! ```text
//! cargo run --release --example hydrate_probe -- --db <data dir>/mnemo.db --ids 100
//! ```
//! Run it on a copy of a data directory that no server has open.

use std::path::PathBuf;
use std::time::Instant;

use mnemo::store::sqlite::SqliteStore;
use mnemo::store::Memories;
use sqlx::Row;
use uuid::Uuid;

#[path = "common/args.rs"]
mod args;
use args::{number, value};

const COLUMNS: &str = "id, tenant_id, tier, user_id, thread_id, kind, text, importance, \
    confidence, status, created_at, updated_at, last_accessed_at, access_count, expires_at, \
    source, metadata, embedding_model, version, supersedes, superseded_by";

fn summary(label: &str, mut t: Vec<f64>) {
    t.sort_by(f64::total_cmp);
    let mean = t.iter().sum::<f64>() / t.len() as f64;
    let p = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
    println!("| {label} | {:.3} | {:.3} | {mean:.3} |", p(0.5), p(0.95));
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let db = PathBuf::from(value("--db").ok_or_else(|| anyhow::anyhow!("--db is required"))?);
    let n = number("--ids", 100);
    let rounds = number("--rounds", 300).max(1);
    let store = SqliteStore::open(&db).await?;
    let pool = store.pool().clone();
    let all: Vec<Uuid> = sqlx::query("SELECT id FROM memories")
        .fetch_all(&pool)
        .await?
        .iter()
        .map(|r| r.get::<String, _>(0).parse())
        .collect::<Result<_, _>>()?;
    anyhow::ensure!(!all.is_empty(), "the database holds no memories");
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut pick = || -> Vec<Uuid> {
        (0..n)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                all[(seed >> 33) as usize % all.len()]
            })
            .collect()
    };
    println!(
        "{} memories, {n} ids per read, {rounds} reads each",
        all.len()
    );
    println!("| read | p50 ms | p95 ms | mean ms |");
    println!("|---|---:|---:|---:|");
    for round in 0..2 {
        let mut direct = Vec::with_capacity(rounds);
        let mut sqlx_rows = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let ids = pick();
            let t = Instant::now();
            let found = store.get_many(&ids).await?;
            direct.push(t.elapsed().as_secs_f64() * 1e3);
            anyhow::ensure!(!found.is_empty());

            let ids = pick();
            let t = Instant::now();
            let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(format!(
                "SELECT {COLUMNS} FROM memories WHERE id IN ("
            ));
            let mut sep = qb.separated(", ");
            for id in &ids {
                sep.push_bind(id.to_string());
            }
            qb.push(")");
            let rows = qb.build().fetch_all(&pool).await?;
            sqlx_rows.push(t.elapsed().as_secs_f64() * 1e3);
            anyhow::ensure!(!rows.is_empty());
        }
        summary(&format!("round {}: store get_many", round + 1), direct);
        summary(
            &format!("round {}: sqlx fetch_all, not decoded", round + 1),
            sqlx_rows,
        );
    }
    Ok(())
}
