//! `mnemo mcp`: one MCP session over stdin/stdout, for clients that start
//! their servers as child processes. Opens the data directory directly (so it
//! cannot run beside a `mnemo serve` on the same directory: the index writer
//! lock refuses), acts for one user for the whole session, and on end of
//! input commits the indexes and checkpoints the store. Logs go to stderr;
//! stdout carries only the protocol.

use anyhow::{bail, Context};
use rmcp::ServiceExt;

use super::{session_actor, MnemoMcp};
use crate::config::{ensure_assets, GlobalArgs, McpArgs};
use crate::domain::owner::DEFAULT_TENANT;
use crate::domain::Actor;
use crate::node::{Node, NodeParts};

/// Actor id of keyless local sessions, recorded in audit events.
pub const LOCAL_ACTOR: &str = "mcp-local";

/// Serves MCP on stdin/stdout until the client closes it.
pub async fn run(global: &GlobalArgs, args: McpArgs) -> anyhow::Result<()> {
    if args.key.is_none() && args.user.is_none() {
        bail!("give --user U (local install) or --key K (an API key) so that the session acts for one user");
    }
    let g = global.clone();
    tokio::task::spawn_blocking(move || ensure_assets(&g))
        .await
        .context("asset check failed")??;
    let engine = global.engine_builder()?.build().await?.engine;
    let actor = match &args.key {
        Some(secret) => {
            let (_, actor) =
                crate::service::keys::authenticate(engine.keys(), secret.trim()).await?;
            session_actor(actor, args.user.as_deref())?
        }
        None => session_actor(
            Actor {
                id: LOCAL_ACTOR.into(),
                tenant_id: DEFAULT_TENANT.into(),
                user_id: None,
                admin: false,
            },
            args.user.as_deref(),
        )?,
    };
    tracing::info!(key_id = %actor.id, tenant = %actor.tenant_id, "MCP session on stdio");
    // The same background work as `mnemo serve` (no agent loop, no
    // follower: a stdio session is one local node).
    let node = Node::start(engine.clone(), NodeParts::default()).await?;
    let served = async {
        let service = MnemoMcp::new(engine.clone(), actor)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("MCP handshake failed: {e}"))?;
        service
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("MCP session failed: {e}"))?;
        anyhow::Ok(())
    }
    .await;
    node.stop().await?;
    served?;
    tracing::info!("MCP session ended: indexes committed, store checkpointed");
    Ok(())
}
