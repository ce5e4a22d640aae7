//! `/mcp` under `mnemo serve`: MCP over streamable HTTP, in the same router
//! as the REST API (same request ids, tracing, timeout and metrics).
//!
//! Authentication is the REST API's: `Authorization: Bearer <key>` resolved by
//! [`super::auth::Auth`] before the MCP service sees the request (401 with
//! the JSON error shape otherwise). A user key acts for its user; an agent or
//! admin key must name the user in `X-Mnemo-User` (as REST requests name it
//! in `user_id`); see [`crate::mcp::session_actor`]. In `--insecure-dev` mode a
//! keyless request is the local operator and so needs `X-Mnemo-User` too.
//!
//! The service is stateless and answers in JSON: every POST carries its own
//! identity and gets its own handler, so no session can be borrowed by another
//! key, nothing lives in memory between requests, and shutdown never waits on
//! an open stream. With API keys, any `Host` is accepted (the key is the
//! protection); in keyless dev mode only loopback hosts are, against DNS
//! rebinding.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::auth::Auth;
use super::{AppState, AuthMode};
use crate::error::{Error, Result};
use crate::mcp::{session_actor, MnemoMcp, RequestActor, USER_HEADER};

/// The path MCP is served at.
pub const PATH: &str = "/mcp";

/// Resolves the request's key (and `X-Mnemo-User`) to the session's actor.
async fn authenticate(State(state): State<AppState>, req: Request, next: Next) -> Result<Response> {
    let (mut parts, body) = req.into_parts();
    let Auth(actor) = Auth::from_request_parts(&mut parts, &state).await?;
    let user = parts
        .headers
        .get(USER_HEADER)
        .map(|v| {
            v.to_str()
                .map_err(|_| Error::invalid("user", "X-Mnemo-User must be visible ASCII"))
        })
        .transpose()?;
    let actor = session_actor(actor, user)?;
    parts.extensions.insert(RequestActor(actor));
    Ok(next.run(Request::from_parts(parts, body)).await)
}

/// The `/mcp` route, to merge into the API router.
pub fn routes(state: &AppState) -> Router<AppState> {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(state.limits.max_body_bytes);
    if state.auth == AuthMode::Keys {
        config = config.disable_allowed_hosts();
    }
    let engine = state.engine.clone();
    let service = StreamableHttpService::new(
        move || Ok(MnemoMcp::per_request(engine.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(PATH, service)
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
}
