//! The report: `report.json` (a stable schema for tooling), `report.md`
//! (summary tables), `report.html` (self-contained: inline CSS and SVG
//! charts generated here, no external assets) and `per_query.jsonl` (every
//! query's metrics in every run, so that runs of two builds on the same
//! vectors can be paired query by query outside one report).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::compare::Comparison;
use super::metrics::{Latency, MetricMap};
use super::similarity::Similarity;
use super::{Error, Result, Versions};

/// Query-embedding time, measured once per query (not per variant).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbedLatency {
    /// Queries timed.
    pub measured: usize,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
}

/// The lifecycle's outcomes over a set's documents (`--lifecycle`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LifecycleCounts {
    pub created: usize,
    pub reinforced: usize,
    pub promoted: usize,
    pub superseded: usize,
}

/// What the report says about a set beyond its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetInfo {
    pub set: String,
    pub path: String,
    pub data_sha256: String,
    pub documents: usize,
    pub queries: usize,
    /// Queries with at least one relevant judgment: the ones scored.
    pub judged_queries: usize,
    /// Queries without `asked_at`, run with the clock at `default_asked_at`.
    pub queries_without_asked_at: usize,
    /// The latest `created_at` in the corpus.
    pub default_asked_at: chrono::DateTime<chrono::Utc>,
    /// Queries that name a time ("last week", "in May 2023", "上周"),
    /// resolved against their `asked_at` (`[retrieval.temporal]`).
    #[serde(default)]
    pub queries_naming_a_time: usize,
    /// The `--group-by` field, when this set's documents have it.
    pub group_by: Option<String>,
    /// The `--thread-by` field, when this set's documents have it.
    #[serde(default)]
    pub thread_by: Option<String>,
    /// Documents that are turns of a conversation.
    #[serde(default)]
    pub threaded_documents: usize,
    /// What the lifecycle did with the documents (`--lifecycle` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<LifecycleCounts>,
    pub ingest_secs: f64,
    pub ingest_per_s: f64,
    /// Document embeddings found in the persistent cache.
    pub embeddings_cached: usize,
    /// Documents longer than the API's `limits.max_text_bytes`: indexed
    /// whole by BM25 and embedded within the model's window (its first
    /// `max_length` tokens), as an eval set is data, not an API call.
    #[serde(default)]
    pub documents_over_text_limit: usize,
    /// Lines of the set's files left out (see `--strict`), with the first few.
    #[serde(default)]
    pub skipped_lines: usize,
    #[serde(default)]
    pub skipped: Vec<super::set::Skipped>,
    /// Query embeddings found in the persistent cache.
    #[serde(default)]
    pub query_embeddings_cached: usize,
    /// Query-embedding time over the queries embedded during this run (at
    /// least the first [`MEASURED_QUERIES`]); `None` without a vector run.
    #[serde(default)]
    pub query_embed_ms: Option<EmbedLatency>,
    /// The model's cosine distributions on this set (see [`super::similarity`]).
    #[serde(default)]
    pub similarity: Option<Similarity>,
}

/// Bumped on any incompatible change to `report.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// One variant on one set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub set: String,
    /// The preset name, or a policy file's stem.
    pub preset: String,
    /// The policy file's path (`null` for built-in presets).
    pub config: Option<String>,
    pub model_id: String,
    pub data_sha256: String,
    /// Queries scored (those with at least one relevant judgment).
    pub queries: usize,
    #[serde(serialize_with = "ser::metrics")]
    pub metrics: MetricMap,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser::opt_metrics"
    )]
    pub group_metrics: Option<MetricMap>,
    #[serde(serialize_with = "ser::by_category")]
    pub by_category: BTreeMap<String, MetricMap>,
    pub latency_ms: Latency,
    pub ingest_per_s: f64,
    /// Per-query metrics, for comparisons (not serialised).
    #[serde(skip)]
    pub per_query: Vec<(String, MetricMap)>,
    /// Per-query search latencies, for the charts (not serialised).
    #[serde(skip)]
    pub search_ms: Vec<f64>,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub runs: Vec<Run>,
    pub comparisons: Vec<Comparison>,
    pub versions: Versions,
    /// Per set: sizes, clock, grouping, ingest.
    pub sets: Vec<SetInfo>,
}

/// Metric keys in display order: recall_any@k by k, recall_all@k by k, the rest.
pub fn ordered_keys(m: &MetricMap) -> Vec<String> {
    let mut keys: Vec<&String> = m.keys().collect();
    let rank = |k: &str| -> (u8, usize) {
        let n = k
            .rsplit('@')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let family = if k.starts_with("recall_any@") {
            0
        } else if k.starts_with("recall_all@") {
            1
        } else if k.starts_with("ndcg@") {
            2
        } else {
            3
        };
        (family, n)
    };
    keys.sort_by_key(|k| rank(k));
    keys.into_iter().cloned().collect()
}

/// Metric maps are written in display order (`recall_any@5` before
/// `recall_any@10`), so that `report.json` reads like the tables.
mod ser {
    use std::collections::BTreeMap;

    use serde::ser::{Serialize, Serializer};

    use super::{ordered_keys, MetricMap};

    struct Ordered<'a>(&'a MetricMap);

    impl Serialize for Ordered<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let keys = ordered_keys(self.0);
            s.collect_map(keys.iter().map(|k| (k, self.0[k])))
        }
    }

    pub fn metrics<S: Serializer>(m: &MetricMap, s: S) -> Result<S::Ok, S::Error> {
        Ordered(m).serialize(s)
    }

    pub fn opt_metrics<S: Serializer>(m: &Option<MetricMap>, s: S) -> Result<S::Ok, S::Error> {
        m.as_ref().map(Ordered).serialize(s)
    }

    pub fn by_category<S: Serializer>(
        m: &BTreeMap<String, MetricMap>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k, Ordered(v))))
    }
}

fn recall_any_ks(m: &MetricMap) -> Vec<(usize, f64)> {
    ordered_keys(m)
        .iter()
        .filter_map(|k| Some((k.strip_prefix("recall_any@")?.parse().ok()?, m[k])))
        .collect()
}

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.1}"))
}

impl Report {
    /// Writes `report.json`, `report.md`, `report.html` and
    /// `per_query.jsonl` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let io = |e| Error::Io {
            path: dir.to_path_buf(),
            source: e,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let json = serde_json::to_string_pretty(self).map_err(crate::Error::internal)?;
        std::fs::write(dir.join("report.json"), json + "\n").map_err(io)?;
        std::fs::write(dir.join("report.md"), self.markdown()).map_err(io)?;
        std::fs::write(dir.join("report.html"), self.html()).map_err(io)?;
        std::fs::write(dir.join("per_query.jsonl"), self.per_query_lines()?).map_err(io)?;
        Ok(())
    }

    /// One line per run and query: `{"set", "run", "query_id", "metrics"}`
    /// (`run` is the preset name or the policy file's stem, as in the
    /// tables), metrics in display order.
    fn per_query_lines(&self) -> Result<String> {
        #[derive(Serialize)]
        struct Line<'a> {
            set: &'a str,
            run: &'a str,
            query_id: &'a str,
            #[serde(serialize_with = "ser::metrics")]
            metrics: &'a MetricMap,
        }
        let mut out = String::new();
        for run in &self.runs {
            for (query_id, metrics) in &run.per_query {
                let line = Line {
                    set: &run.set,
                    run: &run.preset,
                    query_id,
                    metrics,
                };
                out += &serde_json::to_string(&line).map_err(crate::Error::internal)?;
                out.push('\n');
            }
        }
        Ok(out)
    }

    fn runs_of<'a>(&'a self, set: &'a str) -> impl Iterator<Item = &'a Run> + 'a {
        self.runs.iter().filter(move |r| r.set == set)
    }

    fn set_notes(s: &SetInfo) -> Vec<String> {
        let mut notes = vec![format!(
            "{} documents, {} queries ({} scored), ingest {:.1} s ({:.0} docs/s, {} embeddings from cache), data sha256 `{}`",
            s.documents, s.queries, s.judged_queries, s.ingest_secs, s.ingest_per_s, s.embeddings_cached,
            &s.data_sha256[..12.min(s.data_sha256.len())]
        )];
        if s.documents_over_text_limit > 0 {
            notes.push(format!(
                "{} documents are longer than the API's text limit: indexed whole, embedded within the model's window.",
                s.documents_over_text_limit
            ));
        }
        if s.skipped_lines > 0 {
            let first: Vec<String> = s
                .skipped
                .iter()
                .map(|k| format!("{}:{}: {}", k.file, k.line, k.message))
                .collect();
            notes.push(format!(
                "{} bad lines left out (`--strict` stops at the first instead): {}",
                s.skipped_lines,
                first.join("; ")
            ));
        }
        if let Some(e) = &s.query_embed_ms {
            notes.push(format!(
                "Each query is embedded once for all runs ({} from the embedding cache): search latencies are retrieval, fusion, hydration and ranking; query embedding p50 {} ms, p95 {} ms over {} queries timed.",
                s.query_embeddings_cached, ms(e.p50), ms(e.p95), e.measured
            ));
        }
        if let Some(sim) = &s.similarity {
            let part = |name: &str, sp: &Option<super::similarity::Spread>| {
                sp.as_ref().map(|x| {
                    format!(
                        "{name} {:.3} / {:.3} / {:.3} / {:.3} / {:.3} ({} pairs)",
                        x.p5, x.p25, x.p50, x.p75, x.p95, x.pairs
                    )
                })
            };
            let parts: Vec<String> = [
                part("query–relevant", &sim.query_relevant),
                part("query–unrelated", &sim.query_unrelated),
                part("passage–relevant", &sim.passage_relevant),
                part("passage–unrelated", &sim.passage_unrelated),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !parts.is_empty() {
                notes.push(format!(
                    "Cosine similarity p5 / p25 / p50 / p75 / p95: {}.",
                    parts.join("; ")
                ));
            }
        }
        if s.queries_without_asked_at > 0 {
            notes.push(format!(
                "{} queries have no `asked_at`: they were run with the clock at the corpus's latest `created_at`, {}.",
                s.queries_without_asked_at,
                s.default_asked_at.to_rfc3339()
            ));
        }
        if s.queries_naming_a_time > 0 {
            notes.push(format!(
                "{} queries name a time (\"last week\", \"in May 2023\", \"上周\"): with `[retrieval.temporal]` on, the memories created then rank higher.",
                s.queries_naming_a_time
            ));
        }
        if let Some(g) = &s.group_by {
            notes.push(format!(
                "Group metrics by `{g}`: a group counts as retrieved when any of its documents is."
            ));
        }
        if let Some(l) = &s.lifecycle {
            notes.push(format!(
                "Ingested through the lifecycle (`--lifecycle`), in `created_at` order: {} stored, {} reinforced an earlier memory, {} promoted a pending one, {} superseded an earlier memory. A merged document is scored as the memory that absorbed it.",
                l.created, l.reinforced, l.promoted, l.superseded
            ));
        }
        if s.threaded_documents > 0 {
            notes.push(format!(
                "{} documents are turns of conversations ({}), in corpus order.",
                s.threaded_documents,
                s.thread_by
                    .as_deref()
                    .map_or("their `thread_id`".to_string(), |t| format!(
                        "`--thread-by {t}`"
                    ))
            ));
        }
        notes
    }

    /// The Markdown summary.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let v = &self.versions;
        let _ = writeln!(out, "# Retrieval evaluation\n");
        let _ = writeln!(
            out,
            "mnemo {} · model `{}` · policy sha256 `{}` · bootstrap {} resamples, seed {}\n",
            v.mnemo,
            v.embedding_model,
            &v.policy_sha256[..12.min(v.policy_sha256.len())],
            v.bootstrap.resamples,
            v.bootstrap.seed
        );
        for s in &self.sets {
            let _ = writeln!(out, "## {}\n", s.set);
            for n in Self::set_notes(s) {
                let _ = writeln!(out, "- {n}");
            }
            out.push('\n');
            let runs: Vec<&Run> = self.runs_of(&s.set).collect();
            let Some(first) = runs.first() else { continue };
            let keys = ordered_keys(&first.metrics);
            metric_table(
                &mut out,
                "preset",
                &keys,
                runs.iter().map(|r| (r.preset.as_str(), &r.metrics)),
            );
            let _ = writeln!(
                out,
                "\n| preset | search p50 ms | p95 | p99 | query embed p50 ms |\n|---|---:|---:|---:|---:|"
            );
            for r in &runs {
                let l = &r.latency_ms;
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    r.preset,
                    ms(l.search_p50),
                    ms(l.search_p95),
                    ms(l.search_p99),
                    ms(l.embed_p50)
                );
            }
            if runs.iter().any(|r| r.group_metrics.is_some()) {
                let _ = writeln!(
                    out,
                    "\n**Group level** (`{}`)\n",
                    s.group_by.as_deref().unwrap_or("")
                );
                metric_table(
                    &mut out,
                    "preset",
                    &keys,
                    runs.iter()
                        .filter_map(|r| Some((r.preset.as_str(), r.group_metrics.as_ref()?))),
                );
            }
            if first.by_category.len() > 1 {
                let cats: Vec<&String> = first.by_category.keys().collect();
                for key in ["recall_any@10", "ndcg@10"] {
                    if !first.metrics.contains_key(key) {
                        continue;
                    }
                    let _ = writeln!(out, "\n**{key} by category**\n");
                    let _ = write!(out, "| preset |");
                    for c in &cats {
                        let _ = write!(out, " {c} |");
                    }
                    let _ = write!(out, "\n|---|");
                    out.push_str(&"---:|".repeat(cats.len()));
                    out.push('\n');
                    for r in &runs {
                        let _ = write!(out, "| {} |", r.preset);
                        for c in &cats {
                            let v = r.by_category.get(*c).and_then(|m| m.get(key));
                            let _ =
                                write!(out, " {} |", v.map_or("–".into(), |v| format!("{v:.3}")));
                        }
                        out.push('\n');
                    }
                }
            }
            for c in self.comparisons.iter().filter(|c| c.set == s.set) {
                let _ = writeln!(
                    out,
                    "\n**{} → {}** (paired, {} queries, {:.0}% bootstrap CI of the difference)\n",
                    c.a,
                    c.b,
                    c.queries,
                    c.confidence * 100.0
                );
                let _ = writeln!(
                    out,
                    "| metric | {} | {} | Δ | CI | |\n|---|---:|---:|---:|---|---|",
                    c.a, c.b
                );
                let mm: MetricMap = c
                    .metrics
                    .iter()
                    .map(|(k, d)| (k.clone(), d.delta))
                    .collect();
                for k in ordered_keys(&mm) {
                    let d = &c.metrics[&k];
                    let _ = writeln!(
                        out,
                        "| {k} | {:.3} | {:.3} | {:+.3} | [{:+.3}, {:+.3}] | {} |",
                        d.a,
                        d.b,
                        d.delta,
                        d.ci_low,
                        d.ci_high,
                        if d.significant { "significant" } else { "" }
                    );
                }
            }
            out.push('\n');
        }
        out
    }

    /// The self-contained HTML report.
    pub fn html(&self) -> String {
        let mut body = String::new();
        let v = &self.versions;
        let _ = write!(
            body,
            "<h1>Retrieval evaluation</h1><p class=meta>mnemo {} · model <code>{}</code> · policy sha256 <code>{}</code></p>",
            esc(&v.mnemo),
            esc(&v.embedding_model),
            esc(&v.policy_sha256[..12.min(v.policy_sha256.len())])
        );
        for s in &self.sets {
            let runs: Vec<&Run> = self.runs_of(&s.set).collect();
            let _ = write!(body, "<h2>{}</h2><ul>", esc(&s.set));
            for n in Self::set_notes(s) {
                let _ = write!(body, "<li>{}</li>", esc(&n));
            }
            body.push_str("</ul>");
            if let Some(first) = runs.first() {
                let keys = ordered_keys(&first.metrics);
                body.push_str("<table><tr><th>preset</th>");
                for k in &keys {
                    let _ = write!(body, "<th>{}</th>", esc(k));
                }
                body.push_str(
                    "<th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>embed p50 ms</th></tr>",
                );
                for r in &runs {
                    let _ = write!(body, "<tr><td>{}</td>", esc(&r.preset));
                    for k in &keys {
                        let _ = write!(body, "<td>{:.3}</td>", r.metrics.get(k).unwrap_or(&0.0));
                    }
                    let l = &r.latency_ms;
                    let _ = write!(
                        body,
                        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        ms(l.search_p50),
                        ms(l.search_p95),
                        ms(l.search_p99),
                        ms(l.embed_p50)
                    );
                }
                body.push_str("</table><div class=charts>");
                body.push_str(&recall_chart(&runs));
                body.push_str(&latency_chart(&runs));
                body.push_str(&category_chart(&runs));
                body.push_str("</div>");
            }
            for c in self.comparisons.iter().filter(|c| c.set == s.set) {
                let _ = write!(
                    body,
                    "<h3>{} → {} <small>({} queries, {:.0}% CI)</small></h3><table><tr><th>metric</th><th>{}</th><th>{}</th><th>Δ</th><th>CI</th></tr>",
                    esc(&c.a), esc(&c.b), c.queries, c.confidence * 100.0, esc(&c.a), esc(&c.b)
                );
                let mm: MetricMap = c
                    .metrics
                    .iter()
                    .map(|(k, d)| (k.clone(), d.delta))
                    .collect();
                for k in ordered_keys(&mm) {
                    let d = &c.metrics[&k];
                    let _ = write!(
                        body,
                        "<tr{}><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:+.3}</td><td>[{:+.3}, {:+.3}]</td></tr>",
                        if d.significant { " class=sig" } else { "" },
                        esc(&k), d.a, d.b, d.delta, d.ci_low, d.ci_high
                    );
                }
                body.push_str("</table>");
            }
        }
        format!(
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>mnemo eval</title><style>{CSS}</style></head><body>{body}</body></html>\n"
        )
    }
}

const CSS: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}\
tr.sig td{background:#eef7ee}.meta{color:#666}.charts{display:flex;flex-wrap:wrap;gap:1em}svg{background:#fafafa;border:1px solid #ddd}\
svg text{font:11px system-ui,sans-serif}";

const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn metric_table<'a>(
    out: &mut String,
    first: &str,
    keys: &[String],
    rows: impl Iterator<Item = (&'a str, &'a MetricMap)>,
) {
    let _ = write!(out, "| {first} |");
    for k in keys {
        let _ = write!(out, " {k} |");
    }
    let _ = write!(out, "\n|---|");
    out.push_str(&"---:|".repeat(keys.len()));
    out.push('\n');
    for (name, m) in rows {
        let _ = write!(out, "| {name} |");
        for k in keys {
            let _ = write!(out, " {:.3} |", m.get(k).unwrap_or(&0.0));
        }
        out.push('\n');
    }
}

const W: f64 = 420.0;
const H: f64 = 260.0;
const PAD: f64 = 40.0;

/// An SVG frame with a title, axes and a legend of the runs.
fn frame(title: &str, runs: &[&Run], x_label: &str, inner: &str) -> String {
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' viewBox='0 0 {W} {H}'>\
<text x='{PAD}' y='16' font-weight='bold'>{}</text>\
<line x1='{PAD}' y1='{}' x2='{}' y2='{}' stroke='#444'/><line x1='{PAD}' y1='{PAD}' x2='{PAD}' y2='{}' stroke='#444'/>\
<text x='{}' y='{}' text-anchor='middle'>{}</text>",
        esc(title),
        H - PAD,
        W - 10.0,
        H - PAD,
        H - PAD,
        (W + PAD) / 2.0,
        H - 8.0,
        esc(x_label)
    );
    s.push_str(inner);
    for (i, r) in runs.iter().enumerate() {
        let y = 30.0 + 13.0 * i as f64;
        let _ = write!(
            s,
            "<rect x='{}' y='{}' width='9' height='9' fill='{}'/><text x='{}' y='{}'>{}</text>",
            W - 150.0,
            y - 8.0,
            PALETTE[i % PALETTE.len()],
            W - 137.0,
            y,
            esc(&r.preset)
        );
    }
    s.push_str("</svg>");
    s
}

fn y_ticks(max: f64, fmt: impl Fn(f64) -> String) -> String {
    let mut s = String::new();
    for i in 0..=4 {
        let v = max * f64::from(i) / 4.0;
        let y = (H - PAD) - (H - 2.0 * PAD) * f64::from(i) / 4.0;
        let _ = write!(
            s,
            "<text x='{}' y='{}' text-anchor='end'>{}</text><line x1='{PAD}' y1='{y}' x2='{}' y2='{y}' stroke='#e4e4e4'/>",
            PAD - 4.0,
            y + 4.0,
            fmt(v),
            W - 10.0
        );
    }
    s
}

/// recall_any@k against k, one line per run.
fn recall_chart(runs: &[&Run]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let ks: Vec<usize> = recall_any_ks(&first.metrics)
        .iter()
        .map(|(k, _)| *k)
        .collect();
    if ks.is_empty() {
        return String::new();
    }
    let x = |i: usize| PAD + (W - 170.0 - PAD) * (i as f64 + 0.5) / ks.len() as f64;
    let y = |v: f64| (H - PAD) - (H - 2.0 * PAD) * v;
    let mut inner = y_ticks(1.0, |v| format!("{v:.2}"));
    for (i, k) in ks.iter().enumerate() {
        let _ = write!(
            inner,
            "<text x='{}' y='{}' text-anchor='middle'>{k}</text>",
            x(i),
            H - PAD + 14.0
        );
    }
    for (ri, r) in runs.iter().enumerate() {
        let pts: Vec<String> = recall_any_ks(&r.metrics)
            .iter()
            .enumerate()
            .map(|(i, (_, v))| format!("{:.1},{:.1}", x(i), y(*v)))
            .collect();
        let c = PALETTE[ri % PALETTE.len()];
        let _ = write!(
            inner,
            "<polyline fill='none' stroke='{c}' stroke-width='2' points='{}'/>",
            pts.join(" ")
        );
        for p in &pts {
            let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(inner, "<circle cx='{px}' cy='{py}' r='2.5' fill='{c}'/>");
        }
    }
    frame("recall_any@k", runs, "k", &inner)
}

/// Cumulative distribution of search latency, one line per run.
fn latency_chart(runs: &[&Run]) -> String {
    let all: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.search_ms.iter().copied())
        .collect();
    if all.is_empty() {
        return String::new();
    }
    // The x axis ends at the largest p99 so that a few outliers do not squash the plot.
    let xmax = runs
        .iter()
        .filter_map(|r| super::metrics::percentile(&r.search_ms, 99.0))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let x = |v: f64| PAD + (W - 170.0 - PAD) * (v / xmax).min(1.0);
    let y = |f: f64| (H - PAD) - (H - 2.0 * PAD) * f;
    let mut inner = y_ticks(1.0, |v| format!("{:.0}%", v * 100.0));
    for i in 0..=4 {
        let v = xmax * f64::from(i) / 4.0;
        let _ = write!(
            inner,
            "<text x='{}' y='{}' text-anchor='middle'>{v:.1}</text>",
            x(v),
            H - PAD + 14.0
        );
    }
    for (ri, r) in runs.iter().enumerate() {
        let mut v = r.search_ms.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let step = (n / 200).max(1);
        let pts: Vec<String> = v
            .iter()
            .enumerate()
            .filter(|(i, _)| i % step == 0 || *i == n - 1)
            .map(|(i, ms)| format!("{:.1},{:.1}", x(*ms), y((i + 1) as f64 / n as f64)))
            .collect();
        let _ = write!(
            inner,
            "<polyline fill='none' stroke='{}' stroke-width='2' points='{}'/>",
            PALETTE[ri % PALETTE.len()],
            pts.join(" ")
        );
    }
    frame(
        "search latency (CDF, up to the largest p99)",
        runs,
        "ms",
        &inner,
    )
}

/// nDCG@10 per category, grouped bars per run.
fn category_chart(runs: &[&Run]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let cats: Vec<&String> = first.by_category.keys().collect();
    let key = "ndcg@10";
    if cats.is_empty() || !first.metrics.contains_key(key) {
        return String::new();
    }
    let plot_w = W - 170.0 - PAD;
    let slot = plot_w / cats.len() as f64;
    let bar = (slot * 0.8 / runs.len() as f64).max(1.0);
    let y = |v: f64| (H - PAD) - (H - 2.0 * PAD) * v;
    let mut inner = y_ticks(1.0, |v| format!("{v:.2}"));
    for (ci, c) in cats.iter().enumerate() {
        let x0 = PAD + slot * ci as f64 + slot * 0.1;
        let label: String = c.chars().take(12).collect();
        let _ = write!(
            inner,
            "<text x='{}' y='{}' text-anchor='middle'>{}</text>",
            x0 + slot * 0.4,
            H - PAD + 14.0,
            esc(&label)
        );
        for (ri, r) in runs.iter().enumerate() {
            let v = r
                .by_category
                .get(*c)
                .and_then(|m| m.get(key))
                .copied()
                .unwrap_or(0.0);
            let _ = write!(
                inner,
                "<rect x='{:.1}' y='{:.1}' width='{:.1}' height='{:.1}' fill='{}'><title>{} {}: {v:.3}</title></rect>",
                x0 + bar * ri as f64,
                y(v),
                bar,
                (H - PAD) - y(v),
                PALETTE[ri % PALETTE.len()],
                esc(&r.preset),
                esc(c)
            );
        }
    }
    frame("nDCG@10 by category", runs, "category", &inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_ordered_for_display() {
        let m: MetricMap = super::super::metrics::metric_names(&[1, 5, 10, 20])
            .into_iter()
            .map(|k| (k, 0.0))
            .collect();
        assert_eq!(
            ordered_keys(&m),
            super::super::metrics::metric_names(&[1, 5, 10, 20])
        );
    }

    #[test]
    fn html_is_escaped() {
        assert_eq!(esc("<a&b>"), "&lt;a&amp;b&gt;");
    }
}
