//! Clustered Mnemo end to end: two nodes on one PostgreSQL store and one
//! Qdrant collection on a real Qdrant server or cluster (`make test-qdrant`
//! runs these against the 3-peer cluster `scripts/qdrant-server.sh` starts;
//! without `MNEMO_TEST_QDRANT_URL` they are `ignored`, never passed).
//!
//! Each node has its own lexical index and follows the store's change feed;
//! the vectors are shared. The hashing embedder stands in for the model:
//! what is tested is where points and rows go, not embedding quality.

use std::sync::Arc;
use std::time::Duration;

use mnemo::domain::owner::DEFAULT_TENANT;
use mnemo::domain::Actor;
use mnemo::domain::{Owner, Scope};
use mnemo::embed::hashing::HashingEmbedder;
use mnemo::service::cluster::LexicalFollower;
use mnemo::service::SearchRequest;
use mnemo::vector::VectorBackend;
use mnemo::vector::{QdrantServerConfig, QdrantServerIndex, VectorIndex};
use mnemo::Engine;
use tempfile::TempDir;

use crate::backends::PgSchema;
use crate::common::long_term;

const DIM: usize = 64;

fn server_config() -> QdrantServerConfig {
    mnemo::vector::qdrant::test_server_config("mnemo_e2e")
}

/// Two nodes, as two `mnemo serve` processes would be: their own lexical
/// index directory and store connections, one schema, one collection.
struct TwoNodes {
    a: Engine,
    b: Engine,
    config: QdrantServerConfig,
    _schema: PgSchema,
    _dirs: (TempDir, TempDir),
}

async fn node(dir: &TempDir, schema: &PgSchema, config: &QdrantServerConfig) -> Engine {
    let store = Arc::new(schema.connect().await);
    let engine = Engine::builder(dir.path())
        .store(store)
        .policy(crate::common::on_hashing_scale(
            mnemo::policy::Policy::default(),
        ))
        .embedder(Arc::new(HashingEmbedder::new(DIM)))
        .vectors(VectorBackend::Server(config.clone()))
        .build()
        .await
        .expect("node opens on PostgreSQL + Qdrant")
        .engine;
    engine
}

async fn two_nodes() -> TwoNodes {
    let schema = PgSchema::create().await;
    let config = server_config();
    let dirs = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let a = node(&dirs.0, &schema, &config).await;
    let b = node(&dirs.1, &schema, &config).await;
    TwoNodes {
        a,
        b,
        config,
        _schema: schema,
        _dirs: dirs,
    }
}

impl Drop for TwoNodes {
    fn drop(&mut self) {
        if let Ok(idx) = QdrantServerIndex::connect(&self.config, DIM) {
            let _ = idx.drop_collection();
        }
    }
}

/// Points of the user in the collection, counted by the server with a
/// filter on the owner key (consistency `all`: every replica).
fn points_of(config: &QdrantServerConfig, user: &str) -> usize {
    let idx = QdrantServerIndex::connect(config, DIM).unwrap();
    idx.count_owner(&Owner::user(DEFAULT_TENANT, user)).unwrap()
}

async fn hits(engine: &Engine, user: &str, query: &str) -> Vec<(uuid::Uuid, String)> {
    let mut req = SearchRequest::new(Scope::user(user), query);
    req.record_access = false;
    let result = engine.search(req).await.unwrap();
    result
        .hits
        .into_iter()
        .map(|h| (h.memory.id, format!("{:.6} {:?}", h.score, h.breakdown)))
        .collect()
}

#[tokio::test]
#[ignore = "needs MNEMO_TEST_QDRANT_URL (a Qdrant server or cluster) and PostgreSQL"]
async fn writes_on_one_node_are_found_on_the_other_and_forget_all_leaves_nothing() {
    let n = two_nodes().await;
    let actor = Actor::local("e2e");
    let head = n.b.store().change_feed_head().await.unwrap();
    let mut follower = LexicalFollower::register(n.b.clone(), "node-b".into(), head)
        .await
        .unwrap();
    let added =
        n.a.add(
            &actor,
            vec![
                long_term("carol", "carol's espresso machine broke last week"),
                long_term("carol", "卡罗尔喜欢喝绿茶"),
                long_term("dave", "dave's espresso is too bitter"),
            ],
            true,
        )
        .await
        .unwrap();
    assert_eq!(added.len(), 3);
    // The follower applies A's writes to B's lexical index; vectors are shared.
    follower.step().await.unwrap();
    for query in ["espresso machine", "绿茶", "bitter"] {
        let (on_a, on_b) = (
            hits(&n.a, "carol", query).await,
            hits(&n.b, "carol", query).await,
        );
        assert!(
            !on_a.is_empty() || query == "bitter",
            "{query}: nothing found"
        );
        assert_eq!(on_a, on_b, "{query}: the nodes rank differently");
        assert!(
            on_a.iter().all(|(id, _)| *id != added[2].id),
            "dave's memory leaked into carol's search"
        );
    }
    assert_eq!(points_of(&n.config, "carol"), 2);

    n.a.forget_user(&actor, "carol").await.unwrap();
    follower.step().await.unwrap();
    assert_eq!(points_of(&n.config, "carol"), 0, "carol's points survived");
    let verified = n.b.verify_erasure(&actor, "carol").await.unwrap();
    assert_eq!(
        (
            verified.memories,
            verified.audit_events,
            verified.lexical_docs,
            verified.vectors
        ),
        (0, 0, 0, 0),
        "{verified:?}"
    );
    // The other user is untouched, on both nodes.
    assert_eq!(points_of(&n.config, "dave"), 1);
    assert_eq!(hits(&n.b, "dave", "espresso").await.len(), 1);
}

#[tokio::test]
#[ignore = "needs MNEMO_TEST_QDRANT_URL (a Qdrant server or cluster) and PostgreSQL"]
async fn start_up_repair_on_one_node_never_deletes_points_another_node_just_wrote() {
    let n = two_nodes().await;
    let actor = Actor::local("e2e");
    // B writes one memory at a time while A repairs again and again, as a
    // node starting next to a busy one does. Nothing is ever deleted here,
    // so any point the repair removes is a live node's fresh write.
    let writer = {
        let b = n.b.clone();
        let actor = actor.clone();
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..150 {
                let text = format!("erin's note number {i} about the garden");
                let m = b
                    .add(&actor, vec![long_term("erin", &text)], true)
                    .await
                    .unwrap();
                ids.push(m[0].id);
            }
            ids
        })
    };
    let mut rounds = 0;
    while !writer.is_finished() {
        let report = n.a.reconcile().await.unwrap();
        assert_eq!(
            report.vector_removed, 0,
            "round {rounds}: the repair deleted another node's fresh points: {report:?}"
        );
        rounds += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ids = writer.await.unwrap();
    assert!(rounds > 1, "the repair never overlapped the writes");
    let entries: std::collections::HashSet<uuid::Uuid> = {
        let idx = QdrantServerIndex::connect(&n.config, DIM).unwrap();
        idx.entries().unwrap().into_iter().map(|e| e.0).collect()
    };
    let lost = ids.iter().filter(|id| !entries.contains(id)).count();
    assert_eq!(lost, 0, "{lost} of {} written points are gone", ids.len());
}

/// A peer's control files from `scripts/qdrant-server.sh run --cluster N`.
struct Peer(std::path::PathBuf);

impl Peer {
    fn nth(n: usize) -> Peer {
        let dir = std::env::var("MNEMO_TEST_QDRANT_PEERS").unwrap_or_else(|_| {
            panic!("MNEMO_TEST_QDRANT_PEERS is not set: run this under scripts/qdrant-server.sh run --cluster 3")
        });
        let peer = std::path::Path::new(&dir).join(format!("peer{n}"));
        assert!(peer.join("start.sh").exists(), "no peer {n} in {dir}");
        Peer(peer)
    }

    fn kill9(&self) {
        let pid = std::fs::read_to_string(self.0.join("pid")).unwrap();
        let status = std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -9 {pid}");
    }

    fn restart(&self) {
        let status = std::process::Command::new("bash")
            .arg(self.0.join("start.sh"))
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// Waits until every replica of every shard is active again.
async fn wait_all_active(config: &QdrantServerConfig, within: Duration) -> bool {
    let idx = QdrantServerIndex::connect(config, DIM).unwrap();
    let deadline = std::time::Instant::now() + within;
    while std::time::Instant::now() < deadline {
        if let Ok(shards) = idx.shard_replicas() {
            let replicas: usize = shards.values().map(Vec::len).sum();
            let want = config.layout.replication_factor.unwrap_or(1) as usize * shards.len();
            if replicas >= want
                && shards
                    .values()
                    .flatten()
                    .all(|r| r.1 == mnemo::vector::qdrant::ReplicaState::Active)
            {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    false
}

#[tokio::test]
#[ignore = "needs a Qdrant cluster under scripts/qdrant-server.sh run --cluster 3, and PostgreSQL"]
async fn a_peer_killed_during_writes_loses_no_acknowledged_write_and_catches_up() {
    let n = two_nodes().await;
    assert!(
        n.config.layout.replication_factor.unwrap_or(1) >= 2,
        "this fault test needs replicated shards (MNEMO_TEST_QDRANT_REPLICATION_FACTOR=2)"
    );
    let actor = Actor::local("e2e");
    let victim = Peer::nth(3); // never the peer the nodes talk to
    let mut acknowledged = Vec::new();
    let (mut search_ok, mut search_unavailable) = (0, 0);
    for i in 0..240 {
        if i == 80 {
            victim.kill9();
        }
        if i == 200 {
            victim.restart();
        }
        let text = format!("frank's log entry {i}: the boiler pressure was fine");
        // The store commits first; a failed index write after the commit
        // is repaired by reconcile, so an Ok here is an acknowledged write.
        match n.a.add(&actor, vec![long_term("frank", &text)], true).await {
            Ok(m) => acknowledged.push((m[0].id, text)),
            Err(e) => {
                assert!(
                    matches!(e, mnemo::Error::Unavailable(_)),
                    "write {i}: not a clear 503: {e:?}"
                );
            }
        }
        if i % 20 == 0 {
            let mut req = SearchRequest::new(Scope::user("frank"), "boiler pressure");
            req.record_access = false;
            match n.b.search(req).await {
                Ok(_) => search_ok += 1,
                Err(mnemo::Error::Unavailable(_)) => search_unavailable += 1,
                Err(e) => panic!("search {i}: not a clear 503: {e:?}"),
            }
        }
    }
    eprintln!(
        "fault: {} writes acknowledged of 240; searches during the run: {search_ok} ok, {search_unavailable} unavailable",
        acknowledged.len()
    );
    assert!(search_ok > 0, "no search answered while a peer was down");
    assert!(
        wait_all_active(&n.config, Duration::from_secs(120)).await,
        "the restarted peer's replicas did not become active again"
    );
    // Repair catches anything the index missed while the peer was down.
    n.a.reconcile().await.unwrap();
    let idx = QdrantServerIndex::connect(&n.config, DIM).unwrap();
    let entries: std::collections::HashSet<uuid::Uuid> =
        idx.entries().unwrap().into_iter().map(|e| e.0).collect();
    let lost: Vec<_> = acknowledged
        .iter()
        .filter(|(id, _)| !entries.contains(id))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost: {lost:?}",
        lost.len()
    );
    let stored = n.a.store().indexed_versions().await.unwrap();
    assert_eq!(
        stored.len(),
        acknowledged.len(),
        "store and acknowledgements differ"
    );
    // Every acknowledged memory is searchable by its own words.
    for (id, text) in acknowledged.iter().step_by(7) {
        let mut req = SearchRequest::new(Scope::user("frank"), text.as_str());
        req.record_access = false;
        let found = n.a.search(req).await.unwrap().hits;
        assert!(
            found.iter().any(|h| h.memory.id == *id),
            "{id} not searchable"
        );
    }
}
