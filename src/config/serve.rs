//! `mnemo serve` configuration, typed and layered: built-in defaults < the
//! TOML file (`--config`, `MNEMO_CONFIG`) < `MNEMO_*` environment variables
//! < flags. Clap merges the last two (a flag beats its variable); the file
//! fills in whatever neither set. [`ServeConfig::resolve`] validates the
//! result, so a running server never holds an invalid configuration.
//!
//! The optional `[llm]` section (or `MNEMO_LLM_*`, `--llm-*`) configures the
//! OpenAI-compatible chat model; without `base_url` and `model` there is none
//! and the routes that need one answer 503. The API key is never printed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::Deserialize;

use super::GlobalArgs;
use crate::error::Error;
use crate::llm::openai::{
    OpenAiConfig, DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECS,
};

/// Hard ceiling on a request body, whatever the policy allows.
pub const MAX_BODY_CAP: usize = 8 * 1024 * 1024;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8420";
const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 30;
const DEFAULT_SHUTDOWN_TIMEOUT_SECS: u64 = 30;
const DEFAULT_ERASURE_WAIT_SECS: u64 = 2;
const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Human,
    /// One JSON object per line, with the request span (request id) in each.
    Json,
}

/// `mnemo serve` options. Each can also come from the `--config` file (same
/// name, snake_case) or an `MNEMO_*` variable; flags win over variables,
/// variables over the file, the file over defaults. The global `--data-dir`,
/// `--policy` and `--assets-dir` follow the same order (file keys `data_dir`,
/// `policy`, `assets_dir`). Log filtering: `MNEMO_LOG` (e.g. `info,mnemo=debug`).
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
}

/// A secret that never shows in debug output.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
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

/// The `[llm]` section of the config file.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlmFile {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<ApiKey>,
    pub context_tokens: Option<usize>,
    pub timeout_secs: Option<u64>,
    pub max_retries: Option<u32>,
}

/// The `--config` file. Every key is optional.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub listen: Option<String>,
    pub insecure_dev: Option<bool>,
    pub log_format: Option<LogFormat>,
    pub request_timeout_secs: Option<u64>,
    pub max_body_bytes: Option<usize>,
    pub shutdown_timeout_secs: Option<u64>,
    pub erasure_wait_secs: Option<u64>,
    pub header_read_timeout_secs: Option<u64>,
    pub data_dir: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    pub assets_dir: Option<PathBuf>,
    /// `postgres://…`: the PostgreSQL store (see `--database-url`).
    pub database_url: Option<String>,
    pub db_pool_size: Option<u32>,
    /// The chat model; absent: none.
    pub llm: Option<LlmFile>,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Config {
            key: path.display().to_string(),
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(&text).map_err(|e| match e {
            Error::Config { key, message } => Error::Config {
                key: format!("{}: {key}", path.display()),
                message,
            },
            other => other,
        })
    }

    pub fn parse(text: &str) -> Result<Self, Error> {
        toml::from_str(text).map_err(|e| Error::Config {
            key: "config".into(),
            message: e.message().to_string(),
        })
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
fn resolve_llm(args: &ServeArgs, file: &LlmFile) -> Result<Option<OpenAiConfig>, Error> {
    let base_url = args.llm_base_url.clone().or(file.base_url.clone());
    let model = args.llm_model.clone().or(file.model.clone());
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
        .or(file.api_key.clone())
        .map(|k| k.0)
        .filter(|k| !k.trim().is_empty());
    c.context_tokens = args
        .llm_context_tokens
        .or(file.context_tokens)
        .unwrap_or(DEFAULT_CONTEXT_TOKENS);
    if !(256..=10_000_000).contains(&c.context_tokens) {
        return Err(config_err(
            "llm.context_tokens",
            "must be between 256 and 10000000",
        ));
    }
    let timeout_secs = args
        .llm_timeout_secs
        .or(file.timeout_secs)
        .unwrap_or(DEFAULT_TIMEOUT_SECS);
    if !(1..=3600).contains(&timeout_secs) {
        return Err(config_err("llm.timeout_secs", "must be between 1 and 3600"));
    }
    c.timeout = Duration::from_secs(timeout_secs);
    c.max_retries = args
        .llm_max_retries
        .or(file.max_retries)
        .unwrap_or(DEFAULT_MAX_RETRIES);
    if c.max_retries > 10 {
        return Err(config_err("llm.max_retries", "must be at most 10"));
    }
    Ok(Some(c))
}

/// The global locations with the file's values under the explicit ones.
pub fn layered_globals(global: &GlobalArgs, file: &ConfigFile) -> GlobalArgs {
    let mut g = global.clone();
    if !g.explicit.data_dir {
        if let Some(d) = &file.data_dir {
            g.data_dir = d.clone();
        }
    }
    if !g.explicit.assets_dir {
        if let Some(d) = &file.assets_dir {
            g.assets_dir = d.clone();
        }
    }
    if g.policy.is_none() {
        g.policy = file.policy.clone();
    }
    if g.database_url.is_none() {
        g.database_url = file.database_url.clone();
    }
    if g.db_pool_size.is_none() {
        g.db_pool_size = file.db_pool_size;
    }
    g
}

impl ServeConfig {
    /// Layers defaults < file < environment < flags and validates.
    pub fn resolve(args: &ServeArgs, global: &GlobalArgs) -> Result<Self, Error> {
        let file = match &args.config {
            Some(path) => ConfigFile::load(path)?,
            None => ConfigFile::default(),
        };
        Self::resolve_with(args, global, file)
    }

    pub fn resolve_with(
        args: &ServeArgs,
        global: &GlobalArgs,
        file: ConfigFile,
    ) -> Result<Self, Error> {
        let listen = match (args.listen, &file.listen) {
            (Some(a), _) => a,
            (None, Some(s)) => s.parse().map_err(|_| {
                config_err(
                    "listen",
                    format!("`{s}` is not an address such as {DEFAULT_LISTEN}"),
                )
            })?,
            (None, None) => DEFAULT_LISTEN.parse().expect("valid default"),
        };
        let insecure_dev = args.insecure_dev || file.insecure_dev.unwrap_or(false);
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
            .or(file.request_timeout_secs)
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS);
        if request_timeout_secs == 0 {
            return Err(config_err("request_timeout_secs", "must be at least 1"));
        }
        let max_body_bytes = args.max_body_bytes.or(file.max_body_bytes);
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
            .or(file.shutdown_timeout_secs)
            .unwrap_or(DEFAULT_SHUTDOWN_TIMEOUT_SECS);
        let erasure_wait_secs = args
            .erasure_wait_secs
            .or(file.erasure_wait_secs)
            .unwrap_or(DEFAULT_ERASURE_WAIT_SECS);
        if erasure_wait_secs >= request_timeout_secs {
            return Err(config_err(
                "erasure_wait_secs",
                format!("must be below request_timeout_secs ({request_timeout_secs})"),
            ));
        }
        let header_read_timeout_secs = args
            .header_read_timeout_secs
            .or(file.header_read_timeout_secs)
            .unwrap_or(DEFAULT_HEADER_READ_TIMEOUT_SECS);
        if !(1..=300).contains(&header_read_timeout_secs) {
            return Err(config_err(
                "header_read_timeout_secs",
                "must be between 1 and 300",
            ));
        }
        let global = layered_globals(global, &file);
        if let Some(url) = &global.database_url {
            crate::store::url::StoreUrl::parse(url)?;
        }
        if global.db_pool_size == Some(0) {
            return Err(config_err("db_pool_size", "must be at least 1"));
        }
        let llm = resolve_llm(args, file.llm.as_ref().unwrap_or(&LlmFile::default()))?;
        Ok(ServeConfig {
            listen,
            insecure_dev,
            log_format: args.log_format.or(file.log_format).unwrap_or_default(),
            request_timeout: Duration::from_secs(request_timeout_secs),
            max_body_bytes,
            shutdown_timeout: Duration::from_secs(shutdown_timeout_secs),
            erasure_wait: Duration::from_secs(erasure_wait_secs),
            header_read_timeout: Duration::from_secs(header_read_timeout_secs),
            global,
            llm,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global() -> GlobalArgs {
        GlobalArgs {
            data_dir: "./data".into(),
            policy: None,
            assets_dir: "./assets".into(),
            database_url: None,
            db_pool_size: None,
            cluster: Default::default(),
            embedding_model: None,
            explicit: Default::default(),
        }
    }

    #[test]
    fn defaults_then_file_then_flags() {
        let args = ServeArgs::default();
        let c = ServeConfig::resolve_with(&args, &global(), ConfigFile::default()).unwrap();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.log_format, LogFormat::Human);
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        let file = ConfigFile::parse(
            "listen = \"0.0.0.0:9000\"\nlog_format = \"json\"\ndata_dir = \"/srv/mnemo\"\nrequest_timeout_secs = 5\n",
        )
        .unwrap();
        let c = ServeConfig::resolve_with(&args, &global(), file).unwrap();
        assert_eq!(c.listen.to_string(), "0.0.0.0:9000");
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.global.data_dir, PathBuf::from("/srv/mnemo"));
        assert_eq!(c.request_timeout, Duration::from_secs(5));
        // A flag (or its variable) beats the file.
        let args = ServeArgs {
            listen: Some("127.0.0.1:1234".parse().unwrap()),
            request_timeout_secs: Some(7),
            ..Default::default()
        };
        let mut g = global();
        g.data_dir = "/flag".into();
        g.explicit.data_dir = true;
        let file = ConfigFile::parse("listen = \"0.0.0.0:9000\"\ndata_dir = \"/file\"\n").unwrap();
        let c = ServeConfig::resolve_with(&args, &g, file).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:1234");
        assert_eq!(c.request_timeout, Duration::from_secs(7));
        assert_eq!(c.global.data_dir, PathBuf::from("/flag"));
    }

    #[test]
    fn invalid_configurations_are_refused() {
        assert!(ConfigFile::parse("listn = \"x\"").is_err());
        let file = ConfigFile::parse("listen = \"nowhere\"").unwrap();
        assert!(ServeConfig::resolve_with(&ServeArgs::default(), &global(), file).is_err());
        let args = ServeArgs {
            insecure_dev: true,
            listen: Some("0.0.0.0:8420".parse().unwrap()),
            ..Default::default()
        };
        let err = ServeConfig::resolve_with(&args, &global(), ConfigFile::default()).unwrap_err();
        assert!(err.to_string().contains("127.0.0.1"), "{err}");
        let args = ServeArgs {
            insecure_dev: true,
            ..Default::default()
        };
        assert!(ServeConfig::resolve_with(&args, &global(), ConfigFile::default()).is_ok());
        let args = ServeArgs {
            max_body_bytes: Some(64 * 1024 * 1024),
            ..Default::default()
        };
        assert!(ServeConfig::resolve_with(&args, &global(), ConfigFile::default()).is_err());
    }

    #[test]
    fn the_database_url_layers_like_the_paths_and_is_validated() {
        let file = ConfigFile::parse(
            "database_url = \"postgres://m:m@db:5432/mnemo\"\ndb_pool_size = 20\n",
        )
        .unwrap();
        let c = ServeConfig::resolve_with(&ServeArgs::default(), &global(), file).unwrap();
        assert_eq!(
            c.global.database_url.as_deref(),
            Some("postgres://m:m@db:5432/mnemo")
        );
        assert_eq!(c.global.engine_builder().unwrap().pool_size(), 20);
        // The flag (or MNEMO_DATABASE_URL) wins over the file.
        let mut g = global();
        g.database_url = Some("postgres://flag/db".into());
        let file = ConfigFile::parse("database_url = \"postgres://file/db\"\n").unwrap();
        let c = ServeConfig::resolve_with(&ServeArgs::default(), &g, file).unwrap();
        assert_eq!(c.global.database_url.as_deref(), Some("postgres://flag/db"));
        // Without one: SQLite in the data directory, default pool size.
        let c = ServeConfig::resolve_with(&ServeArgs::default(), &global(), ConfigFile::default())
            .unwrap();
        let e = c.global.engine_builder().unwrap();
        assert_eq!((e.database_url_given(), e.pool_size()), (None, 10));
        for bad in ["database_url = \"mysql://x/y\"", "db_pool_size = 0"] {
            let file = ConfigFile::parse(bad).unwrap();
            assert!(
                ServeConfig::resolve_with(&ServeArgs::default(), &global(), file).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_llm_section_is_layered_and_validated() {
        let c = ServeConfig::resolve_with(&ServeArgs::default(), &global(), ConfigFile::default())
            .unwrap();
        assert!(c.llm.is_none());
        let file = ConfigFile::parse(
            "[llm]\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"qwen2.5\"\napi_key = \"sk-file\"\ncontext_tokens = 32768\n",
        )
        .unwrap();
        let c = ServeConfig::resolve_with(&ServeArgs::default(), &global(), file)
            .unwrap()
            .llm
            .unwrap();
        assert_eq!(c.model, "qwen2.5");
        assert_eq!(c.api_key.as_deref(), Some("sk-file"));
        assert_eq!(c.context_tokens, 32768);
        assert_eq!(c.timeout, Duration::from_secs(DEFAULT_TIMEOUT_SECS));
        assert!(!format!("{c:?}").contains("sk-file"));
        // Flags and variables beat the file.
        let args = ServeArgs {
            llm_model: Some("llama3".into()),
            llm_api_key: Some(ApiKey("sk-env".into())),
            llm_max_retries: Some(0),
            ..Default::default()
        };
        assert!(!format!("{args:?}").contains("sk-env"));
        let file = ConfigFile::parse("[llm]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\n").unwrap();
        let c = ServeConfig::resolve_with(&args, &global(), file)
            .unwrap()
            .llm
            .unwrap();
        assert_eq!((c.model.as_str(), c.max_retries), ("llama3", 0));
        assert_eq!(c.api_key.as_deref(), Some("sk-env"));
        for bad in [
            "[llm]\nbase_url = \"http://h/v1\"\n",
            "[llm]\nmodel = \"m\"\n",
            "[llm]\nbase_url = \"h:80\"\nmodel = \"m\"\n",
            "[llm]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\ncontext_tokens = 10\n",
            "[llm]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\ntimeout_secs = 0\n",
        ] {
            let file = ConfigFile::parse(bad).unwrap();
            assert!(
                ServeConfig::resolve_with(&ServeArgs::default(), &global(), file).is_err(),
                "{bad}"
            );
        }
        assert!(ConfigFile::parse("[llm]\nurl = \"x\"\n").is_err());
    }

    #[test]
    fn the_shipped_example_config_parses() {
        let text = include_str!("../../mnemo.example.toml");
        let file = ConfigFile::parse(text).unwrap();
        ServeConfig::resolve_with(&ServeArgs::default(), &global(), file).unwrap();
    }
}
