//! How the embedding cache stores a vector: IEEE half floats, little-endian,
//! after a one-byte format tag.
//!
//! Half precision halves what the cache writes, and what forget-all must
//! delete and zero, against a relative error of at most 2⁻¹¹ per component:
//! for unit vectors the cosine between a vector and its stored copy stays
//! above 0.99999, far under the gaps that order search results.
//!
//! Blobs written before this format hold plain `f32`s (4 bytes each, no tag:
//! always an even length); a tagged blob always has an odd length, so the two
//! cannot be confused and old caches stay readable.

use crate::error::{Error, Result};

/// First byte of a half-precision blob.
const F16_TAG: u8 = 0x16;

/// Half precision when every component fits it (embedders return unit
/// vectors), plain `f32` otherwise.
pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    if !v.iter().all(|x| x.abs() <= f32::from(half::f16::MAX)) {
        return v.iter().flat_map(|x| x.to_le_bytes()).collect();
    }
    let mut out = Vec::with_capacity(1 + 2 * v.len());
    out.push(F16_TAG);
    for x in v {
        out.extend_from_slice(&half::f16::from_f32(*x).to_le_bytes());
    }
    out
}

pub(crate) fn decode_vector(b: &[u8]) -> Result<Vec<f32>> {
    match b.split_first() {
        Some((&F16_TAG, rest)) if rest.len().is_multiple_of(2) => Ok(rest
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()),
        _ if b.len().is_multiple_of(4) => Ok(b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()),
        _ => Err(Error::internal(format!(
            "corrupt cached embedding: {} bytes, neither tagged f16 nor f32",
            b.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 2001) as f32 - 1000.0
            })
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    #[test]
    fn half_precision_round_trip_keeps_direction() {
        for seed in 0..20 {
            let v = unit(seed, 384);
            let blob = encode_vector(&v);
            assert_eq!(blob.len(), 1 + 2 * 384);
            let back = decode_vector(&blob).unwrap();
            let dot: f64 = v.iter().zip(&back).map(|(a, b)| (a * b) as f64).sum();
            let norm: f64 = back.iter().map(|b| (b * b) as f64).sum::<f64>().sqrt();
            let cos = dot / norm;
            assert!(cos > 0.99999, "cosine {cos}");
            let worst = v
                .iter()
                .zip(&back)
                .map(|(a, b)| ((a - b) / a).abs())
                .fold(0f32, f32::max);
            assert!(worst <= 1.0 / 2048.0, "relative error {worst}");
        }
    }

    #[test]
    fn blobs_written_as_f32_still_decode() {
        let v = unit(7, 384);
        let old: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(decode_vector(&old).unwrap(), v);
    }

    #[test]
    fn components_out_of_half_range_stay_f32() {
        let v = vec![0.5, 1e30, f32::NAN, -3.0];
        let back = decode_vector(&encode_vector(&v)).unwrap();
        assert_eq!(back[..2], v[..2]);
        assert!(back[2].is_nan());
        assert_eq!(back[3], -3.0);
    }

    #[test]
    fn a_blob_of_neither_format_is_an_error() {
        assert!(decode_vector(&[1, 2, 3]).is_err());
        assert!(decode_vector(&[F16_TAG, 0]).is_err());
        assert_eq!(decode_vector(&[]).unwrap(), Vec::<f32>::new());
    }
}
