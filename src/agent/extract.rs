//! Extraction of candidate long-term memories from a user's turn.
//!
//! [`RuleExtractor`] works offline in English and Chinese: statements of
//! preference ("I prefer", "我喜欢"), instruction ("from now on", "以后都"),
//! stable fact ("my … is", "我的…是") and correction ("actually", "不对，是")
//! become candidates; hedged statements ("maybe next week", "可能下周") get a
//! confidence under the pending threshold, so they wait for confirmation;
//! questions are never extracted. A model-based extractor implements the same
//! trait when a model is configured. Candidates go to the lifecycle rules
//! (pending, supersede, reinforce) — the extractor decides nothing else.

use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::domain::Kind;
use crate::error::Result;

/// A memory the user's words suggest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub text: String,
    pub kind: Kind,
    pub confidence: f32,
    /// The statement corrects something said before.
    pub correction: bool,
}

/// Reads one user message and proposes memories. Async because the
/// model-based extractor calls a model; the rule-based one never fails.
#[async_trait]
pub trait Extractor: Send + Sync {
    async fn extract(&self, user_message: &str) -> Result<Vec<Candidate>>;
    /// Whether `extract` calls the chat model (counted against the user's
    /// `limits.model_calls_per_user_per_minute`, `quota.rs`).
    fn calls_model(&self) -> bool {
        false
    }
}

/// Confidence of a plain, unhedged statement per kind, and of a hedged one.
const PREFERENCE: f32 = 0.85;
const INSTRUCTION: f32 = 0.9;
const FACT: f32 = 0.75;
const HEDGED: f32 = 0.4;

struct Rule {
    kind: Kind,
    confidence: f32,
    pattern: Regex,
}

fn rule(kind: Kind, confidence: f32, pattern: &str) -> Rule {
    Rule {
        kind,
        confidence,
        pattern: Regex::new(pattern).expect("valid extraction pattern"),
    }
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            Kind::Instruction,
            INSTRUCTION,
            r"(?i)\b(from now on|always|never|remember that|remember:|please don't ever|don't ever|make sure to)\b|以后都|以后请|从现在开始|记住|永远不要|总是",
        ),
        rule(
            Kind::Preference,
            PREFERENCE,
            r"(?i)\b(i ((really|might|probably|also|still) )?(prefer|like|love|enjoy|hate|dislike|can.t stand)|i don't like|i do not like|my favou?rite)\b|我(很|更|最|不|特别|也|可能|也许)?喜欢|我爱|我讨厌|偏好|我更愿意",
        ),
        rule(
            Kind::Fact,
            FACT,
            r"(?i)\b(my [a-z' ]{1,30} (is|are|was)|i am|i'm|i live|i work|i have|i was born|i'm allergic|i am allergic)\b|我的.{1,12}是|我是|我住在|我在.{1,12}工作|我有|我对.{1,8}过敏",
        ),
    ]
});

static CORRECTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(actually|correction|no,? it'?s|i meant|sorry,? i meant)\b|不对，?是|我之前说错了|说错了|改成|其实是").expect("valid pattern")
});

static HEDGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(maybe|might|probably|perhaps|possibly|not sure|i think|i guess|kind of)\b|可能|也许|大概|或许|不确定|说不定").expect("valid pattern")
});

/// Splits a message into sentences on Latin and CJK end punctuation and lines.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n' | ';' | '；') {
            let end = i + c.len_utf8();
            out.push(&text[start..end]);
            start = end;
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The offline, rule-based extractor.
#[derive(Debug, Default, Clone, Copy)]
pub struct RuleExtractor;

#[async_trait]
impl Extractor for RuleExtractor {
    async fn extract(&self, user_message: &str) -> Result<Vec<Candidate>> {
        Ok(self.candidates(user_message))
    }
}

impl RuleExtractor {
    /// The candidates the rules find (what [`Extractor::extract`] returns).
    pub fn candidates(&self, user_message: &str) -> Vec<Candidate> {
        let mut out = Vec::new();
        for sentence in sentences(user_message) {
            if sentence.ends_with('?') || sentence.ends_with('？') || sentence.chars().count() < 4
            {
                continue;
            }
            let correction = CORRECTION.is_match(sentence);
            let matched = RULES.iter().find(|r| r.pattern.is_match(sentence));
            let (kind, confidence) = match (matched, correction) {
                (Some(r), _) => (r.kind, r.confidence),
                // A bare correction ("不对，是周四") still states a fact.
                (None, true) => (Kind::Fact, FACT),
                (None, false) => continue,
            };
            let confidence = if HEDGE.is_match(sentence) {
                HEDGED
            } else {
                confidence
            };
            out.push(Candidate {
                text: sentence
                    .trim_end_matches(['.', '。', ';', '；'])
                    .to_string(),
                kind,
                confidence,
                correction,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per candidate: (kind, confident enough to be active?, correction?).
    type Expected = &'static [(Kind, bool, bool)];

    const TABLE: &[(&str, Expected)] = &[
        (
            "I prefer green tea over coffee.",
            &[(Kind::Preference, true, false)],
        ),
        (
            "From now on, answer in French.",
            &[(Kind::Instruction, true, false)],
        ),
        ("My daughter's name is Ana.", &[(Kind::Fact, true, false)]),
        (
            "Remember that my flight lands at 9.",
            &[(Kind::Instruction, true, false)],
        ),
        ("Maybe I'll visit Rome next week.", &[]),
        (
            "I might like jazz, not sure.",
            &[(Kind::Preference, false, false)],
        ),
        (
            "Actually, my office is in Lyon now.",
            &[(Kind::Fact, true, true)],
        ),
        ("What's the weather like?", &[]),
        ("Thanks!", &[]),
        ("我喜欢喝绿茶。", &[(Kind::Preference, true, false)]),
        ("以后都用中文回答我。", &[(Kind::Instruction, true, false)]),
        ("我的生日是五月三号。", &[(Kind::Fact, true, false)]),
        ("我对花生过敏。", &[(Kind::Fact, true, false)]),
        ("可能下周我会去上海。", &[]),
        ("我之前说错了，改成周四开会。", &[(Kind::Fact, true, true)]),
        ("不对，是周五。", &[(Kind::Fact, true, true)]),
        ("你觉得怎么样？", &[]),
        (
            "I love hiking. Also, my car is a blue Golf.",
            &[(Kind::Preference, true, false), (Kind::Fact, true, false)],
        ),
        ("我可能喜欢爵士乐。", &[(Kind::Preference, false, false)]),
    ];

    #[test]
    fn the_table_of_utterances() {
        for (utterance, expected) in TABLE {
            let got: Vec<(Kind, bool, bool)> = RuleExtractor
                .candidates(utterance)
                .into_iter()
                .map(|c| (c.kind, c.confidence >= 0.6, c.correction))
                .collect();
            // "Maybe I'll visit Rome" and "可能下周…" state nothing the rules know:
            // no candidate rather than a low-confidence one.
            assert_eq!(&got, expected, "{utterance}");
        }
    }

    #[test]
    fn hedged_statements_fall_under_the_pending_threshold() {
        let c = &RuleExtractor.candidates("I think I prefer aisle seats")[0];
        assert_eq!(c.kind, Kind::Preference);
        assert!(
            c.confidence
                < crate::policy::Policy::default()
                    .lifecycle
                    .pending_below_confidence
        );
        assert_eq!(c.text, "I think I prefer aisle seats");
    }
}
