//! The lexical index: BM25 over memory text with the scoping fields indexed
//! for filtering, and an analyzer that handles Chinese and English together.
//!
//! Contract, for every backend:
//! - Derived from the store, like the vector index; `entries` lists what it holds.
//! - Writes are accepted at once and become searchable within the configured
//!   commit delay, or when `commit` returns.
//! - `search` applies the filter inside the query.
//! - `delete_owner` followed by `purge` leaves no trace of the owner's text
//!   on disk (deleted documents merged away).
//! - Methods may block: call them off the async runtime.

pub mod analyzer;
pub mod error;
mod filtered_top;
mod merge;
mod segment_ids;
pub mod tantivy;

pub use error::LexicalError;

use uuid::Uuid;

use crate::domain::rerank::QueryTerms;
use crate::domain::scope::IndexFilter;
use crate::domain::{Kind, Owner, Status, Tier};
use crate::error::Result;

#[derive(Clone, Debug, PartialEq)]
pub struct LexicalDoc {
    pub id: Uuid,
    pub text: String,
    pub owner: Owner,
    pub tier: Tier,
    pub thread_id: Option<String>,
    pub status: Status,
    pub kind: Kind,
    pub version: i64,
}

pub trait LexicalIndex: Send + Sync {
    /// Adds or replaces documents (by id).
    fn upsert(&self, docs: Vec<LexicalDoc>) -> Result<()>;
    fn delete(&self, ids: &[Uuid]) -> Result<()>;
    /// Deletes every document of an owner; returns how many there were.
    fn delete_owner(&self, owner: &Owner) -> Result<usize>;
    /// Makes every write so far durable and searchable.
    fn commit(&self) -> Result<()>;
    /// Merges segments and garbage-collects files so that deleted documents are
    /// physically gone from disk.
    fn purge(&self) -> Result<()>;
    /// The best `limit` documents for `query` passing `filter`, as (id, bm25):
    /// [`LexicalIndex::search_tokens`] with every token of the query
    /// ([`analyzer::analyze`]).
    fn search(&self, query: &str, filter: &IndexFilter, limit: usize) -> Result<Vec<(Uuid, f32)>> {
        self.search_tokens(&analyzer::analyze(query), filter, limit)
    }
    /// The best `limit` documents for a query already analysed into `tokens`
    /// ([`analyzer::query_tokens`]; repetitions count once), passing
    /// `filter`, as (id, bm25).
    fn search_tokens(
        &self,
        tokens: &[String],
        filter: &IndexFilter,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>>;
    /// How this index reads a query analysed into `tokens`: the idf of each,
    /// and the BM25 score of a full match here: a document of average
    /// length holding each of its distinct terms once scores Σ idf (BM25's
    /// term-frequency factor is 1 there). `absolute` fusion divides by that
    /// score, so a lexical score says what share of the query's information
    /// a document matched; the second stage weighs term pairs by idf.
    /// `None` when the backend cannot say, or the query has no terms.
    fn query_terms(&self, _tokens: Vec<String>) -> Result<Option<QueryTerms>> {
        Ok(None)
    }
    /// Every committed document as (id, version).
    fn entries(&self) -> Result<Vec<(Uuid, i64)>>;
    /// The versions of the committed documents among `ids` (the repair
    /// loop's check by id and version, `repair.rs`). The default scans
    /// `entries`; backends override it with a lookup by id.
    fn versions(&self, ids: &[Uuid]) -> Result<std::collections::HashMap<Uuid, i64>> {
        let wanted: std::collections::HashSet<&Uuid> = ids.iter().collect();
        Ok(self
            .entries()?
            .into_iter()
            .filter(|(id, _)| wanted.contains(id))
            .collect())
    }
    /// How many committed documents there are (`mnemo stats`, the
    /// inspector). The default counts `entries`; backends override it.
    fn entry_count(&self) -> Result<usize> {
        Ok(self.entries()?.len())
    }
    fn count_owner(&self, owner: &Owner) -> Result<usize>;
    fn clear(&self) -> Result<()>;
}
