//! End to end with the real ONNX embedder (all-MiniLM-L6-v2 through ONNX
//! Runtime). Needs the assets that `mnemo setup` fetches; when they are
//! missing this test fetches them itself, and fails loudly if it cannot.

use std::path::PathBuf;
use std::sync::Arc;

use mnemo::clock::SystemClock;
use mnemo::domain::Scope;
use mnemo::embed::assets;
use mnemo::service::{Actor, Legs, SearchRequest};

use crate::common::long_term;

pub fn assets_dir() -> PathBuf {
    std::env::var_os("MNEMO_ASSETS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets"))
}

/// Every model's assets (fetched and converted once per test process: the
/// e5 conversion takes seconds, and concurrent setups would race).
pub fn ensure_assets() -> PathBuf {
    static READY: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let dir = assets_dir();
    let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
    if !*ready && assets::verify(&dir).is_err() {
        assets::setup(&dir, |m| eprintln!("{m}"))
            .unwrap_or_else(|e| panic!("model assets unavailable and could not be fetched: {e}"));
    }
    *ready = true;
    dir
}

#[tokio::test]
async fn what_drink_does_the_user_like_finds_green_tea() {
    let assets = ensure_assets();
    let embedder = mnemo::open::load_embedder(&assets).expect("real embedder loads");
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = mnemo::open::open_with(
        dir.path(),
        Default::default(),
        embedder,
        Arc::new(SystemClock),
        false,
    )
    .await
    .unwrap();
    let texts = [
        "The user prefers green tea",
        "The user's car is a blue hatchback",
        "The user has a meeting with the bank on Friday",
        "The user lives in a flat near the river",
        "The user's sister is called Maria",
        "The user plays five-a-side football on Mondays",
    ];
    let items = texts.iter().map(|t| long_term("u", t)).collect();
    let added = engine.add(&Actor::local("t"), items, true).await.unwrap();
    for legs in [Legs::Vector, Legs::Hybrid] {
        let mut req = SearchRequest::new(Scope::user("u"), "what drink does the user like");
        req.legs = legs;
        let hits = engine.search(req).await.unwrap().hits;
        assert_eq!(hits[0].memory.id, added[0].id, "{legs:?}: {hits:#?}");
        assert!(hits[0].breakdown.vector_similarity.unwrap() > 0.3);
    }
}
