//! One model, several ONNX Runtime sessions, one tokenizer.
//!
//! fastembed's `TextEmbedding` bundles a session with its own tokenizer, so a
//! pool of N sessions held N tokenizers. For multilingual-e5-small that was
//! most of the process: the XLM-R unigram tokenizer (250k pieces, a trie of
//! them) takes about 285 MB in memory, the int8 session about 130 MB, and
//! the service held four tokenizers (three sessions and the embedder's own
//! copy): 1.47 GB of anonymous memory after start against 0.23 GB with
//! all-MiniLM-L6-v2. Here the sessions are ONNX Runtime's alone and the
//! embedder tokenises once, before it takes a session
//! ([`Encoded`], [`ModelSession::run`]).
//!
//! What fastembed did is kept step for step, so that vectors do not move:
//! the tokenizer's padding (longest in the batch), truncation and special
//! tokens ([`load_tokenizer`]), the graph's inputs, the output it picks
//! (the only one, else `text_embeds`, `last_hidden_state`,
//! `sentence_embedding`), its pooling (mean over the attention mask, or the
//! first token) and its normalisation. A test compares the two on English,
//! Chinese and mixed batches (`onnx::tests`).

use std::borrow::Cow;

use fastembed::{Pooling, TokenizerFiles};
use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use tokenizers::{AddedToken, PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::error::{bad_output, EmbedError};
use crate::error::Result;

/// The outputs fastembed looks for, in its order, after "the only one".
const OUTPUT_NAMES: [&str; 3] = ["text_embeds", "last_hidden_state", "sentence_embedding"];

fn model_error(context: &str, e: impl std::fmt::Display) -> crate::error::Error {
    EmbedError::Model {
        context: context.to_string(),
        source: e.to_string().into(),
    }
    .into()
}

/// The model's tokenizer as fastembed configures it: padded to the longest
/// text of a batch with the model's pad token, truncated at `max_length`
/// (or the tokenizer's `model_max_length` when smaller), with the special
/// tokens of `special_tokens_map.json` added.
pub(crate) fn load_tokenizer(files: &TokenizerFiles, max_length: usize) -> Result<Tokenizer> {
    let json = |bytes: &[u8], name: &str| -> Result<serde_json::Value> {
        serde_json::from_slice(bytes).map_err(|e| model_error(&format!("reading {name}"), e))
    };
    let config = json(&files.config_file, "config.json")?;
    let special_tokens_map = json(&files.special_tokens_map_file, "special_tokens_map.json")?;
    let tokenizer_config = json(&files.tokenizer_config_file, "tokenizer_config.json")?;
    let mut tokenizer = Tokenizer::from_bytes(&files.tokenizer_file)
        .map_err(|e| model_error("reading tokenizer.json", e))?;

    let model_max_length = tokenizer_config["model_max_length"]
        .as_f64()
        .ok_or_else(|| {
            model_error(
                "reading tokenizer_config.json",
                "no numeric `model_max_length`",
            )
        })? as f32;
    let max_length = max_length.min(model_max_length as usize);
    let pad_token: String = tokenizer_config["pad_token"]
        .as_str()
        .or_else(|| tokenizer_config["pad_token"]["content"].as_str())
        .ok_or_else(|| model_error("reading tokenizer_config.json", "no string `pad_token`"))?
        .into();
    let pad_id = config["pad_token_id"]
        .as_u64()
        .map(|id| id as u32)
        .or_else(|| tokenizer.token_to_id(&pad_token))
        .unwrap_or(0);
    tokenizer
        .with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_token,
            pad_id,
            ..Default::default()
        }))
        .with_truncation(Some(TruncationParams {
            max_length,
            ..Default::default()
        }))
        .map_err(|e| model_error("configuring the tokenizer", e))?;
    if let serde_json::Value::Object(tokens) = special_tokens_map {
        for value in tokens.values() {
            let token = if let Some(content) = value.as_str() {
                Some(AddedToken {
                    content: content.into(),
                    special: true,
                    ..Default::default()
                })
            } else if let (
                Some(content),
                Some(single_word),
                Some(lstrip),
                Some(rstrip),
                Some(normalized),
            ) = (
                value["content"].as_str(),
                value["single_word"].as_bool(),
                value["lstrip"].as_bool(),
                value["rstrip"].as_bool(),
                value["normalized"].as_bool(),
            ) {
                Some(AddedToken {
                    content: content.into(),
                    special: true,
                    single_word,
                    lstrip,
                    rstrip,
                    normalized,
                })
            } else {
                None
            };
            if let Some(token) = token {
                tokenizer
                    .add_special_tokens([token])
                    .map_err(|e| model_error("adding the special tokens", e))?;
            }
        }
    }
    Ok(tokenizer)
}

/// A batch tokenised for the model: `[texts, tokens]`, row-major.
pub(crate) struct Encoded {
    texts: usize,
    tokens: usize,
    ids: Vec<i64>,
    mask: Vec<i64>,
    type_ids: Vec<i64>,
}

impl Encoded {
    /// Tokenises `texts` (padded to the longest, as the tokenizer is set).
    pub(crate) fn new(tokenizer: &Tokenizer, texts: Vec<String>) -> Result<Self> {
        let encodings = tokenizer
            .encode_batch(texts, true)
            .map_err(EmbedError::Tokenizer)?;
        let texts = encodings.len();
        let tokens = encodings.first().map_or(0, |e| e.len());
        let mut out = Encoded {
            texts,
            tokens,
            ids: Vec::with_capacity(texts * tokens),
            mask: Vec::with_capacity(texts * tokens),
            type_ids: Vec::with_capacity(texts * tokens),
        };
        for e in &encodings {
            if e.len() != tokens {
                return Err(bad_output(
                    "the tokenizer did not pad the batch evenly".into(),
                ));
            }
            out.ids.extend(e.get_ids().iter().map(|&x| i64::from(x)));
            out.mask
                .extend(e.get_attention_mask().iter().map(|&x| i64::from(x)));
            out.type_ids
                .extend(e.get_type_ids().iter().map(|&x| i64::from(x)));
        }
        Ok(out)
    }

    pub(crate) fn len(&self) -> usize {
        self.texts
    }
}

/// One ONNX Runtime session of the model (no tokenizer).
pub(crate) struct ModelSession {
    session: Session,
    token_type_ids: bool,
    pooling: Pooling,
}

impl ModelSession {
    /// A session of the graph `onnx` with `threads` intra-op threads,
    /// spinning off, at fastembed's optimisation level.
    pub(crate) fn new(
        env: &Environment,
        onnx: &[u8],
        threads: usize,
        pooling: Pooling,
    ) -> Result<Self> {
        let session = Session::builder(env)
            .map_err(|e| model_error("configuring a session", e))?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(|e| model_error("configuring a session", e))?
            .with_intra_threads(threads)
            .map_err(|e| model_error("configuring a session", e))?
            .with_config_entry("session.intra_op.allow_spinning", "0")
            .map_err(|e| model_error("configuring a session", e))?
            .commit_from_memory(onnx)
            .map_err(|e| model_error("loading the graph", e))?;
        let token_type_ids = session
            .inputs()
            .iter()
            .any(|input| input.name() == "token_type_ids");
        Ok(ModelSession {
            session,
            token_type_ids,
            pooling,
        })
    }

    /// One vector per text of `batch`, pooled and L2-normalised as fastembed
    /// did (then normalised once more by the caller).
    pub(crate) fn run(&mut self, batch: Encoded) -> Result<Vec<Vec<f32>>> {
        if batch.texts == 0 {
            return Ok(Vec::new());
        }
        let shape = [batch.texts, batch.tokens];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data)).map_err(|e| model_error("building an input", e))
        };
        let mut inputs: Vec<(Cow<'static, str>, SessionInputValue<'static>)> = vec![
            ("input_ids".into(), tensor(batch.ids)?.into()),
            ("attention_mask".into(), tensor(batch.mask.clone())?.into()),
        ];
        if self.token_type_ids {
            inputs.push(("token_type_ids".into(), tensor(batch.type_ids)?.into()));
        }
        let outputs = self
            .session
            .run(inputs)
            .map_err(|e| model_error("embedding a batch", e))?;
        let output = if outputs.len() == 1 {
            Some(&outputs[0])
        } else {
            OUTPUT_NAMES.iter().find_map(|name| outputs.get(*name))
        }
        .ok_or_else(|| bad_output("the graph has no embedding output".into()))?;
        let (dims, data) = output
            .try_extract_tensor::<f32>()
            .map_err(|e| model_error("reading the output", e))?;
        let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let rows = pool(&dims, data, &batch.mask, batch.tokens, &self.pooling)?;
        Ok(rows.into_iter().map(|row| normalize(&row)).collect())
    }
}

/// fastembed's pooling of `[texts, tokens, dim]` (or an already pooled
/// `[texts, dim]`): the mean of the token vectors under the attention mask,
/// summed in token order, or the first token's vector.
fn pool(
    dims: &[usize],
    data: &[f32],
    mask: &[i64],
    tokens: usize,
    pooling: &Pooling,
) -> Result<Vec<Vec<f32>>> {
    match *dims {
        [texts, dim] => Ok((0..texts)
            .map(|t| data[t * dim..(t + 1) * dim].to_vec())
            .collect()),
        [texts, n, dim] if n == tokens => Ok((0..texts)
            .map(|t| {
                let token = |k: usize| &data[(t * n + k) * dim..(t * n + k + 1) * dim];
                match pooling {
                    Pooling::Cls => token(0).to_vec(),
                    Pooling::Mean => {
                        let mut sum = vec![0.0f32; dim];
                        let mut count = 0.0f32;
                        for k in 0..n {
                            let m = mask[t * n + k] as f32;
                            for (s, x) in sum.iter_mut().zip(token(k)) {
                                *s += m * x;
                            }
                            count += m;
                        }
                        let count = if count == 0.0 { 1.0 } else { count };
                        sum.iter().map(|s| s / count).collect()
                    }
                }
            })
            .collect()),
        _ => Err(bad_output(format!(
            "unexpected output shape {dims:?} for {tokens} tokens"
        ))),
    }
}

/// fastembed's normalisation (with its epsilon).
fn normalize(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|&x| x / (norm + 1e-12)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pooling_ignores_padding_and_cls_takes_the_first_token() {
        // Two texts of 3 tokens, dim 2; the second text's last token is padding.
        let data = [
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, //
            1.0, 1.0, 3.0, 3.0, 100.0, 100.0,
        ];
        let mask = [1, 1, 1, 1, 1, 0];
        let mean = pool(&[2, 3, 2], &data, &mask, 3, &Pooling::Mean).unwrap();
        assert_eq!(mean, vec![vec![3.0, 4.0], vec![2.0, 2.0]]);
        let cls = pool(&[2, 3, 2], &data, &mask, 3, &Pooling::Cls).unwrap();
        assert_eq!(cls, vec![vec![1.0, 2.0], vec![1.0, 1.0]]);
        // Already pooled by the graph.
        let pooled = pool(&[2, 2], &data[..4], &mask, 3, &Pooling::Mean).unwrap();
        assert_eq!(pooled, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        assert!(pool(&[2, 4, 2], &data, &mask, 3, &Pooling::Mean).is_err());
    }
}
