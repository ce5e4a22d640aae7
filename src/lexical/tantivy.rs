//! tantivy backend of the lexical index.
//!
//! # Ownership and threading
//!
//! A [`TantivyIndex`] owns one tantivy [`Index`] in a directory (memory-mapped).
//! The [`IndexWriter`] — of which tantivy allows one per directory, guarded by
//! a lock file — is owned by a single dedicated thread (`mnemo-lexical-writer`).
//! Every write (`upsert`, `delete`, `delete_owner`, `commit`, `purge`, `clear`)
//! is a command sent over a bounded channel, each carrying its own reply
//! channel, so writes are applied in the order they were sent and a caller
//! learns of a failure. A full channel blocks the sender (back-pressure).
//!
//! Reads (`search`, `entries`, `count_owner`) do not go through the thread: they
//! use a shared [`IndexReader`] with [`ReloadPolicy::Manual`], which the writer
//! thread reloads after each commit. Reads therefore see exactly the committed
//! state, and never block writes.
//!
//! # Commits and durability
//!
//! A tantivy commit costs tens of milliseconds (fsyncs), so commits are
//! batched: after the first uncommitted write, the writer thread commits
//! within the configured `commit_delay` (the contract: a write is searchable
//! within the delay). [`LexicalIndex::commit`] commits at once and returns
//! after the reader is reloaded. Uncommitted writes are lost on a crash; that
//! is acceptable because the index is derived from the SQL store, which can
//! replay them (compare [`LexicalIndex::entries`] with the store's versions).
//! Dropping the index (or [`TantivyIndex::close`]) commits pending work and
//! joins the thread.
//!
//! # What is on disk
//!
//! The memory text is indexed (term dictionary and postings with frequencies,
//! no positions) but not stored: the SQL store is the source of truth, and
//! erasing an owner only needs the deleted documents merged away, which
//! [`LexicalIndex::purge`] does (commit, merge the segments that have deleted
//! documents, wait, garbage-collect unused files). Stored fields are the id and version only.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tantivy::collector::Count;
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term, Warmer};
use uuid::Uuid;

use super::filtered_top::filtered_top_k;
use super::merge::{pack, CappedMergePolicy, SEGMENT_MAX_DOCS};
use super::segment_ids::{Ids, SegmentIds};
use super::LexicalError;
use super::{analyzer, LexicalDoc, LexicalIndex};
use crate::domain::rerank::QueryTerms;
use crate::domain::scope::IndexFilter;
use crate::domain::Owner;
use crate::error::{Error, Result};

/// The commit delay the service uses unless configured otherwise.
pub const DEFAULT_COMMIT_DELAY: Duration = Duration::from_millis(500);

/// Memory budget of the index writer (tantivy's minimum is 15 MB per thread).
const WRITER_MEMORY_BYTES: usize = 64 * 1024 * 1024;
/// Commands queued before senders block.
const CHANNEL_CAPACITY: usize = 256;

/// Maps tantivy's error of `context` (an operation, `-ing`).
fn lexical(context: &'static str) -> impl FnOnce(::tantivy::TantivyError) -> Error {
    move |e| LexicalError::tantivy(context)(e).into()
}

fn writer_gone() -> Error {
    LexicalError::Writer("the lexical index writer thread has stopped").into()
}

#[derive(Clone, Copy, Debug)]
struct Fields {
    id: Field,
    text: Field,
    owner: Field,
    tier: Field,
    thread_id: Field,
    status: Field,
    kind: Field,
    version: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let text_options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(analyzer::ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let fields = Fields {
            // FAST too: search reads ids from the column, not the doc store.
            id: b.add_text_field("id", STRING | STORED | FAST),
            text: b.add_text_field("text", text_options),
            owner: b.add_text_field("owner", STRING),
            tier: b.add_text_field("tier", STRING),
            thread_id: b.add_text_field("thread_id", STRING),
            status: b.add_text_field("status", STRING),
            kind: b.add_text_field("kind", STRING),
            version: b.add_i64_field("version", FAST | STORED),
        };
        (b.build(), fields)
    }

    fn id_term(&self, id: &Uuid) -> Term {
        Term::from_field_text(self.id, &id.to_string())
    }

    fn owner_term(&self, owner: &Owner) -> Term {
        Term::from_field_text(self.owner, owner.as_str())
    }

    fn document(&self, doc: &LexicalDoc) -> TantivyDocument {
        let mut d = TantivyDocument::default();
        d.add_text(self.id, doc.id.to_string());
        d.add_text(self.text, &doc.text);
        d.add_text(self.owner, doc.owner.as_str());
        d.add_text(self.tier, doc.tier.as_str());
        if let Some(thread) = &doc.thread_id {
            d.add_text(self.thread_id, thread);
        }
        d.add_text(self.status, doc.status.as_str());
        d.add_text(self.kind, doc.kind.as_str());
        d.add_i64(self.version, doc.version);
        d
    }
}

fn term_query(field: Field, value: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
}

/// `value ∈ values` on a STRING field.
fn any_of<'a>(field: Field, values: impl IntoIterator<Item = &'a str>) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(
        values
            .into_iter()
            .map(|v| (Occur::Should, term_query(field, v)))
            .collect(),
    ))
}

/// The filter as a query, or `None` when it matches nothing.
fn filter_query(f: &Fields, filter: &IndexFilter) -> Option<Box<dyn Query>> {
    if filter.clauses.is_empty() || filter.statuses.is_empty() {
        return None;
    }
    if filter.kinds.as_ref().is_some_and(|k| k.is_empty()) {
        return None;
    }
    let clauses = filter
        .clauses
        .iter()
        .map(|c| {
            let mut must = vec![
                (Occur::Must, term_query(f.owner, c.owner.as_str())),
                (Occur::Must, term_query(f.tier, c.tier.as_str())),
            ];
            if let Some(thread) = &c.thread_id {
                must.push((Occur::Must, term_query(f.thread_id, thread)));
            }
            (
                Occur::Should,
                Box::new(BooleanQuery::new(must)) as Box<dyn Query>,
            )
        })
        .collect();
    let mut all = vec![
        (
            Occur::Must,
            Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>,
        ),
        (
            Occur::Must,
            any_of(f.status, filter.statuses.iter().map(|s| s.as_str())),
        ),
    ];
    if let Some(kinds) = &filter.kinds {
        all.push((
            Occur::Must,
            any_of(f.kind, kinds.iter().map(|k| k.as_str())),
        ));
    }
    Some(Box::new(BooleanQuery::new(all)))
}

type Reply<T> = SyncSender<Result<T>>;

enum Command {
    Upsert(Vec<LexicalDoc>, Reply<()>),
    Delete(Vec<Uuid>, Reply<()>),
    DeleteOwner(Owner, Reply<usize>),
    Commit(Reply<()>),
    Purge(Reply<()>),
    Clear(Reply<()>),
    Shutdown(Reply<()>),
}

/// The BM25 index on tantivy. See the module documentation.
pub struct TantivyIndex {
    index: Index,
    reader: IndexReader,
    /// Every loaded segment's ids (`segment_ids.rs`), kept by the reader's
    /// warmer, which holds it weakly.
    ids: Arc<SegmentIds>,
    fields: Fields,
    tx: SyncSender<Command>,
    thread: Option<JoinHandle<()>>,
}

impl TantivyIndex {
    /// Opens the index in `dir`, creating the directory and the index if
    /// needed, and starts the writer thread. Writes become searchable within
    /// `commit_delay` (zero: after every write command).
    pub fn open(dir: &Path, commit_delay: Duration) -> Result<Self> {
        std::fs::create_dir_all(dir)?;
        let (schema, fields) = Fields::schema();
        let directory = MmapDirectory::open(dir).map_err(|source| LexicalError::OpenDirectory {
            dir: dir.to_path_buf(),
            source,
        })?;
        let index = Index::open_or_create(directory, schema)
            .map_err(lexical("opening or creating the index"))?;
        analyzer::register(&index);
        let writer = open_writer(&index)?;
        let ids = Arc::new(SegmentIds::default());
        let warmer: Arc<dyn Warmer> = ids.clone();
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .warmers(vec![Arc::downgrade(&warmer) as Weak<dyn Warmer>])
            .try_into()
            .map_err(lexical("opening the index reader"))?;
        let (tx, rx) = mpsc::sync_channel(CHANNEL_CAPACITY);
        let worker = Worker {
            index: index.clone(),
            reader: Clone::clone(&reader),
            fields,
            writer: Some(writer),
            commit_delay,
            deadline: None,
        };
        let thread = std::thread::Builder::new()
            .name("mnemo-lexical-writer".to_string())
            .spawn(move || worker.run(rx))?;
        Ok(TantivyIndex {
            index,
            reader,
            ids,
            fields,
            tx,
            thread: Some(thread),
        })
    }

    /// Commits pending writes and stops the writer thread, returning the
    /// result of that last commit (which `Drop` can only log).
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        let result = self.call(Command::Shutdown);
        if thread.join().is_err() {
            return Err(LexicalError::Writer("the lexical writer thread panicked").into());
        }
        result
    }

    fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T> {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        self.tx.send(make(reply_tx)).map_err(|_| writer_gone())?;
        reply_rx.recv().map_err(|_| writer_gone())?
    }

    /// The underlying tantivy index (tests, diagnostics).
    pub fn index(&self) -> &Index {
        &self.index
    }
}

impl Drop for TantivyIndex {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::error!(error = %e, "closing the lexical index failed");
        }
    }
}

fn open_writer(index: &Index) -> Result<IndexWriter> {
    let writer = index
        .writer_with_num_threads(1, WRITER_MEMORY_BYTES)
        .map_err(lexical("opening the index writer"))?;
    writer.set_merge_policy(Box::new(CappedMergePolicy::new(SEGMENT_MAX_DOCS)));
    Ok(writer)
}

impl LexicalIndex for TantivyIndex {
    fn upsert(&self, docs: Vec<LexicalDoc>) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        self.call(|r| Command::Upsert(docs, r))
    }

    fn delete(&self, ids: &[Uuid]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.call(|r| Command::Delete(ids.to_vec(), r))
    }

    fn delete_owner(&self, owner: &Owner) -> Result<usize> {
        self.call(|r| Command::DeleteOwner(owner.clone(), r))
    }

    fn commit(&self) -> Result<()> {
        self.call(Command::Commit)
    }

    fn purge(&self) -> Result<()> {
        self.call(Command::Purge)
    }

    fn search_tokens(
        &self,
        tokens: &[String],
        filter: &IndexFilter,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let Some(filter) = filter_query(&self.fields, filter) else {
            return Ok(Vec::new());
        };
        let mut seen = HashSet::new();
        let terms: Vec<(Occur, Box<dyn Query>)> = tokens
            .iter()
            .filter(|t| seen.insert(t.as_str()))
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.text, t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, q)
            })
            .collect();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        // The filter restricts without changing the BM25 score; see
        // `filtered_top.rs` for why this is not one intersection query.
        let top = filtered_top_k(&searcher, &BooleanQuery::new(terms), filter.as_ref(), limit)
            .map_err(lexical("searching"))?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let ids = self.ids.of(searcher.segment_reader(addr.segment_ord))?;
            out.push((id_at(&ids, addr.doc_id)?, score));
        }
        Ok(out)
    }

    fn query_terms(&self, tokens: Vec<String>) -> Result<Option<QueryTerms>> {
        let searcher = self.reader.searcher();
        // tantivy's BM25 statistics: documents counted by `max_doc`, the
        // document frequency summed over segments (`query/bm25.rs`).
        let docs: u64 = searcher
            .segment_readers()
            .iter()
            .map(|s| u64::from(s.max_doc()))
            .sum();
        if docs == 0 || tokens.is_empty() {
            return Ok(None);
        }
        let mut idf = HashMap::new();
        let mut full_match = 0.0f64;
        for t in &tokens {
            if idf.contains_key(t) {
                continue;
            }
            let df = searcher
                .doc_freq(&Term::from_field_text(self.fields.text, t))
                .map_err(lexical("reading a document frequency"))?
                .min(docs);
            let w = bm25_idf(df, docs);
            full_match += w;
            idf.insert(t.clone(), w as f32);
        }
        Ok(Some(QueryTerms {
            tokens,
            idf,
            full_match_score: full_match as f32,
        }))
    }

    fn entries(&self) -> Result<Vec<(Uuid, i64)>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::with_capacity(searcher.num_docs() as usize);
        for segment in searcher.segment_readers() {
            if segment.num_docs() == 0 {
                continue;
            }
            let ids = self.ids.of(segment)?;
            let versions = segment
                .fast_fields()
                .i64("version")
                .map_err(lexical("reading the version column"))?;
            for doc in segment.doc_ids_alive() {
                let id = id_at(&ids, doc)?;
                let version = versions
                    .first(doc)
                    .ok_or_else(|| LexicalError::Other(format!("document {id} has no version")))?;
                out.push((id, version));
            }
        }
        Ok(out)
    }

    fn versions(&self, ids: &[Uuid]) -> Result<std::collections::HashMap<Uuid, i64>> {
        let mut out = std::collections::HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(out);
        }
        let searcher = self.reader.searcher();
        let query = tantivy::query::TermSetQuery::new(ids.iter().map(|id| self.fields.id_term(id)));
        let found = searcher
            .search(&query, &tantivy::collector::DocSetCollector)
            .map_err(lexical("looking up documents by id"))?;
        for address in found {
            let segment = searcher.segment_reader(address.segment_ord);
            let id = id_at(&self.ids.of(segment)?, address.doc_id)?;
            let version = segment
                .fast_fields()
                .i64("version")
                .map_err(lexical("reading the version column"))?
                .first(address.doc_id)
                .ok_or_else(|| LexicalError::Other(format!("document {id} has no version")))?;
            out.insert(id, version);
        }
        Ok(out)
    }

    fn entry_count(&self) -> Result<usize> {
        Ok(self.reader.searcher().num_docs() as usize)
    }

    fn count_owner(&self, owner: &Owner) -> Result<usize> {
        count_owner(&self.reader, &self.fields, owner)
    }

    fn clear(&self) -> Result<()> {
        self.call(Command::Clear)
    }
}

/// tantivy's BM25 idf: ln(1 + (N − df + 0.5) / (df + 0.5)).
fn bm25_idf(doc_freq: u64, docs: u64) -> f64 {
    let x = ((docs - doc_freq) as f64 + 0.5) / (doc_freq as f64 + 0.5);
    x.ln_1p()
}

/// The id of document `doc` of a segment whose ids are `ids`.
fn id_at(ids: &Ids, doc: u32) -> Result<Uuid> {
    ids.get(doc as usize)
        .copied()
        .flatten()
        .ok_or_else(|| LexicalError::Other("a document has no id".into()).into())
}

fn count_owner(reader: &IndexReader, fields: &Fields, owner: &Owner) -> Result<usize> {
    let query = TermQuery::new(fields.owner_term(owner), IndexRecordOption::Basic);
    reader
        .searcher()
        .search(&query, &Count)
        .map_err(lexical("counting an owner's documents"))
}

/// The writer thread's state.
struct Worker {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    /// Always `Some`, except while being replaced in `purge`.
    writer: Option<IndexWriter>,
    commit_delay: Duration,
    /// When the oldest uncommitted write must be committed.
    deadline: Option<Instant>,
}

impl Worker {
    fn run(mut self, rx: Receiver<Command>) {
        loop {
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                self.background_commit();
            }
            let command = match self.deadline {
                None => match rx.recv() {
                    Ok(c) => c,
                    Err(_) => break,
                },
                Some(d) => match rx.recv_timeout(d.saturating_duration_since(Instant::now())) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                },
            };
            match command {
                Command::Upsert(docs, reply) => {
                    let r = self.upsert(&docs);
                    self.touched();
                    let _ = reply.send(r);
                }
                Command::Delete(ids, reply) => {
                    let fields = self.fields;
                    for id in &ids {
                        self.writer().delete_term(fields.id_term(id));
                    }
                    self.touched();
                    let _ = reply.send(Ok(()));
                }
                Command::DeleteOwner(owner, reply) => {
                    let r = self.delete_owner(&owner);
                    let _ = reply.send(r);
                }
                Command::Commit(reply) => {
                    let _ = reply.send(self.commit());
                }
                Command::Purge(reply) => {
                    let _ = reply.send(self.purge());
                }
                Command::Clear(reply) => {
                    let _ = reply.send(self.clear());
                }
                Command::Shutdown(reply) => {
                    let r = self.finish();
                    let _ = reply.send(r);
                    return;
                }
            }
        }
        if let Err(e) = self.finish() {
            tracing::error!(error = %e, "final commit of the lexical index failed");
        }
    }

    fn writer(&mut self) -> &mut IndexWriter {
        self.writer.as_mut().expect("the index writer is present")
    }

    /// Records an uncommitted write: commit within the delay.
    fn touched(&mut self) {
        if self.deadline.is_none() {
            self.deadline = Some(Instant::now() + self.commit_delay);
        }
    }

    fn upsert(&mut self, docs: &[LexicalDoc]) -> Result<()> {
        let fields = self.fields;
        let writer = self.writer();
        for doc in docs {
            writer.delete_term(fields.id_term(&doc.id));
            writer
                .add_document(fields.document(doc))
                .map_err(lexical("adding a document"))?;
        }
        Ok(())
    }

    fn delete_owner(&mut self, owner: &Owner) -> Result<usize> {
        // Pending writes of this owner must be counted too.
        if self.deadline.is_some() {
            self.commit()?;
        }
        let n = count_owner(&self.reader, &self.fields, owner)?;
        let term = self.fields.owner_term(owner);
        self.writer().delete_term(term);
        self.touched();
        Ok(n)
    }

    fn commit(&mut self) -> Result<()> {
        self.writer().commit().map_err(lexical("committing"))?;
        self.deadline = None;
        self.reader
            .reload()
            .map_err(lexical("reloading the reader"))
    }

    fn background_commit(&mut self) {
        if let Err(e) = self.commit() {
            tracing::error!(error = %e, "lexical index commit failed; retrying later");
            self.deadline = Some(Instant::now() + self.commit_delay.max(Duration::from_secs(1)));
        }
    }

    /// Waits for every merge in progress and starts a fresh writer.
    fn restart_writer(&mut self) -> Result<()> {
        if let Some(writer) = self.writer.take() {
            writer
                .wait_merging_threads()
                .map_err(lexical("waiting for merges"))?;
        }
        self.writer = Some(open_writer(&self.index)?);
        Ok(())
    }

    fn purge(&mut self) -> Result<()> {
        self.commit()?;
        // Background merges would race with ours (a segment can be in one merge only).
        self.restart_writer()?;
        {
            // Scoped: a live `SegmentMeta` keeps its files from the garbage collector.
            // Only segments with deleted documents still hold deleted text:
            // rewriting them (not the whole index) makes the erasure cost
            // proportional to where the owner's documents were. They are
            // packed into merges under the segment cap (`merge.rs`), run at
            // once on the writer's merge threads.
            let with_deletes: Vec<_> = self
                .index
                .searchable_segment_metas()
                .map_err(lexical("listing segments"))?
                .into_iter()
                .filter(|m| m.has_deletes())
                .map(|m| (m.id(), m.num_docs()))
                .collect();
            let merges: Vec<_> = pack(with_deletes, SEGMENT_MAX_DOCS)
                .iter()
                .map(|ids| self.writer().merge(ids))
                .collect();
            for merge in merges {
                merge.wait().map_err(lexical("merging segments"))?;
            }
        }
        self.restart_writer()?;
        // Release the old segments (the reader's searchers) before collecting
        // their files. A searcher still held by a caller keeps them alive: a
        // concurrent search can delay erasure until the next purge.
        self.reader
            .reload()
            .map_err(lexical("reloading the reader"))?;
        self.writer()
            .garbage_collect_files()
            .wait()
            .map_err(lexical("collecting deleted files"))?;
        Ok(())
    }

    fn clear(&mut self) -> Result<()> {
        self.writer()
            .delete_all_documents()
            .map_err(lexical("deleting every document"))?;
        self.commit()?;
        self.writer()
            .garbage_collect_files()
            .wait()
            .map_err(lexical("collecting deleted files"))?;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if self.deadline.is_some() {
            self.commit()?;
        }
        if let Some(writer) = self.writer.take() {
            writer
                .wait_merging_threads()
                .map_err(lexical("waiting for merges"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::scope::ScopeClause;
    use crate::domain::{Kind, Status, Tier};
    use proptest::prelude::*;
    use tempfile::TempDir;

    const NO_DELAY: Duration = Duration::ZERO;
    const LONG_DELAY: Duration = Duration::from_secs(3600);

    fn alice() -> Owner {
        Owner::user("t1", "alice")
    }

    fn bob() -> Owner {
        Owner::user("t1", "bob")
    }

    fn doc(owner: &Owner, text: &str) -> LexicalDoc {
        LexicalDoc {
            id: Uuid::now_v7(),
            text: text.to_string(),
            owner: owner.clone(),
            tier: Tier::LongTerm,
            thread_id: None,
            status: Status::Active,
            kind: Kind::Fact,
            version: 1,
        }
    }

    fn long_term(owner: &Owner) -> IndexFilter {
        IndexFilter {
            clauses: vec![ScopeClause {
                owner: owner.clone(),
                tier: Tier::LongTerm,
                thread_id: None,
            }],
            statuses: vec![Status::Active],
            kinds: None,
        }
    }

    fn ids(hits: &[(Uuid, f32)]) -> Vec<Uuid> {
        hits.iter().map(|h| h.0).collect()
    }

    fn open(dir: &TempDir, delay: Duration) -> TantivyIndex {
        TantivyIndex::open(dir.path(), delay).unwrap()
    }

    #[test]
    fn segment_ids_follow_commits_and_merges() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let mut all = Vec::new();
        // Three commits: three segments, each warmed when the reader loads it.
        for round in 0..3 {
            let batch: Vec<_> = (0..20)
                .map(|i| doc(&alice(), &format!("round {round} note {i} about tea")))
                .collect();
            all.extend(batch.iter().map(|d| d.id));
            index.upsert(batch).unwrap();
            index.commit().unwrap();
        }
        let segments = index.reader.searcher().segment_readers().len();
        assert!(segments >= 2, "{segments} segments");
        assert_eq!(index.ids.cached(), segments);
        let mut found = ids(&index.search("tea", &long_term(&alice()), 100).unwrap());
        found.sort();
        all.sort();
        assert_eq!(found, all, "every hit maps to its own id");
        // Delete one and purge: its segment is rewritten, the old segment's
        // ids are dropped once no searcher holds it, and entries agree with
        // what is live.
        let segment_ids = |index: &TantivyIndex| -> HashSet<_> {
            let searcher = index.reader.searcher();
            searcher
                .segment_readers()
                .iter()
                .map(|s| s.segment_id())
                .collect()
        };
        let before = segment_ids(&index);
        index.delete(&all[..1]).unwrap();
        index.purge().unwrap();
        let after = segment_ids(&index);
        assert!(!before.is_subset(&after), "the purge rewrote a segment");
        let live = after.len();
        let deadline = Instant::now() + Duration::from_secs(10);
        while index.ids.cached() > live && Instant::now() < deadline {
            // tantivy's warming GC runs on its own thread.
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(index.ids.cached(), live);
        let mut entries: Vec<Uuid> = index.entries().unwrap().into_iter().map(|e| e.0).collect();
        entries.sort();
        assert_eq!(entries, all[1..]);
    }

    #[test]
    fn a_chinese_word_finds_the_sentence_containing_it() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let coffee = doc(&alice(), "我家的咖啡机又坏了");
        let other = doc(&alice(), "我喜欢喝绿茶");
        index.upsert(vec![coffee.clone(), other.clone()]).unwrap();
        index.commit().unwrap();
        let hits = index.search("咖啡机", &long_term(&alice()), 10).unwrap();
        assert_eq!(ids(&hits), [coffee.id]);
        assert!(hits[0].1 > 0.0);
        assert_eq!(
            ids(&index.search("绿茶", &long_term(&alice()), 10).unwrap()),
            [other.id]
        );
    }

    #[test]
    fn mixed_chinese_and_english_match_both_ways() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let zh = doc(&alice(), "我家的咖啡机又坏了");
        let en = doc(&alice(), "My bicycle broke down yesterday");
        let mixed = doc(&alice(), "新买的 espresso 咖啡机 broke again");
        let unrelated = doc(&alice(), "周末去爬山 hiking trip");
        index
            .upsert(vec![
                zh.clone(),
                en.clone(),
                mixed.clone(),
                unrelated.clone(),
            ])
            .unwrap();
        index.commit().unwrap();
        let f = long_term(&alice());
        let sorted = |mut v: Vec<Uuid>| {
            v.sort();
            v
        };
        // A mixed query finds Chinese, English and mixed text.
        let found = ids(&index.search("my 咖啡机 broke", &f, 10).unwrap());
        assert_eq!(sorted(found), sorted(vec![zh.id, en.id, mixed.id]));
        // Mixed text is found by Chinese and by English queries.
        let found = ids(&index.search("咖啡机", &f, 10).unwrap());
        assert_eq!(sorted(found), sorted(vec![zh.id, mixed.id]));
        assert_eq!(
            ids(&index.search("Espresso machines", &f, 10).unwrap()),
            [mixed.id]
        );
        assert_eq!(ids(&index.search("又坏了", &f, 10).unwrap()), [zh.id]);
    }

    #[test]
    fn the_full_match_score_scales_hits_and_a_one_common_word_match_stays_low() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let mut docs = vec![
            doc(&alice(), "my dentist appointment is on friday at nine"),
            doc(&alice(), "the appointment with the bank moved"),
        ];
        for i in 0..20 {
            docs.push(doc(
                &alice(),
                &format!("note {i}: the meeting is on monday"),
            ));
        }
        index.upsert(docs.clone()).unwrap();
        index.commit().unwrap();
        let f = long_term(&alice());
        let query = "when is my dentist appointment on friday";
        let max_score = |q: &str| {
            index
                .query_terms(analyzer::analyze(q))
                .unwrap()
                .map(|t| t.full_match_score)
        };
        let max = max_score(query).expect("terms in the index");
        let hits = index.search(query, &f, 50).unwrap();
        assert_eq!(hits[0].0, docs[0].id);
        // A short document holding every term scores above the unit (an
        // average-length one would score it), never above (k1 + 1) times it.
        for (_, s) in &hits {
            assert!(*s < 2.2 * max, "{s} >= 2.2 · {max}");
        }
        // The full match reaches a large share of the attainable score; a
        // document sharing only the common word "on" a small one, although
        // it would be 1.0 under bm25/max(bm25) of its own query.
        // ("when", in no document, is the share it misses.)
        assert!(hits[0].1 / max > 0.5, "{}", hits[0].1 / max);
        let common = index.search("on", &f, 50).unwrap();
        let common_max = max_score("on").unwrap();
        let best = hits.iter().find(|(id, _)| *id == docs[2].id).unwrap().1;
        assert!(best / max < 0.1, "{}", best / max);
        assert!(common[0].1 <= 2.2 * common_max);
        // Unknown words still count (the query's information nobody matched);
        // a query without terms has no scale.
        let dentist = max_score("dentist").unwrap();
        assert!(max_score("dentist zyxwv").unwrap() > dentist);
        assert_eq!(index.query_terms(analyzer::analyze("!!!")).unwrap(), None);
        // Rarer terms weigh more; tokens come in query order.
        let terms = index
            .query_terms(analyzer::analyze("the dentist"))
            .unwrap()
            .unwrap();
        assert_eq!(terms.tokens, ["the", "dentist"]);
        assert!(terms.idf["dentist"] > terms.idf["the"]);
    }

    #[test]
    fn english_is_stemmed_and_ranked_by_bm25() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let tea = doc(&alice(), "I prefer green tea");
        let coffee = doc(&alice(), "Coffee in the morning");
        let both = doc(&alice(), "Tea preferences: tea, more tea, preferably green");
        index
            .upsert(vec![tea.clone(), coffee.clone(), both.clone()])
            .unwrap();
        index.commit().unwrap();
        let hits = index
            .search("preferences for tea", &long_term(&alice()), 10)
            .unwrap();
        assert_eq!(ids(&hits), [both.id, tea.id]);
        assert!(hits[0].1 > hits[1].1);
        // Empty or punctuation-only queries match nothing, without error.
        assert!(index
            .search("", &long_term(&alice()), 10)
            .unwrap()
            .is_empty());
        assert!(index
            .search(" ?!。 ", &long_term(&alice()), 10)
            .unwrap()
            .is_empty());
        // Query syntax is not interpreted.
        assert_eq!(
            ids(&index
                .search("tea AND (coffee OR \"", &long_term(&alice()), 10)
                .unwrap())
            .len(),
            3
        );
        assert!(index
            .search("tea", &long_term(&alice()), 0)
            .unwrap()
            .is_empty());
        assert_eq!(
            index.search("tea", &long_term(&alice()), 1).unwrap().len(),
            1
        );
    }

    #[test]
    fn the_filter_isolates_owners_and_an_empty_scope_matches_nothing() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let a = doc(&alice(), "shared secret word");
        let b = doc(&bob(), "shared secret word");
        index.upsert(vec![a.clone(), b.clone()]).unwrap();
        index.commit().unwrap();
        assert_eq!(
            ids(&index.search("secret", &long_term(&alice()), 10).unwrap()),
            [a.id]
        );
        assert_eq!(
            ids(&index.search("secret", &long_term(&bob()), 10).unwrap()),
            [b.id]
        );
        let mut none = long_term(&alice());
        none.clauses.clear();
        assert!(index.search("secret", &none, 10).unwrap().is_empty());
        let mut no_kind = long_term(&alice());
        no_kind.kinds = Some(vec![]);
        assert!(index.search("secret", &no_kind, 10).unwrap().is_empty());
    }

    #[test]
    fn upsert_replaces_by_id() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let mut d = doc(&alice(), "the old apartment in Berlin");
        index.upsert(vec![d.clone()]).unwrap();
        index.commit().unwrap();
        assert_eq!(
            ids(&index.search("Berlin", &long_term(&alice()), 10).unwrap()),
            [d.id]
        );
        d.text = "the new apartment in Paris".into();
        d.version = 2;
        index.upsert(vec![d.clone()]).unwrap();
        index.commit().unwrap();
        assert!(index
            .search("Berlin", &long_term(&alice()), 10)
            .unwrap()
            .is_empty());
        assert_eq!(
            ids(&index.search("Paris", &long_term(&alice()), 10).unwrap()),
            [d.id]
        );
        assert_eq!(index.entries().unwrap(), [(d.id, 2)]);
        // Replacing twice within one batch leaves one document too.
        d.version = 3;
        index.upsert(vec![d.clone(), d.clone()]).unwrap();
        index.commit().unwrap();
        assert_eq!(index.entries().unwrap(), [(d.id, 3)]);
        assert_eq!(
            index.entry_count().unwrap(),
            1,
            "a replaced document counts once"
        );
    }

    #[test]
    fn delete_removes_documents() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let a = doc(&alice(), "lemon cake");
        let b = doc(&alice(), "lemon tart");
        index.upsert(vec![a.clone(), b.clone()]).unwrap();
        index.commit().unwrap();
        index.delete(&[a.id]).unwrap();
        index.commit().unwrap();
        assert_eq!(
            ids(&index.search("lemon", &long_term(&alice()), 10).unwrap()),
            [b.id]
        );
        assert_eq!(index.entries().unwrap(), [(b.id, 1)]);
        assert_eq!(
            index.entry_count().unwrap(),
            1,
            "a deleted document is not counted"
        );
    }

    #[test]
    fn a_write_becomes_searchable_within_the_commit_delay() {
        let dir = TempDir::new().unwrap();
        let delay = Duration::from_millis(300);
        let index = open(&dir, delay);
        let d = doc(&alice(), "asynchronous visibility");
        let written = Instant::now();
        index.upsert(vec![d.clone()]).unwrap();
        let deadline = written + delay * 10;
        loop {
            let hits = index
                .search("visibility", &long_term(&alice()), 10)
                .unwrap();
            if ids(&hits) == [d.id] {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "not searchable after {:?}",
                delay * 10
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!("visible after {:?} (delay {delay:?})", written.elapsed());
    }

    #[test]
    fn commit_makes_a_write_searchable_at_once() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let d = doc(&alice(), "immediate visibility");
        index.upsert(vec![d.clone()]).unwrap();
        // Not committed: with an hour's delay the reader cannot see it yet.
        assert!(index
            .search("visibility", &long_term(&alice()), 10)
            .unwrap()
            .is_empty());
        index.commit().unwrap();
        assert_eq!(
            ids(&index
                .search("visibility", &long_term(&alice()), 10)
                .unwrap()),
            [d.id]
        );
    }

    #[test]
    fn reopening_keeps_documents_and_entries() {
        let dir = TempDir::new().unwrap();
        let docs = [
            doc(&alice(), "persisted 持久化 one"),
            doc(&alice(), "persisted two"),
            doc(&bob(), "persisted three"),
        ];
        {
            let index = open(&dir, LONG_DELAY);
            index.upsert(docs[..2].to_vec()).unwrap();
            index.commit().unwrap();
            // Left uncommitted: dropping the index commits it.
            index.upsert(docs[2..].to_vec()).unwrap();
        }
        let index = open(&dir, LONG_DELAY);
        let mut entries = index.entries().unwrap();
        entries.sort();
        let mut expected: Vec<_> = docs.iter().map(|d| (d.id, d.version)).collect();
        expected.sort();
        assert_eq!(entries, expected);
        // The analyzer is registered again on open.
        assert_eq!(
            ids(&index.search("持久化", &long_term(&alice()), 10).unwrap()),
            [docs[0].id]
        );
        assert_eq!(
            index
                .search("persisted", &long_term(&alice()), 10)
                .unwrap()
                .len(),
            2
        );
        index.close().unwrap();
    }

    #[test]
    fn delete_owner_counts_and_leaves_other_owners() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        let mut docs: Vec<_> = (0..5)
            .map(|i| doc(&alice(), &format!("note {i}")))
            .collect();
        let mut working = doc(&alice(), "note in a thread");
        working.tier = Tier::Working;
        working.thread_id = Some("th".into());
        docs.push(working);
        let b = doc(&bob(), "note of bob");
        docs.push(b.clone());
        index.upsert(docs[..4].to_vec()).unwrap();
        index.commit().unwrap();
        // Uncommitted writes are counted and deleted too.
        index.upsert(docs[4..].to_vec()).unwrap();
        assert_eq!(index.delete_owner(&alice()).unwrap(), 6);
        index.commit().unwrap();
        assert_eq!(index.count_owner(&alice()).unwrap(), 0);
        assert_eq!(index.count_owner(&bob()).unwrap(), 1);
        assert!(index
            .search("note", &long_term(&alice()), 10)
            .unwrap()
            .is_empty());
        assert_eq!(
            ids(&index.search("note", &long_term(&bob()), 10).unwrap()),
            [b.id]
        );
        assert_eq!(index.entries().unwrap(), [(b.id, 1)]);
        assert_eq!(index.delete_owner(&alice()).unwrap(), 0);
    }

    /// Every term of the marker in the index's term dictionary, over all segments.
    fn term_in_dictionary(index: &TantivyIndex, token: &str) -> bool {
        let searcher = index.reader.searcher();
        searcher.segment_readers().iter().any(|s| {
            s.inverted_index(index.fields.text)
                .unwrap()
                .terms()
                .get(token.as_bytes())
                .unwrap()
                .is_some()
        })
    }

    /// Whether `needle` occurs in `hay`, forwards or backwards, with at most
    /// `max_gap` other bytes between consecutive needle bytes. The term
    /// dictionary is an FST: a term's bytes are written node by node, last
    /// node first, each followed by a state byte (and common bytes such as
    /// ASCII letters are packed into that state byte), so a term never
    /// appears contiguously; its first byte sits in the root node's table,
    /// elsewhere. With `max_gap` 0 this is a plain substring search.
    fn occurs_spread(hay: &[u8], needle: &[u8], max_gap: usize) -> bool {
        let backwards: Vec<u8> = needle.iter().rev().copied().collect();
        [needle, &backwards[..]].iter().any(|needle| {
            hay.iter()
                .enumerate()
                .filter(|(_, b)| **b == needle[0])
                .any(|(start, _)| {
                    let mut at = start;
                    needle[1..].iter().all(|want| {
                        let window = &hay[at + 1..hay.len().min(at + 2 + max_gap)];
                        match window.iter().position(|b| b == want) {
                            Some(p) => {
                                at += 1 + p;
                                true
                            }
                            None => false,
                        }
                    })
                })
        })
    }

    fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            // Skip the first byte: it is in the FST's root node, away from the rest.
            if path.is_file() && occurs_spread(&std::fs::read(&path).unwrap(), &needle[1..], 3) {
                found.push(path.display().to_string());
            }
        }
        found
    }

    #[test]
    fn the_spread_scan_finds_what_it_should() {
        assert!(occurs_spread(b"xxabcxx", b"abc", 0));
        assert!(occurs_spread(b"xxa.b..cxx", b"abc", 2));
        assert!(occurs_spread(b"xxc.b.axx", b"abc", 1));
        assert!(!occurs_spread(b"xxa....bcxx", b"abc", 3));
        assert!(!occurs_spread(b"ab", b"abc", 3));
    }

    #[test]
    fn purge_after_delete_owner_leaves_no_trace_of_the_owner_text() {
        // Chinese: the FST packs common bytes (ASCII letters, digits) into its
        // state bytes, so only rare bytes such as UTF-8 CJK are written out.
        let marker = MARKER;
        assert_eq!(analyzer::analyze(marker), [marker.to_string()]);
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        // Several segments, with the owner's documents spread over them.
        for round in 0..3 {
            let mut docs: Vec<_> = (0..20)
                .map(|i| {
                    doc(
                        &bob(),
                        &format!("bob writes about 园艺 gardening {round} {i}"),
                    )
                })
                .collect();
            docs.push(doc(
                &alice(),
                &format!("alice secret {marker} round {round}"),
            ));
            index.upsert(docs).unwrap();
            index.commit().unwrap();
        }
        assert_eq!(
            index
                .search(marker, &long_term(&alice()), 10)
                .unwrap()
                .len(),
            3
        );
        assert!(term_in_dictionary(&index, marker));
        let before = files_containing(dir.path(), marker.as_bytes());
        assert!(
            !before.is_empty(),
            "the byte scan cannot see the marker at all"
        );

        assert_eq!(index.delete_owner(&alice()).unwrap(), 3);
        index.purge().unwrap();

        assert!(index
            .search(marker, &long_term(&alice()), 10)
            .unwrap()
            .is_empty());
        assert!(!term_in_dictionary(&index, marker));
        let after = files_containing(dir.path(), marker.as_bytes());
        assert!(after.is_empty(), "marker still on disk in {after:?}");
        assert_eq!(index.count_owner(&bob()).unwrap(), 60);
        // Every segment was rewritten without the deleted documents; three
        // segments far under the cap were packed into one merge.
        let searcher = index.reader.searcher();
        assert!(searcher.segment_readers().iter().all(|s| !s.has_deletes()));
        assert_eq!(searcher.segment_readers().len(), 1);
        assert_eq!(
            index
                .search("gardening", &long_term(&bob()), 100)
                .unwrap()
                .len(),
            60
        );
        assert_eq!(
            index.search("园艺", &long_term(&bob()), 100).unwrap().len(),
            60
        );
    }

    const MARKER: &str = "饕餮";

    #[test]
    fn purge_rewrites_only_the_segments_that_held_deleted_documents() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        index
            .upsert(
                (0..10)
                    .map(|i| doc(&bob(), &format!("bob only {i}")))
                    .collect(),
            )
            .unwrap();
        index.commit().unwrap();
        let untouched = index.index().searchable_segment_ids().unwrap();
        assert_eq!(untouched.len(), 1);
        index
            .upsert(vec![doc(&alice(), "alice"), doc(&bob(), "bob again")])
            .unwrap();
        index.commit().unwrap();
        assert_eq!(index.index().searchable_segment_ids().unwrap().len(), 2);

        assert_eq!(index.delete_owner(&alice()).unwrap(), 1);
        index.purge().unwrap();

        let after = index.index().searchable_segment_ids().unwrap();
        assert_eq!(after.len(), 2, "{after:?}");
        assert!(
            after.contains(&untouched[0]),
            "the clean segment was rewritten"
        );
        assert_eq!(index.count_owner(&alice()).unwrap(), 0);
        assert_eq!(index.count_owner(&bob()).unwrap(), 11);
        let metas = index.index().searchable_segment_metas().unwrap();
        assert!(metas.iter().all(|m| !m.has_deletes()));
    }

    #[test]
    fn clear_removes_everything() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, LONG_DELAY);
        index
            .upsert(vec![
                doc(&alice(), "to be cleared"),
                doc(&bob(), "cleared too"),
            ])
            .unwrap();
        index.commit().unwrap();
        assert_eq!(index.entries().unwrap().len(), 2);
        index.clear().unwrap();
        assert!(index.entries().unwrap().is_empty());
        assert!(index
            .search("cleared", &long_term(&alice()), 10)
            .unwrap()
            .is_empty());
        assert_eq!(index.count_owner(&bob()).unwrap(), 0);
        // Still usable afterwards.
        let d = doc(&alice(), "after clearing");
        index.upsert(vec![d.clone()]).unwrap();
        index.commit().unwrap();
        assert_eq!(index.entries().unwrap(), [(d.id, 1)]);
    }

    #[test]
    fn zero_delay_commits_after_each_write() {
        let dir = TempDir::new().unwrap();
        let index = open(&dir, NO_DELAY);
        let d = doc(&alice(), "instant");
        index.upsert(vec![d.clone()]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while index.entries().unwrap().is_empty() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    // --- filter isolation, against the reference semantics -----------------

    fn owners() -> Vec<Owner> {
        vec![
            Owner::user("t1", "alice"),
            Owner::user("t1", "bob"),
            Owner::user("t2", "alice"),
            Owner::reference("t1"),
        ]
    }

    fn thread_strategy() -> impl Strategy<Value = Option<String>> {
        prop::option::of(prop::sample::select(vec![
            "th1".to_string(),
            "th2".to_string(),
        ]))
    }

    prop_compose! {
        fn arb_doc()(
            owner in prop::sample::select(owners()),
            tier in prop::sample::select(Tier::ALL.to_vec()),
            thread_id in thread_strategy(),
            status in prop::sample::select(Status::ALL.to_vec()),
            kind in prop::sample::select(Kind::ALL.to_vec()),
            extra in prop::sample::select(vec!["apple", "香蕉", "cherry pie", ""]),
        ) -> LexicalDoc {
            LexicalDoc {
                id: Uuid::new_v4(),
                text: format!("common {extra}"),
                owner, tier, thread_id, status, kind,
                version: 1,
            }
        }
    }

    prop_compose! {
        fn arb_clause()(
            owner in prop::sample::select(owners()),
            tier in prop::sample::select(Tier::ALL.to_vec()),
            thread_id in thread_strategy(),
        ) -> ScopeClause {
            ScopeClause { owner, tier, thread_id }
        }
    }

    prop_compose! {
        fn arb_filter()(
            clauses in prop::collection::vec(arb_clause(), 0..4),
            statuses in prop::sample::subsequence(Status::ALL.to_vec(), 0..=3),
            kinds in prop::option::of(prop::sample::subsequence(Kind::ALL.to_vec(), 0..=4)),
        ) -> IndexFilter {
            IndexFilter { clauses, statuses, kinds }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn search_agrees_with_the_reference_filter(
            docs in prop::collection::vec(arb_doc(), 1..60),
            filters in prop::collection::vec(arb_filter(), 1..12),
        ) {
            let dir = TempDir::new().unwrap();
            let index = open(&dir, LONG_DELAY);
            index.upsert(docs.clone()).unwrap();
            index.commit().unwrap();
            for filter in &filters {
                let expected: HashSet<Uuid> = docs
                    .iter()
                    .filter(|d| filter.matches(&d.owner, d.tier, d.thread_id.as_deref(), d.status, d.kind))
                    .map(|d| d.id)
                    .collect();
                let hits = index.search("common", filter, docs.len()).unwrap();
                let got: HashSet<Uuid> = hits.iter().map(|h| h.0).collect();
                prop_assert_eq!(got.len(), hits.len(), "duplicate hits");
                prop_assert_eq!(&got, &expected, "filter {:?}", filter);
                // A narrower query returns a subset, still inside the filter.
                for (id, _) in index.search("apple 香蕉", filter, docs.len()).unwrap() {
                    prop_assert!(expected.contains(&id));
                }
            }
        }
    }

    // --- bench ---------------------------------------------------------------

    /// `cargo test --lib lexical::tantivy::tests::bench -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn bench_100k_docs_filtered_top10() {
        const N: usize = 100_000;
        const OWNERS: usize = 1000;
        let en = [
            "coffee", "tea", "morning", "running", "shoes", "meeting", "project", "deadline",
            "prefers", "green", "travel", "Berlin", "Paris", "books", "music", "weekend",
        ];
        let zh = [
            "咖啡",
            "绿茶",
            "早上",
            "跑步",
            "鞋子",
            "会议",
            "项目",
            "截止日期",
            "喜欢",
            "旅行",
            "北京",
            "上海",
            "书籍",
            "音乐",
            "周末",
            "机器",
        ];
        let owners: Vec<Owner> = (0..OWNERS)
            .map(|i| Owner::user("t", &format!("u{i}")))
            .collect();
        let dir = TempDir::new().unwrap();
        let index = open(&dir, DEFAULT_COMMIT_DELAY);
        let mut rng_state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng_state ^= rng_state << 13;
            rng_state ^= rng_state >> 7;
            rng_state ^= rng_state << 17;
            rng_state as usize
        };
        let started = Instant::now();
        let mut batch = Vec::with_capacity(1000);
        for i in 0..N {
            let words = if i % 2 == 0 { &en } else { &zh };
            let n = 4 + next() % 6;
            let sep = if i % 2 == 0 { " " } else { "" };
            let text: Vec<&str> = (0..n).map(|_| words[next() % words.len()]).collect();
            let mut d = doc(&owners[i % OWNERS], &text.join(sep));
            d.kind = Kind::ALL[next() % Kind::ALL.len()];
            batch.push(d);
            if batch.len() == 1000 {
                index.upsert(std::mem::take(&mut batch)).unwrap();
            }
        }
        let added = started.elapsed();
        index.commit().unwrap();
        let committed = started.elapsed();
        let mut latencies = Vec::new();
        let queries = [
            "coffee meeting",
            "咖啡 会议",
            "running shoes weekend",
            "喜欢 绿茶",
        ];
        for i in 0..2000 {
            let owner = &owners[next() % OWNERS];
            let filter = long_term(owner);
            let t = Instant::now();
            let hits = index
                .search(queries[i % queries.len()], &filter, 10)
                .unwrap();
            latencies.push(t.elapsed());
            assert!(hits.len() <= 10);
        }
        latencies.sort();
        let p = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
        let t = Instant::now();
        let deleted = index.delete_owner(&owners[0]).unwrap();
        index.commit().unwrap();
        let delete_owner = t.elapsed();
        let t = Instant::now();
        index.purge().unwrap();
        let purge = t.elapsed();
        let size: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        eprintln!(
            "DEBUG build (opt-level 1 deps): {N} docs, {OWNERS} owners: add {added:?}, add+commit {committed:?}; \
             filtered top-10 search p50 {:?} p95 {:?}; delete_owner({deleted})+commit {delete_owner:?}; \
             purge {purge:?}; index {:.1} MB",
            p(0.5),
            p(0.95),
            size as f64 / 1e6
        );
    }
}
