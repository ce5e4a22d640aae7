//! The plan of one search: what the request and the policy decide before any
//! index is read. Pure: no I/O, no clock (the caller passes `now`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::perspective;
use crate::domain::ranking::RankingParams;
use crate::domain::scope::IndexFilter;
use crate::domain::validate::validate_text;
use crate::domain::{Memory, Scope};
use crate::error::{Error, Result};
use crate::policy::Policy;

/// Which legs a search runs.
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
    /// Overrides the policy's ranking (evaluation presets, `mnemo tune`).
    pub ranking: Option<RankingParams>,
    /// Whether time decay applies (evaluation presets switch it off).
    pub decay: bool,
    /// Metadata equality filters, applied to the hydrated memories.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub created_after: Option<DateTime<Utc>>,
    pub created_before: Option<DateTime<Utc>>,
    /// Whether returned hits count as accessed (evaluation says no).
    pub record_access: bool,
    /// Return every candidate the stages ranked, not only `top_k`
    /// (`mnemo tune` reads them all).
    pub all_candidates: bool,
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
            all_candidates: false,
        }
    }
}

/// Everything decided before the indexes are read.
#[derive(Clone, Debug)]
pub struct QueryPlan {
    /// The query as asked (trimmed): the time it names is read from it.
    pub query: String,
    /// What both legs search: the query in the user's first person when
    /// `perspective` is on (`domain::perspective`), else the query.
    pub search_text: String,
    pub top_k: usize,
    /// Candidates each leg fetches.
    pub candidates: usize,
    pub legs: Legs,
    pub params: RankingParams,
    pub filter: IndexFilter,
    pub now: DateTime<Utc>,
    /// Vector candidates below this cosine are dropped before fusion; `None`
    /// with the learned stage, which scores every candidate instead.
    pub vector_cut: Option<f32>,
    /// The model's cross-script shift for a CJK and for a Latin query
    /// (`[embedding.<model>] cross_script_shift_*`).
    pub script_shift: (f32, f32),
    /// Hits the ranking keeps for the stages after it (the second stage,
    /// conversation context) and the cut to `top_k`.
    pub window: usize,
    pub decay: bool,
    restrict: Restrict,
}

/// What the store's copy of a candidate must satisfy besides the filter.
#[derive(Clone, Debug)]
struct Restrict {
    tenant_id: String,
    created_after: Option<DateTime<Utc>>,
    created_before: Option<DateTime<Utc>>,
    metadata: serde_json::Map<String, serde_json::Value>,
}

impl QueryPlan {
    /// The plan of `req` under `policy` at `now`; `None` when the scope
    /// selects nothing (no tier).
    pub fn new(req: &SearchRequest, policy: &Policy, now: DateTime<Utc>) -> Result<Option<Self>> {
        req.scope.validate()?;
        let query = req.query.trim().to_string();
        if query.is_empty() {
            return Err(Error::invalid("query", "query must not be empty"));
        }
        validate_text(&query, policy.limits())?;
        let top_k = req.top_k.unwrap_or(policy.retrieval.default_top_k);
        if top_k == 0 || top_k > policy.retrieval.max_top_k {
            return Err(Error::invalid(
                "top_k",
                format!("top_k must be between 1 and {}", policy.retrieval.max_top_k),
            ));
        }
        let filter = req.scope.filter();
        if filter.clauses.is_empty() {
            return Ok(None);
        }
        let params = req.ranking.clone().unwrap_or_else(|| policy.ranking());
        let candidates = policy.candidates(top_k);
        let search_text = if params.perspective {
            perspective::first_person(&query).into_owned()
        } else {
            query.clone()
        };
        let thresholds = policy.embedding.thresholds();
        let window = if req.all_candidates {
            usize::MAX
        } else {
            params
                .rerank
                .map_or(top_k, |r| r.depth.max(top_k))
                .max(params.context.map_or(0, |c| c.depth))
        };
        Ok(Some(QueryPlan {
            vector_cut: params
                .learned
                .is_none()
                .then(|| policy.min_vector_similarity()),
            script_shift: (
                thresholds.cross_script_shift_cjk_query,
                thresholds.cross_script_shift_latin_query,
            ),
            query,
            search_text,
            top_k,
            candidates,
            legs: req.legs,
            params,
            filter,
            now,
            window,
            decay: req.decay,
            restrict: Restrict {
                tenant_id: req.scope.tenant_id.clone(),
                created_after: req.created_after,
                created_before: req.created_before,
                metadata: req.metadata.clone(),
            },
        }))
    }

    /// Whether a vector candidate's cosine is aligned across scripts.
    pub fn aligns_scripts(&self) -> bool {
        self.script_shift.0 > 0.0 || self.script_shift.1 > 0.0
    }

    /// Whether the store's copy of a memory is within the search: scope,
    /// status, expiry and the request's own filters. The store is the truth:
    /// index lag can never return another user's or a deleted memory.
    pub fn admits(&self, m: &Memory) -> bool {
        let r = &self.restrict;
        self.filter
            .matches(&m.owner(), m.tier, m.thread_id.as_deref(), m.status, m.kind)
            && m.tenant_id == r.tenant_id
            && m.expires_at.is_none_or(|e| e > self.now)
            && r.created_after.is_none_or(|a| m.created_at >= a)
            && r.created_before.is_none_or(|b| m.created_at < b)
            && r.metadata.iter().all(|(k, v)| m.metadata.get(k) == Some(v))
    }
}
