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
//!
//! [`query_tokens`] reads a *query*: the same chain with a stop-word filter
//! before the stemmer (NLTK's English list and the function words of its
//! Chinese list: "what", "do", "my", "我", "的", "是", "什么"…). The index keeps every word; only the question
//! loses the words that carry no topic, so that "What do I do for a living?"
//! does not find "I'm saving for a down payment" through "i" and "for", and
//! a Chinese question does not find every memory that says "我…的…是". A
//! query made of stop words alone ("who am I") keeps them all.

use std::sync::LazyLock;

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, Stemmer, StopWordFilter, TextAnalyzer, Token,
    TokenFilter, TokenStream, Tokenizer,
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

/// The query's Chinese stop words: the function words (虚词: adverbs,
/// prepositions, conjunctions, particles, interjections) and pronouns of
/// NLTK's Chinese list, by the part of speech jieba's dictionary gives them,
/// and the verbs that stand where the English list drops its auxiliaries
/// and modals ("is", "have", "do", "can", "will", "should"): the copula 是,
/// existential 有, modals 能, 要 and 应该, which NLTK's list holds and jieba
/// tags as verbs, and the light verb 做 ("我周末做什么运动？": "what do I do
/// at weekends") and modal 会, which NLTK's list lacks. Compounds keep their
/// meaning: jieba reads 做饭 ("cook") and 会议 ("meeting") as one word. NLTK's
/// list also holds content words — 今天, 开始, 安全, 严重, 一天 — that a
/// question about a memory may turn on; the test
/// `the_chinese_stop_words_are_the_function_words_of_nltks_list` derives
/// this file again from the two sources and compares.
const ZH_STOP_WORDS: &str = include_str!("zh_stop_words.txt");

/// The English modals whose negative contractions NLTK's list holds
/// ("couldn", "wouldn", "mightn", "mustn", "shan") but not the words
/// themselves, while it drops "can", "will" and "should": the counterparts
/// of the Chinese modals 能, 会, 要 and 应该. "may" stays: it is also the
/// month a question names ("what did I do in May?").
const EN_MODALS: [&str; 5] = ["could", "would", "might", "must", "shall"];

/// The query's stop words: NLTK's English list (Snowball's, as PostgreSQL's
/// `english` configuration) with [`EN_MODALS`], and [`ZH_STOP_WORDS`], lower
/// case, matched before stemming.
static STOP_WORDS: LazyLock<StopWordFilter> = LazyLock::new(|| {
    StopWordFilter::remove(
        stop_words::get("en")
            .iter()
            .copied()
            .chain(EN_MODALS)
            .chain(ZH_STOP_WORDS.lines())
            .map(str::to_lowercase),
    )
});

/// [`text_analyzer`] with the stop-word filter before the stemmer.
fn query_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(JiebaTokenizer::new())
        .filter(WordFilter)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES + 1))
        .filter(LowerCaser)
        .filter(STOP_WORDS.clone())
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
    tokens(text_analyzer(), text)
}

/// The tokens a query is searched with, in order, with repetitions: those
/// of [`analyze`] less the stop words when `drop_stop_words`, unless that
/// leaves none.
pub fn query_tokens(text: &str, drop_stop_words: bool) -> Vec<String> {
    if drop_stop_words {
        let content = tokens(query_analyzer(), text);
        if !content.is_empty() {
            return content;
        }
    }
    analyze(text)
}

fn tokens(mut analyzer: TextAnalyzer, text: &str) -> Vec<String> {
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
    fn a_query_loses_its_stop_words_in_both_languages() {
        assert_eq!(query_tokens("What do I do for a living?", true), ["live"]);
        assert_eq!(
            query_tokens("How old is my daughter?", true),
            ["old", "daughter"]
        );
        let zh = query_tokens("我存钱买房的目标是多少？", true);
        for gone in ["我", "的", "是"] {
            assert!(!zh.contains(&gone.to_string()), "{gone} in {zh:?}");
        }
        for kept in ["存钱", "买房", "目标", "多少"] {
            assert!(zh.contains(&kept.to_string()), "{kept} not in {zh:?}");
        }
        // The light verb and the modals go as "do" and "will" do; compounds
        // with them stay.
        assert_eq!(query_tokens("我周末做什么运动？", true), ["周末", "运动"]);
        let commute = query_tokens("我每天怎么去上班，路上要多久？", true);
        assert!(!commute.contains(&"要".to_string()), "{commute:?}");
        assert!(commute.contains(&"上班".to_string()), "{commute:?}");
        assert_eq!(query_tokens("你会说中文吗？", true), ["说", "中文"]);
        assert_eq!(
            query_tokens("Would Caroline still want to move abroad?", true),
            ["carolin", "still", "want", "move", "abroad"]
        );
        assert_eq!(query_tokens("What did I do in May?", true), ["may"]);
        assert!(query_tokens("我周末做饭吗？", true).contains(&"做饭".to_string()));
        assert!(query_tokens("周五的会议几点？", true).contains(&"会议".to_string()));
        // Off, the query reads as the index does.
        assert_eq!(
            query_tokens("What do I do for a living?", false),
            analyze("What do I do for a living?")
        );
    }

    /// The counterparts of the English list's auxiliaries and modals ("is",
    /// "have", "do", "can", "will", "should"): stop words though jieba tags
    /// them as verbs.
    const AUXILIARIES: [&str; 7] = ["是", "有", "做", "能", "会", "应该", "要"];

    #[test]
    fn the_chinese_stop_words_are_the_function_words_of_nltks_list() {
        // jieba's parts of speech: r pronoun, d adverb, p preposition,
        // c conjunction, u* particles, y modal particle, e interjection,
        // o onomatopoeia, zg (its tag for bound particles such as 乎, 矣, 啊).
        let function_word = |tag: &str| {
            matches!(tag, "r" | "d" | "p" | "c" | "y" | "e" | "o" | "zg") || tag.starts_with('u')
        };
        let jieba = tantivy_jieba::jieba_rs::Jieba::new();
        let nltk = stop_words::get("zh");
        let mut derived: Vec<&str> = nltk
            .iter()
            .copied()
            .filter(|w| match jieba.tag(w, false).as_slice() {
                [one] => one.word == *w && (function_word(one.tag) || AUXILIARIES.contains(w)),
                _ => false,
            })
            .collect();
        // Those NLTK's list lacks come last.
        derived.extend(AUXILIARIES.iter().filter(|w| !nltk.contains(w)));
        let shipped: Vec<&str> = ZH_STOP_WORDS.lines().collect();
        assert_eq!(shipped, derived);
        for w in AUXILIARIES {
            assert!(shipped.contains(&w), "{w}");
        }
        for kept in ["今天", "开始", "多少", "几"] {
            assert!(!shipped.contains(&kept), "{kept}");
        }
    }

    #[test]
    fn a_query_of_stop_words_alone_keeps_them() {
        assert_eq!(query_tokens("Who am I?", true), analyze("Who am I?"));
        assert_eq!(query_tokens("他们的", true), analyze("他们的"));
        assert!(query_tokens("", true).is_empty());
    }

    #[test]
    fn overlong_tokens_are_dropped() {
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        let ok = "b".repeat(MAX_TOKEN_BYTES);
        let tokens = analyze(&format!("{long} {ok}"));
        assert_eq!(tokens, [ok]);
    }
}
