//! Per-user quotas of the policy (`src/quota.rs`): memories held
//! (`limits.max_memories_per_user`, 409 `quota_exceeded`, nothing written)
//! and model calls per minute (`limits.model_calls_per_user_per_minute`,
//! 429 `rate_limited` with `Retry-After` for turns and the proxy).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use axum::http::{Method, StatusCode};
use http_body_util::BodyExt as _;
use mnemo::api::AuthMode;
use mnemo::domain::chat::ChatMessage;
use mnemo::llm::{ChatModel, Completion, CompletionOptions, LlmError, RawResponse};
use mnemo::policy::Policy;
use serde_json::json;

use crate::api::{api_with, api_with_state, assert_error, call};

#[tokio::test]
async fn a_user_at_the_memory_quota_gets_409_quota_exceeded_and_nothing_is_written() {
    let mut policy = Policy::default();
    policy.limits.max_memories_per_user = 3;
    let api = api_with(policy, AuthMode::Keys, None).await;
    let add = |user: &'static str, texts: Vec<&'static str>| {
        let app = api.app.clone();
        let key = api.agent.clone();
        async move {
            let memories: Vec<_> = texts
                .iter()
                .map(|t| json!({"user_id": user, "text": t}))
                .collect();
            call(
                &app,
                Method::POST,
                "/v1/memories",
                Some(&key),
                Some(json!({"memories": memories})),
            )
            .await
        }
    };
    let r = add(
        "bob",
        vec!["Bob likes kayaks", "Bob owns a heron named Pip"],
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // Two more would make four: the whole batch is refused.
    let r = add("bob", vec!["Bob plays the oboe", "Bob lives in Ghent"]).await;
    assert_error(&r, StatusCode::CONFLICT, "quota_exceeded");
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_memories_per_user"));
    let held = api
        .engine
        .store()
        .count_user_memories("acme", "bob")
        .await
        .unwrap();
    assert_eq!(held, 2, "nothing of the refused batch was written");
    assert_eq!(
        add("bob", vec!["Bob plays the oboe"]).await.status,
        StatusCode::CREATED
    );
    assert_error(
        &add("bob", vec!["Bob lives in Ghent"]).await,
        StatusCode::CONFLICT,
        "quota_exceeded",
    );
    // Per user: another user is not held back.
    assert_eq!(
        add("carl", vec!["Carl likes tea"]).await.status,
        StatusCode::CREATED
    );
}

/// An upstream stand-in that counts the calls it gets.
#[derive(Default)]
struct Counting {
    calls: AtomicUsize,
}

#[async_trait]
impl ChatModel for Counting {
    fn model(&self) -> &str {
        "counting"
    }
    fn context_tokens(&self) -> usize {
        8192
    }
    async fn complete(
        &self,
        _: &[ChatMessage],
        _: &CompletionOptions,
    ) -> Result<Completion, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Completion {
            content: "fine".into(),
            prompt_tokens: None,
            completion_tokens: None,
        })
    }
    async fn forward(&self, _: serde_json::Value) -> Result<RawResponse, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(RawResponse {
            status: 200,
            content_type: Some("application/json".into()),
            body: http_body_util::BodyExt::boxed_unsync(
                http_body_util::Full::new(bytes::Bytes::from_static(br#"{"choices":[]}"#))
                    .map_err(|never| match never {}),
            ),
        })
    }
}

#[tokio::test]
async fn model_calls_over_the_user_quota_get_429_with_retry_after() {
    let mut policy = Policy::default();
    policy.limits.model_calls_per_user_per_minute = 2;
    let model = Arc::new(Counting::default());
    let m = model.clone();
    let api = api_with_state(policy, AuthMode::Keys, move |s| {
        let s = s.with_chat_model(m);
        // Turns only: the rules extract, so only turns and the proxy call
        // the model here.
        let agent = s
            .agent
            .clone()
            .with_extractor(Arc::new(mnemo::agent::extract::RuleExtractor))
            .with_summarizer(Arc::new(mnemo::agent::compaction::ExtractiveSummarizer));
        s.with_agent(agent)
    })
    .await;
    let r = call(
        &api.app,
        Method::POST,
        "/v1/threads",
        Some(&api.ann),
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let turns = format!("/v1/threads/{}/turns", r.body["id"].as_str().unwrap());
    let turn = || {
        call(
            &api.app,
            Method::POST,
            &turns,
            Some(&api.ann),
            Some(json!({"message": "hi"})),
        )
    };
    assert_eq!(turn().await.status, StatusCode::OK);
    let proxy = |user: &'static str| {
        call(
            &api.app,
            Method::POST,
            "/v1/chat/completions",
            Some(&api.agent),
            Some(
                json!({"model": "x", "user": user, "messages": [{"role": "user", "content": "hi"}]}),
            ),
        )
    };
    assert_eq!(proxy("ann").await.status, StatusCode::OK);
    assert_eq!(model.calls.load(Ordering::SeqCst), 2);
    // The third call in the minute, by either path, is refused before the model.
    let r = turn().await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert!(r.headers.get("retry-after").is_some());
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("model_calls_per_user_per_minute"));
    assert_error(
        &proxy("ann").await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
    );
    assert_eq!(
        model.calls.load(Ordering::SeqCst),
        2,
        "no call reached the model"
    );
    // Per user.
    assert_eq!(proxy("bo").await.status, StatusCode::OK);
    assert_eq!(model.calls.load(Ordering::SeqCst), 3);
}
