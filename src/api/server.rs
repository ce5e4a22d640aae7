//! `mnemo serve`: opening the engine, listening, and graceful shutdown. Its
//! configuration (defaults < file < environment < flags, validated into
//! [`ServeConfig`]) is in `config/serve.rs`.
//!
//! Connections are served by [`super::listen`] (HTTP/1.1 with a header-read
//! timeout, `header_read_timeout_secs`, and hyper's parse errors in the JSON
//! error shape).
//!
//! Shutdown, in order: the first SIGINT/SIGTERM turns `/readyz` to 503 and
//! stops accepting connections; in-flight requests finish (bounded by
//! `shutdown_timeout_secs`); the optimiser, the jobs and the erasure sweep
//! stop; running erasures finish (unbounded: a second signal exits, and the
//! next start completes them); `Engine::shutdown` commits the indexes and
//! checkpoints the store. A second signal exits at once.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Context;

use super::{app, AppState, AuthMode, HttpLimits};
use crate::config::{ensure_assets, LogFormat, ServeConfig};
use crate::llm::openai::OpenAiClient;
use crate::node::{Node, NodeParts};
use crate::service::Opened;
use crate::vector::VectorBackend;

/// Installs the log subscriber (once; later calls are no-ops).
pub fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MNEMO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        // qdrant-edge warns "Feature flags not initialized!" at every segment
        // it loads (its initialiser is private, and it uses the defaults,
        // as we want): a line per segment, 22 at 1M memories, at every open.
        .add_directive(
            "qdrant_edge::common::flags=error"
                .parse()
                .expect("a valid log directive"),
        );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

async fn signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// Exits at once on the next signal (the operator insists).
fn force_on_second_signal() -> tokio::task::JoinHandle<()> {
    tokio::spawn(async {
        signal().await;
        tracing::warn!("second signal: exiting without finishing requests or committing indexes (reconcile repairs them at the next start)");
        std::process::exit(130);
    })
}

/// Runs the server until a signal, then shuts down in order.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    if config.insecure_dev {
        tracing::warn!(
            listen = %config.listen,
            "INSECURE DEV MODE: no API key is required; every request without a key acts as the admin of the default tenant. Never use this outside a development machine."
        );
    }
    let g = config.global.clone();
    tokio::task::spawn_blocking(move || ensure_assets(&g))
        .await
        .context("asset check failed")??;
    // On the embedded index, a clean shutdown's record replaces the full
    // start-up reconcile: the node's repair loop applies the changes since.
    let mut builder = config.global.engine_builder()?.trust_clean_shutdown(true);
    // Clustered mode (vectors on a Qdrant server): this node's lexical index
    // follows the store's change feed, so it sees every node's writes.
    if let VectorBackend::Server(_) = builder.vector_backend() {
        builder = builder.node_id(config.global.cluster.node_id());
    }
    let Opened {
        engine,
        reconciled: report,
        follower,
    } = builder.build().await?;
    if let Some(follower) = &follower {
        tracing::info!(
            node_id = follower.node_id(),
            position = follower.position(),
            "following the change feed"
        );
    }
    tracing::info!(
        data_dir = %config.global.data_dir.display(),
        store = config
            .global
            .database_url
            .as_deref()
            .map_or("sqlite", |u| crate::store::url::StoreUrl::parse(u).map_or("?", |s| s.backend())),
        memories_indexed = report.store_indexed,
        reconcile_skipped = report.from_clean_shutdown,
        "engine open"
    );
    let auth = if config.insecure_dev {
        AuthMode::InsecureDev
    } else {
        AuthMode::Keys
    };
    if auth == AuthMode::Keys && engine.keys().count_active_api_keys().await? == 0 {
        tracing::warn!(
            "no API keys exist yet: every /v1 request will be refused with 401. Create one with \
             `mnemo keys create {} --tenant default --role admin` (it prints the secret once), \
             or run `mnemo serve --insecure-dev` on a development machine",
            match &config.global.database_url {
                Some(_) => "--database-url <the same URL>".to_string(),
                None => format!("--data-dir {}", config.global.data_dir.display()),
            }
        );
    }
    let mut limits = HttpLimits::from_policy(engine.policy());
    limits.request_timeout = config.request_timeout;
    if let Some(n) = config.max_body_bytes {
        limits.max_body_bytes = n;
    }
    let mut state = AppState::new(engine.clone(), auth)
        .with_limits(limits)
        .with_erasure_wait(config.erasure_wait)
        // The file scan of verification: only where the data directory holds
        // the store and the vectors.
        .with_erasure_files(
            (config.global.database_url.is_none()
                && config.global.cluster.qdrant.qdrant_url.is_none())
            .then(|| config.global.data_dir.clone()),
        )
        .with_evals(crate::api::routes::evals::EvalJobs::from_env(
            config.global.data_dir.join("evals"),
        ));
    match &config.llm {
        Some(c) => {
            let client = OpenAiClient::new(c.clone()).context("invalid [llm] configuration")?;
            tracing::info!(
                base_url = %c.base_url,
                model = %c.model,
                context_tokens = c.context_tokens,
                "chat model configured"
            );
            if c.timeout >= limits.request_timeout {
                tracing::warn!(
                    llm_timeout_secs = c.timeout.as_secs(),
                    request_timeout_secs = limits.request_timeout.as_secs(),
                    "the model timeout is not below the request timeout: slow completions will be cut off with 503; raise request_timeout_secs"
                );
            }
            state = state.with_chat_model(Arc::new(client));
        }
        None => tracing::info!(
            "no chat model configured: /v1/chat/completions answers 503 (set [llm] base_url and model)"
        ),
    }
    let shutting_down = state.shutting_down.clone();
    // Every background task (optimiser, lifecycle jobs, erasure sweep, the
    // change-feed follower, idle compaction), started together.
    let node = Node::start(
        engine,
        NodeParts {
            clean_shutdown_dir: follower.is_none().then(|| config.global.data_dir.clone()),
            follower,
            agent: Some(state.agent.clone()),
        },
    )
    .await?;
    // Evaluations and export writers run on the node's runner too.
    let state = state.with_tasks(node.spawner());
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    tracing::info!(
        addr = %listener.local_addr()?,
        max_body_bytes = limits.max_body_bytes,
        request_timeout_secs = limits.request_timeout.as_secs(),
        "mnemo listening"
    );

    let grace = config.shutdown_timeout;
    let (drain_tx, drain_rx) = tokio::sync::oneshot::channel::<tokio::task::JoinHandle<()>>();
    let on_signal = async move {
        signal().await;
        shutting_down.store(true, Ordering::Relaxed);
        tracing::info!(
            grace_secs = grace.as_secs(),
            "shutting down: no new connections, finishing in-flight requests (signal again to force)"
        );
        let watchdog = tokio::spawn(async move {
            tokio::select! {
                _ = signal() => {
                    tracing::warn!("second signal: exiting without finishing requests");
                    std::process::exit(130);
                }
                _ = tokio::time::sleep(grace) => {
                    tracing::error!("in-flight requests did not finish within the shutdown timeout; exiting");
                    std::process::exit(1);
                }
            }
        });
        let _ = drain_tx.send(watchdog);
    };
    let options = super::listen::ListenOptions {
        header_read_timeout: config.header_read_timeout,
    };
    super::listen::serve(listener, app(state), options, on_signal).await;
    if let Ok(watchdog) = drain_rx.await {
        watchdog.abort();
    }
    let force = force_on_second_signal();
    // Jobs stop, running erasures and extraction finish, the node leaves
    // the cluster registry, the indexes commit and the store closes.
    node.stop().await?;
    force.abort();
    tracing::info!("stopped: indexes committed, store checkpointed");
    Ok(())
}
