//! `mnemo mcp` options.

use clap::Args;

/// Who the session acts for: `--key` (resolved like the HTTP API's keys) or,
/// on a local install, `--user` alone (default tenant).
#[derive(Args, Debug, Clone, Default)]
pub struct McpArgs {
    /// An API key (`mnemo keys create`). A user key acts for its user; an
    /// agent or admin key needs `--user` too. Prefer the variable to the flag,
    /// which other local users may see in the process list.
    #[arg(long, env = "MNEMO_MCP_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// The user whose memories the session reaches. Alone (no key), the local
    /// operator acting for this user of the default tenant.
    #[arg(long, env = "MNEMO_MCP_USER")]
    pub user: Option<String>,
    #[command(flatten)]
    pub engine: super::EngineArgs,
}
