//! Export and import of a user ("give me all my data"), on the real engine
//! (SQLite, tantivy, qdrant-edge; the hashing embedder): export → forget →
//! import gives back the same memories, statuses, versions, histories,
//! lineage, threads, messages and payloads, and search finds them again; a
//! changed export is refused and writes nothing; a key may export only
//! what it may see.

use std::sync::Arc;

use mnemo::agent::threads::{AppendMessage, CreateThread, ToolResult};
use mnemo::agent::Agent;
use mnemo::domain::thread::MessageRole;
use mnemo::domain::Actor;
use mnemo::domain::{Memory, NewMemory, Scope, Status};
use mnemo::policy::Policy;
use mnemo::service::export::ImportOptions;
use mnemo::service::SearchRequest;
use mnemo::store::AuditEvent;
use mnemo::{Engine, Error};
use uuid::Uuid;

use crate::common::*;

struct Seeded {
    ids: Vec<Uuid>,
    superseded: Uuid,
    thread: Uuid,
}

async fn seed(engine: &Engine, admin: &Actor, user: &str) -> Seeded {
    let mut items: Vec<NewMemory> = (0..4)
        .map(|i| long_term(user, &format!("fact number {i} about kumquat{i}")))
        .collect();
    items.push(NewMemory {
        confidence: Some(0.2),
        ..long_term(user, "maybe moving to Lisbon pendingword")
    });
    let added = engine.add(admin, items, true).await.unwrap();
    let mut ids: Vec<Uuid> = added.iter().map(|m| m.id).collect();
    engine.delete(admin, ids[3]).await.unwrap();
    // A supersede chain: 0 → b → c.
    let b = engine
        .supersede(admin, ids[0], "fact number 0 corrected kumquatb")
        .await
        .unwrap();
    let c = engine
        .supersede(admin, b.memory.id, "fact number 0 corrected again kumquatc")
        .await
        .unwrap();
    ids.extend([b.memory.id, c.memory.id]);
    let agent = Agent::new(engine.clone(), None);
    let thread = agent
        .create_thread(
            admin,
            CreateThread {
                user_id: Some(user.to_string()),
                goal: Some("plan the trip".into()),
            },
        )
        .await
        .unwrap();
    let hello = AppendMessage {
        role: MessageRole::User,
        content: "hello there".into(),
        tool: None,
    };
    agent.append(admin, thread.id, hello).await.unwrap();
    let tool = AppendMessage {
        role: MessageRole::Tool,
        content: String::new(),
        tool: Some(ToolResult {
            name: "search".into(),
            status: "ok".into(),
            summary: Some("found flights".into()),
            payload: Some(serde_json::json!({"raw": "flight list"})),
            ..Default::default()
        }),
    };
    agent.append(admin, thread.id, tool).await.unwrap();
    agent.wait_idle().await;
    engine.commit().await.unwrap();
    Seeded {
        superseded: ids[0],
        ids,
        thread: thread.id,
    }
}

/// What the engine shows of the seeded data, to compare before and after.
async fn snapshot(
    engine: &Engine,
    admin: &Actor,
    s: &Seeded,
) -> (
    Vec<(Memory, Vec<AuditEvent>)>,
    Vec<Uuid>,
    Vec<String>,
    usize,
) {
    let mut memories = Vec::new();
    for id in &s.ids {
        let m = engine.get(admin, *id).await.unwrap();
        let h = engine.history(admin, *id).await.unwrap();
        memories.push((m, h));
    }
    let lineage = engine
        .lineage(admin, s.superseded)
        .await
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    let messages = engine
        .store()
        .thread_messages(s.thread, false)
        .await
        .unwrap();
    let contents = messages
        .iter()
        .map(|m| format!("{:?} {} {:?}", m.role, m.content, m.tool))
        .collect();
    (memories, lineage, contents, messages.len())
}

/// The memories and histories without the one `import` event an import
/// adds at the end of each history (checked here).
fn without_imports(memories: &[(Memory, Vec<AuditEvent>)]) -> Vec<(Memory, Vec<AuditEvent>)> {
    memories
        .iter()
        .map(|(m, h)| {
            let (last, earlier) = h.split_last().expect("a history");
            assert_eq!(last.action, mnemo::store::AuditAction::Import);
            (m.clone(), earlier.to_vec())
        })
        .collect()
}

async fn export_of(engine: &Engine, actor: &Actor, user: &str) -> Vec<u8> {
    let mut out = Vec::new();
    engine.export_user(actor, user, &mut out).await.unwrap();
    out
}

fn manifest_of(data: &[u8]) -> serde_json::Value {
    let text = std::str::from_utf8(data).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[tokio::test]
async fn export_forget_import_gives_back_the_same_user() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    let seeded = seed(&engine, &admin, "alice").await;
    seed(&engine, &admin, "bob").await;
    let before = snapshot(&engine, &admin, &seeded).await;
    let statuses: Vec<Status> = before.0.iter().map(|(m, _)| m.status).collect();
    for s in [
        Status::Active,
        Status::Pending,
        Status::Superseded,
        Status::Deleted,
    ] {
        assert!(statuses.contains(&s), "seed has a {s:?} memory");
    }
    assert_eq!(before.1.len(), 3, "a chain of three");

    let data = export_of(&engine, &admin, "alice").await;
    let text = String::from_utf8(data.clone()).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(manifest["type"], "manifest");
    assert_eq!(manifest["counts"]["memory"], 7);
    assert_eq!(manifest["counts"]["thread"], 1);
    assert_eq!(manifest["counts"]["message"], 2);
    assert_eq!(manifest["counts"]["payload"], 1);
    assert!(!text.contains("bob"), "nothing of another user");

    // A re-import over existing data is refused.
    let err = engine
        .import_user(&admin, None, &data, Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");

    engine.forget_user(&admin, "alice").await.unwrap();
    // Alice was erased: her data comes back only when the admin says so.
    let back = ImportOptions {
        allow_erased: true,
        ..Default::default()
    };
    assert!(engine.get(&admin, seeded.ids[1]).await.is_err());

    // A changed line is refused and writes nothing.
    let tampered = text.replacen("kumquat1", "kumquatX", 1);
    let err = engine
        .import_user(&admin, None, tampered.as_bytes(), back)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    let left = engine
        .store()
        .user_footprint("default", "alice")
        .await
        .unwrap();
    assert_eq!(
        left.memories + left.audit_events + left.threads + left.messages,
        0
    );
    // So is a truncated one (no manifest last).
    let cut = &data[..data.len() / 2];
    assert!(engine.import_user(&admin, None, cut, back).await.is_err());

    let report = engine.import_user(&admin, None, &data, back).await.unwrap();
    assert_eq!(report.indexed, 4, "active and pending memories are indexed");
    assert!(!report.model_changed);
    let after = snapshot(&engine, &admin, &seeded).await;
    assert_eq!(
        without_imports(&after.0),
        before.0,
        "memories and histories (with one `import` event more)"
    );
    assert_eq!(after.1, before.1, "lineage");
    assert_eq!(after.2, before.2, "messages");
    let payload_ref = engine
        .store()
        .thread_messages(seeded.thread, false)
        .await
        .unwrap()
        .into_iter()
        .find_map(|m| m.tool.and_then(|t| t.payload_id))
        .expect("the tool message names its payload");
    let payload = engine
        .store()
        .get_payload(seeded.thread, payload_ref)
        .await
        .unwrap();
    assert_eq!(payload, Some(serde_json::json!({"raw": "flight list"})));
    // Search finds them again, through both legs.
    let hits = engine
        .search(SearchRequest::new(Scope::user("alice"), "kumquat1"))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits.first().map(|h| h.memory.id), Some(seeded.ids[1]));
    let stats = engine.stats().await.unwrap();
    assert_eq!(
        stats.lexical_docs, stats.vector_points,
        "indexes consistent"
    );
    // Exporting again gives as many records of each type, and the import's
    // event in each memory's history.
    let again = export_of(&engine, &admin, "alice").await;
    let mut counts = manifest["counts"].clone();
    counts["audit_event"] = (counts["audit_event"].as_u64().unwrap() + 7).into();
    assert_eq!(manifest_of(&again)["counts"], counts);

    // With replace, an import over existing data erases it first.
    let replace = ImportOptions {
        replace: true,
        ..back
    };
    let report = engine
        .import_user(&admin, None, &data, replace)
        .await
        .unwrap();
    assert!(report.replaced.is_some());
    assert_eq!(
        without_imports(&snapshot(&engine, &admin, &seeded).await.0),
        before.0
    );
}

#[tokio::test]
async fn keys_export_only_what_they_may() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    engine
        .add(&admin, vec![long_term("alice", "alice's secret")], true)
        .await
        .unwrap();
    let bob = Actor {
        id: "bob-key".into(),
        tenant_id: "default".into(),
        user_id: Some("bob".into()),
        admin: false,
    };
    let mut out = Vec::new();
    let err = engine
        .export_user(&bob, "alice", &mut out)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    assert!(out.is_empty());
    let agent = Actor {
        user_id: None,
        ..bob.clone()
    };
    let err = engine
        .export_user(&agent, "alice", &mut out)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    // A user key exports itself; nobody but admin imports.
    let alice = Actor {
        user_id: Some("alice".into()),
        ..bob.clone()
    };
    let data = export_of(&engine, &alice, "alice").await;
    assert!(String::from_utf8_lossy(&data).contains("alice's secret"));
    let err = engine
        .import_user(&alice, Some("carol"), &data, Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    // Another tenant's admin sees nothing of alice.
    let other = Actor {
        tenant_id: "other".into(),
        ..Actor::local("x")
    };
    let foreign = export_of(&engine, &other, "alice").await;
    assert!(!String::from_utf8_lossy(&foreign).contains("secret"));

    // The policy may let agent keys export.
    drop(engine);
    let mut policy = Policy::default();
    policy.export.allow_agent_keys = true;
    let engine = engine_with(dir.path(), Arc::new(manual()), policy).await;
    let data = export_of(&engine, &agent, "alice").await;
    assert!(String::from_utf8_lossy(&data).contains("alice's secret"));
}

#[tokio::test]
async fn the_http_routes_stream_exports_and_import_for_admins() {
    use axum::body::Body;
    use axum::http::{header, Method, Request, StatusCode};
    use serde_json::json;

    use crate::api::{api, call, send};

    let api = api().await;
    let add = json!({"user_id": "ann", "text": "ann keeps bees", "tier": "long_term"});
    let r = call(
        &api.app,
        Method::POST,
        "/v1/memories",
        Some(&api.ann),
        Some(add),
    )
    .await;
    assert!(r.status.is_success(), "{:?}", r.body);
    let r = call(
        &api.app,
        Method::GET,
        "/v1/users/ann/export",
        Some(&api.ann),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let data = r
        .body
        .as_str()
        .expect("JSON Lines, not one JSON value")
        .to_string();
    assert!(data.contains("ann keeps bees"));
    assert_eq!(manifest_of(data.as_bytes())["counts"]["memory"], 1);
    for (key, user) in [(&api.ann, "bob"), (&api.agent, "ann"), (&api.globex, "ann")] {
        let uri = format!("/v1/users/{user}/export");
        let r = call(&api.app, Method::GET, &uri, Some(key), None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    }
    let import = |key: &str, uri: &str, body: String| {
        Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .header(header::CONTENT_TYPE, "application/x-ndjson")
            .body(Body::from(body))
            .unwrap()
    };
    let r = send(
        &api.app,
        import(&api.ann, "/v1/users/ann/import", data.clone()),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = send(
        &api.app,
        import(&api.admin, "/v1/users/ann/import", data.clone()),
    )
    .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "the user has data");
    let tampered = data.replace("bees", "wasps");
    let r = send(
        &api.app,
        import(&api.admin, "/v1/users/ann/import?replace=true", tampered),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = send(
        &api.app,
        import(&api.admin, "/v1/users/ann/import?replace=true", data),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["indexed"], 1);
    assert!(r.body["replaced"].is_object());
    // The replace is a full erasure first: ann's key went with her data.
    assert_eq!(r.body["replaced"]["erased"]["api_keys"], 1);
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?user_id=ann",
        Some(&api.ann),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{:?}", r.body);
    let r = call(
        &api.app,
        Method::GET,
        "/v1/memories?user_id=ann",
        Some(&api.agent),
        None,
    )
    .await;
    assert!(
        r.body.to_string().contains("ann keeps bees"),
        "{:?}",
        r.body
    );
}

/// Six made-up words of five letters, different for every `n`, so that no
/// two memories are near-duplicates (which would reinforce one another).
fn distinct_text(n: u64) -> String {
    let mut x = n
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let words: Vec<String> = (0..6)
        .map(|_| {
            (0..5)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (b'a' + ((x >> 33) % 26) as u8) as char
                })
                .collect()
        })
        .collect();
    format!("the user noted {}", words.join(" "))
}

/// The figures of docs/guide/export-import.md: a user with 10k memories. Run with
/// `cargo test --test integration export::measure -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run explicitly"]
async fn measure_export_and_round_trip_of_10k_memories() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    for batch in 0..100u64 {
        let items = (0..100)
            .map(|i| long_term("heavy", &distinct_text(batch * 100 + i)))
            .collect();
        engine.add(&admin, items, false).await.unwrap();
    }
    engine.commit().await.unwrap();
    let stored = engine.store().stats().await.unwrap();
    let indexed_before: u64 = stored
        .by_tier_status
        .iter()
        .filter(|(_, s, _)| s.is_indexed())
        .map(|(_, _, n)| n)
        .sum();
    println!("stored before export: {:?}", stored.by_tier_status);
    let t = std::time::Instant::now();
    let data = export_of(&engine, &admin, "heavy").await;
    let export_ms = t.elapsed().as_millis();
    engine.forget_user(&admin, "heavy").await.unwrap();
    let t = std::time::Instant::now();
    let back = ImportOptions {
        allow_erased: true,
        ..Default::default()
    };
    let report = engine.import_user(&admin, None, &data, back).await.unwrap();
    let import_ms = t.elapsed().as_millis();
    assert_eq!(report.counts["memory"], 10_000);
    assert_eq!(report.indexed as u64, indexed_before);
    let again = export_of(&engine, &admin, "heavy").await;
    let mut counts = manifest_of(&data)["counts"].clone();
    counts["audit_event"] = (counts["audit_event"].as_u64().unwrap() + 10_000).into();
    assert_eq!(manifest_of(&again)["counts"], counts);
    println!(
        "10k memories: export {} bytes in {export_ms} ms; import (verify, write, embed, index) {import_ms} ms; rows {}",
        data.len(),
        report.rows_written
    );
}

/// A request body that hands out one chunk, then never ends (as a client
/// announcing 1 GiB and sending slowly), counting what was read of it.
struct Endless {
    first: Option<axum::body::Bytes>,
    read: Arc<std::sync::atomic::AtomicUsize>,
}

impl futures_core::Stream for Endless {
    type Item = Result<axum::body::Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match self.first.take() {
            Some(chunk) => {
                self.read
                    .fetch_add(chunk.len(), std::sync::atomic::Ordering::SeqCst);
                std::task::Poll::Ready(Some(Ok(chunk)))
            }
            None => std::task::Poll::Pending,
        }
    }
}

#[tokio::test]
async fn an_import_by_a_non_admin_key_is_refused_before_its_body_is_read() {
    use axum::body::Body;
    use axum::http::{header, Method, Request, StatusCode};

    use crate::api::{api, send};

    let api = api().await;
    for key in [&api.ann, &api.agent] {
        let read = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let body = Endless {
            first: Some(axum::body::Bytes::from_static(b"{\"type\":\"memory\"")),
            read: read.clone(),
        };
        let req = Request::builder()
            .method(Method::POST)
            .uri("/v1/users/ann/import")
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .header(header::CONTENT_TYPE, "application/x-ndjson")
            .header(header::CONTENT_LENGTH, (1u64 << 30).to_string())
            .body(Body::from_stream(body))
            .unwrap();
        let r = tokio::time::timeout(std::time::Duration::from_secs(10), send(&api.app, req))
            .await
            .expect("the server waited for the 1 GiB body before answering");
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
        assert_eq!(
            read.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "the server read the body of a refused import"
        );
    }
}

/// An export's record lines (without the manifest), each a JSON object.
fn records_of(data: &[u8]) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let text = std::str::from_utf8(data).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    lines[..lines.len() - 1]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Records sealed into an export again (a consistent manifest: counts and
/// sha256), as a crafted file would be.
fn sealed(records: &[serde_json::Map<String, serde_json::Value>], like: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut counts = manifest_of(like)["counts"].as_object().unwrap().clone();
    for n in counts.values_mut() {
        *n = 0.into();
    }
    for r in records {
        let ty = r["type"].as_str().unwrap().to_string();
        let n = counts[&ty].as_u64().unwrap() + 1;
        counts.insert(ty, n.into());
        out.extend(serde_json::to_vec(r).unwrap());
        out.push(b'\n');
    }
    let mut manifest = manifest_of(like);
    manifest["counts"] = counts.into();
    manifest["sha256"] = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&out)).into();
    out.extend(manifest.to_string().as_bytes());
    out.push(b'\n');
    out
}

/// Rows in every table of the store.
async fn all_rows(engine: &Engine) -> Vec<u64> {
    let mut n = Vec::new();
    for table in mnemo::store::tables::TABLES {
        n.push(engine.store().count_rows(table).await.unwrap());
    }
    n
}

#[tokio::test]
async fn crafted_exports_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let admin = Actor::local("admin");
    seed(&engine, &admin, "alice").await;
    // Another tenant's user, whose thread and memories a file could name.
    let globex = Actor {
        tenant_id: "globex".into(),
        ..Actor::local("globex-admin")
    };
    let bob = seed(&engine, &globex, "bob").await;
    let (bob_thread, bob_memory) = (bob.thread.to_string(), bob.ids[1].to_string());
    let data = export_of(&engine, &admin, "alice").await;
    let records = records_of(&data);
    let first = |ty: &str| records.iter().position(|r| r["type"] == ty).unwrap();
    engine.forget_user(&admin, "alice").await.unwrap();

    // An erased user is not brought back by accident.
    let before = all_rows(&engine).await;
    let err = engine
        .import_user(&admin, None, &data, Default::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert!(err.to_string().contains("allow_erased"), "{err}");
    assert_eq!(
        all_rows(&engine).await,
        before,
        "an erased user: rows written"
    );

    let mut cases: Vec<(&str, Vec<serde_json::Map<String, serde_json::Value>>)> = Vec::new();
    let mut bad_id = records.clone();
    bad_id[first("memory")].insert("id".into(), "not-a-uuid".into());
    cases.push(("a memory id that is not a UUID", bad_id));
    let mut bad_status = records.clone();
    bad_status[first("memory")].insert("status".into(), "sleeping".into());
    cases.push(("an unknown status", bad_status));
    let mut bad_hash = records.clone();
    bad_hash[first("memory")].insert("text_sha256".into(), "00".into());
    cases.push(("a text_sha256 that is not the text's", bad_hash));
    let mut dangling = records.clone();
    dangling[first("audit_event")].insert("memory_id".into(), Uuid::now_v7().to_string().into());
    cases.push((
        "an audit event (with texts) of a memory not in the file",
        dangling,
    ));
    let mut foreign_thread = records.clone();
    foreign_thread[first("message")].insert("thread_id".into(), bob_thread.clone().into());
    cases.push(("a message on another tenant's thread", foreign_thread));
    // The thread itself renamed to the foreign id, with its messages and
    // payloads: consistent within the file, refused by the store.
    let own_thread = records[first("thread")]["id"].clone();
    let mut taken_thread = records.clone();
    for r in taken_thread.iter_mut() {
        for col in ["id", "thread_id"] {
            if r["type"] != "memory" && r.get(col) == Some(&own_thread) {
                r.insert(col.into(), bob_thread.clone().into());
            }
        }
    }
    cases.push(("a thread with another tenant's thread id", taken_thread));
    let mut foreign_memory = records.clone();
    let e = first("audit_event");
    foreign_memory[e].insert("memory_id".into(), bob_memory.clone().into());
    foreign_memory[e].insert("before_text".into(), serde_json::Value::Null);
    foreign_memory[e].insert("after_text".into(), serde_json::Value::Null);
    cases.push(("an audit event on another tenant's memory", foreign_memory));
    let mut supersedes_foreign = records.clone();
    supersedes_foreign[first("memory")].insert("supersedes".into(), bob_memory.clone().into());
    cases.push((
        "a memory superseding another tenant's memory",
        supersedes_foreign,
    ));

    let before = all_rows(&engine).await;
    for (what, crafted) in &cases {
        let file = sealed(crafted, &data);
        let err = engine
            .import_user(&admin, Some("carol"), &file, Default::default())
            .await
            .expect_err(what);
        assert!(
            matches!(err, Error::Invalid { .. } | Error::Conflict(_)),
            "{what}: {err:?}"
        );
        assert!(!err.to_string().contains("kumquat"), "{what}: {err}");
        assert_eq!(all_rows(&engine).await, before, "{what}: rows written");
    }
    // With `replace`, a file naming someone else's ids is refused before
    // the user's own data is erased.
    engine
        .add(&admin, vec![long_term("erin", "erin keeps her data")], true)
        .await
        .unwrap();
    let replace = ImportOptions {
        replace: true,
        ..Default::default()
    };
    let (what, crafted) = &cases[5];
    let before = all_rows(&engine).await;
    let err = engine
        .import_user(&admin, Some("erin"), &sealed(crafted, &data), replace)
        .await
        .expect_err(what);
    assert!(matches!(err, Error::Conflict(_)), "{what}: {err:?}");
    assert_eq!(
        all_rows(&engine).await,
        before,
        "{what}: erin's data erased"
    );

    // Bob's thread is as it was.
    let messages = engine
        .store()
        .thread_messages(bob.thread, false)
        .await
        .unwrap();
    assert_eq!(messages.len(), 2);

    // The untouched records, sealed the same way, import when the admin
    // says the erased user may come back.
    let options = mnemo::service::export::ImportOptions {
        allow_erased: true,
        ..Default::default()
    };
    let report = engine
        .import_user(&admin, None, &sealed(&records, &data), options)
        .await
        .unwrap();
    assert_eq!(report.counts["memory"], 7);
    // The import is on record in every imported memory's history.
    let history = engine.history(&admin, bob.ids[1]).await;
    assert!(
        history.is_err(),
        "another tenant's memory stays out of reach"
    );
    let id = records[first("memory")]["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let history = engine.history(&admin, id).await.unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.action, mnemo::store::AuditAction::Import);
    assert_eq!(last.actor, "admin");
    assert_eq!(last.details["allow_erased"], true);
}
