//! The memory block for a prompt, as a use case: validate the request,
//! search the user's tiers (working memory when a thread is given), and
//! pack the hits with [`crate::domain::context::pack`]. The HTTP
//! `/v1/context` route, MCP `get_context`, the chat proxy and the agent loop
//! all call [`Engine::build_context`].

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Engine, SearchRequest};
use crate::domain::chat::ChatMessage;
use crate::domain::context::{budget_tokens, pack, ContextBlock};
use crate::domain::{Actor, Scope};
use crate::error::{Error, Result};

#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    /// Required unless the key is bound to a user.
    pub user_id: Option<String>,
    pub thread_id: Option<String>,
    /// What to find memories for; or give `messages`.
    pub query: Option<String>,
    /// The conversation so far; the last user message becomes the query.
    pub messages: Option<Vec<ChatMessage>>,
    /// The model's context window, in tokens.
    pub model_context_tokens: usize,
    /// Share of the window the memory block may use (policy default 0.10).
    pub budget_fraction: Option<f64>,
}

impl Engine {
    /// Builds the memory block for a request: validates, searches the user's
    /// tiers (working memory when a thread is given), and packs the hits.
    pub async fn build_context(&self, actor: &Actor, req: ContextRequest) -> Result<ContextBlock> {
        let policy = self.policy();
        crate::domain::validate::validate_window(req.model_context_tokens)?;
        let fraction = req
            .budget_fraction
            .unwrap_or(policy.context.budget_fraction);
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(Error::invalid(
                "budget_fraction",
                "budget_fraction must be greater than 0 and at most 1",
            ));
        }
        let query = match (&req.query, &req.messages) {
            (Some(q), _) => q.clone(),
            (None, Some(messages)) => messages
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .or(messages.last())
                .map(|m| m.content.clone())
                .ok_or_else(|| Error::invalid("messages", "messages must not be empty"))?,
            (None, None) => {
                return Err(Error::invalid("query", "give a query or messages"));
            }
        };
        let user = actor
            .user_for(req.user_id.as_deref())?
            .ok_or_else(|| Error::invalid("user_id", "user_id is required"))?;
        let mut scope = Scope::user(user);
        scope.tenant_id = actor.tenant_id.clone();
        scope.thread_id = req.thread_id.clone();
        let c = &policy.context;
        let mut search = SearchRequest::new(scope, query);
        search.top_k = Some(
            (c.max_long_term + c.max_working + c.max_reference + 10)
                .min(policy.retrieval.max_top_k),
        );
        let hits = self.search(search).await?.hits;
        let budget = budget_tokens(req.model_context_tokens, fraction);
        Ok(pack(&hits, budget, c, &policy.context.tokenizer))
    }
}
