//! A deterministic feature-hashing embedder: tokens hashed into buckets, L2
//! normalised. A fake for unit tests of logic around embeddings; it knows no
//! semantics and is never what a feature is verified on.

use sha2::{Digest, Sha256};

use super::Embedder;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dim: usize,
    model_id: String,
}

impl HashingEmbedder {
    pub fn new(dim: usize) -> Self {
        HashingEmbedder {
            dim,
            model_id: format!("hashing-{dim}"),
        }
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        for token in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
            .map(str::to_lowercase)
        {
            let h = Sha256::digest(token.as_bytes());
            let bucket =
                u64::from_le_bytes(h[..8].try_into().expect("8 bytes")) as usize % self.dim;
            let sign = if h[8] & 1 == 0 { 1.0 } else { -1.0 };
            v[bucket] += sign;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Embedder for HashingEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed(text))
    }

    fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_vector_and_normalised() {
        let e = HashingEmbedder::new(64);
        let a = e.embed_query("Green tea, please").unwrap();
        assert_eq!(a, e.embed_passages(&["green TEA please"]).unwrap()[0]);
        let norm: f32 = a.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5);
    }
}
