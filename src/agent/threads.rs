//! Threads and turns on the engine: the agent loop's use cases. HTTP calls
//! [`Agent`]; `Agent` calls the [`Engine`] (retrieval, the lifecycle's
//! `remember`) and the store's threads block, and a [`ChatModel`] when one is
//! configured.
//!
//! A turn: take the thread's turn lease (a second concurrent turn → 409) →
//! store the user's message (it is never lost, whatever follows) → assemble
//! the prompt (retrieval keyed by user first, thread second) → call the model
//! → store the reply → release the lease → schedule the thread's upkeep.
//!
//! Upkeep, in the background after every user message ([`Agent::upkeep`]):
//! extraction first (claim the `pending` user messages, hand each one's
//! candidates to the lifecycle, mark them `done`), then the compaction check.
//! Compaction takes only messages whose extraction has completed, and the
//! store re-checks that in the transaction that marks them compacted, so the
//! two never race whatever runs where. `mnemo serve` also runs the idle
//! compaction every `agent.compaction_interval_secs`.
//!
//! Threading: async on the tokio runtime; upkeep runs in spawned tasks,
//! counted so that tests and shutdown can wait for them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::agent::compaction::{
    compactable_prefix, decide, history_tokens, Decision, ExtractiveSummarizer, Summarizer, Trigger,
};
use crate::agent::extract::{Extractor, RuleExtractor};
use crate::agent::extract_model::{ModelExtractor, ModelSummarizer};
use crate::agent::prompt::{assemble, Prompt, PromptInput, TokenBreakdown};
use crate::domain::chat::ChatMessage;
use crate::domain::thread::{
    Message, MessageRole, NewMessage, Payload, Summary, Thread, ToolSummary,
};
use crate::domain::validate::{validate_id, validate_text, validate_window, MAX_TEMPERATURE};
use crate::domain::Actor;
use crate::domain::{NewMemory, Scope, Source, Tier};
use crate::error::{Error, Result};
use crate::llm::{ChatModel, CompletionOptions};
use crate::service::Outcome;
use crate::service::{Engine, SearchRequest};

/// Why turns answer 503 without a model.
pub const NO_MODEL: &str = "no chat model is configured: set the OpenAI-compatible endpoint \
    (base URL, model, key, context window) in the server configuration to run turns; \
    POST /v1/threads/{id}/prompt works without one";

/// The actor recorded on memories the extractor writes.
pub const EXTRACTOR_ACTOR: &str = "extractor";

/// Most key fields a tool summary may carry.
pub const MAX_KEY_FIELDS: usize = 20;
/// Characters of a tool result's one-line summary.
const TOOL_SUMMARY_CHARS: usize = 300;
/// Messages `GET /v1/threads/{id}` returns at most per page (the newest).
pub const VIEW_MESSAGES: usize = 200;

#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateThread {
    /// Required unless the key is bound to a user.
    pub user_id: Option<String>,
    /// Pinned: always in the prompt, never compacted.
    pub goal: Option<String>,
}

/// A tool's result as an agent reports it. The history keeps `status`, the
/// one-line `summary` and `key_fields`; `payload` is stored apart and only
/// pointed to.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    pub name: String,
    /// e.g. `ok`, `error`.
    pub status: String,
    /// One line; defaults to the first line of the message's content.
    pub summary: Option<String>,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub key_fields: serde_json::Map<String, serde_json::Value>,
    /// The full result (any JSON); defaults to the message's content.
    #[schema(value_type = Option<Object>)]
    pub payload: Option<serde_json::Value>,
}

#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendMessage {
    pub role: MessageRole,
    #[serde(default)]
    pub content: String,
    /// For `role: tool` only.
    pub tool: Option<ToolResult>,
}

/// A thread's working memory: goal, summary and one page of its messages.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ThreadView {
    #[serde(flatten)]
    pub thread: Thread,
    /// The page: the newest `limit` messages older than `before` (all
    /// uncompacted ones unless `include_compacted`), oldest first.
    pub messages: Vec<Message>,
    /// Messages folded into the summary.
    pub compacted_messages: usize,
    /// Pass as `before` for the next, older page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_before: Option<i64>,
}

/// Which page of a thread's history `GET /v1/threads/{id}` returns.
#[derive(Clone, Debug, Default, Deserialize, ToSchema, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryPage {
    /// Messages per page, 1 to 200 (default 200).
    pub limit: Option<usize>,
    /// Only messages with a `seq` below this (the previous page's `next_before`).
    pub before: Option<i64>,
    /// Page through compacted messages too (the whole history); by default
    /// only the working memory.
    #[serde(default)]
    pub include_compacted: bool,
}

#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptRequest {
    pub message: String,
    /// The window of the model the prompt is for, in tokens.
    pub model_context_tokens: usize,
}

/// An assembled prompt, ready to send to any chat model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PromptResponse {
    pub messages: Vec<ChatMessage>,
    pub tokens: TokenBreakdown,
    pub memory_ids: Vec<Uuid>,
}

impl From<Prompt> for PromptResponse {
    fn from(p: Prompt) -> Self {
        PromptResponse {
            messages: p.messages,
            tokens: p.tokens,
            memory_ids: p.memory_ids,
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    pub message: String,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TurnReply {
    pub user_message: Message,
    pub reply: Message,
    pub tokens: TokenBreakdown,
    pub memory_ids: Vec<Uuid>,
    pub model: String,
}

/// What one extraction run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ExtractionStats {
    pub messages: usize,
    pub candidates: usize,
    pub created: usize,
    pub reinforced: usize,
    pub superseded: usize,
}

/// What one compaction did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Compaction {
    pub trigger: Trigger,
    pub messages: usize,
    pub upto_seq: i64,
}

struct Inner {
    engine: Engine,
    model: Option<Arc<dyn ChatModel>>,
    extractor: Arc<dyn Extractor>,
    summarizer: Arc<dyn Summarizer>,
    /// Names this process in turn leases.
    node: String,
    in_flight: AtomicUsize,
}

/// The agent loop. Cheap to clone; share it.
#[derive(Clone)]
pub struct Agent(Arc<Inner>);

impl Agent {
    /// The loop on an engine. With a `model`: turns call it, and it extracts
    /// candidates and writes compaction summaries (falling back to the rules
    /// and the extractive summary when it fails). Without one: the
    /// rule-based extractor and the extractive summarizer.
    pub fn new(engine: Engine, model: Option<Arc<dyn ChatModel>>) -> Self {
        let (extractor, summarizer): (Arc<dyn Extractor>, Arc<dyn Summarizer>) = match &model {
            Some(m) => (
                Arc::new(ModelExtractor::new(m.clone())),
                Arc::new(ModelSummarizer::new(m.clone())),
            ),
            None => (Arc::new(RuleExtractor), Arc::new(ExtractiveSummarizer)),
        };
        Agent(Arc::new(Inner {
            engine,
            model,
            extractor,
            summarizer,
            node: Uuid::now_v7().to_string(),
            in_flight: AtomicUsize::new(0),
        }))
    }

    fn rebuild(self, f: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            engine: self.0.engine.clone(),
            model: self.0.model.clone(),
            extractor: self.0.extractor.clone(),
            summarizer: self.0.summarizer.clone(),
            node: self.0.node.clone(),
            in_flight: AtomicUsize::new(0),
        };
        f(&mut inner);
        Agent(Arc::new(inner))
    }

    /// Replaces the extractor (the model-based one when a model is set).
    pub fn with_extractor(self, extractor: Arc<dyn Extractor>) -> Self {
        self.rebuild(|i| i.extractor = extractor)
    }

    /// Replaces the summarizer (the model-written one when a model is set).
    pub fn with_summarizer(self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.rebuild(|i| i.summarizer = summarizer)
    }

    pub fn engine(&self) -> &Engine {
        &self.0.engine
    }

    pub fn model(&self) -> Option<&Arc<dyn ChatModel>> {
        self.0.model.as_ref()
    }

    /// The window the compaction trigger measures against.
    fn default_window(&self) -> usize {
        self.0
            .model
            .as_ref()
            .map_or(self.0.engine.policy().agent.default_context_tokens, |m| {
                m.context_tokens()
            })
    }

    // ----- threads and messages -------------------------------------------

    pub async fn create_thread(&self, actor: &Actor, req: CreateThread) -> Result<Thread> {
        if let Some(u) = &req.user_id {
            validate_id("user_id", u)?;
        }
        let user = actor
            .user_for(req.user_id.as_deref())?
            .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
        let goal = req.goal.filter(|g| !g.trim().is_empty());
        if let Some(g) = &goal {
            validate_text(g, self.0.engine.policy().limits())
                .map_err(|e| rename_field(e, "goal"))?;
        }
        let now = self.0.engine.clock().now();
        let thread = Thread {
            id: Uuid::now_v7(),
            tenant_id: actor.tenant_id.clone(),
            user_id: user,
            goal,
            summary: Summary::default(),
            summary_upto_seq: 0,
            created_at: now,
            updated_at: now,
            last_activity_at: now,
            last_compacted_at: None,
        };
        // A thread created behind an erasure's intent would outlive it: 409,
        // like a memory write (the guard holds off a new intent until the
        // insert has committed, so the erasure sees this thread).
        let _not_erasing = self
            .0
            .engine
            .refuse_while_erasing(&thread.tenant_id, &thread.user_id)
            .await?;
        let quota = self.0.engine.policy().limits.max_threads_per_user;
        if quota > 0 {
            // Thread creation is rare next to writes: the footprint's counts
            // are affordable here.
            let held = self
                .0
                .engine
                .store()
                .user_footprint(&thread.tenant_id, &thread.user_id)
                .await?
                .threads;
            if held >= quota {
                return Err(Error::QuotaExceeded(format!(
                    "this user has {held} threads: the quota (policy limits.max_threads_per_user) \
                     is reached"
                )));
            }
        }
        self.0.engine.threads().insert_thread(&thread).await?;
        Ok(thread)
    }

    /// The thread, if the actor may see it; another user's thread is
    /// "not found", exactly like a missing one.
    pub async fn thread(&self, actor: &Actor, id: Uuid) -> Result<Thread> {
        let thread = self
            .0
            .engine
            .threads()
            .get_thread(&actor.tenant_id, id)
            .await?
            .filter(|t| actor.user_id.as_deref().is_none_or(|u| u == t.user_id))
            .ok_or_else(|| Error::not_found(format!("thread {id}")))?;
        Ok(thread)
    }

    pub async fn view(&self, actor: &Actor, id: Uuid) -> Result<ThreadView> {
        self.view_page(actor, id, &HistoryPage::default()).await
    }

    /// The thread with one page of its history: the newest `limit` messages
    /// (at most [`VIEW_MESSAGES`]) older than `before`, oldest first; only
    /// the working memory (uncompacted messages) unless `include_compacted`.
    /// `next_before` continues to older messages.
    pub async fn view_page(
        &self,
        actor: &Actor,
        id: Uuid,
        page: &HistoryPage,
    ) -> Result<ThreadView> {
        let limit = page.limit.unwrap_or(VIEW_MESSAGES);
        if !(1..=VIEW_MESSAGES).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("limit must be between 1 and {VIEW_MESSAGES}"),
            ));
        }
        let thread = self.thread(actor, id).await?;
        let store = self.0.engine.threads();
        // HOOK(store paging): the store trait has no paged read of messages
        // yet, so this loads the thread's messages and pages them here; the
        // response is bounded, the read is not.
        let all = store.thread_messages(id, false).await?;
        let compacted_messages = all.iter().filter(|m| m.compacted).count();
        let mut messages: Vec<Message> = all
            .into_iter()
            .filter(|m| page.include_compacted || !m.compacted)
            .filter(|m| page.before.is_none_or(|b| m.seq < b))
            .collect();
        let excess = messages.len().saturating_sub(limit);
        messages.drain(..excess);
        let next_before = if excess > 0 {
            messages.first().map(|m| m.seq)
        } else {
            None
        };
        Ok(ThreadView {
            thread,
            messages,
            compacted_messages,
            next_before,
        })
    }

    /// Stores a message of the thread (for agents that run their own model)
    /// and schedules the upkeep after a user message.
    pub async fn append(&self, actor: &Actor, id: Uuid, req: AppendMessage) -> Result<Message> {
        let thread = self.thread(actor, id).await?;
        let (message, payload) = self.new_message(&thread, req)?;
        let stored = self
            .0
            .engine
            .threads()
            .append_message(&message, payload.as_ref())
            .await?;
        if stored.role == MessageRole::User {
            self.schedule_upkeep(&thread, self.default_window());
        }
        Ok(stored)
    }

    /// A tool result's full payload.
    pub async fn payload(
        &self,
        actor: &Actor,
        id: Uuid,
        payload_id: Uuid,
    ) -> Result<serde_json::Value> {
        self.thread(actor, id).await?;
        self.0
            .engine
            .threads()
            .get_payload(id, payload_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("payload {payload_id}")))
    }

    fn new_message(
        &self,
        thread: &Thread,
        req: AppendMessage,
    ) -> Result<(NewMessage, Option<Payload>)> {
        let limits = self.0.engine.policy().limits();
        let (content, tool, payload) = match (req.role, req.tool) {
            (MessageRole::Tool, tool) => {
                let tool = tool.unwrap_or_else(|| ToolResult {
                    name: "tool".into(),
                    status: "ok".into(),
                    ..Default::default()
                });
                validate_id("tool.name", &tool.name)?;
                validate_id("tool.status", &tool.status)?;
                if tool.key_fields.len() > MAX_KEY_FIELDS {
                    return Err(Error::invalid(
                        "tool.key_fields",
                        format!("at most {MAX_KEY_FIELDS} key fields"),
                    ));
                }
                let summary = tool
                    .summary
                    .clone()
                    .unwrap_or_else(|| req.content.lines().next().unwrap_or_default().into());
                let summary = one_line(&summary, TOOL_SUMMARY_CHARS);
                if summary.is_empty() {
                    return Err(Error::invalid(
                        "tool.summary",
                        "a tool result needs a summary or content",
                    ));
                }
                let payload = tool.payload.clone().or_else(|| {
                    (!req.content.trim().is_empty())
                        .then(|| serde_json::Value::String(req.content.clone()))
                });
                let max = self.0.engine.policy().limits.max_tool_payload_bytes;
                if let Some(p) = &payload {
                    let bytes = serde_json::to_vec(p).map_or(usize::MAX, |b| b.len());
                    if bytes > max {
                        return Err(Error::TooLarge {
                            field: "tool.payload",
                            message: format!(
                                "the tool payload is {bytes} bytes as JSON; the limit is {max} \
                                 bytes (policy limits.max_tool_payload_bytes)"
                            ),
                        });
                    }
                }
                let payload = payload.map(|p| Payload {
                    id: Uuid::now_v7(),
                    payload: p,
                });
                let summary = ToolSummary {
                    name: tool.name,
                    status: tool.status,
                    summary,
                    key_fields: tool.key_fields,
                    payload_id: payload.as_ref().map(|p| p.id),
                };
                let content = summary.render();
                validate_text(&content, limits)?;
                (content, Some(summary), payload)
            }
            (_, Some(_)) => {
                return Err(Error::invalid(
                    "tool",
                    "`tool` is for messages with role `tool`",
                ))
            }
            (_, None) => {
                validate_text(&req.content, limits).map_err(|e| rename_field(e, "content"))?;
                (req.content, None, None)
            }
        };
        Ok((
            NewMessage {
                thread_id: thread.id,
                tenant_id: thread.tenant_id.clone(),
                user_id: thread.user_id.clone(),
                role: req.role,
                content,
                tool,
                created_at: self.0.engine.clock().now(),
            },
            payload,
        ))
    }

    // ----- prompts and turns ----------------------------------------------

    /// Assembles the prompt for a next message without calling a model (for
    /// agents that run their own). Nothing is stored.
    pub async fn prompt(&self, actor: &Actor, id: Uuid, req: PromptRequest) -> Result<Prompt> {
        let thread = self.thread(actor, id).await?;
        validate_window(req.model_context_tokens)?;
        validate_text(&req.message, self.0.engine.policy().limits())
            .map_err(|e| rename_field(e, "message"))?;
        let history = self.0.engine.threads().thread_messages(id, true).await?;
        self.assemble_for(&thread, &history, &req.message, req.model_context_tokens)
            .await
    }

    async fn assemble_for(
        &self,
        thread: &Thread,
        history: &[Message],
        message: &str,
        window: usize,
    ) -> Result<Prompt> {
        let policy = self.0.engine.policy();
        let c = &policy.context;
        let mut scope = Scope::user(thread.user_id.clone()).with_thread(thread.id.to_string());
        scope.tenant_id = thread.tenant_id.clone();
        let mut search = SearchRequest::new(scope, message);
        search.top_k = Some(
            (c.max_long_term + c.max_working + c.max_reference + 10)
                .min(policy.retrieval.max_top_k),
        );
        let mut hits = self.0.engine.search(search).await?.hits;
        // A memory extracted from a message still in the history says
        // nothing the prompt does not already say.
        let thread_id = thread.id.to_string();
        hits.retain(|h| {
            let s = &h.memory.source;
            s.thread_id.as_deref() != Some(thread_id.as_str())
                || !history
                    .iter()
                    .any(|m| s.message_id.as_deref() == Some(m.seq.to_string().as_str()))
        });
        let chat: Vec<ChatMessage> = history.iter().map(to_chat).collect();
        let summary = thread.summary.render();
        let input = PromptInput {
            instructions: &policy.agent.instructions,
            goal: thread.goal.as_deref(),
            summary: Some(summary.as_str()),
            history: &chat,
            message,
            hits: &hits,
            model_context_tokens: window,
            budget_fraction: c.budget_fraction,
            reply_reserve_fraction: policy.agent.reply_reserve_fraction,
        };
        Ok(assemble(&input, c, &c.tokenizer))
    }

    /// Runs one turn with the configured model. The user's message is stored
    /// before the model is called and stays stored if the call fails.
    pub async fn turn(&self, actor: &Actor, id: Uuid, req: TurnRequest) -> Result<TurnReply> {
        let thread = self.thread(actor, id).await?;
        validate_text(&req.message, self.0.engine.policy().limits())
            .map_err(|e| rename_field(e, "message"))?;
        if let Some(t) = req.temperature {
            if !(0.0..=MAX_TEMPERATURE).contains(&t) {
                return Err(Error::invalid(
                    "temperature",
                    format!("temperature must be between 0 and {MAX_TEMPERATURE}"),
                ));
            }
        }
        let store = self.0.engine.threads();
        let now = self.0.engine.clock().now();
        let lease = Duration::seconds(self.0.engine.policy().agent.turn_lease_secs as i64);
        let holder = format!("{}/{}", self.0.node, Uuid::now_v7());
        if !store.acquire_turn(id, &holder, now, now + lease).await? {
            return Err(Error::Conflict(
                "a turn is already running in this thread; retry when it has finished".into(),
            ));
        }
        // In its own task: a client that goes away (or the request timeout)
        // does not cut a turn in half; the reply is stored and the lease
        // released all the same.
        let agent = self.clone();
        let turn = tokio::spawn(async move {
            let result = agent.turn_locked(&thread, req).await;
            if let Err(e) = agent.0.engine.threads().release_turn(id, &holder).await {
                tracing::warn!(error = %e, "releasing a turn lease failed (it expires)");
            }
            // The user's message is stored even when the model failed: extract it.
            agent.schedule_upkeep(&thread, agent.default_window());
            result
        });
        turn.await
            .map_err(|e| Error::internal(format!("turn task failed: {e}")))?
    }

    async fn turn_locked(&self, thread: &Thread, req: TurnRequest) -> Result<TurnReply> {
        let store = self.0.engine.threads();
        let history = store.thread_messages(thread.id, true).await?;
        let (user, _) = self.new_message(
            thread,
            AppendMessage {
                role: MessageRole::User,
                content: req.message.clone(),
                tool: None,
            },
        )?;
        let user_message = store.append_message(&user, None).await?;
        let model = self
            .0
            .model
            .clone()
            .ok_or_else(|| Error::Unavailable(NO_MODEL.into()))?;
        let prompt = self
            .assemble_for(thread, &history, &req.message, model.context_tokens())
            .await?;
        let options = CompletionOptions {
            max_tokens: req.max_tokens,
            temperature: req.temperature,
            json: false,
        };
        // Per-user model-call quota (quota.rs): 429 before the call.
        self.0
            .engine
            .model_calls()
            .take(&thread.tenant_id, &thread.user_id)?;
        let completion = model.complete(&prompt.messages, &options).await?;
        let reply = NewMessage {
            role: MessageRole::Assistant,
            content: completion.content,
            created_at: self.0.engine.clock().now(),
            ..user
        };
        let reply = store.append_message(&reply, None).await?;
        Ok(TurnReply {
            user_message,
            reply,
            tokens: prompt.tokens,
            memory_ids: prompt.memory_ids,
            model: model.model().to_string(),
        })
    }

    // ----- upkeep: extraction, then compaction ----------------------------

    fn schedule_upkeep(&self, thread: &Thread, window: usize) {
        let agent = self.clone();
        let (tenant, id) = (thread.tenant_id.clone(), thread.id);
        self.0.in_flight.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            if let Err(e) = agent.upkeep(&tenant, id, window).await {
                tracing::warn!(error = %e, "thread upkeep failed; it is retried after the next message");
            }
            agent.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Extraction of the thread's pending messages, then the compaction
    /// check against `window`.
    pub async fn upkeep(
        &self,
        tenant_id: &str,
        id: Uuid,
        window: usize,
    ) -> Result<Option<Compaction>> {
        self.extract_pending(id).await?;
        self.maybe_compact(tenant_id, id, window).await
    }

    /// Waits until no scheduled upkeep is running (tests, shutdown).
    pub async fn wait_idle(&self) {
        while self.0.in_flight.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(StdDuration::from_millis(5)).await;
        }
    }

    /// Claims the thread's messages waiting for extraction, hands each one's
    /// candidates to the lifecycle (pending under the confidence threshold,
    /// reinforce on repetition, supersede on correction), then marks them
    /// done. A failed run puts its claim back, to be retried.
    pub async fn extract_pending(&self, id: Uuid) -> Result<ExtractionStats> {
        let store = self.0.engine.threads();
        let now = self.0.engine.clock().now();
        let lease = Duration::seconds(self.0.engine.policy().agent.extraction_lease_secs as i64);
        let claimed = store.claim_extraction(id, now, now + lease).await?;
        if claimed.is_empty() {
            return Ok(ExtractionStats::default());
        }
        let seqs: Vec<i64> = claimed.iter().map(|m| m.seq).collect();
        let mut stats = ExtractionStats::default();
        for m in &claimed {
            if let Err(e) = self.extract_one(m, &mut stats).await {
                store.finish_extraction(&seqs, false).await?;
                return Err(e);
            }
        }
        store.finish_extraction(&seqs, true).await?;
        tracing::debug!(
            messages = stats.messages,
            candidates = stats.candidates,
            created = stats.created,
            "extraction done"
        );
        Ok(stats)
    }

    async fn extract_one(&self, m: &Message, stats: &mut ExtractionStats) -> Result<()> {
        stats.messages += 1;
        if m.role != MessageRole::User {
            return Ok(());
        }
        // Over the user's model-call quota, the offline rules (quota.rs).
        let over_quota = self.0.extractor.calls_model()
            && self
                .0
                .engine
                .model_calls()
                .try_take(&m.tenant_id, &m.user_id)
                .is_err();
        let candidates = if over_quota {
            RuleExtractor.extract(&m.content).await?
        } else {
            self.0.extractor.extract(&m.content).await?
        };
        stats.candidates += candidates.len();
        if candidates.is_empty() {
            return Ok(());
        }
        // The user may have been erased while the extractor ran: write
        // nothing for a thread that is gone. Checked here to skip the work,
        // and again in the write's transaction (`remember_from_thread`) for
        // an erasure that completes in between.
        let store = self.0.engine.threads();
        if store.get_thread(&m.tenant_id, m.thread_id).await?.is_none() {
            return Ok(());
        }
        let items = candidates
            .into_iter()
            .map(|c| NewMemory {
                tier: Some(Tier::LongTerm),
                user_id: Some(m.user_id.clone()),
                kind: Some(c.kind),
                text: c.text,
                confidence: Some(c.confidence),
                source: Source {
                    thread_id: Some(m.thread_id.to_string()),
                    message_id: Some(m.seq.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect();
        let actor = Actor {
            id: EXTRACTOR_ACTOR.into(),
            tenant_id: m.tenant_id.clone(),
            user_id: Some(m.user_id.clone()),
            admin: false,
        };
        let remembered = match self
            .0
            .engine
            .remember_from_thread(&actor, m.thread_id, items)
            .await
        {
            Err(Error::NotFound { .. })
                if store.get_thread(&m.tenant_id, m.thread_id).await?.is_none() =>
            {
                return Ok(())
            }
            other => other?,
        };
        for r in remembered {
            match r.outcome {
                Outcome::Created => stats.created += 1,
                Outcome::Reinforced | Outcome::Promoted => stats.reinforced += 1,
                Outcome::Superseded { .. } => stats.superseded += 1,
            }
        }
        Ok(())
    }

    /// Compacts the thread if a trigger fires (see
    /// [`crate::agent::compaction::decide`]). `None` = nothing done.
    pub async fn maybe_compact(
        &self,
        tenant_id: &str,
        id: Uuid,
        window: usize,
    ) -> Result<Option<Compaction>> {
        let store = self.0.engine.threads();
        let Some(thread) = store.get_thread(tenant_id, id).await? else {
            return Ok(None);
        };
        let policy = self.0.engine.policy();
        let messages = store.thread_messages(id, true).await?;
        let now = self.0.engine.clock().now();
        let tokens = history_tokens(&messages, &policy.context.tokenizer);
        let trigger = match decide(
            &policy.agent,
            now,
            thread.last_activity_at,
            thread.last_compacted_at,
            messages.len(),
            tokens,
            window,
        ) {
            Decision::Compact(t) => t,
            Decision::Cooldown | Decision::NotNeeded => return Ok(None),
        };
        let prefix = compactable_prefix(&messages, policy.agent.keep_last_turns);
        let Some(last) = prefix.last() else {
            return Ok(None);
        };
        let over_quota = self.0.summarizer.calls_model()
            && self
                .0
                .engine
                .model_calls()
                .try_take(&thread.tenant_id, &thread.user_id)
                .is_err();
        let summarized = if over_quota {
            Err(Error::RateLimited {
                message: "the user's model-call quota is reached".into(),
                retry_after_secs: 60,
            })
        } else {
            self.0.summarizer.summarize(&thread.summary, prefix).await
        };
        let summary = match summarized {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "the summarizer failed; using the extractive summary");
                ExtractiveSummarizer.summarize_now(&thread.summary, prefix)
            }
        };
        let done = store
            .compact_thread(id, thread.summary_upto_seq, last.seq, &summary, now)
            .await?;
        if !done {
            return Ok(None);
        }
        tracing::info!(messages = prefix.len(), ?trigger, "thread compacted");
        Ok(Some(Compaction {
            trigger,
            messages: prefix.len(),
            upto_seq: last.seq,
        }))
    }

    /// One pass of the idle compaction: every thread idle for
    /// `agent.compact_idle_secs` and out of its cooldown. Returns how many
    /// were compacted.
    pub async fn compact_idle(&self) -> Result<usize> {
        let policy = &self.0.engine.policy().agent;
        let now = self.0.engine.clock().now();
        let due = self
            .0
            .engine
            .threads()
            .idle_threads(
                now - Duration::seconds(policy.compact_idle_secs as i64),
                now - Duration::seconds(policy.compaction_cooldown_secs as i64),
                policy.keep_last_turns,
                100,
            )
            .await?;
        let mut n = 0;
        for (tenant, id) in due {
            if self
                .upkeep(&tenant, id, self.default_window())
                .await?
                .is_some()
            {
                n += 1;
            }
        }
        Ok(n)
    }

    /// The background task that runs [`Agent::compact_idle`] every
    /// `agent.compaction_interval_secs`.
    pub fn idle_compactor(&self) -> IdleCompactor {
        IdleCompactor(self.clone())
    }
}

/// Compacts idle threads (see [`Agent::compact_idle`]) on a timer. It
/// deletes nothing: compaction moves a thread's summary forward and marks
/// the messages it covers `compacted`; every message stays in the store.
pub struct IdleCompactor(Agent);

#[async_trait::async_trait]
impl crate::runner::PeriodicTask for IdleCompactor {
    fn name(&self) -> &'static str {
        "idle-compactor"
    }

    fn interval(&self) -> StdDuration {
        StdDuration::from_secs(self.0 .0.engine.policy().agent.compaction_interval_secs)
    }

    fn run_at_start(&self) -> bool {
        false
    }

    async fn run_once(&mut self) -> Result<()> {
        self.0.compact_idle().await.map(|_| ())
    }
}

/// How a stored message enters a prompt. Tool results go in as assistant
/// messages carrying their compact line: a `tool` role without the
/// `tool_call_id` of a call is rejected by strict OpenAI-compatible servers.
fn to_chat(m: &Message) -> ChatMessage {
    ChatMessage {
        role: match m.role {
            MessageRole::User => "user",
            MessageRole::Assistant | MessageRole::Tool => "assistant",
        }
        .into(),
        content: m.content.clone(),
    }
}

fn one_line(text: &str, chars: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= chars {
        line
    } else {
        let mut s: String = line.chars().take(chars).collect();
        s.push('…');
        s
    }
}

/// Text validation names its field `text`; say which one it was.
fn rename_field(e: Error, field: &'static str) -> Error {
    match e {
        Error::Invalid { message, .. } => Error::Invalid {
            field,
            message: message.replacen("text", field, 1),
        },
        Error::TooLarge { message, .. } => Error::TooLarge {
            field,
            message: message.replacen("text", field, 1),
        },
        other => other,
    }
}
