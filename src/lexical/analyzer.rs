//! Text analysis shared by indexing and querying: jieba segmentation, lower-casing, English stemming.
//!
//! The chain, registered in tantivy under [`ANALYZER`]:
//!
//! 1. [`JiebaTokenizer`] (search mode): Chinese is segmented into words, and
//!    long words also yield their dictionary sub-words ("咖啡机" → "咖啡",
//!    "咖啡机"); runs of Latin letters and digits come out as single tokens.
//! 2. [`WordFilter`]: drops tokens with no letter or digit (the `" "` tokens
//!    jieba emits for spaces, punctuation of any script). Unicode-aware, unlike
//!    tantivy's ASCII-only `AlphaNumOnlyFilter`, which would drop all Chinese.
//! 3. [`RemoveLongFilter`]: drops tokens over [`MAX_TOKEN_BYTES`] (base64 blobs
//!    and the like).
//! 4. [`LowerCaser`].
//! 5. English [`Stemmer`] (Snowball): "preferences" → "prefer". It leaves CJK
//!    tokens as they are (tested below).
//!
//! [`analyze`] runs the same chain outside tantivy, so queries (and, later,
//! sparse vectors) see exactly the tokens the index holds.

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, Stemmer, TextAnalyzer, Token, TokenFilter, TokenStream,
    Tokenizer,
};
use tantivy_jieba::JiebaTokenizer;

/// The name under which the analyzer is registered in an index.
pub const ANALYZER: &str = "mnemo";

/// Longer tokens (in UTF-8 bytes) are not indexed.
pub const MAX_TOKEN_BYTES: usize = 64;

/// A fresh instance of the analyzer. Cheap: jieba's dictionary is a
/// process-wide static, loaded on first use.
pub fn text_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(JiebaTokenizer::new())
        .filter(WordFilter)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES + 1))
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Registers the analyzer in `index`. Tokenizers are not persisted with the
/// index: call this every time an index is created or opened.
pub fn register(index: &tantivy::Index) {
    index.tokenizers().register(ANALYZER, text_analyzer());
}

/// The tokens `text` is indexed as, in order, with repetitions.
pub fn analyze(text: &str) -> Vec<String> {
    let mut analyzer = text_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push(token.text.clone());
    }
    out
}

/// Drops tokens that contain no letter or digit (Unicode-aware).
#[derive(Clone, Copy, Debug, Default)]
pub struct WordFilter;

impl TokenFilter for WordFilter {
    type Tokenizer<T: Tokenizer> = WordFilterWrapper<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> WordFilterWrapper<T> {
        WordFilterWrapper(tokenizer)
    }
}

#[derive(Clone)]
pub struct WordFilterWrapper<T>(T);

impl<T: Tokenizer> Tokenizer for WordFilterWrapper<T> {
    type TokenStream<'a> = WordFilterStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        WordFilterStream(self.0.token_stream(text))
    }
}

pub struct WordFilterStream<T>(T);

impl<T: TokenStream> TokenStream for WordFilterStream<T> {
    fn advance(&mut self) -> bool {
        while self.0.advance() {
            if self.0.token().text.chars().any(char::is_alphanumeric) {
                return true;
            }
        }
        false
    }

    fn token(&self) -> &Token {
        self.0.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.0.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_is_segmented_with_sub_words() {
        let tokens = analyze("我家的咖啡机又坏了");
        assert!(tokens.contains(&"咖啡机".to_string()), "{tokens:?}");
        let query = analyze("咖啡机");
        assert!(
            query.iter().all(|t| tokens.contains(t)),
            "{query:?} vs {tokens:?}"
        );
    }

    #[test]
    fn english_is_lower_cased_and_stemmed_without_spaces_or_punctuation() {
        assert_eq!(
            analyze("I prefer green tea."),
            ["i", "prefer", "green", "tea"]
        );
        assert_eq!(analyze("Preferences for TEA!"), ["prefer", "for", "tea"]);
        assert_eq!(analyze("  ,.!? ——。，！ "), Vec::<String>::new());
    }

    #[test]
    fn stemmer_leaves_cjk_alone_and_mixed_text_keeps_both() {
        let tokens = analyze("My 咖啡机 broke, 还有 running shoes");
        for expected in ["my", "咖啡", "咖啡机", "broke", "还有", "run", "shoe"] {
            assert!(
                tokens.contains(&expected.to_string()),
                "{expected} not in {tokens:?}"
            );
        }
        assert!(tokens.iter().all(|t| !t.trim().is_empty()));
    }

    #[test]
    fn overlong_tokens_are_dropped() {
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        let ok = "b".repeat(MAX_TOKEN_BYTES);
        let tokens = analyze(&format!("{long} {ok}"));
        assert_eq!(tokens, [ok]);
    }
}
