//! `mnemo tune`: fits the learned stage (`domain::learned`) to labelled
//! sets and reports what it does on data it was not fitted on.
//!
//! 1. Every set is ingested and every judged query searched once, with every
//!    candidate kept, for its features and judgment (`runner::
//!    run_set_collecting`), once per embedding model.
//! 2. Models are fitted on every candidate of the queries in the training
//!    part: a pairwise logistic loss over (relevant, not relevant) pairs of
//!    one query (Newton's method; each set weighs the same, each query of a
//!    set the same), then one scale and bias fitted pointwise so that the
//!    score is a calibrated probability of relevance (Platt).
//! 3. Held-out figures, two ways: **folds by user** within a set (a query's
//!    model never saw its user; a set of fewer users than folds is folded
//!    by query), and **leave one set out** (a set's model never saw the
//!    set). Each held-out model ranks through the real pipeline (`mnemo
//!    eval`'s runner), so the figures include everything a search does.
//! 4. The model fitted on everything is written as a policy file.
//!
//! Pure except [`tune`], which drives the runner.

// The fit is small dense linear algebra: indices read as the formulas do.
#![allow(clippy::needless_range_loop)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use super::candidates::{ordered, QueryRows, Row};
use super::compare::{self, Comparison};
use super::metrics::{self, MetricMap};
use super::{runner, set, EvalConfig, Preset, Progress, Result, Variant};
use crate::domain::learned::{LinearModel, N};
use crate::embed::Embedder;
use crate::policy::Policy;

/// The fold of a query: by user when the set has at least `folds` users,
/// else by query. Stable (FNV-1a of the id), so a rerun folds alike.
pub fn fold_of(q: &QueryRows, users_in_set: usize, folds: usize) -> usize {
    let key = if users_in_set >= folds {
        &q.user_id
    } else {
        &q.query_id
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % folds as u64) as usize
}

/// Not-relevant candidates of a query paired with its relevant ones: the
/// best this many as the candidates were ranked when collected (the hard
/// ones; further down they change nothing a reader sees).
pub const MAX_NEGATIVES: usize = 40;

/// Fitting settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitOptions {
    /// L2 penalty on the weights, relative to the total weight of the data.
    pub l2: f64,
    /// Newton iterations at most.
    pub iterations: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            l2: 0.01,
            iterations: 15,
        }
    }
}

/// Solves `a · x = b` for a small symmetric positive definite `a`
/// (Cholesky); `None` when it is not.
fn solve(a: &[[f64; N]; N], b: &[f64; N]) -> Option<[f64; N]> {
    let mut l = [[0.0f64; N]; N];
    for i in 0..N {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = a[i][i] - s;
                if d <= 0.0 {
                    return None;
                }
                l[i][j] = d.sqrt();
            } else {
                l[i][j] = (a[i][j] - s) / l[j][j];
            }
        }
    }
    let mut y = [0.0f64; N];
    for i in 0..N {
        y[i] = (b[i] - (0..i).map(|k| l[i][k] * y[k]).sum::<f64>()) / l[i][i];
    }
    let mut x = [0.0f64; N];
    for i in (0..N).rev() {
        x[i] = (y[i] - (i + 1..N).map(|k| l[k][i] * x[k]).sum::<f64>()) / l[i][i];
    }
    Some(x)
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Each query's weight: every set weighs the same, every query of a set the
/// same.
fn query_weights(queries: &[&QueryRows]) -> Vec<f64> {
    let mut per_set: HashMap<&str, usize> = HashMap::new();
    for q in queries {
        *per_set.entry(q.set.as_str()).or_default() += 1;
    }
    queries
        .iter()
        .map(|q| 1.0 / per_set[q.set.as_str()] as f64)
        .collect()
}

/// Fits the pairwise direction: minimises Σ_q w_q · mean over the query's
/// (relevant, not relevant) pairs of log(1 + e^(−β·(x⁺ − x⁻))) + l2/2 · |β|².
fn fit_direction(queries: &[&QueryRows], options: FitOptions) -> [f64; N] {
    let weights = query_weights(queries);
    // The pairs' feature differences, each with its weight.
    let mut diffs: Vec<([f64; N], f64)> = Vec::new();
    let mut total = 0.0;
    for (q, w) in queries.iter().zip(&weights) {
        let (pos, mut neg): (Vec<&Row>, Vec<&Row>) = q.rows.iter().partition(|r| r.relevance > 0);
        neg.truncate(MAX_NEGATIVES);
        let pairs = pos.len() * neg.len();
        if pairs == 0 {
            continue;
        }
        let each = w / pairs as f64;
        total += w;
        for p in &pos {
            for n in &neg {
                let mut d = [0.0f64; N];
                for i in 0..N {
                    d[i] = f64::from(p.features[i] - n.features[i]);
                }
                diffs.push((d, each));
            }
        }
    }
    let mut beta = [0.0f64; N];
    if total == 0.0 {
        return beta;
    }
    let l2 = options.l2 * total;
    for _ in 0..options.iterations {
        let mut grad = [0.0f64; N];
        let mut hess = [[0.0f64; N]; N];
        for i in 0..N {
            grad[i] = l2 * beta[i];
            hess[i][i] = l2;
        }
        for (d, w) in &diffs {
            let z: f64 = (0..N).map(|i| beta[i] * d[i]).sum();
            let p = sigmoid(-z); // −∂loss/∂z
            let curvature = w * p * (1.0 - p);
            for i in 0..N {
                grad[i] -= w * p * d[i];
                if d[i] != 0.0 {
                    for j in 0..=i {
                        hess[i][j] += curvature * d[i] * d[j];
                    }
                }
            }
        }
        for i in 0..N {
            for j in 0..i {
                hess[j][i] = hess[i][j];
            }
        }
        let Some(step) = solve(&hess, &grad) else {
            break;
        };
        let mut moved = 0.0f64;
        for i in 0..N {
            beta[i] -= step[i];
            moved = moved.max(step[i].abs());
        }
        if moved < 1e-6 {
            break;
        }
    }
    beta
}

/// Fits `a`, `b` so that σ(a·s + b) is the probability that a candidate of
/// score `s` is relevant (pointwise, weighted as the queries).
fn calibrate(queries: &[&QueryRows], beta: &[f64; N]) -> (f64, f64) {
    let weights = query_weights(queries);
    let mut points: Vec<(f64, f64, f64)> = Vec::new();
    for (q, w) in queries.iter().zip(&weights) {
        if q.rows.is_empty() {
            continue;
        }
        let each = w / q.rows.len() as f64;
        for r in &q.rows {
            let s: f64 = (0..N).map(|i| beta[i] * f64::from(r.features[i])).sum();
            points.push((s, f64::from(u8::from(r.relevance > 0)), each));
        }
    }
    let (mut a, mut b) = (1.0f64, 0.0f64);
    for _ in 0..50 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 1e-9, 0.0, 1e-9);
        for (s, y, w) in &points {
            let p = sigmoid(a * s + b);
            let e = w * (p - y);
            let c = w * p * (1.0 - p);
            ga += e * s;
            gb += e;
            haa += c * s * s;
            hab += c * s;
            hbb += c;
        }
        let det = haa * hbb - hab * hab;
        if det.abs() < 1e-18 {
            break;
        }
        let da = (hbb * ga - hab * gb) / det;
        let db = (haa * gb - hab * ga) / det;
        a -= da;
        b -= db;
        if da.abs().max(db.abs()) < 1e-9 {
            break;
        }
    }
    (a, b)
}

/// Fits a model to the queries' candidates.
pub fn fit(queries: &[&QueryRows], options: FitOptions) -> LinearModel {
    let beta = fit_direction(queries, options);
    let (a, b) = calibrate(queries, &beta);
    let mut weights = [0.0f32; N];
    for i in 0..N {
        weights[i] = (a * beta[i]) as f32;
    }
    LinearModel {
        bias: b as f32,
        weights,
    }
}

/// nDCG@10 of a query's candidates ranked by `model` (the stage alone,
/// without the turns beside the hits): for choosing the penalty.
pub fn ndcg_of(model: &LinearModel, q: &QueryRows) -> f64 {
    let mut scored: Vec<(f32, &Row)> = q
        .rows
        .iter()
        .map(|r| (model.logit(&r.features), r))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let judgments: metrics::Judgments = q
        .rows
        .iter()
        .filter(|r| r.relevance > 0)
        .map(|r| (r.doc_id.clone(), r.relevance))
        .chain(
            (0..q
                .relevant
                .saturating_sub(q.rows.iter().filter(|r| r.relevance > 0).count()))
                .map(|i| (format!("\u{0}missing{i}"), 1)),
        )
        .collect();
    let m = metrics::query_metrics(
        scored.iter().map(|(_, r)| r.doc_id.as_str()),
        &judgments,
        &[10],
    );
    m.get(&format!("ndcg@{}", metrics::NDCG_AT))
        .copied()
        .unwrap_or(0.0)
}

/// What `mnemo tune` is asked to do.
#[derive(Clone)]
pub struct TuneConfig {
    /// Sets, variants and settings as `mnemo eval` takes them; its embedder
    /// is replaced by each of `embedders` in turn.
    pub eval: EvalConfig,
    /// The embedding models whose candidates are pooled (each set once per model).
    pub embedders: Vec<Arc<dyn Embedder>>,
    pub folds: usize,
    /// Penalties tried; the one with the best mean held-out (user folds)
    /// nDCG@10 over the sets is used.
    pub l2: Vec<f64>,
}

/// A set's held-out figures under one embedding model.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SetFigures {
    pub set: String,
    pub model: String,
    pub queries: usize,
    /// Label → mean metrics: bm25, vector, default (the engine's policy
    /// before tuning), held_out_folds, held_out_set, fitted_on_all.
    pub runs: BTreeMap<String, MetricMap>,
    pub by_category: BTreeMap<String, BTreeMap<String, MetricMap>>,
    /// Search p50 (ms) per label.
    pub search_p50_ms: BTreeMap<String, f64>,
    pub comparisons: Vec<Comparison>,
    /// Each query's held-out (user folds) metrics, for pairing with another
    /// tuning run.
    pub held_out_per_query: Vec<(String, MetricMap)>,
}

/// What `mnemo tune` found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TuneReport {
    pub sets: Vec<String>,
    pub models: Vec<String>,
    pub folds: usize,
    pub l2: f64,
    /// Mean held-out nDCG@10 of the stage alone per penalty tried.
    pub l2_grid: Vec<(f64, f64)>,
    pub bias: f32,
    pub weights: BTreeMap<String, f32>,
    pub figures: Vec<SetFigures>,
}

const HELD_OUT_FOLDS: &str = "held_out_folds";
const HELD_OUT_SET: &str = "held_out_set";
const FITTED: &str = "fitted_on_all";
const DEFAULT: &str = "default";

/// A policy variant with `model` as its learned stage.
fn variant(label: &str, base: &Policy, model: &LinearModel) -> Variant {
    let mut p = base.clone();
    p.retrieval.learned.enabled = true;
    p.retrieval.learned.bias = model.bias;
    p.retrieval.learned.weights = model.named();
    Variant::Config {
        label: label.to_string(),
        path: PathBuf::from(format!("<{label}>")),
        policy: Box::new(p),
    }
}

/// Runs `mnemo tune`.
pub async fn tune(config: TuneConfig, progress: &dyn Progress) -> Result<TuneReport> {
    let folds = config.folds.max(2);
    let e = &config.eval;
    let sets = e.load_sets()?;
    // 1. Candidates of every set under every model.
    let mut data: Vec<(usize, usize, QueryRows)> = Vec::new(); // (model, set, rows)
    for (mi, embedder) in config.embedders.iter().enumerate() {
        let mut c = e.clone();
        c.embedder = embedder.clone();
        c.variants = Vec::new();
        for (si, s) in sets.iter().enumerate() {
            let (_, _, rows) = runner::run_set_collecting(&c, s, progress, true).await?;
            data.extend(rows.into_iter().map(|r| (mi, si, r)));
        }
    }
    let users: Vec<usize> = (0..sets.len())
        .map(|si| {
            let mut u: Vec<&str> = data
                .iter()
                .filter(|(_, s, _)| *s == si)
                .map(|(_, _, q)| q.user_id.as_str())
                .collect();
            u.sort_unstable();
            u.dedup();
            u.len()
        })
        .collect();
    let fold: Vec<usize> = data
        .iter()
        .map(|(_, si, q)| fold_of(q, users[*si], folds))
        .collect();
    let fit_where = |keep: &dyn Fn(usize) -> bool, l2: f64| {
        let train: Vec<&QueryRows> = (0..data.len())
            .filter(|i| keep(*i))
            .map(|i| &data[i].2)
            .collect();
        fit(
            &train,
            FitOptions {
                l2,
                ..FitOptions::default()
            },
        )
    };
    // 2. The penalty: the best mean (over sets) held-out nDCG@10 of the stage
    // alone, user folds.
    let mut grid = Vec::new();
    for l2 in &config.l2 {
        let mut per_set: Vec<Vec<f64>> = vec![Vec::new(); sets.len()];
        for si in 0..sets.len() {
            for f in 0..folds {
                let model = fit_where(&|i| !(data[i].1 == si && fold[i] == f), *l2);
                for i in (0..data.len()).filter(|i| data[*i].1 == si && fold[*i] == f) {
                    per_set[si].push(ndcg_of(&model, &data[i].2));
                }
            }
        }
        let mean = per_set
            .iter()
            .map(|v| v.iter().sum::<f64>() / v.len().max(1) as f64)
            .sum::<f64>()
            / sets.len().max(1) as f64;
        grid.push((*l2, mean));
    }
    let l2 = grid
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(FitOptions::default().l2, |g| g.0);
    let all = fit_where(&|_| true, l2);
    // 3. Held-out figures through the real pipeline.
    let names = metrics::metric_names(&e.ks);
    let mut figures = Vec::new();
    for (mi, embedder) in config.embedders.iter().enumerate() {
        for (si, s) in sets.iter().enumerate() {
            let mut c = e.clone();
            c.embedder = embedder.clone();
            let base = c.policy.clone();
            let mut variants = vec![
                Variant::Preset(Preset::Bm25),
                Variant::Preset(Preset::Vector),
                Variant::Config {
                    label: DEFAULT.to_string(),
                    path: PathBuf::from("<default>"),
                    policy: Box::new(base.clone()),
                },
                variant(FITTED, &base, &all),
                variant(HELD_OUT_SET, &base, &fit_where(&|i| data[i].1 != si, l2)),
            ];
            for f in 0..folds {
                let m = fit_where(&|i| !(data[i].1 == si && fold[i] == f), l2);
                variants.push(variant(&format!("fold_{f}"), &base, &m));
            }
            c.variants = variants;
            let (_, runs, _) = runner::run_set_collecting(&c, s, progress, false).await?;
            figures.push(set_figures(
                s,
                embedder.model_id(),
                &runs,
                &data,
                &fold,
                (mi, si),
                &names,
                e,
            ));
        }
    }
    Ok(TuneReport {
        sets: sets.iter().map(|s| s.name.clone()).collect(),
        models: config
            .embedders
            .iter()
            .map(|m| m.model_id().to_string())
            .collect(),
        folds,
        l2,
        l2_grid: grid,
        bias: all.bias,
        weights: all.named(),
        figures,
    })
}

/// One set's figures: each run's means, and the held-out (user folds) run
/// assembled query by query from the fold models.
#[allow(clippy::too_many_arguments)]
fn set_figures(
    s: &set::EvalSet,
    model: &str,
    runs: &[super::Run],
    data: &[(usize, usize, QueryRows)],
    fold: &[usize],
    (mi, si): (usize, usize),
    names: &[String],
    e: &EvalConfig,
) -> SetFigures {
    let fold_of_query: HashMap<&str, usize> = data
        .iter()
        .zip(fold)
        .filter(|((m, s, _), _)| *m == mi && *s == si)
        .map(|((_, _, q), f)| (q.query_id.as_str(), *f))
        .collect();
    let by_label: HashMap<&str, &super::Run> =
        runs.iter().map(|r| (r.preset.as_str(), r)).collect();
    let category: HashMap<&str, &str> = s
        .queries
        .iter()
        .map(|q| {
            (
                q.id.as_str(),
                q.category.as_deref().unwrap_or(runner::UNCATEGORIZED),
            )
        })
        .collect();
    let mut per_label: BTreeMap<String, Vec<(String, MetricMap)>> = BTreeMap::new();
    for r in runs {
        if !r.preset.starts_with("fold_") {
            per_label.insert(r.preset.clone(), r.per_query.clone());
        }
    }
    let held: Vec<(String, MetricMap)> = by_label
        .get(DEFAULT)
        .map(|r| &r.per_query)
        .into_iter()
        .flatten()
        .filter_map(|(id, _)| {
            let f = fold_of_query.get(id.as_str())?;
            let run = by_label.get(format!("fold_{f}").as_str())?;
            run.per_query.iter().find(|(q, _)| q == id).cloned()
        })
        .collect();
    per_label.insert(HELD_OUT_FOLDS.to_string(), held);
    let mean = |v: &[(String, MetricMap)]| {
        let m: Vec<&MetricMap> = v.iter().map(|(_, m)| m).collect();
        metrics::mean(&m)
    };
    let mut by_category: BTreeMap<String, BTreeMap<String, MetricMap>> = BTreeMap::new();
    for (label, v) in &per_label {
        let mut groups: BTreeMap<&str, Vec<&MetricMap>> = BTreeMap::new();
        for (id, m) in v {
            groups
                .entry(
                    category
                        .get(id.as_str())
                        .copied()
                        .unwrap_or(runner::UNCATEGORIZED),
                )
                .or_default()
                .push(m);
        }
        for (c, ms) in groups {
            by_category
                .entry(c.to_string())
                .or_default()
                .insert(label.clone(), metrics::mean(&ms));
        }
    }
    let comparisons = [
        (DEFAULT, HELD_OUT_FOLDS),
        ("vector", HELD_OUT_FOLDS),
        ("bm25", HELD_OUT_FOLDS),
        (DEFAULT, HELD_OUT_SET),
        ("vector", HELD_OUT_SET),
    ]
    .iter()
    .filter_map(|(a, b)| {
        Some(compare::compare(
            &s.name,
            (a, per_label.get(*a)?),
            (b, per_label.get(*b)?),
            names,
            e.bootstrap,
        ))
    })
    .map(|mut c| {
        c.per_query.clear();
        c
    })
    .collect();
    SetFigures {
        set: s.name.clone(),
        model: model.to_string(),
        queries: per_label.get(DEFAULT).map_or(0, Vec::len),
        runs: per_label
            .iter()
            .map(|(l, v)| (l.clone(), mean(v)))
            .collect(),
        by_category,
        search_p50_ms: runs
            .iter()
            .filter(|r| !r.preset.starts_with("fold_"))
            .filter_map(|r| Some((r.preset.clone(), r.latency_ms.search_p50?)))
            .collect(),
        comparisons,
        held_out_per_query: per_label.remove(HELD_OUT_FOLDS).unwrap_or_default(),
    }
}

impl TuneReport {
    /// The policy file: `[retrieval.learned]` with the fitted model, and the
    /// held-out figures as comments.
    pub fn policy_toml(&self, command: &str) -> String {
        let mut out = String::new();
        out.push_str("# The learned stage, fitted by `mnemo tune`.\n");
        out.push_str(&format!("# command: {command}\n"));
        out.push_str(&format!(
            "# sets: {}; embedding models: {}; folds: {} (by user, by query where a set has fewer users); l2: {}\n",
            self.sets.join(", "),
            self.models.join(", "),
            self.folds,
            self.l2
        ));
        out.push_str("# held-out nDCG@10 (user folds / leave one set out) against the default before tuning:\n");
        for f in &self.figures {
            let get = |l: &str| {
                f.runs
                    .get(l)
                    .and_then(|m| m.get("ndcg@10"))
                    .copied()
                    .unwrap_or(0.0)
            };
            out.push_str(&format!(
                "#   {:<24} {:<26} {:.3} / {:.3}  (default {:.3}, vector {:.3}, bm25 {:.3})\n",
                f.set,
                f.model,
                get(HELD_OUT_FOLDS),
                get(HELD_OUT_SET),
                get(DEFAULT),
                get("vector"),
                get("bm25")
            ));
        }
        out.push_str("\n[retrieval.learned]\nenabled = true\n");
        out.push_str(&format!(
            "bias = {:.4}\n\n[retrieval.learned.weights]\n",
            self.bias
        ));
        for (name, w) in &self.weights {
            out.push_str(&format!("{name} = {w:.4}\n"));
        }
        out
    }

    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "# mnemo tune\n\nSets: {}. Models: {}. {} folds (by user; by query where a set has fewer users). L2 {} (grid: {}).\n\n",
            self.sets.join(", "),
            self.models.join(", "),
            self.folds,
            self.l2,
            self.l2_grid
                .iter()
                .map(|(l, v)| format!("{l} → {v:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        out.push_str("## nDCG@10 / recall_any@1 / recall_any@5 (search p50 ms)\n\n");
        out.push_str("| set | model | bm25 | vector | default | held out (user folds) | held out (set) | fitted on all |\n|---|---|---|---|---|---|---|---|\n");
        for f in &self.figures {
            let cell = |l: &str| {
                let m = f.runs.get(l);
                let g = |k: &str| m.and_then(|m| m.get(k)).copied().unwrap_or(0.0);
                let p50 = f
                    .search_p50_ms
                    .get(l)
                    .map(|p| format!(" ({p:.1})"))
                    .unwrap_or_default();
                format!(
                    "{:.3} / {:.3} / {:.3}{p50}",
                    g("ndcg@10"),
                    g("recall_any@1"),
                    g("recall_any@5")
                )
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                f.set,
                f.model,
                cell("bm25"),
                cell("vector"),
                cell(DEFAULT),
                cell(HELD_OUT_FOLDS),
                cell(HELD_OUT_SET),
                cell(FITTED)
            ));
        }
        out.push_str("\n## Paired differences, nDCG@10 (b − a [95% CI])\n\n| set | model | a | b | Δ |\n|---|---|---|---|---|\n");
        for f in &self.figures {
            for c in &f.comparisons {
                if let Some(d) = c.metrics.get("ndcg@10") {
                    out.push_str(&format!(
                        "| {} | {} | {} | {} | {:+.3} [{:+.3}, {:+.3}] |\n",
                        f.set, f.model, c.a, c.b, d.delta, d.ci_low, d.ci_high
                    ));
                }
            }
        }
        out.push_str("\n## recall_any@1 / recall_any@5 by category, held out (user folds) vs vector vs default\n\n| set | model | category | held out | vector | default |\n|---|---|---|---|---|---|\n");
        for f in &self.figures {
            for (cat, labels) in &f.by_category {
                if cat == runner::UNCATEGORIZED {
                    continue;
                }
                let cell = |l: &str| {
                    let m = labels.get(l);
                    let g = |k: &str| m.and_then(|m| m.get(k)).copied().unwrap_or(0.0);
                    format!("{:.2} / {:.2}", g("recall_any@1"), g("recall_any@5"))
                };
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} |\n",
                    f.set,
                    f.model,
                    cat,
                    cell(HELD_OUT_FOLDS),
                    cell("vector"),
                    cell(DEFAULT)
                ));
            }
        }
        out.push_str("\n## Fitted model (on everything)\n\n| feature | weight |\n|---|---|\n");
        out.push_str(&format!("| bias | {:.4} |\n", self.bias));
        for (n, w) in &self.weights {
            out.push_str(&format!("| {n} | {w:.4} |\n"));
        }
        out
    }

    /// Writes `report.json` and `report.md` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| super::Error::Io {
            path: dir.to_path_buf(),
            source: e,
        })?;
        let json = serde_json::to_vec_pretty(self).map_err(crate::Error::internal)?;
        for (name, bytes) in [
            ("report.json", json),
            ("report.md", self.markdown().into_bytes()),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|e| super::Error::Io { path, source: e })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(doc: &str, x: &[(usize, f32)], relevance: u32) -> Row {
        let mut features = [0.0; N];
        for (i, v) in x {
            features[*i] = *v;
        }
        Row {
            doc_id: doc.into(),
            features,
            relevance,
        }
    }

    fn query(set: &str, id: &str, rows: Vec<Row>) -> QueryRows {
        QueryRows {
            set: set.into(),
            query_id: id.into(),
            user_id: format!("u-{id}"),
            relevant: rows.iter().filter(|r| r.relevance > 0).count(),
            rows,
        }
    }

    #[test]
    fn the_fit_finds_the_feature_that_separates_and_calibrates_it() {
        // Feature 0 tells relevant from not; feature 4 is noise.
        let qs: Vec<QueryRows> = (0..40)
            .map(|i| {
                let noise = (i % 7) as f32 / 7.0;
                query(
                    "s",
                    &format!("q{i}"),
                    vec![
                        row("a", &[(0, 0.9), (4, noise)], 1),
                        row("b", &[(0, 0.2), (4, 1.0 - noise)], 0),
                        row("c", &[(0, 0.1), (4, noise)], 0),
                        row("d", &[(0, 0.3), (4, 0.5)], 0),
                    ],
                )
            })
            .collect();
        let refs: Vec<&QueryRows> = qs.iter().collect();
        let model = fit(&refs, FitOptions::default());
        assert!(model.weights[0] > 1.0, "{:?}", model.weights);
        assert!(
            model.weights[4].abs() < model.weights[0] / 5.0,
            "{:?}",
            model.weights
        );
        // Calibrated: the mean predicted probability is the share relevant.
        let mean: f32 = qs
            .iter()
            .flat_map(|q| &q.rows)
            .map(|r| model.probability(&r.features))
            .sum::<f32>()
            / 160.0;
        assert!((mean - 0.25).abs() < 0.05, "{mean}");
        assert!(qs.iter().all(|q| ndcg_of(&model, q) == 1.0));
    }

    #[test]
    fn folds_go_by_user_when_there_are_enough_users() {
        let mut a = query("s", "q1", vec![]);
        let mut b = query("s", "q2", vec![]);
        a.user_id = "same".into();
        b.user_id = "same".into();
        assert_eq!(fold_of(&a, 10, 5), fold_of(&b, 10, 5));
        let spread: std::collections::HashSet<usize> = (0..50)
            .map(|i| fold_of(&query("s", &format!("q{i}"), vec![]), 1, 5))
            .collect();
        assert_eq!(spread.len(), 5, "one user: folds by query");
    }

    #[test]
    fn a_query_without_a_relevant_candidate_is_no_pair() {
        let q = query("s", "q", vec![row("a", &[(0, 1.0)], 0)]);
        let model = fit(&[&q], FitOptions::default());
        assert!(model.weights.iter().all(|w| w.is_finite()));
    }
}
