//! Hybrid search: both legs under the same scope filter (inside each index),
//! fused, hydrated from the store (which re-checks scope, status and expiry
//! against the source of truth), then ranked with decay and importance.
//! Access is recorded by a background task.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{blocking, Engine};
use crate::domain::ranking::{self, Candidates, Hit, RankingParams};
use crate::domain::rerank::{self, QueryTerms};
use crate::domain::turns::{self, TurnContextParams};
use crate::domain::validate::validate_text;
use crate::domain::Scope;
use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Legs {
    Lexical,
    Vector,
    #[default]
    Hybrid,
}

/// A search, already scoped.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub scope: Scope,
    pub query: String,
    pub top_k: Option<usize>,
    pub legs: Legs,
    /// Overrides the policy's ranking (evaluation presets).
    pub ranking: Option<RankingParams>,
    /// Whether time decay applies (evaluation presets switch it off).
    pub decay: bool,
    /// Metadata equality filters, applied to the hydrated memories.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub created_after: Option<DateTime<Utc>>,
    pub created_before: Option<DateTime<Utc>>,
    /// Whether returned hits count as accessed (evaluation says no).
    pub record_access: bool,
}

impl SearchRequest {
    pub fn new(scope: Scope, query: impl Into<String>) -> Self {
        SearchRequest {
            scope,
            query: query.into(),
            top_k: None,
            legs: Legs::Hybrid,
            ranking: None,
            decay: true,
            metadata: Default::default(),
            created_after: None,
            created_before: None,
            record_access: true,
        }
    }
}

/// Hits and where the time went.
#[derive(Clone, Debug)]
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
    /// Fusing the two candidate lists.
    pub fuse_ms: f64,
    /// Reading the candidates from the store and re-checking their scope:
    /// the lexical leg's candidates are read while the query is embedded,
    /// so part of this overlaps the embedding; the vector leg's new ones
    /// right after its index search, on its thread.
    pub hydrate_ms: f64,
    /// Decay, importance and the final cut to `top_k`.
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
        vector: bool,
        temporal: bool,
        now: DateTime<Utc>,
    ) -> Self {
        QueryReading {
            vector_confidence: if vector {
                embedder.known_token_share(query)
            } else {
                1.0
            },
            when: temporal
                .then(|| crate::domain::temporal::window_of(query, now))
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

/// The vector leg's background cosine ([`ranking::background_cosine`]),
/// taken from the whole list, then the model's cut: candidates below
/// `min_sim` are dropped.
fn background_then_cut(vector: &mut Candidates, asked: usize, min_sim: f32) -> Option<f32> {
    let nearest: Vec<f32> = vector.iter().map(|(_, s)| *s).collect();
    let background = ranking::background_cosine(&nearest, asked);
    vector.retain(|(_, s)| *s >= min_sim);
    background
}

impl Engine {
    /// Hybrid search within a scope.
    pub async fn search(&self, req: SearchRequest) -> Result<SearchResult> {
        let started = Instant::now();
        req.scope.validate()?;
        let query = req.query.trim().to_string();
        if query.is_empty() {
            return Err(Error::invalid("query", "query must not be empty"));
        }
        validate_text(&query, self.0.policy.limits())?;
        let policy = &self.0.policy;
        let top_k = req.top_k.unwrap_or(policy.retrieval.default_top_k);
        if top_k == 0 || top_k > policy.retrieval.max_top_k {
            return Err(Error::invalid(
                "top_k",
                format!("top_k must be between 1 and {}", policy.retrieval.max_top_k),
            ));
        }
        let n = policy.candidates(top_k);
        let filter = req.scope.filter();
        if filter.clauses.is_empty() {
            return Ok(SearchResult {
                hits: vec![],
                embed_ms: 0.0,
                total_ms: 0.0,
                stages: SearchStages::default(),
            });
        }

        let params = req.ranking.clone().unwrap_or_else(|| policy.ranking());
        let now = self.0.clock.now();
        let calibration = policy.embedding.thresholds();
        let (shift_cjk, shift_latin) = (
            calibration.cross_script_shift_cjk_query,
            calibration.cross_script_shift_latin_query,
        );
        let align = shift_cjk > 0.0 || shift_latin > 0.0;
        let min_sim = policy.min_vector_similarity();
        let vector_runs = req.legs != Legs::Lexical;
        let temporal = params.temporal.is_some();
        // The lexical leg ends long before the query is embedded, so its
        // candidates are read from the store meanwhile (on another blocking
        // thread). It sends their ids to the vector leg, which reads only
        // its own new candidates, on its thread right after its index
        // search: no return to the runtime between the two (that hop and a
        // second blocking task for the read took 0.1–0.2 ms per search).
        // A lexical leg that ends without sending (not run, or failed)
        // drops the sender, and the vector leg reads all its candidates.
        let (lexical_ids_tx, lexical_ids) = std::sync::mpsc::sync_channel::<HashSet<Uuid>>(1);
        let lexical_leg = async {
            if req.legs == Legs::Vector {
                drop(lexical_ids_tx);
                return Ok(LexicalLeg::default());
            }
            let lexical = self.0.lexical.clone();
            let embedder = self.0.embedder.clone();
            let (q, f) = (query.clone(), filter.clone());
            let drop_stop_words = params.query_stop_words;
            let (hits, search_ms, terms, reading) = blocking(move || {
                let t = Instant::now();
                let tokens = crate::lexical::analyzer::query_tokens(&q, drop_stop_words);
                let hits = lexical.search_tokens(&tokens, &f, n)?;
                let _ = lexical_ids_tx.send(hits.iter().map(|(id, _)| *id).collect());
                let terms = lexical.query_terms(tokens)?;
                let search_ms = ms_since(t);
                let reading = QueryReading::of(&*embedder, &q, vector_runs, temporal, now);
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
            if req.legs == Legs::Lexical {
                return Ok(VectorLeg::default());
            }
            let _permit = self.embed_permit()?;
            let embedder = self.0.embedder.clone();
            let vectors = self.0.vectors.clone();
            let store = self.0.store.clone();
            let (q, f) = (query.clone(), filter.clone());
            blocking(move || {
                let t = Instant::now();
                let v = embedder.embed_query(&q)?;
                let embed_ms = ms_since(t);
                let t = Instant::now();
                let hits = vectors.search(&v, &f, n)?;
                let search_ms = ms_since(t);
                let t = Instant::now();
                let found = lexical_ids.recv().unwrap_or_default();
                // Without the alignment the model's cut comes first, so
                // only the candidates that pass it are read.
                let passing = hits
                    .iter()
                    .filter(|(_, cosine)| align || *cosine >= min_sim);
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
        let LexicalLeg {
            hits: lexical,
            search_ms: lexical_ms,
            terms,
            mut memories,
            hydrate_ms: lexical_hydrate_ms,
            reading,
        } = lexical?;
        let QueryReading {
            vector_confidence,
            when,
        } = reading.unwrap_or_else(|| {
            QueryReading::of(&*self.0.embedder, &query, vector_runs, temporal, now)
        });
        let VectorLeg {
            hits: mut vector,
            embed_ms,
            search_ms: vector_ms,
            memories: vector_memories,
            hydrate_ms: vector_hydrate_ms,
        } = vector?;

        let mut vector_background = None;
        if !align {
            vector_background = background_then_cut(&mut vector, n, min_sim);
        }

        // Every candidate is read from the store before fusion: the store is
        // the truth (scope is re-checked below), and the cross-script
        // alignment reads each memory's script. The lexical leg's were read
        // during the embedding, the vector leg's new ones on its thread;
        // where the store reads only asynchronously, those are read here.
        let t = Instant::now();
        match vector_memories {
            Some(read) => memories.extend(read),
            None => {
                let missing = unread(vector.iter(), |id| memories.contains_key(id));
                memories.extend(self.0.store.get_many(&missing).await?);
            }
        }
        // The store is the truth: re-check scope, status and expiry there, so
        // that index lag can never return another user's or a deleted memory.
        let in_scope = |m: &crate::domain::Memory| {
            filter.matches(&m.owner(), m.tier, m.thread_id.as_deref(), m.status, m.kind)
                && m.tenant_id == req.scope.tenant_id
                && m.expires_at.is_none_or(|e| e > now)
                && req.created_after.is_none_or(|a| m.created_at >= a)
                && req.created_before.is_none_or(|b| m.created_at < b)
                && req
                    .metadata
                    .iter()
                    .all(|(k, v)| m.metadata.get(k) == Some(v))
        };
        memories.retain(|_, m| in_scope(m));
        let hydrate_ms = lexical_hydrate_ms + vector_hydrate_ms + ms_since(t);

        // Cross-script alignment (`[embedding.<model>] cross_script_shift_*`):
        // a memory in the other script than the query is raised by the
        // model's gap between same- and cross-script unrelated pairs, in
        // proportion to its share of that script; then the cut.
        let t = Instant::now();
        let mut shifts: HashMap<Uuid, f32> = HashMap::new();
        if align {
            let query_cjk = crate::domain::script::cjk_share(&query);
            for (id, cosine) in vector.iter_mut() {
                let Some(m) = memories.get(id) else { continue };
                let shift = ranking::cross_script_shift(
                    query_cjk,
                    crate::domain::script::cjk_share(&m.text),
                    shift_cjk,
                    shift_latin,
                );
                if shift > 0.0 {
                    *cosine += shift;
                    shifts.insert(*id, shift);
                }
            }
            vector.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            vector_background = background_then_cut(&mut vector, n, min_sim);
        }
        let scales = ranking::QueryScales {
            lexical_full_match: terms.as_ref().map(|t| t.full_match_score),
            vector_confidence,
            vector_background,
        };
        let fused = ranking::fuse_scaled(&lexical, &vector, params.fusion, scales);
        let fuse_ms = ms_since(t);

        let t = Instant::now();
        let use_decay = req.decay;
        let window = params
            .rerank
            .map_or(top_k, |r| r.depth.max(top_k))
            .max(params.context.map_or(0, |c| c.depth));
        let hits = ranking::rank(
            fused,
            memories,
            now,
            &params,
            |m| {
                if use_decay {
                    policy.half_life_days(m)
                } else {
                    None
                }
            },
            when.as_ref(),
            window,
        );
        let mut hits = match (&params.rerank, &terms) {
            (Some(r), Some(terms)) => {
                rerank::rerank(hits, terms, crate::lexical::analyzer::analyze, r)
            }
            _ => hits,
        };
        if let Some(context) = &params.context {
            hits = self
                .lend_to_turns(hits, context, params.min_score, in_scope)
                .await?;
        }
        hits.truncate(top_k);
        for hit in &mut hits {
            hit.breakdown.vector_script_shift = shifts.get(&hit.memory.id).copied();
        }
        let rank_ms = ms_since(t);
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
            embed_ms,
            total_ms: ms_since(started),
            stages: SearchStages {
                embed_ms,
                lexical_ms,
                vector_ms,
                fuse_ms,
                hydrate_ms,
                rank_ms,
            },
        })
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
