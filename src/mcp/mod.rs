//! Mnemo as a Model Context Protocol server: the same engine calls as the
//! HTTP API, offered as MCP tools and resources (official Rust SDK, `rmcp`).
//!
//! - `tools.rs`: the eight tools (`remember`, `recall`, `get_context`,
//!   `update_memory`, `forget_memory`, `confirm_memory`, `reject_memory`,
//!   `list_pending`), their argument types (JSON Schemas generated with
//!   `schemars`, unknown fields refused) and one engine call each.
//! - `render.rs` (pure): compact text results, each opening with an explicit
//!   `status:` line; an empty result says so plainly.
//! - `http.rs`: `/mcp` under `mnemo serve` (streamable HTTP, stateless, JSON
//!   responses), authenticated like the REST API.
//! - `stdio.rs`: `mnemo mcp`, one session over stdin/stdout.
//!
//! Identity and scope come from the connection, never from a tool argument:
//! every session acts for exactly one user of one tenant ([`session_actor`]),
//! so no tool takes a `user_id` and a call cannot reach another user's
//! memories (another user's id is "not found", as over HTTP). MCP sessions
//! never write reference memory, whatever the key's role. "Forget all my
//! data" is not a tool.
//!
//! Threading: handlers are async on the tokio runtime; the engine moves
//! blocking work off it.

mod render;
pub mod stdio;
mod tools;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    Extensions, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData, RoleServer, ServerHandler};

use crate::domain::validate::validate_id;
use crate::domain::Actor;
use crate::domain::{Status, Tier};
use crate::error::{Error, Result};
use crate::store::ListQuery;
use crate::Engine;

/// The header that names the user when an agent or admin key opens an MCP
/// session over HTTP (a user key is bound to its own user already).
pub const USER_HEADER: &str = "x-mnemo-user";

/// The URI of the user's memory profile resource.
pub const PROFILE_URI: &str = "mnemo://profile";
/// The URI of the policy resource.
pub const POLICY_URI: &str = "mnemo://policy";

/// Most memories the profile resource lists.
const PROFILE_MAX: usize = 500;

const INSTRUCTIONS: &str = "Mnemo is this user's long-term memory. At the start of a task, call \
get_context (or recall) with what the user is asking about, and use what is relevant. When the \
user states a lasting preference, fact, plan or instruction, call remember with one \
self-contained statement. When a memory is wrong, update_memory or forget_memory it by id. \
Candidates you were unsure about wait as pending: list_pending, ask the user, then \
confirm_memory or reject_memory. An empty result is not an error: do not retry it. \
Resources: mnemo://profile (the user's active long-term memories by kind), mnemo://policy \
(the memory policy in force).";

/// The actor an MCP session acts as: the key's tenant and id, bound to one
/// user, never admin. A user-bound key keeps its user (naming another is
/// refused); an agent or admin key (or the local operator) must name one.
pub fn session_actor(actor: Actor, user: Option<&str>) -> Result<Actor> {
    let user = actor.user_for(user)?.ok_or_else(|| {
        Error::invalid(
            "user",
            "an MCP session acts for one user: with an agent or admin key, name the user \
             (`--user` for `mnemo mcp`, the `X-Mnemo-User` header over HTTP)",
        )
    })?;
    validate_id("user_id", &user)?;
    Ok(Actor {
        id: actor.id,
        tenant_id: actor.tenant_id,
        user_id: Some(user),
        admin: false,
    })
}

/// The identity of an HTTP request, put in its extensions by the `/mcp`
/// authentication layer and read back by the handler.
#[derive(Clone, Debug)]
pub(crate) struct RequestActor(pub Actor);

#[derive(Clone, Debug)]
enum Identity {
    /// stdio: one actor for the whole connection.
    Fixed(Actor),
    /// HTTP: each request carries its own authenticated actor.
    PerRequest,
}

/// The MCP server: the engine plus where the acting user comes from.
#[derive(Clone)]
pub struct MnemoMcp {
    engine: Engine,
    identity: Identity,
    tool_router: ToolRouter<MnemoMcp>,
}

impl MnemoMcp {
    /// A session that acts as `actor` (from [`session_actor`]) throughout.
    pub fn new(engine: Engine, actor: Actor) -> Self {
        Self::with_identity(engine, Identity::Fixed(actor))
    }

    /// A handler whose actor is the one the HTTP layer authenticated.
    pub(crate) fn per_request(engine: Engine) -> Self {
        Self::with_identity(engine, Identity::PerRequest)
    }

    fn with_identity(engine: Engine, identity: Identity) -> Self {
        MnemoMcp {
            engine,
            identity,
            tool_router: Self::tool_router(),
        }
    }

    /// The acting user's actor for this request.
    fn actor(&self, extensions: &Extensions) -> Result<Actor> {
        let actor = match &self.identity {
            Identity::Fixed(actor) => Some(actor.clone()),
            Identity::PerRequest => extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.extensions.get::<RequestActor>())
                .map(|a| a.0.clone()),
        };
        match actor {
            Some(a) if a.user_id.is_some() => Ok(a),
            _ => Err(Error::Unauthenticated(
                "this MCP request carries no user identity".into(),
            )),
        }
    }

    async fn profile(&self, actor: &Actor) -> Result<String> {
        let mut memories = Vec::new();
        let mut after = None;
        let truncated = loop {
            let page = self
                .engine
                .list(
                    actor,
                    ListQuery {
                        tier: Some(Tier::LongTerm),
                        status: Some(Status::Active),
                        after,
                        limit: 100,
                        ..Default::default()
                    },
                )
                .await?;
            let full = page.len() == 100;
            after = page.last().map(|m| m.id);
            memories.extend(page);
            if memories.len() >= PROFILE_MAX {
                memories.truncate(PROFILE_MAX);
                break true;
            }
            if !full {
                break false;
            }
        };
        Ok(render::profile(&memories, truncated))
    }

    fn policy_text(&self) -> Result<String> {
        let toml = toml::to_string(self.engine.policy()).map_err(Error::internal)?;
        Ok(format!(
            "# The memory policy in force (memory_policies.toml, read-only here).\n{toml}"
        ))
    }
}

/// An engine error as an MCP protocol error (resources have no `isError`).
fn protocol_error(e: Error) -> ErrorData {
    match e.code() {
        crate::ErrorCode::NotFound => ErrorData::resource_not_found(e.to_string(), None),
        crate::ErrorCode::Internal => {
            tracing::error!(error = %e, "MCP resource read failed");
            ErrorData::internal_error("internal error", None)
        }
        _ => ErrorData::invalid_request(e.to_string(), None),
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MnemoMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(PROFILE_URI, "profile")
                .with_title("Memory profile")
                .with_description(
                    "The user's active long-term memories, grouped by kind (preference, \
                     fact, event, instruction, ...), oldest first, with ids.",
                )
                .with_mime_type("text/plain"),
            Resource::new(POLICY_URI, "policy")
                .with_title("Memory policy")
                .with_description(
                    "The memory policy in force (TOML): limits, retrieval, decay, context \
                     budget, lifecycle thresholds such as the confidence below which a \
                     memory waits as pending.",
                )
                .with_mime_type("application/toml"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        let actor = self.actor(&context.extensions).map_err(protocol_error)?;
        let (text, mime) = match request.uri.as_str() {
            PROFILE_URI => (
                self.profile(&actor).await.map_err(protocol_error)?,
                "text/plain",
            ),
            POLICY_URI => (
                self.policy_text().map_err(protocol_error)?,
                "application/toml",
            ),
            other => {
                return Err(ErrorData::resource_not_found(
                    format!(
                        "no resource `{other}`: the resources are {PROFILE_URI} and {POLICY_URI}"
                    ),
                    None,
                ))
            }
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri).with_mime_type(mime)
        ])
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> Actor {
        Actor {
            id: "key_a".into(),
            tenant_id: "acme".into(),
            user_id: None,
            admin: true,
        }
    }

    #[test]
    fn sessions_act_for_exactly_one_user_and_never_as_admin() {
        let a = session_actor(agent(), Some("ann")).unwrap();
        assert_eq!(a.user_id.as_deref(), Some("ann"));
        assert_eq!(a.tenant_id, "acme");
        assert!(!a.admin);
        // An agent or admin key must name the user.
        assert!(matches!(
            session_actor(agent(), None),
            Err(Error::Invalid { .. })
        ));
        assert!(session_actor(agent(), Some("")).is_err());
        // A user key keeps its user and cannot name another.
        let bound = Actor {
            user_id: Some("bob".into()),
            admin: false,
            ..agent()
        };
        assert_eq!(
            session_actor(bound.clone(), None)
                .unwrap()
                .user_id
                .as_deref(),
            Some("bob")
        );
        assert!(session_actor(bound.clone(), Some("bob")).is_ok());
        assert!(matches!(
            session_actor(bound, Some("ann")),
            Err(Error::Forbidden(_))
        ));
    }
}
