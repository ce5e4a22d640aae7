//! Which script a text is written in, as far as the embedding models care:
//! CJK (Chinese, Japanese, Korean) against the rest. Pure functions; the
//! vector leg's confidence (`embed/onnx.rs`) and its cross-script alignment
//! (`ranking::cross_script_shift`) read them.

/// Whether `c` is a Chinese, Japanese or Korean character (Han ideographs,
/// kana, Hangul), the scripts an English-only model never learnt.
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{2E80}'..='\u{2FDF}'       // CJK radicals
        | '\u{3040}'..='\u{30FF}'     // Hiragana, Katakana
        | '\u{3100}'..='\u{31BF}'     // Bopomofo, Hangul compatibility jamo, Kanbun
        | '\u{3400}'..='\u{4DBF}'     // CJK extension A
        | '\u{4E00}'..='\u{9FFF}'     // CJK unified ideographs
        | '\u{AC00}'..='\u{D7AF}'     // Hangul syllables
        | '\u{1100}'..='\u{11FF}'     // Hangul jamo
        | '\u{F900}'..='\u{FAFF}'     // CJK compatibility ideographs
        | '\u{20000}'..='\u{3134F}'   // CJK extensions B–G
    )
}

/// The share of `text` written in CJK script, 0..=1, counting a CJK
/// character as a word and five Latin letters as one (a Chinese memory with
/// "Zoom" in it is still Chinese); 0.5 for text with neither.
pub fn cjk_share(text: &str) -> f32 {
    let (mut cjk, mut latin) = (0usize, 0usize);
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else if c.is_alphabetic() {
            latin += 1;
        }
    }
    let (cjk, words) = (cjk as f32, latin as f32 / 5.0);
    if cjk + words == 0.0 {
        0.5
    } else {
        cjk / (cjk + words)
    }
}
