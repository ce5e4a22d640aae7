//! Hybrid search as plan → gather → decide:
//! - [`plan`]: what the request and the policy decide before any index is
//!   read (pure);
//! - gather (here): both legs under the same scope filter, inside each
//!   index, concurrently, and the candidates read from the store;
//! - [`decide`]: the store's copy checked against the plan, fusion, decay,
//!   importance, the named time and the learned stage (pure);
//! - then the turns beside the best hits (`domain::turns`, a store read),
//!   the cut to `top_k`, and access recorded by a background task.

mod decide;
mod plan;

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use uuid::Uuid;

use super::{blocking, Engine};
use crate::domain::ranking::{Candidates, Hit};
use crate::domain::rerank::QueryTerms;
use crate::domain::turns::{self, TurnContextParams};
use crate::error::{Error, Result};

pub use decide::{decide, Gathered};
pub use plan::{Legs, QueryPlan, SearchRequest};

/// Hits and where the time went.
#[derive(Clone, Debug, Default)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    pub embed_ms: f64,
    pub total_ms: f64,
    pub stages: SearchStages,
}

/// Milliseconds per stage of one search (`/metrics` exports them). The two
/// legs run concurrently, so the stages can add up to more than the total.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SearchStages {
    /// Embedding the query.
    pub embed_ms: f64,
    /// The BM25 leg (tantivy).
    pub lexical_ms: f64,
    /// The vector leg's index query, after embedding.
    pub vector_ms: f64,
    /// Deciding: fusing the two candidate lists, decay, importance and the
    /// learned stage (`decide`).
    pub fuse_ms: f64,
    /// Reading the candidates from the store and re-checking their scope:
    /// the lexical leg's candidates are read while the query is embedded,
    /// so part of this overlaps the embedding; the vector leg's new ones
    /// right after its index search, on its thread.
    pub hydrate_ms: f64,
    /// The turns beside the best hits and the cut to `top_k`.
    pub rank_ms: f64,
}

/// What the lexical leg found, and its candidates read from the store.
#[derive(Default)]
struct LexicalLeg {
    hits: Candidates,
    search_ms: f64,
    terms: Option<QueryTerms>,
    /// The candidates as the store holds them (not yet checked for scope).
    memories: HashMap<Uuid, crate::domain::Memory>,
    hydrate_ms: f64,
    /// The query's reading, done on the leg's thread after its search.
    reading: Option<QueryReading>,
}

/// What the vector leg found, and what fusion needs to know about it.
struct VectorLeg {
    /// Every candidate the index returned, best first: the model's
    /// `min_vector_similarity` cut comes after the cross-script alignment,
    /// which needs the memories' text.
    hits: Candidates,
    embed_ms: f64,
    search_ms: f64,
    /// Its candidates the lexical leg did not find, read from the store on
    /// the leg's own thread right after the index search (`None` where the
    /// store reads only asynchronously: they are read after the join).
    memories: Option<HashMap<Uuid, crate::domain::Memory>>,
    hydrate_ms: f64,
}

impl Default for VectorLeg {
    /// The leg not run (a lexical-only search).
    fn default() -> Self {
        VectorLeg {
            hits: Vec::new(),
            embed_ms: 0.0,
            search_ms: 0.0,
            memories: Some(HashMap::new()),
            hydrate_ms: 0.0,
        }
    }
}

/// What the query's own text says, read by the lexical leg after its
/// search, while the query is being embedded (by the vector leg only when
/// the lexical leg does not run), so that it is not on the path after the
/// vector leg: tokenising the query once more for the model's known-token
/// share took 0.15 ms per search with multilingual-e5-small. (A task of
/// its own cost one more blocking-pool hop, which showed wherever the
/// query's embedding was already known.)
struct QueryReading {
    /// The share of the query's tokens the model knows (1 when the vector
    /// leg does not run).
    vector_confidence: f32,
    /// A time the query names ("last week", "in May", "上周"), resolved
    /// against the query's time; `None` without a temporal signal.
    when: Option<crate::domain::temporal::TimeWindow>,
}

impl QueryReading {
    fn of(
        embedder: &dyn crate::embed::Embedder,
        query: &str,
        asked: &str,
        vector: bool,
        temporal: bool,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        QueryReading {
            vector_confidence: if vector {
                embedder.known_token_share(query)
            } else {
                1.0
            },
            when: temporal
                .then(|| crate::domain::temporal::window_of(asked, now))
                .flatten(),
        }
    }
}

/// The ids of `candidates` not yet `read`, sorted and each once.
fn unread<'a>(
    candidates: impl Iterator<Item = &'a (Uuid, f32)>,
    read: impl Fn(&Uuid) -> bool,
) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = candidates
        .map(|(id, _)| *id)
        .filter(|id| !read(id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

impl Engine {
    /// Hybrid search within a scope.
    pub async fn search(&self, req: SearchRequest) -> Result<SearchResult> {
        let started = Instant::now();
        let now = self.0.clock.now();
        let Some(plan) = QueryPlan::new(&req, &self.0.policy, now)? else {
            return Ok(SearchResult::default());
        };
        let (gathered, mut stages) = self.gather(&plan).await?;
        let t = Instant::now();
        let policy = &self.0.policy;
        let mut hits = decide(
            &plan,
            gathered,
            |m| policy.half_life_days(m),
            crate::lexical::analyzer::analyze,
        );
        stages.fuse_ms = ms_since(t);
        let t = Instant::now();
        if let Some(context) = &plan.params.context {
            hits = self
                .lend_to_turns(hits, context, plan.params.min_score, |m| plan.admits(m))
                .await?;
        }
        if !req.all_candidates {
            hits.truncate(plan.top_k);
        }
        stages.rank_ms = ms_since(t);
        if req.record_access && !hits.is_empty() {
            let ids = hits.iter().map(|h| h.memory.id).collect();
            // Off the request path; if the recorder is saturated, skip.
            let _ = self
                .0
                .access_tx
                .try_send(crate::service::access::Message::Access((ids, now)));
        }
        Ok(SearchResult {
            hits,
            embed_ms: stages.embed_ms,
            total_ms: ms_since(started),
            stages,
        })
    }

    /// Runs the plan's legs concurrently and reads their candidates from the
    /// store. The lexical leg ends long before the query is embedded, so its
    /// candidates are read meanwhile (on another blocking thread); it sends
    /// their ids to the vector leg, which reads only its own new candidates,
    /// on its thread right after its index search: no return to the runtime
    /// between the two (that hop and a second blocking task for the read took
    /// 0.1–0.2 ms per search). A lexical leg that ends without sending (not
    /// run, or failed) drops the sender, and the vector leg reads all its
    /// candidates.
    async fn gather(&self, plan: &QueryPlan) -> Result<(Gathered, SearchStages)> {
        let n = plan.candidates;
        let vector_runs = plan.legs != Legs::Lexical;
        let temporal = plan.params.temporal.is_some() || plan.params.learned.is_some();
        let (lexical_ids_tx, lexical_ids) = std::sync::mpsc::sync_channel::<HashSet<Uuid>>(1);
        let lexical_leg = async {
            if plan.legs == Legs::Vector {
                drop(lexical_ids_tx);
                return Ok(LexicalLeg::default());
            }
            let lexical = self.0.lexical.clone();
            let embedder = self.0.embedder.clone();
            let (q, asked, f) = (
                plan.search_text.clone(),
                plan.query.clone(),
                plan.filter.clone(),
            );
            let (drop_stop_words, now) = (plan.params.query_stop_words, plan.now);
            let (hits, search_ms, terms, reading) = blocking(move || {
                let t = Instant::now();
                let tokens = crate::lexical::analyzer::query_tokens(&q, drop_stop_words);
                let hits = lexical.search_tokens(&tokens, &f, n)?;
                let _ = lexical_ids_tx.send(hits.iter().map(|(id, _)| *id).collect());
                let terms = lexical.query_terms(tokens)?;
                let search_ms = ms_since(t);
                let reading = QueryReading::of(&*embedder, &q, &asked, vector_runs, temporal, now);
                Ok((hits, search_ms, terms, reading))
            })
            .await?;
            let t = Instant::now();
            let ids: Vec<Uuid> = hits.iter().map(|(id, _)| *id).collect();
            let memories = self.0.store.get_many(&ids).await?;
            Ok::<_, Error>(LexicalLeg {
                hits,
                search_ms,
                terms,
                memories,
                hydrate_ms: ms_since(t),
                reading: Some(reading),
            })
        };
        let vector_leg = async {
            if plan.legs == Legs::Lexical {
                return Ok(VectorLeg::default());
            }
            let _permit = self.embed_permit()?;
            let embedder = self.0.embedder.clone();
            let vectors = self.0.vectors.clone();
            let store = self.0.store.clone();
            let (q, f) = (plan.search_text.clone(), plan.filter.clone());
            // Without the alignment the cut comes first, so only the
            // candidates that pass it are read.
            let cut = (!plan.aligns_scripts())
                .then_some(plan.vector_cut)
                .flatten();
            blocking(move || {
                let t = Instant::now();
                let v = embedder.embed_query(&q)?;
                let embed_ms = ms_since(t);
                let t = Instant::now();
                let hits = vectors.search(&v, &f, n)?;
                let search_ms = ms_since(t);
                let t = Instant::now();
                let found = lexical_ids.recv().unwrap_or_default();
                let passing = hits
                    .iter()
                    .filter(|(_, cosine)| cut.is_none_or(|min| *cosine >= min));
                let missing = unread(passing, |id| found.contains(id));
                let memories = store.get_many_here(&missing).transpose()?;
                Ok(VectorLeg {
                    hits,
                    embed_ms,
                    search_ms,
                    memories,
                    hydrate_ms: ms_since(t),
                })
            })
            .await
        };
        let (lexical, vector) = tokio::join!(lexical_leg, vector_leg);
        let (lexical, vector) = (lexical?, vector?);
        let reading = lexical.reading.unwrap_or_else(|| {
            QueryReading::of(
                &*self.0.embedder,
                &plan.search_text,
                &plan.query,
                vector_runs,
                temporal,
                plan.now,
            )
        });
        let mut memories = lexical.memories;
        let t = Instant::now();
        match vector.memories {
            Some(read) => memories.extend(read),
            // Where the store reads only asynchronously, they are read here.
            None => {
                let missing = unread(vector.hits.iter(), |id| memories.contains_key(id));
                memories.extend(self.0.store.get_many(&missing).await?);
            }
        }
        let stages = SearchStages {
            embed_ms: vector.embed_ms,
            lexical_ms: lexical.search_ms,
            vector_ms: vector.search_ms,
            fuse_ms: 0.0,
            hydrate_ms: lexical.hydrate_ms + vector.hydrate_ms + ms_since(t),
            rank_ms: 0.0,
        };
        let gathered = Gathered {
            lexical: lexical.hits,
            vector: vector.hits,
            memories,
            terms: lexical.terms,
            vector_confidence: reading.vector_confidence,
            when: reading.when,
        };
        Ok((gathered, stages))
    }

    /// Conversation context (`domain::turns`): the turns beside the best
    /// hits, read from the store and held to the query's scope like any
    /// candidate, get a share of their score.
    async fn lend_to_turns(
        &self,
        hits: Vec<Hit>,
        params: &TurnContextParams,
        min_score: f32,
        in_scope: impl Fn(&crate::domain::Memory) -> bool,
    ) -> Result<Vec<Hit>> {
        let lenders: Vec<Uuid> = hits
            .iter()
            .take(params.depth)
            .filter(|h| h.memory.user_id.is_some() && h.memory.thread_id.is_some())
            .map(|h| h.memory.id)
            .collect();
        if lenders.is_empty() {
            return Ok(hits);
        }
        let beside = self.0.store.turns_beside(&lenders).await?;
        let missing = turns::missing_turns(&hits, &beside, params);
        let mut turns = self.0.store.get_many(&missing).await?;
        turns.retain(|_, m| in_scope(m));
        Ok(turns::lend_to_turns(
            hits, &beside, turns, params, min_score,
        ))
    }
}
