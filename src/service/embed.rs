//! Passage embedding for writes: the store's embedding cache first (per
//! owner), then the embedder off the async runtime, bounded by the engine's
//! permits (beyond them, `Overloaded`).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::{blocking, Engine, SEARCH_RESERVED_PERMITS};
use crate::domain::turns::passage_input;
use crate::domain::{Memory, Status};
use crate::error::{Error, Result};
use crate::store::{text_hash, CacheOwner, ThreadRef};

impl Engine {
    /// Embeds memories' texts, using and filling the embedding cache. The
    /// cache is kept per owner (see [`CacheOwner`]) and a batch may mix
    /// owners; a text missing for several of them is embedded once.
    pub(crate) async fn embed_passages(&self, memories: &[Memory]) -> Result<Vec<Vec<f32>>> {
        self.embed_passages_from(memories, None).await
    }

    /// [`Engine::embed_passages`] for memories extracted from a thread: the
    /// vectors are cached only while the thread exists (see
    /// [`Engine::remember_from_thread`]).
    pub(crate) async fn embed_passages_from(
        &self,
        memories: &[Memory],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<Vec<Vec<f32>>> {
        self.embed_passages_after(&[], memories, from_thread).await
    }

    /// [`Engine::embed_passages_from`] for memories that follow `preceding`
    /// (written just before them, or about to be): a turn's previous turn
    /// may be among those. Bulk ingest embeds a batch ahead of its write
    /// while the batch before is still being written.
    pub(crate) async fn embed_passages_after(
        &self,
        preceding: &[Memory],
        memories: &[Memory],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<Vec<Vec<f32>>> {
        let inputs = self.passage_inputs_after(preceding, memories).await?;
        let hashes: Vec<String> = inputs.iter().map(|t| text_hash(t)).collect();
        let model = self.0.embedder.model_id().to_string();
        let owners = CacheOwner::group(memories.iter().map(CacheOwner::of).zip(0..));
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; memories.len()];
        for (owner, items) in &owners {
            let wanted: Vec<String> = items.iter().map(|&i| hashes[i].clone()).collect();
            let cached = self
                .0
                .store
                .cached_embeddings(owner, &model, &wanted)
                .await?;
            for &i in items {
                vectors[i] = cached.get(&hashes[i]).cloned();
            }
        }
        // Each missing text once, in first-seen order.
        let mut missing: Vec<(&str, &str)> = Vec::new();
        let mut seen = HashSet::new();
        for (i, input) in inputs.iter().enumerate() {
            if vectors[i].is_none() && seen.insert(hashes[i].as_str()) {
                missing.push((hashes[i].as_str(), input));
            }
        }
        if !missing.is_empty() {
            let permit = self.write_embed_permit()?;
            let embedder = self.0.embedder.clone();
            let texts: Vec<String> = missing.iter().map(|(_, t)| t.to_string()).collect();
            // One call: the embedder sorts by length, batches
            // (`indexing.embed_batch`) and uses every bulk session. The
            // permit goes with the work, not with the request: a request
            // cancelled meanwhile (a client that hangs up) leaves the
            // blocking work running, and it must stay counted until it ends.
            let fresh = blocking(move || {
                let _permit = permit;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                embedder.embed_passages(&refs)
            })
            .await?;
            let fresh: HashMap<&str, Vec<f32>> =
                missing.iter().map(|(h, _)| *h).zip(fresh).collect();
            for (owner, items) in &owners {
                let mut entries: Vec<(String, Vec<f32>)> = Vec::new();
                let mut added: HashSet<&str> = HashSet::new();
                for &i in items {
                    if vectors[i].is_none() {
                        let v = fresh
                            .get(hashes[i].as_str())
                            .cloned()
                            .ok_or_else(|| Error::internal("embedding missing after embedding"))?;
                        if added.insert(hashes[i].as_str()) {
                            entries.push((hashes[i].clone(), v.clone()));
                        }
                        vectors[i] = Some(v);
                    }
                }
                if !entries.is_empty() {
                    self.0
                        .store
                        .cache_embeddings(owner, &model, &entries, from_thread)
                        .await?;
                }
            }
        }
        vectors
            .into_iter()
            .map(|v| v.ok_or_else(|| Error::internal("embedding missing after embedding")))
            .collect()
    }

    /// What the vector leg embeds for each memory: its text, and for a turn
    /// of a conversation (a user and a `thread_id`) the end of the active
    /// turn before it (`domain::turns::passage_input`) when
    /// `[indexing] embed_previous_turn` is on. The turn before is the
    /// batch's previous turn of that conversation, and for the batch's first
    /// the store's; the embedding cache is keyed by what was embedded.
    pub(crate) async fn passage_inputs<'a>(
        &self,
        memories: &'a [Memory],
    ) -> Result<Vec<Cow<'a, str>>> {
        self.passage_inputs_after(&[], memories).await
    }

    /// [`Engine::passage_inputs`] where `preceding` came just before
    /// `memories`: a conversation whose last turns are there starts from
    /// them instead of the store.
    async fn passage_inputs_after<'a>(
        &self,
        preceding: &'a [Memory],
        memories: &'a [Memory],
    ) -> Result<Vec<Cow<'a, str>>> {
        let mut previous: Vec<Option<Cow<'a, str>>> = vec![None; memories.len()];
        if self.0.policy.indexing.embed_previous_turn {
            // Per conversation, its turns here: (id, index in `memories`
            // or None for a preceding one, the memory).
            type Turn<'m> = (uuid::Uuid, Option<usize>, &'m Memory);
            let mut conversations: HashMap<(&str, &str, &str), Vec<Turn<'a>>> = HashMap::new();
            let tagged = preceding
                .iter()
                .map(|m| (None, m))
                .chain(memories.iter().enumerate().map(|(i, m)| (Some(i), m)));
            for (i, m) in tagged {
                if let (Some(user), Some(thread)) = (m.user_id.as_deref(), m.thread_id.as_deref()) {
                    conversations
                        .entry((m.tenant_id.as_str(), user, thread))
                        .or_default()
                        .push((m.id, i, m));
                }
            }
            for ((tenant, user, thread), mut turns) in conversations {
                turns.sort_by_key(|t| t.0);
                let mut last: Option<Cow<'a, str>> = match turns[0] {
                    (first, Some(_), _) => self
                        .0
                        .store
                        .turn_before(tenant, user, thread, first)
                        .await?
                        .map(Cow::Owned),
                    (_, None, _) => None,
                };
                for (_, i, m) in turns {
                    if let Some(i) = i {
                        previous[i] = last.clone();
                    }
                    if m.status == Status::Active {
                        last = Some(Cow::Borrowed(m.text.as_str()));
                    }
                }
            }
        }
        Ok(memories
            .iter()
            .zip(previous)
            .map(|(m, p)| match p {
                None => Cow::Borrowed(m.text.as_str()),
                Some(p) => Cow::Owned(passage_input(&m.text, Some(&p)).into_owned()),
            })
            .collect())
    }

    pub(super) fn embed_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        self.0
            .embed_permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| embed_overloaded())
    }

    /// An embedding permit for a write: refused while only the searches'
    /// reserved permits are left.
    fn write_embed_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        if self.0.embed_permits.available_permits() <= SEARCH_RESERVED_PERMITS {
            return Err(embed_overloaded());
        }
        self.embed_permit()
    }
}

fn embed_overloaded() -> Error {
    Error::Overloaded {
        message: "too many embedding requests in flight".into(),
        retry_after_secs: 1,
    }
}
