//! MCP end to end. Over stdio: rmcp's own client drives the real `mnemo mcp`
//! binary (real embedder, temporary data directory). Over streamable HTTP:
//! JSON-RPC posted to `/mcp` of the API router with `oneshot` (hashing
//! embedder; rmcp's HTTP client needs reqwest, whose features would rebuild
//! tonic and qdrant-edge for the test profile). The same scenarios run on
//! both: tool listing and schemas, remember → recall → pending → confirm,
//! scope enforcement, bad arguments, resources.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use mnemo::api::{app, AppState, AuthMode};
use mnemo::store::Role;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tower::ServiceExt as _;

use crate::common::*;

type Client = RunningService<RoleClient, ()>;

const TOOLS: [&str; 8] = [
    "confirm_memory",
    "forget_memory",
    "get_context",
    "list_pending",
    "recall",
    "reject_memory",
    "remember",
    "update_memory",
];

/// One MCP connection, whatever the transport.
trait Mcp {
    /// `tools/list`, each tool as its JSON.
    async fn tools(&self) -> Vec<Value>;
    /// `tools/call`: `(is_error, text)`.
    async fn call(&self, tool: &str, args: Value) -> (bool, String);
    /// `resources/read`: the text of the first content.
    async fn read(&self, uri: &str) -> String;
}

impl Mcp for Client {
    async fn tools(&self) -> Vec<Value> {
        let tools = self.list_all_tools().await.expect("tools/list");
        tools
            .iter()
            .map(|t| serde_json::to_value(t).unwrap())
            .collect()
    }

    async fn call(&self, tool: &str, args: Value) -> (bool, String) {
        let params = CallToolRequestParams::new(tool.to_string())
            .with_arguments(args.as_object().expect("object arguments").clone());
        let r = self
            .call_tool(params)
            .await
            .unwrap_or_else(|e| panic!("{tool}: no tool result: {e}"));
        let text = r
            .content
            .iter()
            .filter_map(|c| c.as_text())
            .map(|t| t.text.clone())
            .collect::<Vec<_>>()
            .join("\n");
        (r.is_error == Some(true), text)
    }

    async fn read(&self, uri: &str) -> String {
        let r = self
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap_or_else(|e| panic!("{uri}: {e}"));
        match &r.contents[0] {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => panic!("{uri}: not text: {other:?}"),
        }
    }
}

/// JSON-RPC over `POST /mcp`, as a streamable HTTP client sends it.
struct HttpMcp {
    app: Router,
    headers: Vec<(&'static str, String)>,
    ids: AtomicU64,
}

impl HttpMcp {
    fn new(app: &Router, key: Option<&str>, user: Option<&str>) -> Self {
        let mut headers = Vec::new();
        if let Some(k) = key {
            headers.push(("authorization", format!("Bearer {k}")));
        }
        if let Some(u) = user {
            headers.push(("x-mnemo-user", u.to_string()));
        }
        HttpMcp {
            app: app.clone(),
            headers,
            ids: AtomicU64::new(1),
        }
    }

    async fn post(&self, method: &str, params: Value) -> (StatusCode, Value) {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut req = Request::post("/mcp")
            .header("host", "127.0.0.1:8420")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in &self.headers {
            req = req.header(*name, value);
        }
        let res = self
            .app
            .clone()
            .oneshot(req.body(Body::from(body.to_string())).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        if status == StatusCode::OK {
            assert_eq!(value["id"], id, "{value}");
        }
        (status, value)
    }

    async fn result(&self, method: &str, params: Value) -> Value {
        let (status, v) = self.post(method, params).await;
        assert_eq!(status, StatusCode::OK, "{method}: {v}");
        assert!(v.get("error").is_none(), "{method}: {v}");
        v["result"].clone()
    }
}

impl Mcp for HttpMcp {
    async fn tools(&self) -> Vec<Value> {
        let r = self.result("tools/list", json!({})).await;
        assert!(r.get("nextCursor").is_none(), "one page: {r}");
        r["tools"].as_array().expect("tools").clone()
    }

    async fn call(&self, tool: &str, args: Value) -> (bool, String) {
        let r = self
            .result("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        let text = r["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        (r["isError"] == true, text)
    }

    async fn read(&self, uri: &str) -> String {
        let r = self.result("resources/read", json!({"uri": uri})).await;
        r["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{uri}: {r}"))
            .to_string()
    }
}

async fn ok(c: &impl Mcp, tool: &str, args: Value) -> String {
    let (is_error, text) = c.call(tool, args).await;
    assert!(!is_error, "{tool} failed: {text}");
    assert!(text.starts_with("status: ok"), "{tool}: {text}");
    text
}

async fn tool_error(c: &impl Mcp, tool: &str, args: Value) -> String {
    let (is_error, text) = c.call(tool, args).await;
    assert!(is_error, "{tool} should have failed: {text}");
    text
}

/// The first `id=<uuid>` of a result.
fn id_of(text: &str) -> String {
    let start = text.find("id=").expect("an id in the result") + 3;
    text[start..start + 36].to_string()
}

/// Every tool is there, described, with a strict schema whose parameters
/// are described and which has no way to name a user.
async fn tools_are_listed_with_schemas(c: &impl Mcp) {
    let tools = c.tools().await;
    let names: BTreeSet<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, TOOLS.into_iter().collect());
    for t in &tools {
        let name = &t["name"];
        let d = t["description"].as_str().unwrap_or("");
        assert!(d.len() > 80, "{name}: description too thin: {d}");
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(
            schema["additionalProperties"], false,
            "{name}: unknown arguments must be refused: {schema}"
        );
        let props = schema["properties"].as_object().expect("properties");
        assert!(!props.contains_key("user_id"), "{name}");
        for (param, p) in props {
            let described = p.get("description").and_then(Value::as_str).unwrap_or("");
            assert!(
                described.len() > 10,
                "{name}.{param} has no description: {schema}"
            );
        }
    }
    let remember = tools.iter().find(|t| t["name"] == "remember").unwrap();
    let schema = &remember["inputSchema"];
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["kind", "text"].into_iter().collect());
    assert!(
        schema.to_string().contains("instruction"),
        "kind enum: {schema}"
    );
}

/// remember → recall, low confidence → pending → confirm → recalled; context;
/// update and forget; resources. Returns the id of the confirmed memory.
async fn remember_recall_confirm(c: &impl Mcp, drink_query: &str) -> String {
    assert_eq!(
        ok(c, "recall", json!({"query": "green tea"})).await,
        "status: ok · no memories found: not an error, do not retry"
    );
    let text = ok(
        c,
        "remember",
        json!({"text": "The user prefers green tea", "kind": "preference", "importance": 0.8}),
    )
    .await;
    assert!(text.contains("created"), "{text}");
    assert!(text.contains("· active ·"), "{text}");
    let tea = id_of(&text);

    let found = ok(c, "recall", json!({"query": drink_query, "top_k": 3})).await;
    assert!(found.contains(&format!("1. id={tea}")), "{found}");
    assert!(found.contains("The user prefers green tea"), "{found}");

    // A guess: pending, not recalled until confirmed.
    let text = ok(
        c,
        "remember",
        json!({"text": "The user owns a grey cat named Miso", "kind": "fact", "confidence": 0.3}),
    )
    .await;
    assert!(text.contains("PENDING"), "{text}");
    let cat = id_of(&text);
    let found = ok(c, "recall", json!({"query": "grey cat Miso"})).await;
    assert!(!found.contains(&cat), "pending memory recalled: {found}");
    let pending = ok(c, "list_pending", json!({})).await;
    assert!(pending.contains(&format!("id={cat}")), "{pending}");
    assert!(pending.contains("1 pending candidate"), "{pending}");
    let text = ok(c, "confirm_memory", json!({"id": cat})).await;
    assert!(text.contains("confirmed"), "{text}");
    let found = ok(c, "recall", json!({"query": "grey cat Miso"})).await;
    assert!(found.contains(&format!("id={cat}")), "{found}");
    assert!(ok(c, "list_pending", json!({}))
        .await
        .contains("no pending memories"));
    // Confirming twice is a conflict, as a tool error.
    let err = tool_error(c, "confirm_memory", json!({"id": cat})).await;
    assert!(err.starts_with("status: error · conflict"), "{err}");

    // Reject a second guess.
    let text = ok(
        c,
        "remember",
        json!({"text": "The user might live in Oslo", "kind": "fact", "confidence": 0.2}),
    )
    .await;
    let oslo = id_of(&text);
    assert!(ok(c, "reject_memory", json!({"id": oslo}))
        .await
        .contains("rejected"));

    let block = ok(
        c,
        "get_context",
        json!({"query": "what should I serve the user to drink", "model_context_tokens": 8000}),
    )
    .await;
    assert!(block.contains("green tea"), "{block}");
    assert!(block.contains("of 800 tokens"), "{block}");

    // Update, then forget (soft), the cat.
    let text = ok(
        c,
        "update_memory",
        json!({"id": cat, "text": "The user owns a grey cat named Mochi"}),
    )
    .await;
    assert!(text.contains("Mochi"), "{text}");
    let text = ok(c, "forget_memory", json!({"id": cat})).await;
    assert!(text.contains("· deleted ·"), "{text}");
    let found = ok(c, "recall", json!({"query": "grey cat Mochi"})).await;
    assert!(!found.contains(&cat), "forgotten memory recalled: {found}");

    let profile = c.read(mnemo::mcp::PROFILE_URI).await;
    assert!(profile.contains("## preference (1)"), "{profile}");
    assert!(profile.contains("The user prefers green tea"), "{profile}");
    assert!(
        !profile.contains("Mochi") && !profile.contains("Oslo"),
        "{profile}"
    );
    let policy = c.read(mnemo::mcp::POLICY_URI).await;
    assert!(policy.contains("pending_below_confidence"), "{policy}");
    tea
}

/// Malformed or out-of-range arguments are tool errors with a clear message,
/// and nothing is stored.
async fn bad_arguments_are_refused(c: &impl Mcp) {
    let before = c.read(mnemo::mcp::PROFILE_URI).await;
    let err = tool_error(c, "remember", json!({"text": "x is y"})).await;
    assert!(err.contains("missing field `kind`"), "{err}");
    let err = tool_error(c, "remember", json!({"text": "x is y", "kind": "colour"})).await;
    assert!(err.contains("unknown variant `colour`"), "{err}");
    let err = tool_error(
        c,
        "remember",
        json!({"text": "x is y", "kind": "fact", "user_id": "someone-else"}),
    )
    .await;
    assert!(err.contains("unknown field `user_id`"), "{err}");
    let err = tool_error(
        c,
        "remember",
        json!({"text": "x is y", "kind": "fact", "importance": 2.0}),
    )
    .await;
    assert!(
        err.starts_with("status: error · invalid_argument · invalid importance"),
        "{err}"
    );
    let err = tool_error(c, "remember", json!({"text": "   ", "kind": "fact"})).await;
    assert!(err.contains("text must not be empty"), "{err}");
    let err = tool_error(c, "recall", json!({"query": "tea", "top_k": 0})).await;
    assert!(err.contains("top_k must be between 1 and"), "{err}");
    let err = tool_error(c, "recall", json!({"query": "tea", "tiers": ["working"]})).await;
    assert!(err.contains("unknown variant `working`"), "{err}");
    let err = tool_error(
        c,
        "get_context",
        json!({"query": "tea", "model_context_tokens": 10}),
    )
    .await;
    assert!(
        err.contains("model_context_tokens must be between"),
        "{err}"
    );
    let err = tool_error(c, "forget_memory", json!({"id": "not-a-uuid"})).await;
    assert!(err.contains("failed to deserialize parameters"), "{err}");
    let err = tool_error(c, "update_memory", json!({"id": uuid::Uuid::now_v7()})).await;
    assert!(err.contains("nothing to change"), "{err}");
    assert_eq!(c.read(mnemo::mcp::PROFILE_URI).await, before);
}

/// Another user's memory is invisible and untouchable by id.
async fn cannot_reach(c: &impl Mcp, others_id: &str, others_text: &str) {
    for tool in ["forget_memory", "confirm_memory", "reject_memory"] {
        let err = tool_error(c, tool, json!({"id": others_id})).await;
        assert!(
            err.starts_with("status: error · not_found"),
            "{tool}: {err}"
        );
    }
    let err = tool_error(
        c,
        "update_memory",
        json!({"id": others_id, "text": "hijacked"}),
    )
    .await;
    assert!(err.starts_with("status: error · not_found"), "{err}");
    let found = ok(c, "recall", json!({"query": others_text})).await;
    assert!(!found.contains(others_id), "{found}");
    let profile = c.read(mnemo::mcp::PROFILE_URI).await;
    assert!(!profile.contains(others_id), "{profile}");
}

// ----- stdio: the real binary ---------------------------------------------

struct StdioSession {
    client: Client,
    child: tokio::process::Child,
}

async fn stdio_session(
    data: &std::path::Path,
    log: &std::path::Path,
    args: &[&str],
) -> StdioSession {
    let assets = crate::real_embedder::ensure_assets();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("mcp")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .arg("--assets-dir")
        .arg(&assets)
        .env("MNEMO_LOG", "info")
        .env_remove("MNEMO_MCP_KEY")
        .env_remove("MNEMO_MCP_USER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = tokio::time::timeout(Duration::from_secs(180), ().serve((stdout, stdin)))
        .await
        .expect("handshake within 180 s")
        .unwrap_or_else(|e| {
            panic!(
                "MCP handshake failed: {e}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            )
        });
    StdioSession { client, child }
}

impl StdioSession {
    /// Closes stdin; the server commits and exits 0.
    async fn close(mut self, log: &std::path::Path) {
        self.client.cancel().await.ok();
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("mnemo mcp exits after its input closes")
            .unwrap();
        let text = std::fs::read_to_string(log).unwrap();
        assert!(status.success(), "exit {status}: {text}");
        assert!(text.contains("MCP session ended"), "{text}");
    }
}

fn keys_create(data: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["keys", "create", "--tenant", "default"])
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[tokio::test]
async fn stdio_binary_tools_scope_and_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("mcp.log");

    // Neither --user nor --key: refused before anything opens.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["mcp", "--data-dir"])
        .arg(&data)
        .env_remove("MNEMO_MCP_KEY")
        .env_remove("MNEMO_MCP_USER")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--user"));

    // A local session for alice.
    let s = stdio_session(&data, &log, &["--user", "alice"]).await;
    tools_are_listed_with_schemas(&s.client).await;
    let tea = remember_recall_confirm(&s.client, "what drink does the user like").await;
    bad_arguments_are_refused(&s.client).await;
    s.close(&log).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("green tea") && !text.contains("Miso"),
        "memory text leaked into the logs: {text}"
    );

    // Bob, through a user key bound to him: alice's memory is out of reach.
    let bob = keys_create(&data, &["--role", "user", "--user", "bob"]);
    let s = stdio_session(&data, &log, &["--key", bob.as_str()]).await;
    cannot_reach(&s.client, &tea, "green tea").await;
    s.close(&log).await;

    // An agent key must name the user; a user key cannot name another.
    let agent = keys_create(&data, &["--role", "agent"]);
    for args in [
        vec!["--key", agent.as_str()],
        vec!["--key", bob.as_str(), "--user", "alice"],
        vec!["--key", "mnemo_forged"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .arg("mcp")
            .args(&args)
            .arg("--data-dir")
            .arg(&data)
            .arg("--assets-dir")
            .arg(crate::real_embedder::ensure_assets())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: nothing on the protocol channel"
        );
    }

    // Alice's memory survived bob's attempts, across restarts.
    let s = stdio_session(&data, &log, &["--key", agent.as_str(), "--user", "alice"]).await;
    let found = ok(&s.client, "recall", json!({"query": "green tea"})).await;
    assert!(found.contains(&format!("id={tea}")), "{found}");
    s.close(&log).await;
}

// ----- streamable HTTP: /mcp of the API router ----------------------------

#[tokio::test]
async fn http_tools_scope_and_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let key = |user: Option<&'static str>, role: Role| {
        let engine = engine.clone();
        async move {
            mnemo::service::keys::create(engine.store().as_ref(), "acme", user, role, t0())
                .await
                .unwrap()
                .1
        }
    };
    let ann_key = key(Some("ann"), Role::User).await;
    let agent_key = key(None, Role::Agent).await;
    let router = app(AppState::new(engine, AuthMode::Keys));

    let ann = HttpMcp::new(&router, Some(&ann_key), None);
    let init = ann
        .result(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        )
        .await;
    assert_eq!(init["serverInfo"]["name"], "mnemo", "{init}");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(init["capabilities"]["resources"].is_object(), "{init}");
    assert!(init["instructions"]
        .as_str()
        .unwrap()
        .contains("get_context"));
    tools_are_listed_with_schemas(&ann).await;
    let tea = remember_recall_confirm(&ann, "green tea").await;
    bad_arguments_are_refused(&ann).await;

    // The agent key acting for bob (same tenant) cannot reach ann's memory.
    let bob = HttpMcp::new(&router, Some(&agent_key), Some("bob"));
    ok(
        &bob,
        "remember",
        json!({"text": "Bob drinks black coffee", "kind": "preference"}),
    )
    .await;
    cannot_reach(&bob, &tea, "green tea").await;
    // ...and ann does not see bob's.
    let found = ok(&ann, "recall", json!({"query": "black coffee"})).await;
    assert!(!found.contains("Bob"), "{found}");
    let found = ok(&ann, "recall", json!({"query": "green tea"})).await;
    assert!(found.contains(&format!("id={tea}")), "{found}");
    assert!(ann
        .read(mnemo::mcp::PROFILE_URI)
        .await
        .contains("green tea"));

    // Identity comes from the connection: no key, a forged key, an agent key
    // that names no user, a user key naming another user are all refused
    // before any tool runs, with the REST API's error shape.
    for (key, user, status, code) in [
        (
            None,
            Some("ann"),
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
        ),
        (
            Some("mnemo_forged"),
            None,
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
        ),
        (
            Some(agent_key.as_str()),
            None,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
        ),
        (
            Some(ann_key.as_str()),
            Some("bob"),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
    ] {
        let c = HttpMcp::new(&router, key, user);
        let (s, body) = c
            .post(
                "tools/call",
                json!({"name": "recall", "arguments": {"query": "green tea"}}),
            )
            .await;
        assert_eq!(s, status, "{key:?} / {user:?}: {body}");
        assert_eq!(body["error"]["code"], code, "{body}");
    }
}
