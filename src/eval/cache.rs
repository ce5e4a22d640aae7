//! A persistent document-embedding cache shared by evaluation runs, so that
//! re-running a set (another preset, a changed policy) embeds nothing twice.
//!
//! Every run ingests into a fresh temporary store; before ingest the store's
//! own `embedding_cache` is seeded from this file, after ingest the file is
//! extended with what the store learned. One file per model, keyed inside by
//! the text's SHA-256 (the same key as the store's cache):
//!
//! ```text
//! "MNEMOEMB" | u32 version=1 | u32 model_id_len | model_id | u32 dim | u64 count
//! count × ( [u8; 32] text_sha256 | dim × f32 )        all little-endian
//! ```
//!
//! Query embeddings live in the same file under [`query_key`] (the SHA-256
//! of `"query\0" ‖ text`, which no stored text hashes to), and within one
//! run a [`QueryMemo`] embeds each distinct query once, whatever the number
//! of variants: a variant then measures retrieval and ranking, and the
//! query-embedding time is measured once per query beside it.
//!
//! The cache is an optimisation only: a missing, foreign or corrupt file is
//! ignored (with a warning) and rewritten. Writes go to a temporary file that
//! is renamed into place, so a crash never leaves a torn file.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::embed::Embedder;

/// The cache key of a query's embedding (apart from passages' text hashes).
pub fn query_key(text: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"query\0");
    h.update(text.as_bytes());
    hex::encode(h.finalize())
}

/// An embedder that embeds each distinct query text once and then answers
/// from memory; passages go straight to the inner embedder.
pub struct QueryMemo {
    inner: Arc<dyn Embedder>,
    memo: Mutex<HashMap<String, Vec<f32>>>,
}

impl QueryMemo {
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        QueryMemo {
            inner,
            memo: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<f32>>> {
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers a query's vector (from the persistent cache).
    pub fn insert(&self, text: &str, v: Vec<f32>) {
        self.lock().insert(text.to_string(), v);
    }

    pub fn get(&self, text: &str) -> Option<Vec<f32>> {
        self.lock().get(text).cloned()
    }

    /// Embeds a query with the inner model, remembering it; returns the
    /// vector and the embedding time in milliseconds.
    pub fn embed_timed(&self, text: &str) -> crate::Result<(Vec<f32>, f64)> {
        let t = std::time::Instant::now();
        let v = self.inner.embed_query(text)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        self.insert(text, v.clone());
        Ok((v, ms))
    }

    /// Every remembered query as cache entries.
    pub fn entries(&self) -> Vec<(String, Vec<f32>)> {
        self.lock()
            .iter()
            .map(|(t, v)| (query_key(t), v.clone()))
            .collect()
    }
}

impl Embedder for QueryMemo {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed_query(&self, text: &str) -> crate::Result<Vec<f32>> {
        if let Some(v) = self.get(text) {
            return Ok(v);
        }
        Ok(self.embed_timed(text)?.0)
    }
    fn embed_passages(&self, texts: &[&str]) -> crate::Result<Vec<Vec<f32>>> {
        self.inner.embed_passages(texts)
    }
    fn known_token_share(&self, text: &str) -> f32 {
        self.inner.known_token_share(text)
    }
}

const MAGIC: &[u8; 8] = b"MNEMOEMB";
const VERSION: u32 = 1;

/// Text SHA-256 (hex, as the store keys it) → vector, for one model.
#[derive(Debug, Default)]
pub struct EmbeddingCache {
    pub model_id: String,
    pub dim: usize,
    pub vectors: HashMap<String, Vec<f32>>,
}

/// The cache file of a model inside a cache directory.
pub fn path_for(dir: &Path, model_id: &str) -> PathBuf {
    let safe: String = model_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let tag = &hex::encode(Sha256::digest(model_id.as_bytes()))[..12];
    dir.join(format!("embeddings-{safe}-{tag}.bin"))
}

impl EmbeddingCache {
    pub fn empty(model_id: &str, dim: usize) -> Self {
        EmbeddingCache {
            model_id: model_id.to_string(),
            dim,
            vectors: HashMap::new(),
        }
    }

    /// Reads the model's cache from `dir`; empty when absent or unusable.
    pub fn load(dir: &Path, model_id: &str, dim: usize) -> Self {
        let path = path_for(dir, model_id);
        match std::fs::File::open(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::empty(model_id, dim),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "embedding cache unreadable; starting empty");
                Self::empty(model_id, dim)
            }
            Ok(f) => match Self::read_from(std::io::BufReader::new(f), model_id, dim) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "embedding cache ignored");
                    Self::empty(model_id, dim)
                }
            },
        }
    }

    fn read_from(mut r: impl Read, model_id: &str, dim: usize) -> std::io::Result<Self> {
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        if &magic != MAGIC || read_u32(&mut r)? != VERSION {
            return Err(bad("not a mnemo embedding cache (or another version)"));
        }
        let len = read_u32(&mut r)? as usize;
        let mut id = vec![0u8; len.min(4096)];
        r.read_exact(&mut id)?;
        if id != model_id.as_bytes() || read_u32(&mut r)? as usize != dim {
            return Err(bad("cache of another model"));
        }
        let count = u64::from_le_bytes(read_array(&mut r)?) as usize;
        let mut vectors = HashMap::with_capacity(count.min(1 << 20));
        let mut buf = vec![0u8; dim * 4];
        for _ in 0..count {
            let hash: [u8; 32] = read_array(&mut r)?;
            r.read_exact(&mut buf)?;
            let v = buf
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect();
            vectors.insert(hex::encode(hash), v);
        }
        Ok(EmbeddingCache {
            model_id: model_id.to_string(),
            dim,
            vectors,
        })
    }

    /// Adds entries (hex hash, vector); ignores malformed ones.
    pub fn extend(&mut self, entries: impl IntoIterator<Item = (String, Vec<f32>)>) -> usize {
        let before = self.vectors.len();
        for (h, v) in entries {
            if v.len() == self.dim && h.len() == 64 && hex::decode(&h).is_ok() {
                self.vectors.insert(h, v);
            }
        }
        self.vectors.len() - before
    }

    /// Writes the cache atomically into `dir`.
    pub fn save(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = path_for(dir, &self.model_id);
        let tmp = path.with_extension("bin.tmp");
        {
            let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
            w.write_all(MAGIC)?;
            w.write_all(&VERSION.to_le_bytes())?;
            w.write_all(&(self.model_id.len() as u32).to_le_bytes())?;
            w.write_all(self.model_id.as_bytes())?;
            w.write_all(&(self.dim as u32).to_le_bytes())?;
            w.write_all(&(self.vectors.len() as u64).to_le_bytes())?;
            let mut keys: Vec<&String> = self.vectors.keys().collect();
            keys.sort();
            for h in keys {
                let raw = hex::decode(h).expect("checked on insert");
                w.write_all(&raw)?;
                for x in &self.vectors[h] {
                    w.write_all(&x.to_le_bytes())?;
                }
            }
            w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        std::fs::rename(&tmp, &path)?;
        Ok(path)
    }
}

fn read_array<const N: usize>(r: &mut impl Read) -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    Ok(u32::from_le_bytes(read_array(r)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_other_models() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = EmbeddingCache::empty("m/1", 3);
        let h = crate::store::text_hash("hello");
        assert_eq!(c.extend([(h.clone(), vec![1.0, 2.0, 3.0])]), 1);
        assert_eq!(c.extend([("zz".into(), vec![1.0, 2.0, 3.0])]), 0);
        assert_eq!(c.extend([(h.clone(), vec![1.0])]), 0, "wrong dimension");
        c.save(dir.path()).unwrap();
        let back = EmbeddingCache::load(dir.path(), "m/1", 3);
        assert_eq!(back.vectors[&h], vec![1.0, 2.0, 3.0]);
        assert!(EmbeddingCache::load(dir.path(), "m/1", 4)
            .vectors
            .is_empty());
        assert!(EmbeddingCache::load(dir.path(), "m/2", 3)
            .vectors
            .is_empty());
        assert_ne!(
            query_key("hello"),
            h,
            "queries and passages never share a key"
        );
        std::fs::write(path_for(dir.path(), "m/1"), b"garbage").unwrap();
        assert!(EmbeddingCache::load(dir.path(), "m/1", 3)
            .vectors
            .is_empty());
    }
}
