//! The MCP tools: argument types (their doc comments are the JSON Schema
//! descriptions agents read, so they say what each parameter means and its
//! range) and one engine call per tool, the same call the HTTP route makes.
//!
//! Arguments are deserialized strictly (unknown fields such as `user_id` are
//! refused, enums are closed) before the tool runs; the engine's own
//! validation (text length, 0..1 ranges, `top_k` bounds) runs before
//! anything is written. Every failure is an MCP tool error (`isError`) whose
//! text starts `status: error · <code>`.

use chrono::{DateTime, Utc};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Extensions};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use uuid::Uuid;

use super::{render, MnemoMcp};
use crate::domain::{Kind, MemoryPatch, NewMemory, Scope, Tier};
use crate::error::{Error, Result};
use crate::service::next_page;
use crate::service::ContextRequest;
use crate::service::SearchRequest;

/// What sort of statement a memory is.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// A taste or wish: "prefers green tea", "likes short answers".
    Preference,
    /// A lasting fact about the user: "lives in Lyon", "has two children".
    Fact,
    /// Something that happened or will happen on a date: "moved house in May 2026".
    Event,
    /// A standing instruction for the assistant: "always answer in French".
    Instruction,
}

impl From<MemoryKind> for Kind {
    fn from(k: MemoryKind) -> Self {
        match k {
            MemoryKind::Preference => Kind::Preference,
            MemoryKind::Fact => Kind::Fact,
            MemoryKind::Event => Kind::Event,
            MemoryKind::Instruction => Kind::Instruction,
        }
    }
}

/// A tier `recall` may search.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecallTier {
    /// The user's own memories (what `remember` stores).
    LongTerm,
    /// Knowledge shared by every user of the organisation (read-only here).
    Reference,
}

impl From<RecallTier> for Tier {
    fn from(t: RecallTier) -> Self {
        match t {
            RecallTier::LongTerm => Tier::LongTerm,
            RecallTier::Reference => Tier::Reference,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The statement to remember: one self-contained fact about the user, in
    /// the third person, understandable without the conversation (e.g. "The
    /// user is allergic to peanuts"). Not empty; at most the policy's
    /// `limits.max_text_bytes` bytes.
    pub text: String,
    /// What sort of statement it is.
    pub kind: MemoryKind,
    /// How much it matters, 0 to 1 (default from the policy, 0.5). Raise it for
    /// things that must never be forgotten (allergies, hard constraints).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance: Option<f32>,
    /// How sure you are that the user really stated this, 0 to 1 (default 1).
    /// Below the policy's `lifecycle.pending_below_confidence` (0.6 by
    /// default) the memory is stored as a pending candidate, not recalled
    /// until the user confirms it. Use a low value when you inferred it.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: Option<f32>,
    /// When it stops being true, RFC 3339 (e.g. "2026-12-31T00:00:00Z"); it
    /// is no longer recalled after that. Omit for lasting memories.
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// What to look for, in natural language or keywords (e.g. "drink
    /// preferences", "where does the user live").
    pub query: String,
    /// How many memories to return at most, 1 to the policy's
    /// `retrieval.max_top_k` (default `retrieval.default_top_k`).
    #[schemars(range(min = 1))]
    pub top_k: Option<usize>,
    /// Which tiers to search; default both `long_term` and `reference`.
    pub tiers: Option<Vec<RecallTier>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetContextArgs {
    /// What the current request is about: usually the user's last message.
    pub query: String,
    /// The context window of the model that will read the block, in tokens
    /// (e.g. 200000), 256 to 10000000. The block uses at most the policy's
    /// `context.budget_fraction` of it (10% by default).
    #[schemars(range(min = 256, max = 10_000_000))]
    pub model_context_tokens: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemoryArgs {
    /// The memory's id, as shown by recall, list_pending or remember (`id=`).
    pub id: Uuid,
    /// The corrected statement, replacing the old text.
    pub text: Option<String>,
    /// New importance, 0 to 1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance: Option<f32>,
    /// New expiry, RFC 3339; the memory is no longer recalled after it.
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The memory's id, as shown by recall, list_pending or remember (`id=`).
    pub id: Uuid,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListPendingArgs {
    /// How many candidates to list, 1 to 100 (default 20).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page, to list more.
    pub cursor: Option<Uuid>,
}

const DEFAULT_PENDING_PAGE: usize = 20;
const MAX_PENDING_PAGE: usize = 100;

fn answer(result: Result<String>) -> CallToolResult {
    match result {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(render::error(&e))]),
    }
}

#[tool_router(vis = "pub(crate)")]
impl MnemoMcp {
    #[tool(
        description = "Store a lasting memory about the user: a preference, fact, event or \
                       standing instruction they stated. Use it when the user says something \
                       worth knowing in later conversations; one self-contained statement per \
                       call. If the same fact is already stored it is reinforced instead of \
                       copied; a correction (\"actually, ...\") replaces the memory it corrects. \
                       Returns the memory's id and status (active, or pending when confidence \
                       was low).",
        annotations(title = "Remember", read_only_hint = false, destructive_hint = false)
    )]
    async fn remember(
        &self,
        Parameters(args): Parameters<RememberArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.do_remember(args, &extensions).await)
    }

    #[tool(
        description = "Search the user's memories (and shared reference knowledge) for what is \
                       relevant to a query. Use it before answering anything that may depend on \
                       what you know about the user, or to find a memory's id before \
                       update_memory / forget_memory. Returns memories best first, each with its \
                       id, tier, kind, date and score. An empty result means nothing relevant is \
                       stored: it is not an error, do not retry with the same query.",
        annotations(title = "Recall", read_only_hint = true)
    )]
    async fn recall(
        &self,
        Parameters(args): Parameters<RecallArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.do_recall(args, &extensions).await)
    }

    #[tool(
        description = "Build the block of the user's relevant memories to put in a model's \
                       prompt, within a token budget (a share of the model's context window, \
                       counted with a real tokenizer). Use it once at the start of a task or \
                       turn, with the user's request as the query, and insert the block as it \
                       is. Empty when nothing relevant is stored (not an error).",
        annotations(title = "Get memory context", read_only_hint = true)
    )]
    async fn get_context(
        &self,
        Parameters(args): Parameters<GetContextArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.do_get_context(args, &extensions).await)
    }

    #[tool(
        description = "Change a stored memory by id: its text (to correct it), importance or \
                       expiry. Use it when the user corrects or refines something you \
                       remembered; find the id with recall first. Give at least one of text, \
                       importance, expires_at.",
        annotations(
            title = "Update memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true
        )
    )]
    async fn update_memory(
        &self,
        Parameters(args): Parameters<UpdateMemoryArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.do_update(args, &extensions).await)
    }

    #[tool(
        description = "Forget one memory by id, when the user asks you to forget it or it is \
                       wrong and cannot be corrected. It is no longer recalled (soft delete: \
                       the service keeps its history and an operator can restore it). Find the \
                       id with recall first.",
        annotations(
            title = "Forget memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true
        )
    )]
    async fn forget_memory(
        &self,
        Parameters(IdArgs { id }): Parameters<IdArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.review(Review::Forget, id, &extensions).await)
    }

    #[tool(
        description = "Confirm a pending candidate memory by id after the user agreed it is \
                       right: it becomes active and is recalled from then on. Only pending \
                       memories (see list_pending) can be confirmed.",
        annotations(
            title = "Confirm memory",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true
        )
    )]
    async fn confirm_memory(
        &self,
        Parameters(IdArgs { id }): Parameters<IdArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.review(Review::Confirm, id, &extensions).await)
    }

    #[tool(
        description = "Reject a pending candidate memory by id when the user says it is wrong: \
                       it is discarded and never recalled. Only pending memories (see \
                       list_pending) can be rejected.",
        annotations(
            title = "Reject memory",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true
        )
    )]
    async fn reject_memory(
        &self,
        Parameters(IdArgs { id }): Parameters<IdArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.review(Review::Reject, id, &extensions).await)
    }

    #[tool(
        description = "List the user's pending candidate memories (stored with low confidence, \
                       not recalled until confirmed), oldest first. Use it to review them with \
                       the user, then confirm_memory or reject_memory each.",
        annotations(title = "List pending memories", read_only_hint = true)
    )]
    async fn list_pending(
        &self,
        Parameters(args): Parameters<ListPendingArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        answer(self.do_list_pending(args, &extensions).await)
    }
}

/// The tools that move one memory to another status.
#[derive(Clone, Copy, Debug)]
enum Review {
    Forget,
    Confirm,
    Reject,
}

impl MnemoMcp {
    async fn review(&self, op: Review, id: Uuid, extensions: &Extensions) -> Result<String> {
        let actor = self.actor(extensions)?;
        let (memory, what) = match op {
            Review::Forget => (
                self.engine.delete(&actor, id).await?,
                "forgotten: no longer recalled (soft-deleted, restorable by an operator)",
            ),
            Review::Confirm => (
                self.engine.confirm(&actor, id).await?,
                "confirmed: the memory is active and will be recalled",
            ),
            Review::Reject => (
                self.engine.reject(&actor, id).await?,
                "rejected: the candidate is discarded and will not be recalled",
            ),
        };
        Ok(render::changed(what, &memory))
    }

    async fn do_remember(&self, args: RememberArgs, extensions: &Extensions) -> Result<String> {
        let actor = self.actor(extensions)?;
        let new = NewMemory {
            tier: Some(Tier::LongTerm),
            kind: Some(args.kind.into()),
            text: args.text,
            importance: args.importance,
            confidence: args.confidence,
            expires_at: args.expires_at,
            ..Default::default()
        };
        // Searchable at once: an agent often recalls right after remembering.
        let mut done = self.engine.remember(&actor, vec![new], true).await?;
        let threshold = self.engine.policy().lifecycle.pending_below_confidence;
        Ok(render::remembered(&done.remove(0), threshold))
    }

    async fn do_recall(&self, args: RecallArgs, extensions: &Extensions) -> Result<String> {
        let actor = self.actor(extensions)?;
        let tiers = match args.tiers {
            Some(t) if t.is_empty() => {
                return Err(Error::invalid(
                    "tiers",
                    "give at least one tier, or omit tiers to search long_term and reference",
                ))
            }
            Some(t) => t.into_iter().map(Tier::from).collect(),
            None => vec![Tier::LongTerm, Tier::Reference],
        };
        let scope = Scope {
            tenant_id: actor.tenant_id.clone(),
            user_id: actor.user_id.clone().unwrap_or_default(),
            thread_id: None,
            tiers,
            include_pending: false,
            kinds: None,
        };
        let mut req = SearchRequest::new(scope, args.query);
        req.top_k = args.top_k;
        Ok(render::hits(&self.engine.search(req).await?.hits))
    }

    async fn do_get_context(
        &self,
        args: GetContextArgs,
        extensions: &Extensions,
    ) -> Result<String> {
        let actor = self.actor(extensions)?;
        let req = ContextRequest {
            query: Some(args.query),
            model_context_tokens: args.model_context_tokens,
            ..Default::default()
        };
        Ok(render::context(
            &self.engine.build_context(&actor, req).await?,
        ))
    }

    async fn do_update(&self, args: UpdateMemoryArgs, extensions: &Extensions) -> Result<String> {
        let actor = self.actor(extensions)?;
        if args.text.is_none() && args.importance.is_none() && args.expires_at.is_none() {
            return Err(Error::invalid(
                "arguments",
                "nothing to change: give text, importance or expires_at",
            ));
        }
        let patch = MemoryPatch {
            text: args.text,
            importance: args.importance,
            metadata: None,
            expires_at: args.expires_at.map(Some),
        };
        let m = self.engine.update(&actor, args.id, patch, true).await?;
        Ok(render::changed("updated", &m))
    }

    async fn do_list_pending(
        &self,
        args: ListPendingArgs,
        extensions: &Extensions,
    ) -> Result<String> {
        let actor = self.actor(extensions)?;
        let limit = args.limit.unwrap_or(DEFAULT_PENDING_PAGE);
        if limit == 0 || limit > MAX_PENDING_PAGE {
            return Err(Error::invalid(
                "limit",
                format!("limit must be between 1 and {MAX_PENDING_PAGE}"),
            ));
        }
        let mut memories = self
            .engine
            .pending(&actor, None, args.cursor, limit + 1)
            .await?;
        let next = next_page(&mut memories, limit);
        Ok(render::pending(&memories, next.as_deref()))
    }
}
