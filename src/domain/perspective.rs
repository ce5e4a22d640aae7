//! Perspective: agents ask about "the user", "用户", "she"; users wrote "I",
//! "my", "我". A question about the user is read in the user's own first
//! person before either leg sees it, so that both match the way memories are
//! written: "Where did the user go on her honeymoon?" is searched as "Where
//! did I go on my honeymoon?", "用户有没有请阿姨？" as "我有没有请阿姨？".
//! Nothing is re-indexed: only the query changes (`[retrieval]
//! perspective`; measured in docs/decisions/0024-perspective.md).
//!
//! The third-person pronouns ("she", "her", "他", "她"…) are read as the user
//! only in a question that names the user, where they most likely refer to
//! them; elsewhere they may be anyone's. The user's own name is not known
//! here and is left as it is.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// English: "the user('s)" and, in a question that names the user, the
/// third-person pronouns. Longest alternatives first.
static ENGLISH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(to|with|for|about|of|from|by|at|on|in|than|like|tell|ask|give|help|remind|call|email|text|send|show)\s+)?(?:the\s+)?(user'?s|user|users')\b(\s+\w+)?",
    )
    .expect("a valid pattern")
});
static PRONOUN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(she|he|her|his|him|herself|himself|hers)\b").expect("a valid pattern")
});
static NAMES_USER_EN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bthe\s+user('s)?\b").expect("a valid pattern"));

/// Words after "user" that make it a product's user, not the person asked
/// about.
const TECHNICAL: [&str; 16] = [
    "interface",
    "interfaces",
    "experience",
    "base",
    "guide",
    "manual",
    "account",
    "accounts",
    "agreement",
    "group",
    "training",
    "feedback",
    "research",
    "story",
    "stories",
    "id",
];

/// The question in the user's first person; borrowed when nothing changes.
pub fn first_person(query: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(query);
    if NAMES_USER_EN.is_match(query) {
        let replaced = ENGLISH.replace_all(&out, |c: &Captures| {
            let next = c.get(3).map_or("", |m| m.as_str());
            if TECHNICAL.contains(&next.trim().to_ascii_lowercase().as_str()) {
                // "the user interface", "user training": a product's users.
                return c[0].to_string();
            }
            let noun = c[2].to_ascii_lowercase();
            let possessive = noun.ends_with('s') && noun != "user";
            let word = if possessive {
                "my"
            } else if c.get(1).is_some() {
                "me"
            } else {
                "I"
            };
            match c.get(1) {
                Some(p) => format!("{} {word}{next}", p.as_str()),
                None => format!("{word}{next}"),
            }
        });
        let replaced = PRONOUN.replace_all(&replaced, |c: &Captures| {
            match c[1].to_ascii_lowercase().as_str() {
                "she" | "he" => "I",
                "her" | "his" => "my",
                "him" => "me",
                "hers" => "mine",
                _ => "myself",
            }
            .to_string()
        });
        out = Cow::Owned(replaced.into_owned());
    }
    if out.contains("用户") {
        let zh = out
            .replace("用户们", "我")
            .replace("用户", "我")
            .replace("他们", "\u{0}")
            .replace("她们", "\u{1}")
            .replace(['他', '她'], "我")
            .replace('\u{0}', "他们")
            .replace('\u{1}', "她们");
        out = Cow::Owned(zh);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_about_the_user_reads_in_the_first_person() {
        for (asked, read) in [
            (
                "Where did the user go on her honeymoon?",
                "Where did I go on my honeymoon?",
            ),
            ("What is the user's job?", "What is my job?"),
            (
                "Which nurse works with the user now?",
                "Which nurse works with me now?",
            ),
            ("food the user cannot eat", "food I cannot eat"),
            (
                "What accent does the User have?",
                "What accent does I have?",
            ),
            ("用户有没有请阿姨？", "我有没有请阿姨？"),
            (
                "用户的女儿在哪里上学？她学什么？",
                "我的女儿在哪里上学？我学什么？",
            ),
            ("用户和他们一起去了吗", "我和他们一起去了吗"),
        ] {
            assert_eq!(first_person(asked), read, "{asked}");
        }
    }

    #[test]
    fn other_questions_are_left_as_they_are() {
        assert_eq!(
            first_person("Is the user training on Monday for the user?"),
            "Is the user training on Monday for me?"
        );
        for q in [
            "What did she say about the report?",
            "user interface of the new app",
            "他喜欢什么？",
            "drinks",
        ] {
            assert!(matches!(first_person(q), Cow::Borrowed(_)), "{q}");
        }
    }
}
