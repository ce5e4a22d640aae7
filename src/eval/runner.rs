//! One set through the engine: ingest once into a fresh temporary store, then
//! run every query once per variant. Sequential by design: the clock is set to
//! each query's `asked_at`, and latencies are measured on an otherwise idle
//! engine.
//!
//! Each query is embedded once per set (before the variants; see
//! [`QueryMemo`]), so a variant's search latency is retrieval, fusion,
//! hydration and ranking; the query-embedding time is measured on the first
//! [`MEASURED_QUERIES`] queries, even when the persistent cache has them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::cache::{query_key, EmbeddingCache, QueryMemo};
use super::metrics::{self, Judgments, Latency, MetricMap};
use super::report::{EmbedLatency, LifecycleCounts, Run, SetInfo};
use super::set::EvalSet;
use super::similarity::{self, QueryPairs, Similarity};
use super::{EvalConfig, Progress, Result};
use crate::clock::ManualClock;
use crate::domain::Actor;
use crate::domain::Scope;
use crate::embed::Embedder;
use crate::service::{Engine, SearchRequest};
use crate::store::{text_hash, CacheOwner};

/// Skipped lines listed by name in the report (all are counted).
const SKIPPED_SHOWN: usize = 20;

/// Queries whose embedding is timed in every run, cached or not.
pub const MEASURED_QUERIES: usize = 200;

/// Documents per write batch during ingest.
const INGEST_BATCH: usize = 256;

/// Category name for queries without one.
pub const UNCATEGORIZED: &str = "uncategorized";

/// Ingests a set and runs every variant on it.
pub async fn run_set(
    config: &EvalConfig,
    set: &EvalSet,
    progress: &dyn Progress,
) -> Result<(SetInfo, Vec<Run>)> {
    let (info, runs, _) = run_set_collecting(config, set, progress, false).await?;
    Ok((info, runs))
}

/// [`run_set`], and with `collect` every judged query's candidates with the
/// learned stage's features and their judgments (`mnemo tune`).
pub async fn run_set_collecting(
    config: &EvalConfig,
    set: &EvalSet,
    progress: &dyn Progress,
    collect: bool,
) -> Result<(SetInfo, Vec<Run>, Vec<super::candidates::QueryRows>)> {
    let tmp = match &config.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| super::Error::Io {
                path: d.clone(),
                source: e,
            })?;
            tempfile::Builder::new().prefix("mnemo-eval-").tempdir_in(d)
        }
        None => tempfile::Builder::new().prefix("mnemo-eval-").tempdir(),
    }
    .map_err(|e| super::Error::Io {
        path: config.work_dir.clone().unwrap_or_else(std::env::temp_dir),
        source: e,
    })?;
    let default_at = set.default_asked_at();
    let clock = ManualClock::new(default_at);
    // An evaluation corpus is taken as given, every document its own memory
    // under its own id — unless `--lifecycle` asks for what users get, where
    // a merged document is scored as the memory that absorbed it.
    let mut policy = config.policy.clone();
    if !config.lifecycle {
        policy.lifecycle.reinforce_duplicates = false;
        policy.lifecycle.detect_corrections = false;
    }
    // Long documents are indexed whole (the embedder truncates to its window).
    let api_limit = policy.limits.max_text_bytes;
    let over_limit = set
        .docs
        .iter()
        .filter(|d| d.memory.text.len() > api_limit)
        .count();
    let longest = set.docs.iter().map(|d| d.memory.text.len()).max();
    policy.limits.max_text_bytes = api_limit.max(longest.unwrap_or(0));
    // On a Qdrant server, each run gets its own collection, dropped below.
    let vectors = match &config.vectors {
        crate::vector::VectorBackend::Server(server) => {
            let mut server = server.clone();
            server.collection = format!(
                "{}_eval_{}",
                server.collection,
                uuid::Uuid::new_v4().simple()
            );
            crate::vector::VectorBackend::Server(server)
        }
        embedded => embedded.clone(),
    };
    let memo = Arc::new(QueryMemo::new(config.embedder.clone()));
    let engine = Engine::builder(tmp.path())
        .policy(policy)
        .embedder(memo.clone())
        .clock(Arc::new(clock.clone()))
        .vectors(vectors.clone())
        .build()
        .await?
        .engine;
    let result = async {
        let model = engine.embedder().model_id().to_string();
        let mut cache = config
            .cache_dir
            .as_deref()
            .map(|dir| EmbeddingCache::load(dir, &model, engine.embedder().dim()));
        let Ingested {
            secs: ingest_secs,
            seeded: cached,
            mut learned,
            doc_vectors,
            merged_into,
            lifecycle,
        } = ingest(config, set, &engine, cache.as_ref(), progress).await?;
        let uses_vectors = config
            .variants
            .iter()
            .any(|v| v.params(&config.policy).legs != crate::service::Legs::Lexical);
        let (queries_cached, embed_ms) = if uses_vectors {
            embed_queries(set, &memo, cache.as_ref(), progress)?
        } else {
            (0, Vec::new())
        };
        let similarity = if uses_vectors {
            let (s, new) = measure_similarity(set, &memo, &doc_vectors, cache.as_ref())?;
            learned.extend(new);
            Some(s)
        } else {
            None
        };
        if let (Some(c), Some(dir)) = (&mut cache, &config.cache_dir) {
            let before = c.vectors.len();
            c.extend(learned);
            c.extend(memo.entries());
            if c.vectors.len() > before {
                if let Err(e) = c.save(dir) {
                    tracing::warn!(dir = %dir.display(), error = %e, "could not save the embedding cache");
                }
            }
        }
        let query_embed_ms = (!embed_ms.is_empty()).then(|| EmbedLatency {
            measured: embed_ms.len(),
            p50: metrics::percentile(&embed_ms, 50.0),
            p95: metrics::percentile(&embed_ms, 95.0),
        });
        let mut runs = Vec::new();
        for v in &config.variants {
            let mut run =
                run_variant(config, set, &engine, &clock, v, &merged_into, progress).await?;
            if run.latency_ms.embed_p50.is_some() {
                run.latency_ms.embed_p50 = query_embed_ms.as_ref().and_then(|l| l.p50);
            }
            runs.push(run);
        }
        let rows = if collect {
            collect_rows(config, set, &engine, &clock, progress).await?
        } else {
            Vec::new()
        };
        Ok::<_, super::Error>((
            ingest_secs,
            cached,
            queries_cached,
            query_embed_ms,
            similarity,
            runs,
            lifecycle,
            rows,
        ))
    }
    .await;
    engine.shutdown().await.ok();
    drop(engine);
    if let crate::vector::VectorBackend::Server(server) = vectors {
        let dim = config.embedder.dim();
        let dropped = tokio::task::spawn_blocking(move || {
            crate::vector::QdrantServerIndex::connect(&server, dim)?.drop_collection()
        })
        .await;
        if !matches!(dropped, Ok(Ok(()))) {
            tracing::warn!("could not drop the evaluation's temporary Qdrant collection");
        }
    }
    let (
        ingest_secs,
        embeddings_cached,
        query_embeddings_cached,
        query_embed_ms,
        similarity,
        mut runs,
        lifecycle,
        rows,
    ) = result?;
    let ingest_per_s = set.docs.len() as f64 / ingest_secs.max(1e-9);
    for r in &mut runs {
        r.ingest_per_s = ingest_per_s;
    }
    let info = SetInfo {
        set: set.name.clone(),
        path: set.dir.display().to_string(),
        data_sha256: set.data_sha256.clone(),
        documents: set.docs.len(),
        queries: set.queries.len(),
        judged_queries: set.judged_queries().count(),
        queries_without_asked_at: set.queries.iter().filter(|q| q.asked_at.is_none()).count(),
        default_asked_at: default_at,
        queries_naming_a_time: set
            .queries
            .iter()
            .filter(|q| {
                crate::domain::temporal::window_of(&q.text, q.asked_at.unwrap_or(default_at))
                    .is_some()
            })
            .count(),
        group_by: set.group_by.clone(),
        thread_by: set.thread_by.clone(),
        threaded_documents: set.threaded,
        lifecycle,
        ingest_secs,
        ingest_per_s,
        embeddings_cached,
        documents_over_text_limit: over_limit,
        skipped_lines: set.skipped.len(),
        skipped: set.skipped.iter().take(SKIPPED_SHOWN).cloned().collect(),
        query_embeddings_cached,
        query_embed_ms,
        similarity,
    };
    Ok((info, runs, rows))
}

/// Every judged query's candidates, as the learned stage sees them: the
/// policy's ranking with the stage on (its weights do not change the
/// features), every candidate kept.
async fn collect_rows(
    config: &EvalConfig,
    set: &EvalSet,
    engine: &Engine,
    clock: &ManualClock,
    progress: &dyn Progress,
) -> Result<Vec<super::candidates::QueryRows>> {
    let mut ranking = config.policy.ranking();
    if ranking.learned.is_none() {
        let mut on = config.policy.clone();
        on.retrieval.learned.enabled = true;
        ranking.learned = on.ranking().learned;
    }
    let default_at = set.default_asked_at();
    let queries: Vec<_> = set.judged_queries().collect();
    progress.start(&format!("{}: candidates", set.name), queries.len() as u64);
    let mut out = Vec::with_capacity(queries.len());
    for q in queries {
        clock.set(q.asked_at.unwrap_or(default_at));
        let mut req = SearchRequest::new(Scope::user(q.user_id.clone()), q.text.clone());
        req.top_k = Some(config.depth());
        req.ranking = Some(ranking.clone());
        req.record_access = false;
        req.all_candidates = true;
        let hits = engine.search(req).await?.hits;
        let judgments = &set.qrels[&q.id];
        let rows = hits
            .iter()
            .filter_map(|h| {
                let learned = h.breakdown.learned.as_ref()?;
                let doc = h.memory.metadata.get("doc_id")?.as_str()?;
                Some(super::candidates::Row {
                    doc_id: doc.to_string(),
                    features: super::candidates::ordered(&learned.features),
                    relevance: judgments.get(doc).copied().unwrap_or(0),
                })
            })
            .collect();
        out.push(super::candidates::QueryRows {
            set: set.name.clone(),
            query_id: q.id.clone(),
            user_id: q.user_id.clone(),
            relevant: judgments.values().filter(|r| **r > 0).count(),
            rows,
        });
        progress.advance(1);
    }
    progress.finish();
    Ok(out)
}

/// Embedding-cache entries: (text hash, vector).
type CacheEntries = Vec<(String, Vec<f32>)>;

/// What ingest gives back besides the indexed corpus.
struct Ingested {
    /// Seconds from the first write to an optimised index.
    secs: f64,
    /// Document embeddings that came from the persistent cache.
    seeded: usize,
    /// Embeddings the store computed (to add to the persistent cache).
    learned: CacheEntries,
    /// Each document's vector, in corpus order (`None` if the store has none).
    doc_vectors: Vec<Option<Vec<f32>>>,
    /// `--lifecycle`: each document merged into an earlier memory → that
    /// memory's document id.
    merged_into: HashMap<String, String>,
    lifecycle: Option<LifecycleCounts>,
}

/// Seeds the store's embedding cache, writes the corpus, and reads back
/// every document's vector.
async fn ingest(
    config: &EvalConfig,
    set: &EvalSet,
    engine: &Engine,
    cache: Option<&EmbeddingCache>,
    progress: &dyn Progress,
) -> Result<Ingested> {
    let model = engine.embedder().model_id().to_string();
    let actor = Actor::local("eval");
    // The store's cache is kept per owner: the texts of each owner the set's
    // documents will be written for (a set may hold several users).
    let now = engine.clock().now();
    progress.start(&format!("{}: prepare", set.name), set.docs.len() as u64);
    let prepared = set
        .docs
        .iter()
        .map(|d| {
            progress.advance(1);
            Ok(engine.prepare(&actor, d.memory.clone(), now)?)
        })
        .collect::<Result<Vec<_>>>()?;
    // What the engine will embed for each document (a turn carries the one
    // before it), keyed as its cache keys it; the store is still empty, so
    // each turn's previous turn comes from the corpus, as in the ingest.
    let inputs = engine.passage_inputs(&prepared).await?;
    let doc_hashes: Vec<(CacheOwner, String)> = prepared
        .iter()
        .zip(&inputs)
        .map(|(m, input)| (CacheOwner::of(m), text_hash(input)))
        .collect();
    drop(inputs);
    let mut owners = CacheOwner::group(doc_hashes.to_vec());
    for (_, hashes) in &mut owners {
        hashes.sort();
        hashes.dedup();
    }
    let texts = owners.iter().map(|(_, h)| h.len()).sum::<usize>();
    let mut seeded = 0;
    if let Some(c) = cache {
        for (owner, hashes) in &owners {
            let entries: Vec<(String, Vec<f32>)> = hashes
                .iter()
                .filter_map(|h| c.vectors.get(h).map(|v| (h.clone(), v.clone())))
                .collect();
            seeded += entries.len();
            for chunk in entries.chunks(1000) {
                engine
                    .embedding_cache()
                    .cache_embeddings(owner, &model, chunk, None)
                    .await?;
            }
        }
    }

    let batch = INGEST_BATCH.min(config.policy.limits.max_batch).max(1);
    progress.start(&format!("{}: ingest", set.name), set.docs.len() as u64);
    let started = Instant::now();
    let (merged_into, lifecycle) = if config.lifecycle {
        let (merged, counts) = ingest_through_lifecycle(set, engine, &actor, progress).await?;
        (merged, Some(counts))
    } else {
        let items: Vec<_> = set.docs.iter().map(|d| d.memory.clone()).collect();
        crate::service::ingest::add_bulk(engine, &actor, items, batch, |n| {
            progress.advance(n as u64)
        })
        .await?;
        (HashMap::new(), None)
    };
    engine.commit().await?;
    engine.optimize().await?;
    let secs = started.elapsed().as_secs_f64();
    progress.finish();

    let mut all: HashMap<String, Vec<f32>> = HashMap::with_capacity(texts);
    for (owner, hashes) in &owners {
        for chunk in hashes.chunks(1000) {
            all.extend(
                engine
                    .embedding_cache()
                    .cached_embeddings(owner, &model, chunk)
                    .await?,
            );
        }
    }
    let learned = match cache {
        Some(c) if seeded < texts => all
            .iter()
            .filter(|(h, _)| !c.vectors.contains_key(*h))
            .map(|(h, v)| (h.clone(), v.clone()))
            .collect(),
        _ => Vec::new(),
    };
    let doc_vectors = doc_hashes
        .iter()
        .map(|(_, h)| all.get(h).cloned())
        .collect();
    Ok(Ingested {
        secs,
        seeded,
        learned,
        doc_vectors,
        merged_into,
        lifecycle,
    })
}

/// `--lifecycle`: each document written on its own, in `created_at` order
/// (corpus order at equal times), through the same `remember` as every
/// write, so that a repeated fact reinforces the earlier memory and a
/// correction supersedes it. Returns the merged documents (→ the document
/// id of the memory that absorbed each) and the outcome counts.
async fn ingest_through_lifecycle(
    set: &EvalSet,
    engine: &Engine,
    actor: &Actor,
    progress: &dyn Progress,
) -> Result<(HashMap<String, String>, LifecycleCounts)> {
    use crate::service::Outcome;
    let mut order: Vec<&super::set::Doc> = set.docs.iter().collect();
    order.sort_by_key(|d| d.memory.created_at);
    let mut merged_into = HashMap::new();
    let mut counts = LifecycleCounts::default();
    for d in order {
        let written = engine
            .remember(actor, vec![d.memory.clone()], false)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| crate::Error::internal("remember returned no outcome"))?;
        match written.outcome {
            Outcome::Created => counts.created += 1,
            Outcome::Superseded { .. } => counts.superseded += 1,
            Outcome::Reinforced | Outcome::Promoted => {
                if written.outcome == Outcome::Reinforced {
                    counts.reinforced += 1;
                } else {
                    counts.promoted += 1;
                }
                let into = written
                    .memory
                    .metadata
                    .get("doc_id")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                merged_into.insert(d.id.clone(), into.to_string());
            }
        }
        progress.advance(1);
    }
    Ok((merged_into, counts))
}

/// Measures the model's cosine populations on the set (relevant against
/// unrelated pairs). The first [`MEASURED_QUERIES`] query texts are also
/// embedded as passages (from the cache when it has them); returns those
/// new passage embeddings for the cache.
fn measure_similarity(
    set: &EvalSet,
    memo: &QueryMemo,
    doc_vectors: &[Option<Vec<f32>>],
    cache: Option<&EmbeddingCache>,
) -> Result<(Similarity, CacheEntries)> {
    let index: HashMap<&str, usize> = set
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i))
        .collect();
    let queries: Vec<_> = set.judged_queries().collect();
    let measured: Vec<&str> = queries
        .iter()
        .take(MEASURED_QUERIES)
        .map(|q| q.text.as_str())
        .collect();
    let mut as_passage: HashMap<&str, Vec<f32>> = HashMap::new();
    let mut missing = Vec::new();
    for t in &measured {
        match cache.and_then(|c| c.vectors.get(&text_hash(t))) {
            Some(v) => {
                as_passage.insert(t, v.clone());
            }
            None => missing.push(*t),
        }
    }
    let mut learned = Vec::new();
    for chunk in missing.chunks(32) {
        for (t, v) in chunk.iter().zip(memo.embed_passages(chunk)?) {
            learned.push((text_hash(t), v.clone()));
            as_passage.insert(t, v);
        }
    }
    let query_vectors: Vec<Option<Vec<f32>>> = queries.iter().map(|q| memo.get(&q.text)).collect();
    let pairs: Vec<QueryPairs<'_>> = queries
        .iter()
        .zip(&query_vectors)
        .filter_map(|(q, v)| {
            let judgments = &set.qrels[&q.id];
            let judged: Vec<usize> = judgments
                .keys()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect();
            let relevant = judgments
                .iter()
                .filter(|(_, r)| **r > 0)
                .filter_map(|(d, _)| doc_vectors[*index.get(d.as_str())?].as_deref())
                .collect();
            Some(QueryPairs {
                query: v.as_deref()?,
                as_passage: as_passage.get(q.text.as_str()).map(Vec::as_slice),
                relevant,
                judged,
            })
        })
        .collect();
    // Unrelated documents are sampled among those with a vector.
    let with_vectors: Vec<usize> = (0..doc_vectors.len())
        .filter(|i| doc_vectors[*i].is_some())
        .collect();
    let docs: Vec<&[f32]> = with_vectors
        .iter()
        .filter_map(|i| doc_vectors[*i].as_deref())
        .collect();
    let pos: HashMap<usize, usize> = with_vectors
        .iter()
        .enumerate()
        .map(|(p, i)| (*i, p))
        .collect();
    let pairs: Vec<QueryPairs<'_>> = pairs
        .into_iter()
        .map(|mut p| {
            p.judged = p
                .judged
                .iter()
                .filter_map(|i| pos.get(i).copied())
                .collect();
            p
        })
        .collect();
    Ok((similarity::measure(&pairs, &docs), learned))
}

/// Embeds every judged query once into `memo`: the first
/// [`MEASURED_QUERIES`] always (timed), the rest from the persistent cache
/// when it has them (timed when not). Returns how many came from the cache
/// and the measured times (ms).
fn embed_queries(
    set: &EvalSet,
    memo: &QueryMemo,
    cache: Option<&EmbeddingCache>,
    progress: &dyn Progress,
) -> Result<(usize, Vec<f64>)> {
    let mut texts: Vec<&str> = set.judged_queries().map(|q| q.text.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    texts.retain(|t| seen.insert(*t));
    progress.start(&format!("{}: embed queries", set.name), texts.len() as u64);
    let (mut cached, mut times) = (0, Vec::new());
    for (i, text) in texts.iter().enumerate() {
        let hit = cache.and_then(|c| c.vectors.get(&query_key(text)));
        match hit {
            Some(v) if i >= MEASURED_QUERIES => {
                memo.insert(text, v.clone());
                cached += 1;
            }
            _ => times.push(memo.embed_timed(text)?.1),
        }
        progress.advance(1);
    }
    progress.finish();
    Ok((cached, times))
}

/// One query's outcome.
struct Outcome<'a> {
    query_id: &'a str,
    category: &'a str,
    metrics: MetricMap,
    group_metrics: Option<MetricMap>,
}

async fn run_variant(
    config: &EvalConfig,
    set: &EvalSet,
    engine: &Engine,
    clock: &ManualClock,
    variant: &super::Variant,
    merged_into: &HashMap<String, String>,
    progress: &dyn Progress,
) -> Result<Run> {
    let params = variant.params(&config.policy);
    let default_at = set.default_asked_at();
    let groups: Option<HashMap<&str, String>> = set.group_by.as_ref().map(|_| {
        set.docs
            .iter()
            .map(|d| (d.id.as_str(), group_key(d)))
            .collect()
    });
    let queries: Vec<_> = set.judged_queries().collect();
    progress.start(
        &format!("{}: {}", set.name, variant.label()),
        queries.len() as u64,
    );
    let mut outcomes = Vec::with_capacity(queries.len());
    let mut search_ms = Vec::with_capacity(queries.len());
    let mut embed_ms = Vec::new();
    for q in queries {
        clock.set(q.asked_at.unwrap_or(default_at));
        let mut req = SearchRequest::new(Scope::user(q.user_id.clone()), q.text.clone());
        req.top_k = Some(config.depth());
        req.legs = params.legs;
        req.ranking = Some(params.ranking.clone());
        req.decay = params.decay;
        req.record_access = false;
        let started = Instant::now();
        let result = engine.search(req).await?;
        search_ms.push(started.elapsed().as_secs_f64() * 1e3);
        if params.legs != crate::service::Legs::Lexical {
            embed_ms.push(result.embed_ms);
        }
        let ranking: Vec<&str> = result
            .hits
            .iter()
            .filter_map(|h| h.memory.metadata.get("doc_id").and_then(|v| v.as_str()))
            .collect();
        // A merged document's relevance goes to the memory that absorbed it.
        let lifted;
        let judgments = if merged_into.is_empty() {
            &set.qrels[&q.id]
        } else {
            lifted = merged_judgments(&set.qrels[&q.id], merged_into);
            &lifted
        };
        let m = metrics::query_metrics(ranking.iter().copied(), judgments, &config.ks);
        let gm = groups.as_ref().map(|g| {
            let gj = group_judgments(judgments, g);
            let granking: Vec<&str> = ranking
                .iter()
                .filter_map(|d| g.get(d).map(String::as_str))
                .collect();
            metrics::query_metrics(granking, &gj, &config.ks)
        });
        outcomes.push(Outcome {
            query_id: &q.id,
            category: q.category.as_deref().unwrap_or(UNCATEGORIZED),
            metrics: m,
            group_metrics: gm,
        });
        progress.advance(1);
    }
    progress.finish();

    let all: Vec<&MetricMap> = outcomes.iter().map(|o| &o.metrics).collect();
    let group_metrics = groups.as_ref().map(|_| {
        let g: Vec<&MetricMap> = outcomes
            .iter()
            .filter_map(|o| o.group_metrics.as_ref())
            .collect();
        metrics::mean(&g)
    });
    let mut by_cat: BTreeMap<&str, Vec<&MetricMap>> = BTreeMap::new();
    for o in &outcomes {
        by_cat.entry(o.category).or_default().push(&o.metrics);
    }
    Ok(Run {
        set: set.name.clone(),
        preset: variant.label().to_string(),
        config: variant.config_path().map(|p| p.display().to_string()),
        model_id: engine.embedder().model_id().to_string(),
        data_sha256: set.data_sha256.clone(),
        queries: outcomes.len(),
        metrics: metrics::mean(&all),
        group_metrics,
        by_category: by_cat
            .into_iter()
            .map(|(c, ms)| (c.to_string(), metrics::mean(&ms)))
            .collect(),
        latency_ms: Latency::of(&search_ms, &embed_ms),
        ingest_per_s: 0.0,
        per_query: outcomes
            .iter()
            .map(|o| (o.query_id.to_string(), o.metrics.clone()))
            .collect(),
        search_ms,
    })
}

/// A document's group: its `--group-by` value within its owner (groups never
/// span users), or the document alone when it has no value.
fn group_key(d: &super::set::Doc) -> String {
    let owner = d.user_id.as_deref().unwrap_or("");
    match &d.group {
        Some(g) => format!("{owner}\u{1f}{g}"),
        None => format!("{owner}\u{1f}\u{0}{}", d.id),
    }
}

/// A query's judgments with each merged document's relevance moved to the
/// document that absorbed it (the better of the two).
fn merged_judgments(j: &Judgments, merged_into: &HashMap<String, String>) -> Judgments {
    let mut out = Judgments::with_capacity(j.len());
    for (doc, rel) in j {
        let at = merged_into.get(doc).unwrap_or(doc);
        let e = out.entry(at.clone()).or_insert(0);
        *e = (*e).max(*rel);
    }
    out
}

/// A query's judgments lifted to groups (a group's relevance is its best
/// document's).
fn group_judgments(j: &Judgments, groups: &HashMap<&str, String>) -> Judgments {
    let mut out = Judgments::new();
    for (doc, rel) in j {
        if let Some(g) = groups.get(doc.as_str()) {
            let e = out.entry(g.clone()).or_insert(0);
            *e = (*e).max(*rel);
        }
    }
    out
}
