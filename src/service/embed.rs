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
        let inputs = self.passage_inputs(memories).await?;
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
            let _permit = self.write_embed_permit()?;
            let embedder = self.0.embedder.clone();
            let texts: Vec<String> = missing.iter().map(|(_, t)| t.to_string()).collect();
            // One call: the embedder sorts by length, batches
            // (`indexing.embed_batch`) and uses every bulk session.
            let fresh = blocking(move || {
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
        let mut previous: Vec<Option<Cow<'a, str>>> = vec![None; memories.len()];
        if self.0.policy.indexing.embed_previous_turn {
            let mut conversations: HashMap<(&str, &str, &str), Vec<usize>> = HashMap::new();
            for (i, m) in memories.iter().enumerate() {
                if let (Some(user), Some(thread)) = (m.user_id.as_deref(), m.thread_id.as_deref()) {
                    conversations
                        .entry((m.tenant_id.as_str(), user, thread))
                        .or_default()
                        .push(i);
                }
            }
            for ((tenant, user, thread), mut turns) in conversations {
                turns.sort_by_key(|&i| memories[i].id);
                let first = memories[turns[0]].id;
                let mut last: Option<Cow<'a, str>> = self
                    .0
                    .store
                    .turn_before(tenant, user, thread, first)
                    .await?
                    .map(Cow::Owned);
                for i in turns {
                    previous[i] = last.clone();
                    if memories[i].status == Status::Active {
                        last = Some(Cow::Borrowed(memories[i].text.as_str()));
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
