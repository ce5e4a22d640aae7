//! Each segment's memory ids in memory, by document number.
//!
//! A hit names a (segment, document) pair; the memory id is in the `id` fast
//! column, whose values live in a zstd-compressed sorted dictionary (an
//! sstable). Reading one id there opens the column and decompresses a block
//! with a fresh zstd context: about 30 µs a hit, most of a search's lexical
//! leg once it returns 50–100 candidates, and a million decompressions for
//! `entries` at a million documents (the start-up reconcile).
//!
//! So a [`tantivy::Warmer`] reads every new segment's ids once, when the
//! reader loads it (after a commit or merge, before any searcher sees it):
//! one pass over the dictionary, each block decompressed once, and one over
//! the document → ordinal column. Lookups are then an array index. Segments
//! are immutable, so an entry never goes stale; it is dropped when no live
//! searcher generation holds its segment any more. Cost: 16 bytes a
//! document (16 MB at a million).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;
use tantivy::index::SegmentId;
use tantivy::{Searcher, SearcherGeneration, SegmentReader, TantivyError, Warmer};
use uuid::Uuid;

use super::LexicalError;
use crate::error::Result;

/// The ids of one segment, by document number; `None` for a document
/// without one (never written by Mnemo).
pub(crate) type Ids = Arc<[Option<Uuid>]>;

#[derive(Default)]
pub(crate) struct SegmentIds {
    segments: RwLock<HashMap<SegmentId, Ids>>,
}

impl SegmentIds {
    /// The ids of `segment`: from the cache, or read now (a segment the
    /// warmer has not seen, which a reader's searchers never hold).
    pub(crate) fn of(&self, segment: &SegmentReader) -> Result<Ids> {
        if let Some(ids) = self.segments.read().get(&segment.segment_id()) {
            return Ok(ids.clone());
        }
        let ids = read(segment).map_err(LexicalError::tantivy("reading a segment's ids"))?;
        self.segments
            .write()
            .insert(segment.segment_id(), ids.clone());
        Ok(ids)
    }

    #[cfg(test)]
    pub(crate) fn cached(&self) -> usize {
        self.segments.read().len()
    }
}

/// One pass over the segment's id dictionary, then one over its documents.
fn read(segment: &SegmentReader) -> tantivy::Result<Ids> {
    let Some(column) = segment.fast_fields().str("id")? else {
        // A segment without documents.
        return Ok(vec![None; segment.max_doc() as usize].into());
    };
    let mut by_ord = Vec::with_capacity(column.num_terms());
    let mut terms = column.dictionary().stream()?;
    while terms.advance() {
        let id = std::str::from_utf8(terms.key())
            .ok()
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(|| TantivyError::InternalError("a malformed id in the index".into()))?;
        by_ord.push(id);
    }
    Ok((0..segment.max_doc())
        .map(|doc| {
            column
                .term_ords(doc)
                .next()
                .and_then(|ord| by_ord.get(ord as usize).copied())
        })
        .collect())
}

impl Warmer for SegmentIds {
    fn warm(&self, searcher: &Searcher) -> tantivy::Result<()> {
        for segment in searcher.segment_readers() {
            if !self.segments.read().contains_key(&segment.segment_id()) {
                let ids = read(segment)?;
                self.segments.write().insert(segment.segment_id(), ids);
            }
        }
        Ok(())
    }

    fn garbage_collect(&self, live_generations: &[&SearcherGeneration]) {
        let live: HashSet<SegmentId> = live_generations
            .iter()
            .flat_map(|g| g.segments().keys().copied())
            .collect();
        self.segments.write().retain(|id, _| live.contains(id));
    }
}
