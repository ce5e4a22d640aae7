//! Prometheus metrics, written in the text exposition format by hand: a few
//! counters and histograms do not justify a metrics crate and its registry.
//!
//! Recorded here: requests and their latency by method, route template and
//! status (a middleware on every route), and search latency (the search
//! handler). Gauges (memory counts by tier and status, embedding queue depth)
//! are read from the engine when `/metrics` is scraped. Mutex-protected maps:
//! one short lock per request, never held across an await.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Latency bucket upper bounds, seconds.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum_secs: f64,
}

impl Histogram {
    fn observe(&mut self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            self.counts[i] += 1;
        }
        self.count += 1;
        self.sum_secs += secs;
    }

    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (b, n) in BUCKETS.iter().zip(self.counts) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {cumulative}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braced = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braced} {}", self.sum_secs);
        let _ = writeln!(out, "{name}_count{braced} {}", self.count);
    }
}

/// (method, route template, status)
type RequestKey = (String, String, u16);

/// The service's own counters; gauges come from the engine at scrape time.
pub struct Metrics {
    started: Instant,
    requests: Mutex<BTreeMap<RequestKey, Histogram>>,
    search: Mutex<Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            started: Instant::now(),
            requests: Mutex::new(BTreeMap::new()),
            search: Mutex::new(Histogram::default()),
        }
    }
}

/// Escapes a label value (backslash, quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Point-in-time values read from the engine for one scrape.
#[derive(Clone, Debug, Default)]
pub struct Gauges {
    /// (tier, status, count)
    pub memories: Vec<(String, String, u64)>,
    pub embedding_queue_depth: usize,
    pub active_api_keys: Option<u64>,
    /// Lifecycle jobs as recorded in the store (shared by every node).
    pub jobs: Vec<JobGauge>,
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

impl Metrics {
    pub fn record_request(&self, method: &str, route: &str, status: u16, took: Duration) {
        self.requests
            .lock()
            .entry((method.to_string(), route.to_string(), status))
            .or_default()
            .observe(took);
    }

    pub fn record_search(&self, took: Duration) {
        self.search.lock().observe(took);
    }

    /// The text exposition of everything, gauges included.
    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::with_capacity(4096);
        let requests = self.requests.lock().clone();
        out.push_str(
            "# HELP mnemo_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE mnemo_http_requests_total counter\n");
        for ((method, route, status), h) in &requests {
            let _ = writeln!(
                out,
                "mnemo_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {}",
                label(method),
                label(route),
                h.count
            );
        }
        out.push_str("# HELP mnemo_http_request_duration_seconds HTTP request latency by method, route and status.\n");
        out.push_str("# TYPE mnemo_http_request_duration_seconds histogram\n");
        for ((method, route, status), h) in &requests {
            let labels = format!(
                "method=\"{}\",route=\"{}\",status=\"{status}\"",
                label(method),
                label(route)
            );
            h.write(&mut out, "mnemo_http_request_duration_seconds", &labels);
        }
        out.push_str("# HELP mnemo_search_duration_seconds Search latency inside the engine (both legs, fusion, hydration, ranking).\n");
        out.push_str("# TYPE mnemo_search_duration_seconds histogram\n");
        self.search
            .lock()
            .clone()
            .write(&mut out, "mnemo_search_duration_seconds", "");
        out.push_str("# HELP mnemo_memories Stored memories by tier and status.\n");
        out.push_str("# TYPE mnemo_memories gauge\n");
        for (tier, status, n) in &gauges.memories {
            let _ = writeln!(
                out,
                "mnemo_memories{{tier=\"{}\",status=\"{}\"}} {n}",
                label(tier),
                label(status)
            );
        }
        out.push_str(
            "# HELP mnemo_embedding_queue_depth Embedding calls queued or running.\n\
             # TYPE mnemo_embedding_queue_depth gauge\n",
        );
        let _ = writeln!(
            out,
            "mnemo_embedding_queue_depth {}",
            gauges.embedding_queue_depth
        );
        if let Some(n) = gauges.active_api_keys {
            out.push_str(
                "# HELP mnemo_api_keys_active API keys not revoked.\n\
                 # TYPE mnemo_api_keys_active gauge\n",
            );
            let _ = writeln!(out, "mnemo_api_keys_active {n}");
        }
        if !gauges.jobs.is_empty() {
            out.push_str(
                "# HELP mnemo_job_running Whether a lifecycle job holds its lease now.\n\
                 # TYPE mnemo_job_running gauge\n",
            );
            for j in &gauges.jobs {
                let _ = writeln!(
                    out,
                    "mnemo_job_running{{job=\"{}\"}} {}",
                    label(&j.job),
                    u8::from(j.running)
                );
            }
            out.push_str(
                "# HELP mnemo_job_last_completed_timestamp_seconds When a job's last run completed.\n\
                 # TYPE mnemo_job_last_completed_timestamp_seconds gauge\n",
            );
            for j in &gauges.jobs {
                if let Some(t) = j.last_completed_unix {
                    let _ = writeln!(
                        out,
                        "mnemo_job_last_completed_timestamp_seconds{{job=\"{}\"}} {t:.3}",
                        label(&j.job)
                    );
                }
            }
            out.push_str(
                "# HELP mnemo_job_last_run_duration_seconds How long a job's last run took.\n\
                 # TYPE mnemo_job_last_run_duration_seconds gauge\n",
            );
            for j in &gauges.jobs {
                if let Some(t) = j.last_elapsed_secs {
                    let _ = writeln!(
                        out,
                        "mnemo_job_last_run_duration_seconds{{job=\"{}\"}} {t:.3}",
                        label(&j.job)
                    );
                }
            }
            out.push_str(
                "# HELP mnemo_job_last_run_memories Memories a job's last run changed, by action.\n\
                 # TYPE mnemo_job_last_run_memories gauge\n",
            );
            for j in &gauges.jobs {
                for (action, n) in &j.last_counts {
                    let _ = writeln!(
                        out,
                        "mnemo_job_last_run_memories{{job=\"{}\",action=\"{}\"}} {n}",
                        label(&j.job),
                        label(action)
                    );
                }
            }
        }
        out.push_str(
            "# HELP mnemo_uptime_seconds Seconds since the server started.\n\
             # TYPE mnemo_uptime_seconds gauge\n",
        );
        let _ = writeln!(
            out,
            "mnemo_uptime_seconds {:.3}",
            self.started.elapsed().as_secs_f64()
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_labelled() {
        let m = Metrics::default();
        m.record_request("GET", "/v1/memories/{id}", 200, Duration::from_millis(3));
        m.record_request("GET", "/v1/memories/{id}", 200, Duration::from_millis(300));
        m.record_search(Duration::from_millis(2));
        let text = m.render(&Gauges {
            memories: vec![("long_term".into(), "active".into(), 7)],
            embedding_queue_depth: 1,
            active_api_keys: None,
            jobs: vec![JobGauge {
                job: "ttl-sweep".into(),
                running: false,
                last_completed_unix: Some(1.0),
                last_elapsed_secs: Some(0.25),
                last_counts: vec![("expire".into(), 3)],
            }],
        });
        assert!(text.contains("mnemo_job_last_run_memories{job=\"ttl-sweep\",action=\"expire\"} 3"));
        assert!(text.contains("mnemo_job_running{job=\"ttl-sweep\"} 0"));
        assert!(text.contains(
            "mnemo_http_requests_total{method=\"GET\",route=\"/v1/memories/{id}\",status=\"200\"} 2"
        ));
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("le=\"0.5\"} 2"));
        assert!(text.contains("mnemo_search_duration_seconds_count 1"));
        assert!(text.contains("mnemo_memories{tier=\"long_term\",status=\"active\"} 7"));
        assert!(text.contains("mnemo_embedding_queue_depth 1"));
    }
}
