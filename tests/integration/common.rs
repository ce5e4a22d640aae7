use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use mnemo::clock::{ManualClock, SharedClock};
use mnemo::domain::{NewMemory, Tier};
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::policy::Policy;
use mnemo::Engine;

/// The repository's root, read when the test runs: cargo sets
/// `CARGO_MANIFEST_DIR` for every test it runs. The compile-time value is only
/// the fallback, because a test binary built by another checkout sharing the
/// same target directory (CI's clean clone) carries that checkout's path and
/// cargo does not rebuild it for this one.
pub fn repo_root() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

/// `policy` with all-MiniLM-L6-v2's similarity table, for engines on the
/// hashing embedder: its cosines sit on MiniLM's scale (unrelated texts near
/// 0, texts sharing words high), while the default model's table
/// (multilingual-e5-small: unrelated near 0.78) would cut every hashing
/// cosine below its `min_vector_similarity`.
pub fn on_hashing_scale(mut policy: Policy) -> Policy {
    policy.embedding.model = mnemo::embed::assets::MINILM_L6_V2.name.into();
    policy
}

/// An engine on real backends in `dir`, with the hashing embedder.
pub async fn engine_in(dir: &std::path::Path, clock: SharedClock) -> Engine {
    engine_with(dir, clock, Policy::default()).await
}

pub async fn engine_with(dir: &std::path::Path, clock: SharedClock, policy: Policy) -> Engine {
    let engine = Engine::builder(dir)
        .policy(on_hashing_scale(policy))
        .embedder(Arc::new(HashingEmbedder::new(64)))
        .clock(clock)
        .build()
        .await
        .expect("engine opens")
        .engine;
    engine
}

/// An engine whose store is PostgreSQL (a fresh schema, dropped with the
/// returned guard) and whose indexes are in `dir`, with the hashing embedder.
pub async fn engine_on_postgres(
    dir: &std::path::Path,
    clock: SharedClock,
) -> (Engine, crate::backends::PgSchema) {
    let schema = crate::backends::PgSchema::create().await;
    let engine = engine_on_schema(dir, clock, &schema).await;
    (engine, schema)
}

/// Another node on an existing schema: its own connections and indexes.
pub async fn engine_on_schema(
    dir: &std::path::Path,
    clock: SharedClock,
    schema: &crate::backends::PgSchema,
) -> Engine {
    let store = Arc::new(schema.connect().await);
    let engine = Engine::builder(dir)
        .store(store)
        .policy(on_hashing_scale(Policy::default()))
        .embedder(Arc::new(HashingEmbedder::new(64)))
        .clock(clock)
        .build()
        .await
        .expect("engine opens on PostgreSQL")
        .engine;
    engine
}

pub fn manual() -> ManualClock {
    ManualClock::new(t0())
}

pub fn long_term(user: &str, text: &str) -> NewMemory {
    NewMemory {
        tier: Some(Tier::LongTerm),
        user_id: Some(user.to_string()),
        text: text.to_string(),
        ..Default::default()
    }
}

/// The hashing embedder, calling `before_passages` with every batch of
/// passages before embedding it: tests count embeddings with it, or hold one.
pub struct HookedEmbedder<F> {
    pub inner: HashingEmbedder,
    pub before_passages: F,
}

impl<F: Fn(&[&str]) + Send + Sync> mnemo::embed::Embedder for HookedEmbedder<F> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed_query(&self, text: &str) -> mnemo::Result<Vec<f32>> {
        self.inner.embed_query(text)
    }
    fn embed_passages(&self, texts: &[&str]) -> mnemo::Result<Vec<Vec<f32>>> {
        (self.before_passages)(texts);
        self.inner.embed_passages(texts)
    }
}

/// Plants `marker` in the free space of a table leaf page of the SQLite file
/// at `db` (between its cell pointers and its cells), through SQLite's own
/// page table, and checkpoints it into the file: a stale copy as a b-tree
/// rebalance or a purged row leaves one, for tests of the store's purge.
pub fn plant_in_free_space(db: &std::path::Path, marker: &[u8]) {
    let raw = rusqlite::Connection::open(db).unwrap();
    raw.busy_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    let pages: u32 = raw
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let planted = (2..=pages).find(|&pgno| {
        let mut page: Vec<u8> = raw
            .query_row(
                "SELECT data FROM sqlite_dbpage WHERE pgno = ?1",
                [pgno],
                |r| r.get(0),
            )
            .unwrap();
        let be16 = |at: usize| usize::from(u16::from_be_bytes([page[at], page[at + 1]]));
        let (cells, content) = (be16(3), be16(5));
        let pointers_end = 8 + 2 * cells;
        if page[0] != 0x0d || content < pointers_end + marker.len() {
            return false;
        }
        page[pointers_end..pointers_end + marker.len()].copy_from_slice(marker);
        raw.execute(
            "UPDATE sqlite_dbpage SET data = ?1 WHERE pgno = ?2",
            rusqlite::params![page, pgno],
        )
        .unwrap();
        true
    });
    assert!(planted.is_some(), "no table leaf page with room");
    raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    assert!(file_holds(db, marker), "the marker was not planted");
}

/// Whether the file at `path` (missing: empty) holds `marker`.
pub fn file_holds(path: &std::path::Path, marker: &[u8]) -> bool {
    let bytes = std::fs::read(path).unwrap_or_default();
    bytes.windows(marker.len()).any(|w| w == marker)
}
