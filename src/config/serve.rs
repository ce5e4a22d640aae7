//! `mnemo serve` configuration: [`ServeArgs`], one field per option, gives
//! each option its flag, its `MNEMO_*` variable and its `--config` file key
//! (the flag's id; `llm_*` under `[llm]`, see `config/file.rs`). Clap layers
//! them: built-in defaults < the TOML file (`--config`, `MNEMO_CONFIG`) <
//! variables < flags. [`ServeConfig::resolve`] then validates the result, so
//! a running server never holds an invalid configuration.
//!
//! The optional `[llm]` section (or `MNEMO_LLM_*`, `--llm-*`) configures the
//! OpenAI-compatible chat model; without `base_url` and `model` there is none
//! and the routes that need one answer 503. The API key is never printed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{EngineArgs, GlobalArgs, NodeArgs};
use crate::error::Error;
use crate::llm::openai::{
    OpenAiConfig, DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECS,
};

/// Hard ceiling on a request body, whatever the policy allows.
pub const MAX_BODY_CAP: usize = 8 * 1024 * 1024;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8420";
const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 30;
const DEFAULT_SHUTDOWN_TIMEOUT_SECS: u64 = 30;
const DEFAULT_ERASURE_WAIT_SECS: u64 = 1;
const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Human,
    /// One JSON object per line, with the request span (request id) in each.
    Json,
}

/// `mnemo serve` options. Each can also come from the `--config` file (its
/// id, snake_case; `llm_*` in `[llm]`) or its `MNEMO_*` variable; flags win
/// over variables, variables over the file, the file over defaults. The
/// global options (`--data-dir`, `--policy`, `--assets-dir`, …) and the
/// store, Qdrant and cluster options (`--database-url`, `--qdrant-url`,
/// `--node-id`, …) follow the same order (file keys `data_dir`, …).
/// Adding an option is adding a field here (and using it in
/// [`ServeConfig::resolve`]). Log filtering: `MNEMO_LOG` (e.g. `info,mnemo=debug`).
#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// TOML configuration file.
    #[arg(long, env = "MNEMO_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8420].
    #[arg(long, env = "MNEMO_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Serve without API keys: requests without a key act as the local admin.
    /// For development only; refuses any address but loopback.
    #[arg(long, env = "MNEMO_INSECURE_DEV")]
    pub insecure_dev: bool,
    /// Log line format [default: human].
    #[arg(long, env = "MNEMO_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Longest a request may take before it is abandoned with 503 [default: 30].
    #[arg(long, env = "MNEMO_REQUEST_TIMEOUT_SECS")]
    pub request_timeout_secs: Option<u64>,
    /// Largest request body, bytes, at most 8 MiB [default: policy
    /// limits.max_batch × limits.max_text_bytes plus JSON overhead, capped at 8 MiB].
    #[arg(long, env = "MNEMO_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// Longest wait for in-flight requests at shutdown [default: 30].
    #[arg(long, env = "MNEMO_SHUTDOWN_TIMEOUT_SECS")]
    pub shutdown_timeout_secs: Option<u64>,
    /// How long `DELETE /v1/users/{user_id}` waits for the erasure before
    /// answering 202 with a status URL; the erasure goes on either way [default: 2].
    #[arg(long, env = "MNEMO_ERASURE_WAIT_SECS")]
    pub erasure_wait_secs: Option<u64>,
    /// Longest a client may take to send a request's headers (slow or
    /// half-open connections are closed after it) [default: 10].
    #[arg(long, env = "MNEMO_HEADER_READ_TIMEOUT_SECS")]
    pub header_read_timeout_secs: Option<u64>,
    /// OpenAI-compatible model endpoint, e.g. http://127.0.0.1:11434/v1
    /// [default: none: no model].
    #[arg(long, env = "MNEMO_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Model name sent upstream (required with a base URL).
    #[arg(long, env = "MNEMO_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// API key for the endpoint; prefer the variable (flags show in process lists).
    #[arg(long, env = "MNEMO_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<ApiKey>,
    /// The model's context window, tokens [default: 8192].
    #[arg(long, env = "MNEMO_LLM_CONTEXT_TOKENS")]
    pub llm_context_tokens: Option<usize>,
    /// Timeout of one model request attempt, seconds [default: 60].
    #[arg(long, env = "MNEMO_LLM_TIMEOUT_SECS")]
    pub llm_timeout_secs: Option<u64>,
    /// Retries on connect errors, 429 and 5xx [default: 2].
    #[arg(long, env = "MNEMO_LLM_MAX_RETRIES")]
    pub llm_max_retries: Option<u32>,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub node: NodeArgs,
}

/// A secret that never shows in debug output.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(pub String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::str::FromStr for ApiKey {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ApiKey(s.to_string()))
    }
}

/// A validated server configuration.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub insecure_dev: bool,
    pub log_format: LogFormat,
    pub request_timeout: Duration,
    /// `None`: derived from the policy.
    pub max_body_bytes: Option<usize>,
    pub shutdown_timeout: Duration,
    pub erasure_wait: Duration,
    pub header_read_timeout: Duration,
    /// Data, policy and assets locations after layering.
    pub global: GlobalArgs,
    /// The chat model, when `base_url` and `model` are set.
    pub llm: Option<OpenAiConfig>,
}

fn config_err(key: &str, message: impl Into<String>) -> Error {
    Error::Config {
        key: key.into(),
        message: message.into(),
    }
}

/// The `[llm]` settings after layering (flags and variables over the file),
/// validated; `None` when no endpoint is configured.
fn resolve_llm(args: &ServeArgs) -> Result<Option<OpenAiConfig>, Error> {
    let base_url = args.llm_base_url.clone();
    let model = args.llm_model.clone();
    let (base_url, model) = match (base_url, model) {
        (None, None) => return Ok(None),
        (Some(b), Some(m)) if !m.trim().is_empty() => (b, m),
        (Some(_), _) => {
            return Err(config_err(
                "llm.model",
                "a model name is required with llm.base_url (MNEMO_LLM_MODEL)",
            ))
        }
        (None, Some(_)) => {
            return Err(config_err(
                "llm.base_url",
                "an endpoint is required with llm.model (MNEMO_LLM_BASE_URL), e.g. http://127.0.0.1:11434/v1",
            ))
        }
    };
    let mut c = OpenAiConfig::new(base_url, model.trim());
    c.endpoint().map_err(|m| config_err("llm.base_url", m))?;
    c.api_key = args
        .llm_api_key
        .clone()
        .map(|k| k.0)
        .filter(|k| !k.trim().is_empty());
    c.context_tokens = args.llm_context_tokens.unwrap_or(DEFAULT_CONTEXT_TOKENS);
    if !(256..=10_000_000).contains(&c.context_tokens) {
        return Err(config_err(
            "llm.context_tokens",
            "must be between 256 and 10000000",
        ));
    }
    let timeout_secs = args.llm_timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if !(1..=3600).contains(&timeout_secs) {
        return Err(config_err("llm.timeout_secs", "must be between 1 and 3600"));
    }
    c.timeout = Duration::from_secs(timeout_secs);
    c.max_retries = args.llm_max_retries.unwrap_or(DEFAULT_MAX_RETRIES);
    if c.max_retries > 10 {
        return Err(config_err("llm.max_retries", "must be at most 10"));
    }
    Ok(Some(c))
}

impl ServeConfig {
    /// Validates the options clap layered (defaults < `--config` file <
    /// `MNEMO_*` < flags; see `config/file.rs`): the one place that decides
    /// whether a server configuration is valid.
    pub fn resolve(args: &ServeArgs, global: &GlobalArgs) -> Result<Self, Error> {
        let listen = args
            .listen
            .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("valid default"));
        let insecure_dev = args.insecure_dev;
        if insecure_dev && !listen.ip().is_loopback() {
            return Err(config_err(
                "insecure_dev",
                format!(
                    "--insecure-dev serves without API keys and so binds to 127.0.0.1 only; \
                     refusing to listen on {listen}. Create a key (`mnemo keys create`) to serve on other addresses"
                ),
            ));
        }
        let request_timeout_secs = args
            .request_timeout_secs
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS);
        if request_timeout_secs == 0 {
            return Err(config_err("request_timeout_secs", "must be at least 1"));
        }
        let max_body_bytes = args.max_body_bytes;
        if let Some(n) = max_body_bytes {
            if !(1024..=MAX_BODY_CAP).contains(&n) {
                return Err(config_err(
                    "max_body_bytes",
                    format!("must be between 1024 and {MAX_BODY_CAP}, got {n}"),
                ));
            }
        }
        let shutdown_timeout_secs = args
            .shutdown_timeout_secs
            .unwrap_or(DEFAULT_SHUTDOWN_TIMEOUT_SECS);
        let erasure_wait_secs = args.erasure_wait_secs.unwrap_or(DEFAULT_ERASURE_WAIT_SECS);
        if erasure_wait_secs >= request_timeout_secs {
            return Err(config_err(
                "erasure_wait_secs",
                format!("must be below request_timeout_secs ({request_timeout_secs})"),
            ));
        }
        let header_read_timeout_secs = args
            .header_read_timeout_secs
            .unwrap_or(DEFAULT_HEADER_READ_TIMEOUT_SECS);
        if !(1..=300).contains(&header_read_timeout_secs) {
            return Err(config_err(
                "header_read_timeout_secs",
                "must be between 1 and 300",
            ));
        }
        if let Some(url) = &global.database_url {
            crate::store::url::StoreUrl::parse(url)?;
        }
        if global.db_pool_size == Some(0) {
            return Err(config_err("db_pool_size", "must be at least 1"));
        }
        let llm = resolve_llm(args)?;
        Ok(ServeConfig {
            listen,
            insecure_dev,
            log_format: args.log_format.unwrap_or_default(),
            request_timeout: Duration::from_secs(request_timeout_secs),
            max_body_bytes,
            shutdown_timeout: Duration::from_secs(shutdown_timeout_secs),
            erasure_wait: Duration::from_secs(erasure_wait_secs),
            header_read_timeout: Duration::from_secs(header_read_timeout_secs),
            global: global.clone(),
            llm,
        })
    }
}
