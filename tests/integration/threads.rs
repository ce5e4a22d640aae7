//! The thin agent loop: threads, messages and tool summaries, isolation, the
//! prompt endpoint's shape and memory budget, turns (503 without a model,
//! 502 when it fails, 409 for a second concurrent turn) with a scripted
//! model, extraction into the lifecycle, compaction triggers and cooldown on
//! a manual clock, and the extraction/compaction ordering under concurrency.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use axum::http::{Method, StatusCode};
use chrono::Duration;
use mnemo::agent::compaction::Trigger;
use mnemo::agent::extract::{Candidate, Extractor};
use mnemo::agent::threads::{AppendMessage, CreateThread, PromptRequest};
use mnemo::agent::Agent;
use mnemo::api::{AppState, AuthMode};
use mnemo::domain::chat::ChatMessage;
use mnemo::domain::thread::{ExtractionState, MessageRole};
use mnemo::domain::tokens::{TokenCounter, Tokenizer};
use mnemo::domain::Actor;
use mnemo::domain::{Kind, Status};
use mnemo::llm::{ChatModel, Completion, CompletionOptions, LlmError};
use mnemo::policy::Policy;
use mnemo::store::{ListQuery, MemoryStore, Role};
use mnemo::Engine;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::{Notify, Semaphore};
use uuid::Uuid;

use crate::api::{api, api_with_state, assert_error, call, key, Api};
use crate::common::*;

/// A chat model that answers "echo: <last message>", optionally waiting for
/// a permit first (to hold a turn open) or failing like a dead endpoint.
struct Scripted {
    window: usize,
    gate: Option<Semaphore>,
    entered: Notify,
    fail: bool,
    calls: AtomicUsize,
}

impl Scripted {
    fn new(window: usize) -> Self {
        Scripted {
            window,
            gate: None,
            entered: Notify::new(),
            fail: false,
            calls: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn model(&self) -> &str {
        "scripted"
    }
    fn context_tokens(&self) -> usize {
        self.window
    }
    async fn complete(
        &self,
        messages: &[ChatMessage],
        _: &CompletionOptions,
    ) -> Result<Completion, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.entered.notify_one();
        if let Some(gate) = &self.gate {
            gate.acquire().await.unwrap().forget();
        }
        if self.fail {
            return Err(LlmError::Unreachable("connection refused".into()));
        }
        let last = messages.last().map(|m| m.content.as_str()).unwrap_or("");
        Ok(Completion {
            content: format!("echo: {last}"),
            prompt_tokens: None,
            completion_tokens: None,
        })
    }
}

async fn post(api: &Api, uri: &str, key: &str, body: Value) -> crate::api::Reply {
    call(&api.app, Method::POST, uri, Some(key), Some(body)).await
}

async fn new_thread(api: &Api, key: &str, body: Value) -> String {
    let r = post(api, "/v1/threads", key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_str().unwrap().to_string()
}

async fn turn(api: &Api, id: &str, message: &str) -> crate::api::Reply {
    let uri = format!("/v1/threads/{id}/turns");
    post(api, &uri, &api.ann, json!({"message": message})).await
}

async fn get_thread(api: &Api, id: &str) -> crate::api::Reply {
    let uri = format!("/v1/threads/{id}");
    call(&api.app, Method::GET, &uri, Some(&api.ann), None).await
}

fn user_actor(tenant: &str, user: &str) -> Actor {
    Actor {
        tenant_id: tenant.into(),
        user_id: Some(user.into()),
        admin: false,
        ..Actor::local("test-key")
    }
}

/// Appends a message through the agent (as a client of the engine would).
async fn say(agent: &Agent, actor: &Actor, id: Uuid, role: MessageRole, text: &str) {
    agent.append(actor, id, said(role, text)).await.unwrap();
}

fn said(role: MessageRole, content: &str) -> AppendMessage {
    AppendMessage {
        role,
        content: content.into(),
        tool: None,
    }
}

#[tokio::test]
async fn threads_messages_tool_summaries_and_isolation() {
    let api = api().await;
    let bob = key(&api.engine, "acme", Some("bob"), Role::User).await;
    let id = new_thread(&api, &api.ann, json!({"goal": "Plan a trip to Kyoto"})).await;
    // A user key may not open a thread for someone else.
    let r = post(&api, "/v1/threads", &api.ann, json!({"user_id": "bob"})).await;
    assert_error(&r, StatusCode::FORBIDDEN, "forbidden");
    let r = post(&api, "/v1/threads", &api.agent, json!({})).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");

    let msgs = format!("/v1/threads/{id}/messages");
    let r = post(
        &api,
        &msgs,
        &api.ann,
        json!({"role": "user", "content": "Find me a ryokan"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["extraction_state"], "pending");
    let r = post(
        &api,
        &msgs,
        &api.ann,
        json!({"role": "tool", "tool": {
            "name": "hotel_search", "status": "ok", "summary": "3 ryokans found\nin Higashiyama",
            "key_fields": {"cheapest": "Ryokan Sawaya", "count": 3},
            "payload": {"results": [{"name": "Ryokan Sawaya", "raw_html": "<div>very long page</div>"}]}
        }}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let content = r.body["content"].as_str().unwrap();
    assert!(
        content.starts_with("[tool hotel_search · ok] 3 ryokans found in Higashiyama (cheapest=Ryokan Sawaya, count=3) [full payload: "),
        "{content}"
    );
    assert!(
        !content.contains("raw_html"),
        "the history keeps no raw payload"
    );
    assert_eq!(r.body["extraction_state"], "skipped");
    let payload_id = r.body["tool"]["payload_id"].as_str().unwrap().to_string();
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/threads/{id}/payloads/{payload_id}"),
        Some(&api.ann),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body["results"][0]["raw_html"],
        "<div>very long page</div>"
    );
    // Raw tool output without a summary: its first line summarises it.
    let r = post(
        &api,
        &msgs,
        &api.ann,
        json!({"role": "tool", "content": "HTTP 200\n{\"big\": \"blob\"}"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(r.body["content"]
        .as_str()
        .unwrap()
        .starts_with("[tool tool · ok] HTTP 200 [full payload: "));
    for bad in [
        json!({"role": "user", "content": ""}),
        json!({"role": "user", "content": "x", "tool": {"name": "t", "status": "ok"}}),
        json!({"role": "system", "content": "x"}),
    ] {
        let r = post(&api, &msgs, &api.ann, bad.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad} → {}", r.body);
    }
    let r = post(
        &api,
        &msgs,
        &api.agent,
        json!({"role": "assistant", "content": "Here are three."}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);

    let r = get_thread(&api, &id).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["goal"], "Plan a trip to Kyoto");
    assert_eq!(r.body["user_id"], "ann");
    let roles: Vec<&str> = r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "tool", "tool", "assistant"]);

    // Another user's key, another tenant's key, an unknown id: all 404.
    for (k, uri) in [
        (&bob, format!("/v1/threads/{id}")),
        (&api.globex, format!("/v1/threads/{id}")),
        (&api.ann, format!("/v1/threads/{}", Uuid::now_v7())),
    ] {
        let r = call(&api.app, Method::GET, &uri, Some(k), None).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    }
    for (uri, body) in [
        (msgs.clone(), json!({"role": "user", "content": "hi"})),
        (
            format!("/v1/threads/{id}/prompt"),
            json!({"message": "hi", "model_context_tokens": 4096}),
        ),
        (format!("/v1/threads/{id}/turns"), json!({"message": "hi"})),
    ] {
        let r = post(&api, &uri, &bob, body).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    }
    let r = call(
        &api.app,
        Method::GET,
        &format!("/v1/threads/{id}/payloads/{payload_id}"),
        Some(&bob),
        None,
    )
    .await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn the_prompt_endpoint_has_the_exact_shape_and_keeps_the_memory_budget() {
    let api = api().await;
    let memories: Vec<Value> = (0..40)
        .map(|i| {
            json!({"user_id": "ann", "text": format!(
                "Ann's tea note {i}: she drinks sencha, gyokuro and matcha from Uji when travelling to Kyoto, \
                 never with sugar, and she keeps a list of tea houses number {i}")})
        })
        .collect();
    let r = post(
        &api,
        "/v1/memories",
        &api.agent,
        json!({"memories": memories, "refresh": true}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = new_thread(
        &api,
        &api.agent,
        json!({"user_id": "ann", "goal": "Plan a trip to Kyoto in April"}),
    )
    .await;
    let history = [
        ("user", "We land in Osaka on April 3."),
        ("assistant", "Noted, April 3 in Osaka."),
        ("user", "Book two nights near Gion."),
        ("assistant", "I will look for rooms near Gion."),
        ("user", "Also a tea ceremony."),
        ("assistant", "A tea ceremony in Uji or Kyoto?"),
    ];
    for (role, content) in history {
        let r = post(
            &api,
            &format!("/v1/threads/{id}/messages"),
            &api.ann,
            json!({"role": role, "content": content}),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let message = "Which tea should I drink in Kyoto?";
    let counter = Tokenizer::Cl100kBase;
    for window in [256usize, 2000, 8192, 128_000] {
        let r = post(
            &api,
            &format!("/v1/threads/{id}/prompt"),
            &api.ann,
            json!({"message": message, "model_context_tokens": window}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let keys: BTreeSet<&str> = r
            .body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, BTreeSet::from(["messages", "tokens", "memory_ids"]));
        let tokens = r.body["tokens"].as_object().unwrap();
        let names: BTreeSet<&str> = tokens.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            BTreeSet::from([
                "total",
                "system",
                "goal",
                "summary",
                "history",
                "message",
                "memories",
                "budget_memories"
            ])
        );
        let budget = (window as f64 * 0.1).floor() as u64;
        assert_eq!(tokens["budget_memories"].as_u64().unwrap(), budget);
        let used = tokens["memories"].as_u64().unwrap();
        assert!(used <= budget, "window {window}: {used} > {budget}");
        let messages = r.body["messages"].as_array().unwrap();
        let contents: Vec<&str> = messages
            .iter()
            .map(|m| m["content"].as_str().unwrap())
            .collect();
        // The memory block, counted with the real tokenizer, is what the breakdown says.
        let block = contents
            .iter()
            .find(|c| c.starts_with(mnemo::domain::context::FRAMING));
        match block {
            Some(b) => assert_eq!(counter.count(b) as u64, used),
            None => assert_eq!(used, 0),
        }
        assert_eq!(
            r.body["memory_ids"].as_array().unwrap().is_empty(),
            used == 0
        );
        assert_eq!(messages[0]["role"], "system");
        assert!(contents
            .iter()
            .any(|c| c.contains("Plan a trip to Kyoto in April")));
        for (_, content) in &history[3..] {
            assert!(
                contents.contains(content),
                "window {window}: last turns kept whole"
            );
        }
        assert_eq!(*contents.last().unwrap(), message);
        assert_eq!(messages.last().unwrap()["role"], "user");
        if window >= 8192 {
            assert!(used > 0, "a big window has room for memories");
            assert_eq!(contents.len(), 1 + 1 + 1 + history.len() + 1);
        }
    }
    let r = post(
        &api,
        &format!("/v1/threads/{id}/prompt"),
        &api.ann,
        json!({"message": "hi", "model_context_tokens": 10}),
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_argument");
}

#[tokio::test]
async fn turns_without_a_model_are_503_and_keep_the_message() {
    let api = api().await;
    let id = new_thread(&api, &api.ann, json!({})).await;
    let r = turn(&api, &id, "Remember that I am vegetarian.").await;
    assert_error(&r, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no chat model is configured"));
    let r = get_thread(&api, &id).await;
    let messages = r.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["content"], "Remember that I am vegetarian.");
    // The prompt endpoint needs no model.
    let r = post(
        &api,
        &format!("/v1/threads/{id}/prompt"),
        &api.ann,
        json!({"message": "hi", "model_context_tokens": 4096}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn a_failing_model_is_502_and_the_message_stays() {
    let model = Arc::new(Scripted {
        fail: true,
        ..Scripted::new(4096)
    });
    let m = model.clone();
    let api = api_with_state(Policy::default(), AuthMode::Keys, |s| turns_only(s, m)).await;
    let id = new_thread(&api, &api.ann, json!({})).await;
    let r = turn(&api, &id, "Are you there?").await;
    assert_error(&r, StatusCode::BAD_GATEWAY, "bad_gateway");
    let r = get_thread(&api, &id).await;
    assert_eq!(r.body["messages"][0]["content"], "Are you there?");
    assert_eq!(r.body["messages"].as_array().unwrap().len(), 1);
    // The lock was released: the next turn reaches the model again.
    let r = turn(&api, &id, "Hello?").await;
    assert_error(&r, StatusCode::BAD_GATEWAY, "bad_gateway");
    assert_eq!(model.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_second_concurrent_turn_is_409() {
    let model = Arc::new(Scripted {
        gate: Some(Semaphore::new(0)),
        ..Scripted::new(4096)
    });
    let m = model.clone();
    let api = api_with_state(Policy::default(), AuthMode::Keys, |s| turns_only(s, m)).await;
    let id = new_thread(&api, &api.ann, json!({"goal": "chat"})).await;
    let uri = format!("/v1/threads/{id}/turns");
    let (app, ann, u) = (api.app.clone(), api.ann.clone(), uri.clone());
    let first = tokio::spawn(async move {
        call(
            &app,
            Method::POST,
            &u,
            Some(&ann),
            Some(json!({"message": "hello"})),
        )
        .await
    });
    model.entered.notified().await; // the first turn is inside the model call
    let second = post(&api, &uri, &api.ann, json!({"message": "again"})).await;
    assert_error(&second, StatusCode::CONFLICT, "conflict");
    // Another thread is not blocked (one permit for each waiting call).
    let other = new_thread(&api, &api.ann, json!({})).await;
    model.gate.as_ref().unwrap().add_permits(2);
    let r = turn(&api, &other, "elsewhere").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let first = first.await.unwrap();
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["reply"]["content"], "echo: hello");
    assert_eq!(first.body["model"], "scripted");
    assert!(first.body["tokens"]["total"].as_u64().unwrap() > 0);
    // Released: the next turn runs.
    model.gate.as_ref().unwrap().add_permits(1);
    let third = post(&api, &uri, &api.ann, json!({"message": "third"})).await;
    assert_eq!(third.status, StatusCode::OK, "{}", third.body);
    let r = get_thread(&api, &id).await;
    let contents: Vec<&str> = r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["hello", "echo: hello", "third", "echo: third"]);
}

#[tokio::test]
async fn extraction_feeds_the_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let agent = Agent::new(engine.clone(), None);
    let ann = user_actor("default", "ann");
    let thread = agent
        .create_thread(&ann, CreateThread::default())
        .await
        .unwrap();
    for text in [
        "I prefer green tea over coffee.",
        "I might like jazz, not sure.",
        "What's the weather like?",
    ] {
        say(&agent, &ann, thread.id, MessageRole::User, text).await;
        say(
            &agent,
            &ann,
            thread.id,
            MessageRole::Assistant,
            "I prefer to answer briefly.",
        )
        .await;
    }
    agent.wait_idle().await;
    let list = |status| {
        engine.list(
            &ann,
            ListQuery {
                status: Some(status),
                limit: 100,
                ..Default::default()
            },
        )
    };
    let active = list(Status::Active).await.unwrap();
    assert_eq!(active.len(), 1, "{active:?}");
    assert_eq!(active[0].text, "I prefer green tea over coffee");
    assert_eq!(active[0].kind, Kind::Preference);
    assert_eq!(active[0].source.thread_id, Some(thread.id.to_string()));
    let view = agent.view(&ann, thread.id).await.unwrap();
    assert_eq!(
        active[0].source.message_id,
        Some(view.messages[0].seq.to_string())
    );
    let pending = list(Status::Pending).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].kind, Kind::Preference);
    // Assistant messages are never extracted; every user message is done.
    for m in &view.messages {
        let expected = match m.role {
            MessageRole::User => ExtractionState::Done,
            _ => ExtractionState::Skipped,
        };
        assert_eq!(m.extraction_state, expected);
    }
    // While its message is in the history, the memory is not repeated in
    // the prompt's memory block.
    let prompt = |message: &str| PromptRequest {
        message: message.into(),
        model_context_tokens: 8192,
    };
    let p = agent
        .prompt(&ann, thread.id, prompt("green tea or coffee?"))
        .await
        .unwrap();
    assert!(!p.memory_ids.contains(&active[0].id), "{p:?}");
    let other = agent
        .create_thread(&ann, CreateThread::default())
        .await
        .unwrap();
    let p = agent
        .prompt(&ann, other.id, prompt("green tea or coffee?"))
        .await
        .unwrap();
    assert!(p.memory_ids.contains(&active[0].id), "{p:?}");
    // Saying it again reinforces instead of duplicating.
    say(
        &agent,
        &ann,
        thread.id,
        MessageRole::User,
        "I prefer green tea over coffee.",
    )
    .await;
    agent.wait_idle().await;
    let active = list(Status::Active).await.unwrap();
    assert_eq!(active.len(), 1);
    assert!(active[0].version > 1, "reinforced: {:?}", active[0]);
}

#[tokio::test]
async fn compaction_triggers_and_cooldown_on_a_manual_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let agent = Agent::new(engine.clone(), None);
    let ann = user_actor("default", "ann");
    let thread = agent
        .create_thread(
            &ann,
            CreateThread {
                user_id: None,
                goal: Some("Ship the quarterly report".into()),
            },
        )
        .await
        .unwrap();
    for i in 0..8 {
        say(
            &agent,
            &ann,
            thread.id,
            MessageRole::User,
            &format!("We need to check item {i}. It is late."),
        )
        .await;
        say(
            &agent,
            &ann,
            thread.id,
            MessageRole::Assistant,
            &format!("I will look at item {i}."),
        )
        .await;
    }
    agent.wait_idle().await;
    assert_eq!(
        agent
            .view(&ann, thread.id)
            .await
            .unwrap()
            .compacted_messages,
        0
    );

    // Idle trigger: not at 4 minutes, at 5.
    clock.advance(Duration::minutes(4));
    assert_eq!(agent.compact_idle().await.unwrap(), 0);
    clock.advance(Duration::minutes(1));
    assert_eq!(agent.compact_idle().await.unwrap(), 1);
    let view = agent.view(&ann, thread.id).await.unwrap();
    assert_eq!(
        view.messages.len(),
        3,
        "the last 3 turns are never compacted"
    );
    assert_eq!(view.compacted_messages, 13);
    assert_eq!(
        view.thread.goal.as_deref(),
        Some("Ship the quarterly report")
    );
    let s = &view.thread.summary;
    assert!(
        s.open_todos
            .contains(&"We need to check item 0.".to_string()),
        "{s:?}"
    );
    assert!(
        s.commitments
            .contains(&"I will look at item 5.".to_string()),
        "{s:?}"
    );
    assert_eq!(view.thread.summary_upto_seq, view.messages[0].seq - 1);
    // The prompt carries goal, summary and the kept turns.
    let p = agent
        .prompt(
            &ann,
            thread.id,
            PromptRequest {
                message: "What is left?".into(),
                model_context_tokens: 4096,
            },
        )
        .await
        .unwrap();
    assert!(p.messages[1].content.contains("Ship the quarterly report"));
    assert!(p.messages[2]
        .content
        .contains("Open to-dos:\n- We need to check item 0."));
    assert!(p.tokens.summary > 0 && p.tokens.goal > 0);
    // A second idle pass has nothing to do.
    clock.advance(Duration::minutes(20));
    assert_eq!(agent.compact_idle().await.unwrap(), 0);

    // Token trigger: the history passes 70% of a small window…
    let long = "The venue contract has many clauses about catering and parking. ".repeat(6);
    for _ in 0..6 {
        say(&agent, &ann, thread.id, MessageRole::User, &long).await;
    }
    agent.wait_idle().await;
    let window = 600;
    let compacted = agent
        .maybe_compact("default", thread.id, window)
        .await
        .unwrap();
    assert_eq!(compacted.unwrap().trigger, Trigger::Tokens);
    // …but within the 10-minute cooldown nothing happens, whatever the size.
    for _ in 0..6 {
        say(&agent, &ann, thread.id, MessageRole::User, &long).await;
    }
    agent.wait_idle().await;
    clock.advance(Duration::minutes(9));
    assert_eq!(
        agent
            .maybe_compact("default", thread.id, window)
            .await
            .unwrap(),
        None
    );
    clock.advance(Duration::minutes(1));
    let c = agent
        .maybe_compact("default", thread.id, window)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.trigger, Trigger::Tokens);
    assert_eq!(agent.view(&ann, thread.id).await.unwrap().messages.len(), 3);
}

/// Records how often each message is extracted and whether it was already
/// compacted when the extractor read it.
struct Recording {
    store: Arc<dyn MemoryStore>,
    thread: Mutex<Option<Uuid>>,
    seen: Mutex<HashMap<String, usize>>,
    violations: Mutex<Vec<String>>,
}

#[async_trait]
impl Extractor for Recording {
    async fn extract(&self, message: &str) -> mnemo::Result<Vec<Candidate>> {
        *self.seen.lock().entry(message.to_string()).or_default() += 1;
        tokio::task::yield_now().await;
        let thread = self.thread.lock().expect("thread set");
        let all = self.store.thread_messages(thread, false).await?;
        if all.iter().any(|m| m.content == message && m.compacted) {
            self.violations.lock().push(message.to_string());
        }
        Ok(vec![])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extraction_and_compaction_never_race() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = Policy::default();
    // Every check compacts whatever it may: the race is as wide as it gets.
    policy.agent.compaction_cooldown_secs = 0;
    policy.agent.compact_above_fraction = 0.01;
    let engine = engine_with(dir.path(), Arc::new(manual()), policy).await;
    let recording = Arc::new(Recording {
        store: engine.store().clone(),
        thread: Mutex::new(None),
        seen: Mutex::new(HashMap::new()),
        violations: Mutex::new(Vec::new()),
    });
    let agent = Agent::new(engine.clone(), None).with_extractor(recording.clone());
    let ann = user_actor("default", "ann");
    let thread = agent
        .create_thread(&ann, CreateThread::default())
        .await
        .unwrap();
    *recording.thread.lock() = Some(thread.id);
    let mut sent = Vec::new();
    for round in 0..8 {
        let mut tasks = Vec::new();
        for k in 0..4 {
            let a = agent.clone();
            tasks.push(tokio::spawn(async move {
                a.extract_pending(thread.id).await.map(|_| ())
            }));
            let a = agent.clone();
            tasks.push(tokio::spawn(async move {
                a.maybe_compact("default", thread.id, 1000)
                    .await
                    .map(|_| ())
            }));
            let (a, actor) = (agent.clone(), ann.clone());
            let text = format!("round {round} message {k}");
            sent.push(text.clone());
            tasks.push(tokio::spawn(async move {
                a.append(&actor, thread.id, said(MessageRole::User, &text))
                    .await?;
                a.append(&actor, thread.id, said(MessageRole::Assistant, "ok"))
                    .await
                    .map(|_| ())
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
    }
    agent.wait_idle().await;
    agent.extract_pending(thread.id).await.unwrap();
    assert_eq!(*recording.violations.lock(), Vec::<String>::new());
    let seen = recording.seen.lock().clone();
    for text in &sent {
        assert_eq!(seen.get(text), Some(&1), "{text} extracted exactly once");
    }
    assert_eq!(seen.len(), sent.len());
    let all = engine
        .store()
        .thread_messages(thread.id, false)
        .await
        .unwrap();
    assert!(
        all.iter().any(|m| m.compacted),
        "compaction ran during the test"
    );
    for m in &all {
        assert!(m.extraction_state.is_complete(), "{m:?}");
    }
}

#[tokio::test]
async fn turn_leases_and_extraction_claims_expire() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let agent = Agent::new(engine.clone(), None);
    let ann = user_actor("default", "ann");
    let thread = agent
        .create_thread(&ann, CreateThread::default())
        .await
        .unwrap();
    let store = engine.store();
    let until = t0() + Duration::seconds(300);
    assert!(store
        .acquire_turn(thread.id, "a", t0(), until)
        .await
        .unwrap());
    let later = t0() + Duration::seconds(299);
    assert!(!store
        .acquire_turn(thread.id, "b", later, later + Duration::seconds(300))
        .await
        .unwrap());
    // A crashed turn's lease expires; releasing with the wrong holder does nothing.
    store.release_turn(thread.id, "a-not").await.unwrap();
    assert!(!store
        .acquire_turn(thread.id, "b", later, later)
        .await
        .unwrap());
    assert!(store
        .acquire_turn(thread.id, "b", until, until + Duration::seconds(300))
        .await
        .unwrap());
    store.release_turn(thread.id, "b").await.unwrap();
    assert!(store
        .acquire_turn(thread.id, "c", until, until)
        .await
        .unwrap());

    // Extraction claims: never shared while live, taken again once expired,
    // and a failed run puts its messages back.
    let message = mnemo::domain::thread::NewMessage {
        thread_id: thread.id,
        tenant_id: "default".into(),
        user_id: "ann".into(),
        role: MessageRole::User,
        content: "I prefer tea.".into(),
        tool: None,
        created_at: t0(),
    };
    let stored = store.append_message(&message, None).await.unwrap();
    let claim = |now| store.claim_extraction(thread.id, now, now + Duration::seconds(300));
    assert_eq!(claim(t0()).await.unwrap().len(), 1);
    assert!(claim(later).await.unwrap().is_empty());
    let retaken = claim(until).await.unwrap();
    assert_eq!(retaken[0].seq, stored.seq);
    assert_eq!(retaken[0].extraction_state, ExtractionState::Running);
    store.finish_extraction(&[stored.seq], false).await.unwrap();
    assert_eq!(claim(until).await.unwrap().len(), 1);
    store.finish_extraction(&[stored.seq], true).await.unwrap();
    assert!(claim(until + Duration::days(1)).await.unwrap().is_empty());
    // A message still claimed cannot be compacted, and compaction is
    // compare-and-set on the summary.
    let second = store.append_message(&message, None).await.unwrap();
    assert_eq!(claim(until).await.unwrap().len(), 1);
    let summary = mnemo::domain::thread::Summary::default();
    assert!(!store
        .compact_thread(thread.id, 0, second.seq, &summary, until)
        .await
        .unwrap());
    assert!(store
        .compact_thread(thread.id, 0, stored.seq, &summary, until)
        .await
        .unwrap());
    assert!(!store
        .compact_thread(thread.id, 0, stored.seq, &summary, until)
        .await
        .unwrap());
}

/// The app state with `model` for turns only: with a model configured the
/// agent also asks it to extract candidates and write summaries
/// (`agent::extract_model`, tested there), which would add calls these
/// turn tests count and gate; the rules and the extractive summary do that
/// work here instead.
fn turns_only(s: AppState, model: Arc<Scripted>) -> AppState {
    let s = s.with_chat_model(model);
    let agent = s
        .agent
        .clone()
        .with_extractor(Arc::new(mnemo::agent::extract::RuleExtractor))
        .with_summarizer(Arc::new(mnemo::agent::compaction::ExtractiveSummarizer));
    s.with_agent(agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_extracted_lands_when_the_user_is_erased_mid_extraction() {
    const MARKER: &str = "zanzibar-7781";
    let dir = tempfile::tempdir().unwrap();
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel();
    // Embedding the candidate waits for the test: the extraction is held
    // between its "is the thread still there?" check and its writes.
    let (entered, release) = (Mutex::new(entered_tx), Mutex::new(release_rx));
    let embedder = Arc::new(HookedEmbedder {
        inner: mnemo::embed::hashing::HashingEmbedder::new(64),
        before_passages: move |texts: &[&str]| {
            if texts.iter().any(|t| t.contains(MARKER)) {
                entered.lock().send(()).unwrap();
                let released = release
                    .lock()
                    .recv_timeout(std::time::Duration::from_secs(60));
                assert!(released.is_ok(), "the test never released the embedder");
            }
        },
    });
    let engine = Engine::builder(dir.path())
        .policy(crate::common::on_hashing_scale(
            mnemo::policy::Policy::default(),
        ))
        .embedder(embedder)
        .clock(Arc::new(manual()))
        .build()
        .await
        .unwrap()
        .engine;
    let agent = Agent::new(engine.clone(), None);
    let zoe = user_actor("default", "zoe");
    let thread = agent
        .create_thread(&zoe, CreateThread::default())
        .await
        .unwrap();
    let text = format!("I am allergic to {MARKER} peanuts");
    agent
        .append(&zoe, thread.id, said(MessageRole::User, &text))
        .await
        .unwrap();
    let extraction = {
        let agent = agent.clone();
        tokio::spawn(async move { agent.extract_pending(thread.id).await })
    };
    // The extraction has checked the thread and is embedding its candidate.
    tokio::task::spawn_blocking(move || {
        entered_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the extraction reached the embedder")
    })
    .await
    .unwrap();
    // Meanwhile zoe is erased, completely: no intent is left to refuse writes.
    engine.forget_user(&zoe, "zoe").await.unwrap();
    release_tx.send(()).unwrap();
    extraction.await.unwrap().unwrap();
    agent.wait_idle().await;

    let verification = engine.verify_erasure(&zoe, "zoe").await.unwrap();
    assert!(verification.erased, "{verification:?}");
    let stats = engine.store().stats().await.unwrap();
    assert_eq!(stats.total(), 0, "no memory landed: {stats:?}");
    assert_eq!(stats.cached_embeddings, 0, "no cached vector landed");
    let owner = mnemo::store::CacheOwner {
        tenant_id: "default".into(),
        user_id: Some("zoe".into()),
    };
    let hashes = vec![mnemo::store::text_hash(&text)];
    assert!(engine
        .store()
        .cached_embeddings(&owner, engine.embedder().model_id(), &hashes)
        .await
        .unwrap()
        .is_empty());
}

/// Issue 52, item 12: a tool result's full payload is bounded by the
/// policy (`limits.max_tool_payload_bytes`): larger is 413 and nothing is
/// appended.
#[tokio::test]
async fn a_tool_payload_over_the_policy_limit_is_413_and_writes_nothing() {
    let mut policy = Policy::default();
    policy.limits.max_tool_payload_bytes = 1000;
    let api = api_with_state(policy, AuthMode::Keys, |s| s).await;
    let id = new_thread(&api, &api.ann, json!({})).await;
    let msgs = format!("/v1/threads/{id}/messages");
    let tool = |size: usize| {
        json!({"role": "tool", "tool": {
            "name": "fetch", "status": "ok", "summary": "a page",
            "payload": {"body": "x".repeat(size)}
        }})
    };
    let r = post(&api, &msgs, &api.ann, tool(900)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = post(&api, &msgs, &api.ann, tool(2000)).await;
    assert_error(&r, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert_eq!(r.body["error"]["field"], "tool.payload", "{}", r.body);
    let stored = api
        .engine
        .store()
        .thread_messages(id.parse().unwrap(), false)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1, "the refused message was not appended");
}
