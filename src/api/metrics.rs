//! Prometheus metrics, on `prometheus-client` (the Prometheus project's Rust
//! client): its registry, metric types and both text encoders — the
//! Prometheus text format 0.0.4 by default, OpenMetrics 1.0 when the scraper
//! asks for it (`Accept: application/openmetrics-text`).
//!
//! Recorded as they happen: requests and their latency by method, route
//! template and status (a middleware on every route, and the fallback for
//! unknown paths), search latency in total and per stage (the search
//! handler, from [`SearchStages`]), and erasures (successful
//! `DELETE /v1/users/{user_id}`). Read at scrape time: memory counts by tier
//! and status, the embedding queue depth, active API keys and the lifecycle
//! jobs' last runs (the store, shared by every node), job runs of this
//! process ([`crate::jobs::runs`]) and, in clustered mode, the index lag of
//! this node's change-feed follower.
//!
//! **Bounded labels.** `route` is the matched route template (never the raw
//! path; unknown paths are `unmatched`), `method` one of the standard
//! methods or `other`, `status` an HTTP status; every other label takes
//! values from a closed set in the code. So no request can add a series.
//!
//! Threading: the metric types are atomics behind `Arc`s; a family takes a
//! short lock to find its series. Rendering sets the scrape-time gauges and
//! encodes under one mutex, so concurrent scrapes never interleave.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::service::SearchStages;

/// Latency bucket upper bounds, seconds.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Methods kept as they are in the `method` label; any other is `other`.
const METHODS: [&str; 9] = [
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT",
];

/// The route label of requests no route matched.
pub const UNMATCHED: &str = "unmatched";

/// The route whose successful `DELETE` is an erasure ("forget all my data").
const ERASURE_ROUTE: &str = "/v1/users/{user_id}";

/// Most actions per job exported from a job's last run.
const MAX_JOB_ACTIONS: usize = 16;

/// The `Content-Type` of the default exposition.
pub const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
/// The `Content-Type` of the OpenMetrics exposition.
pub const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How old the memory counts `/metrics` exports may grow before a scrape
/// starts a recount (`routes::ops::MemoryCounts`).
pub const MEMORY_COUNTS_MAX_AGE: Duration = Duration::from_secs(30);

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    stage: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemoryLabels {
    tier: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    job: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobActionLabels {
    job: String,
    action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobRunLabels {
    job: &'static str,
    outcome: &'static str,
}

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// The service's metrics and the registry that encodes them.
pub struct Metrics {
    started: Instant,
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_duration: Histograms<RequestLabels>,
    search: Histogram,
    search_stages: Histograms<StageLabels>,
    erasures: Counter,
    scrape: Mutex<ScrapeGauges>,
}

/// The gauges set from [`Gauges`] at each scrape.
struct ScrapeGauges {
    memories: Family<MemoryLabels, Gauge>,
    memory_counts_age: FloatGauge,
    embedding_queue_depth: Gauge,
    api_keys_active: Gauge,
    job_running: Family<JobLabels, Gauge>,
    job_last_completed: Family<JobLabels, FloatGauge>,
    job_last_duration: Family<JobLabels, FloatGauge>,
    job_last_memories: Family<JobActionLabels, Gauge>,
    index_lag: Gauge,
    index_position: Gauge,
    uptime: FloatGauge,
    upkeep_checkpoints: Gauge,
    upkeep_checkpoints_incomplete: Gauge,
    upkeep_last_checkpoint_complete: Gauge,
    upkeep_vacuum_fallbacks: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("mnemo");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by method, route template and status",
            requests.clone(),
        );
        let request_duration: Histograms<RequestLabels> = Family::new_with_constructor(histogram);
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by method, route template and status",
            request_duration.clone(),
        );
        let search = histogram();
        registry.register(
            "search_duration_seconds",
            "Search latency inside the engine (both legs, fusion, hydration, ranking)",
            search.clone(),
        );
        let search_stages: Histograms<StageLabels> = Family::new_with_constructor(histogram);
        registry.register(
            "search_stage_duration_seconds",
            "Search latency per stage: embed, lexical, vector, fuse, hydrate, rank \
             (the legs run concurrently)",
            search_stages.clone(),
        );
        let erasures = Counter::default();
        registry.register(
            "erasures",
            "Completed erasures of a user (DELETE /v1/users/{user_id}) served by this process",
            erasures.clone(),
        );
        let scrape = ScrapeGauges {
            memories: Family::default(),
            memory_counts_age: FloatGauge::default(),
            embedding_queue_depth: Gauge::default(),
            api_keys_active: Gauge::default(),
            job_running: Family::default(),
            job_last_completed: Family::default(),
            job_last_duration: Family::default(),
            job_last_memories: Family::default(),
            index_lag: Gauge::default(),
            index_position: Gauge::default(),
            uptime: FloatGauge::default(),
            upkeep_checkpoints: Gauge::default(),
            upkeep_checkpoints_incomplete: Gauge::default(),
            upkeep_last_checkpoint_complete: Gauge::default(),
            upkeep_vacuum_fallbacks: Gauge::default(),
        };
        let s = &scrape;
        registry.register(
            "memories",
            "Stored memories by tier and status",
            s.memories.clone(),
        );
        registry.register(
            "memory_counts_age_seconds",
            format!(
                "How old the exported memory counts are: a scrape reuses the last count \
                 and, once it is older than {} s, recounts in the background",
                MEMORY_COUNTS_MAX_AGE.as_secs()
            ),
            s.memory_counts_age.clone(),
        );
        registry.register(
            "embedding_queue_depth",
            "Embedding calls queued or running",
            s.embedding_queue_depth.clone(),
        );
        registry.register(
            "api_keys_active",
            "API keys not revoked",
            s.api_keys_active.clone(),
        );
        registry.register(
            "job_running",
            "Whether a lifecycle job holds its lease now (any node)",
            s.job_running.clone(),
        );
        registry.register(
            "job_last_completed_timestamp_seconds",
            "When a job's last run completed (any node)",
            s.job_last_completed.clone(),
        );
        registry.register(
            "job_last_run_duration_seconds",
            "How long a job's last run took (any node)",
            s.job_last_duration.clone(),
        );
        registry.register(
            "job_last_run_memories",
            "Memories a job's last run changed, by action (any node)",
            s.job_last_memories.clone(),
        );
        registry.register_collector(Box::new(JobRuns));
        registry.register_collector(Box::new(TaskRuns));
        registry.register(
            "index_lag_changes",
            "Clustered mode: change-feed entries this node's lexical index has not applied yet",
            s.index_lag.clone(),
        );
        registry.register(
            "index_applied_position",
            "Clustered mode: the change-feed position this node's lexical index has applied",
            s.index_position.clone(),
        );
        registry.register(
            "uptime_seconds",
            "Seconds since the server started",
            s.uptime.clone(),
        );
        registry.register(
            "sqlite_checkpoints",
            "SQLite WAL checkpoints this process ran (start, erasures, close); 0 on PostgreSQL",
            s.upkeep_checkpoints.clone(),
        );
        registry.register(
            "sqlite_checkpoints_incomplete",
            "SQLite WAL checkpoints whose TRUNCATE gave up within its time bound (a long \
             reader in another process) and settled for PASSIVE",
            s.upkeep_checkpoints_incomplete.clone(),
        );
        registry.register(
            "sqlite_last_checkpoint_complete",
            "Whether the last SQLite WAL checkpoint completed (1), gave up (0); 1 before any",
            s.upkeep_last_checkpoint_complete.clone(),
        );
        registry.register(
            "store_purge_vacuum_fallbacks",
            "Erasure purges that rewrote the whole SQLite database with VACUUM (the \
             page-by-page scrub could not vouch for the file), holding every writer",
            s.upkeep_vacuum_fallbacks.clone(),
        );
        Metrics {
            started: Instant::now(),
            registry,
            requests,
            request_duration,
            search,
            search_stages,
            erasures,
            scrape: Mutex::new(scrape),
        }
    }
}

/// Point-in-time values read from the engine for one scrape.
#[derive(Clone, Debug, Default)]
pub struct Gauges {
    /// (tier, status, count)
    pub memories: Vec<(String, String, u64)>,
    /// How long ago `memories` was counted (the counts are reused).
    pub memory_counts_age: Duration,
    pub embedding_queue_depth: usize,
    pub active_api_keys: Option<u64>,
    /// Lifecycle jobs as recorded in the store (shared by every node).
    pub jobs: Vec<JobGauge>,
    /// Clustered mode: (feed head, position this node applied).
    pub index_feed: Option<(i64, i64)>,
    /// The store's checkpoints and purges.
    pub store_upkeep: crate::store::UpkeepStatus,
}

/// A lifecycle job's last completed run.
#[derive(Clone, Debug, Default)]
pub struct JobGauge {
    pub job: String,
    pub running: bool,
    pub last_completed_unix: Option<f64>,
    pub last_elapsed_secs: Option<f64>,
    /// (action, memories) of the last run.
    pub last_counts: Vec<(String, u64)>,
}

/// Job runs of this process, by outcome, from the counts the jobs module
/// keeps ([`crate::jobs::runs`]), read at each scrape.
#[derive(Debug)]
struct JobRuns;

impl Collector for JobRuns {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let mut family = encoder.encode_descriptor(
            "job_runs",
            "Lifecycle job runs in this process, by outcome (completed; conflict: \
             another runner held the lease; failed)",
            None,
            MetricType::Counter,
        )?;
        for (job, outcome, n) in crate::jobs::runs::snapshot() {
            ConstCounter::new(n).encode(family.encode_family(&JobRunLabels { job, outcome })?)?;
        }
        Ok(())
    }
}

/// Background tasks of this process (`runner.rs`): runs, failures and the
/// last run's duration, read at each scrape.
#[derive(Debug)]
struct TaskRuns;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    task: &'static str,
}

impl Collector for TaskRuns {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let tasks = crate::runner::snapshot();
        let mut family = encoder.encode_descriptor(
            "task_runs",
            "Background task runs in this process",
            None,
            MetricType::Counter,
        )?;
        for &(task, runs, _, _) in &tasks {
            ConstCounter::new(runs).encode(family.encode_family(&TaskLabels { task })?)?;
        }
        let mut family = encoder.encode_descriptor(
            "task_failures",
            "Background task runs that failed, in this process",
            None,
            MetricType::Counter,
        )?;
        for &(task, _, failures, _) in &tasks {
            ConstCounter::new(failures).encode(family.encode_family(&TaskLabels { task })?)?;
        }
        let mut family = encoder.encode_descriptor(
            "task_last_run_duration_seconds",
            "How long a background task's last run took, in this process",
            None,
            MetricType::Gauge,
        )?;
        for &(task, _, _, took) in &tasks {
            ConstGauge::new(took.as_secs_f64())
                .encode(family.encode_family(&TaskLabels { task })?)?;
        }
        Ok(())
    }
}

/// The `method` label: a standard method as it is, anything else `other`.
pub fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// Whether a job action name may become a label value (the store's job
/// stats are written by this code, but are read back as free JSON).
fn plain_action(action: &str) -> bool {
    (1..=32).contains(&action.len())
        && action
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-')
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Metrics {
    /// One request: `route` is the matched template (or [`UNMATCHED`]).
    pub fn record_request(&self, method: &str, route: &str, status: u16, took: Duration) {
        let labels = RequestLabels {
            method: method_label(method),
            route: route.to_string(),
            status,
        };
        self.requests.get_or_create(&labels).inc();
        self.request_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if route == ERASURE_ROUTE && labels.method == "DELETE" && status == 200 {
            self.erasures.inc();
        }
    }

    /// One search: its total and each stage.
    pub fn record_search(&self, took: Duration, stages: &SearchStages) {
        self.search.observe(took.as_secs_f64());
        for (stage, ms) in [
            ("embed", stages.embed_ms),
            ("lexical", stages.lexical_ms),
            ("vector", stages.vector_ms),
            ("fuse", stages.fuse_ms),
            ("hydrate", stages.hydrate_ms),
            ("rank", stages.rank_ms),
        ] {
            self.search_stages
                .get_or_create(&StageLabels { stage })
                .observe(ms / 1e3);
        }
    }

    /// The exposition of everything, scrape-time gauges included: OpenMetrics
    /// text when `openmetrics`, else the Prometheus text format 0.0.4.
    pub fn render(&self, gauges: &Gauges, openmetrics: bool) -> String {
        let s = self.scrape.lock();
        s.memories.clear();
        for (tier, status, n) in &gauges.memories {
            s.memories
                .get_or_create(&MemoryLabels {
                    tier: tier.clone(),
                    status: status.clone(),
                })
                .set(to_i64(*n));
        }
        s.memory_counts_age
            .set(gauges.memory_counts_age.as_secs_f64());
        s.embedding_queue_depth
            .set(i64::try_from(gauges.embedding_queue_depth).unwrap_or(i64::MAX));
        s.api_keys_active
            .set(gauges.active_api_keys.map_or(0, to_i64));
        for family in [&s.job_last_completed, &s.job_last_duration] {
            family.clear();
        }
        s.job_running.clear();
        s.job_last_memories.clear();
        for j in &gauges.jobs {
            let job = JobLabels { job: j.job.clone() };
            s.job_running.get_or_create(&job).set(i64::from(j.running));
            if let Some(t) = j.last_completed_unix {
                s.job_last_completed.get_or_create(&job).set(t);
            }
            if let Some(t) = j.last_elapsed_secs {
                s.job_last_duration.get_or_create(&job).set(t);
            }
            let actions = j.last_counts.iter().filter(|(a, _)| plain_action(a));
            for (action, n) in actions.take(MAX_JOB_ACTIONS) {
                s.job_last_memories
                    .get_or_create(&JobActionLabels {
                        job: j.job.clone(),
                        action: action.clone(),
                    })
                    .set(to_i64(*n));
            }
        }
        let (lag, position) = gauges
            .index_feed
            .map_or((0, 0), |(head, applied)| ((head - applied).max(0), applied));
        s.index_lag.set(lag);
        s.index_position.set(position);
        s.uptime.set(self.started.elapsed().as_secs_f64());
        let u = &gauges.store_upkeep;
        s.upkeep_checkpoints.set(to_i64(u.checkpoints));
        s.upkeep_checkpoints_incomplete
            .set(to_i64(u.checkpoints_incomplete));
        s.upkeep_last_checkpoint_complete
            .set(i64::from(u.last_checkpoint_complete.unwrap_or(true)));
        s.upkeep_vacuum_fallbacks
            .set(to_i64(u.purge_vacuum_fallbacks));

        let mut out = String::with_capacity(8192);
        let encoded = if openmetrics {
            prometheus_client::encoding::text::encode(&mut out, &self.registry)
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
        };
        // Writing into a String cannot fail; an encoder error would be a bug.
        if let Err(e) = encoded {
            tracing::error!(error = %e, "encoding metrics failed");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauges() -> Gauges {
        Gauges {
            memories: vec![("long_term".into(), "active".into(), 7)],
            memory_counts_age: Duration::from_millis(1500),
            embedding_queue_depth: 1,
            active_api_keys: Some(2),
            jobs: vec![JobGauge {
                job: "ttl-sweep".into(),
                running: false,
                last_completed_unix: Some(1.0),
                last_elapsed_secs: Some(0.25),
                last_counts: vec![("expire".into(), 3), ("Not A Label\n".into(), 9)],
            }],
            index_feed: Some((10, 7)),
            store_upkeep: crate::store::UpkeepStatus {
                checkpoints: 4,
                checkpoints_incomplete: 1,
                last_checkpoint_complete: Some(false),
                purge_vacuum_fallbacks: 2,
            },
        }
    }

    #[test]
    fn histograms_are_cumulative_and_labelled() {
        let m = Metrics::default();
        m.record_request("GET", "/v1/memories/{id}", 200, Duration::from_millis(3));
        m.record_request("GET", "/v1/memories/{id}", 200, Duration::from_millis(300));
        m.record_search(
            Duration::from_millis(2),
            &SearchStages {
                embed_ms: 1.0,
                ..Default::default()
            },
        );
        let text = m.render(&gauges(), false);
        assert!(text.contains("mnemo_job_last_run_memories{job=\"ttl-sweep\",action=\"expire\"} 3"));
        assert!(
            !text.contains("Not A Label"),
            "free-form actions are dropped"
        );
        assert!(text.contains("mnemo_job_running{job=\"ttl-sweep\"} 0"));
        assert!(text.contains("# TYPE mnemo_job_runs_total counter"));
        assert!(text.contains("mnemo_job_runs_total{job=\"weekly-cleanup\",outcome=\"conflict\"} "));
        assert!(text.contains(
            "mnemo_http_requests_total{method=\"GET\",route=\"/v1/memories/{id}\",status=\"200\"} 2"
        ));
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("le=\"0.5\"} 2"));
        assert!(text.contains("mnemo_search_duration_seconds_count 1"));
        assert!(text.contains("mnemo_search_stage_duration_seconds_count{stage=\"embed\"} 1"));
        assert!(text.contains("mnemo_memories{tier=\"long_term\",status=\"active\"} 7"));
        assert!(
            text.contains("mnemo_memory_counts_age_seconds 1.5"),
            "{text}"
        );
        assert!(text.contains("once it is older than 30 s"), "{text}");
        assert!(text.contains("mnemo_embedding_queue_depth 1"));
        assert!(text.contains("mnemo_index_lag_changes 3"));
        assert!(text.contains("mnemo_sqlite_checkpoints_incomplete 1\n"));
        assert!(text.contains("mnemo_sqlite_last_checkpoint_complete 0\n"));
        assert!(text.contains("mnemo_store_purge_vacuum_fallbacks 2\n"));
        assert!(!text.contains("# EOF"));
        let om = m.render(&gauges(), true);
        assert!(om.ends_with("# EOF\n"), "OpenMetrics ends with EOF");
    }

    #[test]
    fn invented_methods_share_one_label() {
        let m = Metrics::default();
        for i in 0..2000 {
            m.record_request(&format!("BREW{i}"), "/v1/search", 405, Duration::ZERO);
        }
        m.record_request("POST", "/v1/search", 200, Duration::ZERO);
        let text = m.render(&Gauges::default(), false);
        let series = text
            .lines()
            .filter(|l| l.starts_with("mnemo_http_requests_total{"))
            .collect::<Vec<_>>();
        assert_eq!(series.len(), 2, "{series:?}");
        assert!(text.contains(
            "mnemo_http_requests_total{method=\"other\",route=\"/v1/search\",status=\"405\"} 2000"
        ));
        assert!(text.len() < 64 * 1024, "{} bytes", text.len());
    }

    #[test]
    fn scrape_gauges_forget_series_that_went_away() {
        let m = Metrics::default();
        m.render(&gauges(), false);
        let text = m.render(&Gauges::default(), false);
        assert!(!text.contains("mnemo_memories{"), "{text}");
        assert!(!text.contains("job_last_run_memories{"));
    }

    #[test]
    fn erasures_count_successful_deletes_of_a_user() {
        let m = Metrics::default();
        m.record_request("DELETE", "/v1/users/{user_id}", 200, Duration::ZERO);
        m.record_request("DELETE", "/v1/users/{user_id}", 403, Duration::ZERO);
        m.record_request("GET", "/v1/users/{user_id}/erasure", 200, Duration::ZERO);
        assert!(m
            .render(&Gauges::default(), false)
            .contains("mnemo_erasures_total 1\n"));
    }

    #[test]
    fn background_tasks_are_exported_with_their_counters() {
        let counters = crate::runner::TaskCounters::of("metrics-test-task");
        counters.record(Duration::from_millis(250), false);
        counters.record(Duration::from_millis(500), true);
        let text = Metrics::default().render(&Gauges::default(), false);
        assert!(
            text.contains("mnemo_task_runs_total{task=\"metrics-test-task\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("mnemo_task_failures_total{task=\"metrics-test-task\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("mnemo_task_last_run_duration_seconds{task=\"metrics-test-task\"} 0.5\n"),
            "{text}"
        );
    }
}
