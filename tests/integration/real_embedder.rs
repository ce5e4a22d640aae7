//! End to end with the real ONNX embedders (all-MiniLM-L6-v2 and
//! multilingual-e5-small through ONNX
//! Runtime). Needs the assets that `mnemo setup` fetches; when they are
//! missing this test fetches them itself, and fails loudly if it cannot.

use std::path::PathBuf;

use mnemo::domain::Actor;
use mnemo::domain::Scope;
use mnemo::embed::assets;
use mnemo::embed::onnx::OnnxEmbedder;
use mnemo::policy::Policy;
use mnemo::service::{Legs, SearchRequest};
use mnemo::Engine;

use crate::common::long_term;

pub fn assets_dir() -> PathBuf {
    std::env::var_os("MNEMO_ASSETS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::common::repo_root().join("assets"))
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

/// An engine on the default policy's real embedder, in a temporary directory
/// (kept alive by the returned guard).
async fn default_engine() -> (Engine, tempfile::TempDir) {
    let assets = ensure_assets();
    let embedder =
        OnnxEmbedder::for_policy(&assets, &Policy::default()).expect("real embedder loads");
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder(dir.path())
        .embedder(embedder)
        .build()
        .await
        .unwrap()
        .engine;
    (engine, dir)
}

#[tokio::test]
async fn what_drink_does_the_user_like_finds_green_tea() {
    let (engine, _dir) = default_engine().await;
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

/// A hybrid search reads the lexical leg's candidates from the store while
/// the query is embedded and the vector leg's own candidates after it: a
/// memory only the vector leg finds (no word in common with the query) and
/// one only the lexical leg finds are both hydrated and returned, each with
/// its leg's score alone.
#[tokio::test]
async fn a_hybrid_search_hydrates_the_candidates_of_both_legs() {
    let (engine, _dir) = default_engine().await;
    let texts = [
        "The user prefers green tea",
        "Pelicans nest on the cliffs by the harbour",
        "The quarterly invoice is due on the fourth",
    ];
    let items = texts.iter().map(|t| long_term("u", t)).collect();
    let added = engine.add(&Actor::local("t"), items, true).await.unwrap();
    let mut req = SearchRequest::new(Scope::user("u"), "what drink does she enjoy? pelicans");
    req.top_k = Some(3);
    let hits = engine.search(req).await.unwrap().hits;
    let hit = |id| hits.iter().find(|h| h.memory.id == id);
    let tea = hit(added[0].id).unwrap_or_else(|| panic!("the tea memory is missing: {hits:#?}"));
    assert_eq!(tea.memory.text, texts[0]);
    assert!(tea.breakdown.bm25_score.is_none(), "{tea:#?}");
    assert!(tea.breakdown.vector_similarity.is_some(), "{tea:#?}");
    let pelicans =
        hit(added[1].id).unwrap_or_else(|| panic!("the pelican memory is missing: {hits:#?}"));
    assert_eq!(pelicans.memory.text, texts[1]);
    assert!(pelicans.breakdown.bm25_score.is_some(), "{pelicans:#?}");
}

/// Switching from MiniLM to multilingual-e5-small: opening the index with the
/// other model is refused until `reindex`, which re-embeds everything; then a
/// Chinese paraphrase that MiniLM cannot see finds its memory.
#[tokio::test]
async fn switching_to_e5_needs_a_reindex_and_then_finds_chinese_paraphrases() {
    let assets = ensure_assets();
    let dir = tempfile::tempdir().unwrap();
    let policy_for = |model: &str| {
        let mut p = mnemo::policy::Policy::default();
        p.embedding.model = model.to_string();
        p
    };
    let minilm = policy_for("all-minilm-l6-v2");
    let e5 = policy_for("multilingual-e5-small");
    let open = |policy: mnemo::policy::Policy, allow: bool| {
        let assets = assets.clone();
        let dir = dir.path().to_path_buf();
        async move {
            let embedder = OnnxEmbedder::for_policy(&assets, &policy)?;
            Engine::builder(&dir)
                .policy(policy)
                .embedder(embedder)
                .allow_model_change(allow)
                .build()
                .await
                .map(|o| (o.engine, o.reconciled))
        }
    };

    let (engine, _) = open(minilm, false).await.unwrap();
    let texts = [
        "我对花生过敏，吃了会起疹子。",
        "我的车是一辆白色的丰田卡罗拉。",
        "我女儿今年七岁，上小学二年级。",
        "The user's laptop runs Arch Linux.",
    ];
    let items = texts.iter().map(|t| long_term("u", t)).collect();
    let added = engine.add(&Actor::local("t"), items, true).await.unwrap();
    engine.shutdown().await.unwrap();
    drop(engine); // releases the index locks

    match open(e5.clone(), false).await {
        Err(mnemo::error::Error::Config { message, .. }) => {
            assert!(message.contains("mnemo reindex"), "{message}");
            assert!(message.contains("multilingual-e5-small"), "{message}");
        }
        Err(other) => panic!("expected a configuration error, got {other:?}"),
        Ok(_) => panic!("an index built with MiniLM opened with e5 without reindex"),
    }

    let (engine, _) = open(e5.clone(), true).await.unwrap();
    let n = engine.reindex(|_, _| {}).await.unwrap();
    assert_eq!(n, texts.len());
    assert!(engine
        .stats()
        .await
        .unwrap()
        .embedding_model
        .starts_with("multilingual-e5-small@"));
    let mut req = SearchRequest::new(Scope::user("u"), "我有什么忌口吗");
    req.legs = Legs::Vector;
    let hits = engine.search(req).await.unwrap().hits;
    assert_eq!(hits[0].memory.id, added[0].id, "{hits:#?}");
    engine.shutdown().await.unwrap();
    drop(engine);

    // Reindexed: opens with e5 without the override.
    let (engine, _) = open(e5, false).await.unwrap();
    engine.shutdown().await.unwrap();
}
