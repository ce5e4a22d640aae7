//! The memory lifecycle's pure rules: when two texts state the same fact,
//! when a text is an explicit correction, how importance follows access heat
//! and age, and which sweep step a memory is due for. No I/O: the service
//! (`service/remember.rs`) and the jobs ([`crate::jobs`]) apply them.
//!
//! Both "same fact" and "correction" are deliberately conservative: a false
//! merge loses a memory's meaning (two facts become one), a missed merge only
//! leaves a duplicate that the next observation or a reviewer can fold in.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

// ----- same fact ----------------------------------------------------------

/// Thresholds for "the same fact observed again" (from the policy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatchRule {
    /// Cosine similarity of the two embeddings, at least.
    pub min_similarity: f32,
    /// Jaccard overlap of the content tokens ([`content_tokens`]), at least.
    pub min_overlap: f32,
}

/// Words that carry no subject: dropped before measuring overlap.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "am", "to", "of", "in", "on", "at",
    "for", "and", "or", "it", "its", "this", "that", "s", "t", "i", "my", "me", "now", "really",
    "very", "so", "just", "also", "too", "lot", "lots", "actually", "user", "user's", "users",
    "has", "have", "had", "with", "by", "as", "do", "does", "did",
];

/// Han ideographs only, the characters read as bigrams here (unlike
/// `script::is_cjk`, which also counts kana and Hangul as CJK script).
fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// The tokens that carry a text's subject: lower-cased words minus stop
/// words, and Chinese as character bigrams (a single character alone).
pub fn content_tokens(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let lower = text.to_lowercase();
    let mut word = String::new();
    let mut han: Vec<char> = Vec::new();
    let flush_word = |w: &mut String, out: &mut HashSet<String>| {
        if !w.is_empty() && !STOPWORDS.contains(&w.as_str()) {
            out.insert(std::mem::take(w));
        }
        w.clear();
    };
    let flush_han = |h: &mut Vec<char>, out: &mut HashSet<String>| {
        match h.len() {
            0 => {}
            1 => {
                out.insert(h[0].to_string());
            }
            _ => {
                for pair in h.windows(2) {
                    out.insert(pair.iter().collect());
                }
            }
        }
        h.clear();
    };
    for c in lower.chars() {
        if is_han(c) {
            flush_word(&mut word, &mut out);
            han.push(c);
        } else if c.is_alphanumeric() {
            flush_han(&mut han, &mut out);
            word.push(c);
        } else {
            flush_word(&mut word, &mut out);
            flush_han(&mut han, &mut out);
        }
    }
    flush_word(&mut word, &mut out);
    flush_han(&mut han, &mut out);
    out
}

/// Jaccard overlap of two texts' content tokens, 0..1 (1 when both are empty).
pub fn lexical_overlap(a: &str, b: &str) -> f32 {
    let (a, b) = (content_tokens(a), content_tokens(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(&b).count();
    let union = a.union(&b).count();
    inter as f32 / union as f32
}

const NEGATIONS_EN: &[&str] = &[
    "not", "no", "never", "dislike", "dislikes", "hate", "hates", "cannot", "nobody", "nothing",
    "neither", "nor", "without",
];
const NEGATIONS_ZH: &[char] = &['不', '没', '别', '非', '无', '未'];

/// Whether a text is negated ("does not like", "dislikes", "不喜欢").
pub fn is_negated(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("n't")
        || lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| NEGATIONS_EN.contains(&w))
        || lower.chars().any(|c| NEGATIONS_ZH.contains(&c))
}

/// The numbers a text states ("3pm" and "5pm" are different facts).
fn numbers(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Whether a new text states the same fact as a stored one: similar
/// embeddings, enough shared content words, the same polarity and the same
/// numbers. Any doubt says no.
pub fn same_fact(similarity: f32, new_text: &str, old_text: &str, rule: MatchRule) -> bool {
    similarity >= rule.min_similarity
        && lexical_overlap(new_text, old_text) >= rule.min_overlap
        && is_negated(new_text) == is_negated(old_text)
        && numbers(new_text) == numbers(old_text)
}

// ----- corrections --------------------------------------------------------

/// English cues that open a correction (matched at the start of the text).
const CUES_EN_LEADING: &[&str] = &[
    "actually,",
    "actually ",
    "no, ",
    "no it's",
    "no it is",
    "nope,",
    "correction:",
    "correction,",
    "scratch that",
    "sorry, i meant",
    "i meant",
];
/// English cues anywhere in the text.
const CUES_EN_ANYWHERE: &[&str] = &[
    "i was wrong",
    "i misspoke",
    "i made a mistake",
    "let me correct",
    "to correct myself",
    "that's not right",
    "that is not right",
    "that was wrong",
];
/// Chinese cues anywhere in the text. `不对` only with what follows it
/// (`不对称` is "asymmetric", not a correction).
const CUES_ZH: &[&str] = &[
    "说错了",
    "说错",
    "搞错了",
    "记错了",
    "更正",
    "纠正",
    "不对，",
    "不对,",
    "不对。",
    "不对！",
    "不对是",
    "不对，是",
];

/// The correction cue a text opens with or contains, if any: "actually…",
/// "no, it's…", "I was wrong…", "我之前说错了，改成…", "不对，是…".
pub fn correction_cue(text: &str) -> Option<&'static str> {
    let lower = text.trim_start().to_lowercase().replace('’', "'");
    CUES_EN_LEADING
        .iter()
        .find(|c| lower.starts_with(**c))
        .or_else(|| CUES_EN_ANYWHERE.iter().find(|c| lower.contains(**c)))
        .or_else(|| CUES_ZH.iter().find(|c| lower.contains(**c)))
        .map(|c| c.trim_end_matches([',', ' ', ':', '，', '。', '！']))
}

/// A correction's text without its cue words, for measuring overlap with
/// the memory it corrects.
pub fn without_cue(text: &str) -> String {
    let mut t = text.to_lowercase().replace('’', "'");
    for cue in CUES_EN_LEADING
        .iter()
        .chain(CUES_EN_ANYWHERE)
        .chain(CUES_ZH)
        .chain(&["我之前", "改成", "应该是", "其实是"])
    {
        t = t.replace(cue, " ");
    }
    t
}

/// Thresholds for "this correction replaces that memory" (from the policy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CorrectionRule {
    pub min_similarity: f32,
    pub min_overlap: f32,
}

/// Whether `new_text`, a correction (it has a cue), replaces `old_text`:
/// similar embeddings and a shared subject (content-word overlap once the
/// cue is removed). The caller checks owner, tier and kind.
pub fn corrects(similarity: f32, new_text: &str, old_text: &str, rule: CorrectionRule) -> bool {
    correction_cue(new_text).is_some()
        && similarity >= rule.min_similarity
        && lexical_overlap(&without_cue(new_text), old_text) >= rule.min_overlap
}

// ----- importance from heat and age ---------------------------------------

/// The weights of the weekly importance recomputation (from the policy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImportanceRule {
    /// Access heat halves after this many days without access.
    pub heat_half_life_days: f64,
    /// Most importance that heat can add (heat saturates towards it).
    pub heat_weight: f64,
    /// Most importance that age can take away.
    pub age_weight: f64,
    /// Age at which half of `age_weight` is taken away.
    pub age_half_life_days: f64,
}

fn days(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    ((to - from).num_milliseconds() as f64 / 86_400_000.0).max(0.0)
}

/// Access heat now: the access count, halved every `half_life` days since
/// the later of the last access and the last cooling (so that cooling, which
/// writes the decayed count back, never decays the same days twice).
pub fn heat(
    access_count: u64,
    last_accessed_at: Option<DateTime<Utc>>,
    cooled_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    half_life_days: f64,
) -> f64 {
    let since = match (last_accessed_at, cooled_at) {
        (Some(a), Some(c)) => a.max(c),
        (Some(a), None) => a,
        (None, Some(c)) => c,
        (None, None) => return 0.0,
    };
    access_count as f64 * 0.5f64.powf(days(since, now) / half_life_days)
}

/// The importance a memory should have now: its base importance (the one
/// its writer gave it, or reinforcement raised), plus a heat bonus that
/// saturates at `heat_weight` (heat h adds `heat_weight · h/(h+1)`), minus an
/// age penalty that grows towards `age_weight` (half of it at
/// `age_half_life_days`), clamped to 0..1. Idempotent: a function of the base,
/// never of the previous result.
pub fn recomputed_importance(
    base_importance: f32,
    heat: f64,
    age_days: f64,
    rule: ImportanceRule,
) -> f32 {
    let bonus = rule.heat_weight * heat / (heat + 1.0);
    let penalty = rule.age_weight * (1.0 - 0.5f64.powf(age_days / rule.age_half_life_days));
    (base_importance as f64 + bonus - penalty).clamp(0.0, 1.0) as f32
}

/// What the weekly cleanup decides for one long-term memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CleanupDecision {
    pub importance: f32,
    /// `Some(count)` when the heat is cooled (written back as the count).
    pub cooled_access_count: Option<u64>,
    /// Soft-delete: below the floor and not accessed for long.
    pub delete: bool,
}

/// The weekly cleanup's rule for one memory (see `[cleanup]` in the policy).
#[allow(clippy::too_many_arguments)]
pub fn cleanup_decision(
    base_importance: f32,
    access_count: u64,
    created_at: DateTime<Utc>,
    last_accessed_at: Option<DateTime<Utc>>,
    cooled_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    rule: ImportanceRule,
    min_importance: f32,
    unaccessed_days: u32,
) -> CleanupDecision {
    let h = heat(
        access_count,
        last_accessed_at,
        cooled_at,
        now,
        rule.heat_half_life_days,
    );
    let idle_days = days(last_accessed_at.unwrap_or(created_at), now);
    let since_heat = days(last_accessed_at.max(cooled_at).unwrap_or(created_at), now);
    let cooled = h.floor() as u64;
    let cooled_access_count =
        (access_count > 0 && since_heat >= rule.heat_half_life_days && cooled < access_count)
            .then_some(cooled);
    // Cooling writes the count back rounded down; score with that value so
    // that a second run at the same instant decides exactly the same.
    let h = cooled_access_count.map_or(h, |c| c as f64);
    let importance = recomputed_importance(base_importance, h, days(created_at, now), rule);
    CleanupDecision {
        importance,
        cooled_access_count,
        delete: importance < min_importance && idle_days >= unaccessed_days as f64,
    }
}

// ----- the TTL sweep's steps ----------------------------------------------

/// One step of the TTL sweep; each selects memories by state and time only,
/// so a step is idempotent and a crashed sweep resumes by running again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SweepStep {
    /// `active`/`pending` whose `expires_at` has passed → `expired`.
    Expire,
    /// `pending` created before the cutoff (`pending_ttl_days`) → `expired`.
    ExpirePending,
    /// `expired` since before the cutoff (`expired_grace_days`) → `archived`.
    Archive,
    /// `archived` since before the cutoff (`archived_grace_days`) → `deleted`.
    Delete,
    /// `deleted` since before the cutoff (`deleted_retention_days`) → purged.
    Purge,
}

impl SweepStep {
    /// In the order a sweep runs them: the latest stage first, so that one
    /// run moves a memory at most one step.
    pub const ORDER: [SweepStep; 5] = [
        SweepStep::Purge,
        SweepStep::Delete,
        SweepStep::Archive,
        SweepStep::ExpirePending,
        SweepStep::Expire,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SweepStep::Expire => "expire",
            SweepStep::ExpirePending => "expire_pending",
            SweepStep::Archive => "archive",
            SweepStep::Delete => "delete",
            SweepStep::Purge => "purge",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    #[test]
    fn correction_cues_en_and_zh() {
        let table: &[(&str, bool)] = &[
            ("Actually, I live in Berlin now", true),
            ("actually the meeting is on Friday", true),
            ("No, it's Tuesday, not Monday", true),
            ("No it’s the blue one", true),
            ("Correction: my sister is called Ana", true),
            ("Sorry, I meant oat milk", true),
            ("I was wrong about the date, it's the 5th", true),
            ("Scratch that, I prefer aisle seats", true),
            ("我之前说错了，改成每周三开会", true),
            ("不对，是周四", true),
            ("我记错了，生日是五月", true),
            ("更正一下：电话是新的", true),
            // not corrections
            ("The user actually enjoys hiking", false),
            ("No sugar in coffee, please", false),
            ("Nobody told me about the meeting", false),
            ("The user prefers green tea", false),
            ("这个设计不对称", false),
            ("用户喜欢喝绿茶", false),
            ("I know what I meant to say is hard", false),
        ];
        for (text, want) in table {
            assert_eq!(correction_cue(text).is_some(), *want, "{text}");
        }
        assert_eq!(correction_cue("Actually, no"), Some("actually"));
    }

    #[test]
    fn same_fact_needs_overlap_polarity_and_numbers() {
        let rule = MatchRule {
            min_similarity: 0.85,
            min_overlap: 0.6,
        };
        assert!(same_fact(
            0.95,
            "User prefers green tea",
            "The user prefers green tea.",
            rule
        ));
        assert!(!same_fact(
            0.95,
            "The user dislikes green tea",
            "The user likes green tea",
            rule
        ));
        assert!(!same_fact(
            0.95,
            "The user doesn't like green tea",
            "The user likes green tea",
            rule
        ));
        assert!(!same_fact(
            0.95,
            "Dentist appointment at 3pm",
            "Dentist appointment at 5pm",
            rule
        ));
        assert!(!same_fact(
            0.95,
            "The user's sister is called Maria",
            "The user's brother is called Mario",
            rule
        ));
        assert!(!same_fact(
            0.80,
            "User prefers green tea",
            "The user prefers green tea",
            rule
        ));
        assert!(same_fact(0.97, "用户喜欢喝绿茶", "用户喜欢喝绿茶。", rule));
        assert!(!same_fact(0.97, "用户不喜欢喝绿茶", "用户喜欢喝绿茶", rule));
    }

    #[test]
    fn corrections_need_a_shared_subject() {
        let rule = CorrectionRule {
            min_similarity: 0.5,
            min_overlap: 0.25,
        };
        assert!(corrects(
            0.7,
            "Actually, the user lives in Berlin",
            "The user lives in Paris",
            rule
        ));
        assert!(corrects(
            0.7,
            "我之前说错了，改成用户住在北京",
            "用户住在上海",
            rule
        ));
        assert!(!corrects(
            0.7,
            "Actually, the weather was nice",
            "The user lives in Paris",
            rule
        ));
        assert!(!corrects(
            0.7,
            "The user lives in Berlin",
            "The user lives in Paris",
            rule
        ));
    }

    fn rule() -> ImportanceRule {
        ImportanceRule {
            heat_half_life_days: 30.0,
            heat_weight: 0.3,
            age_weight: 0.5,
            age_half_life_days: 180.0,
        }
    }

    #[test]
    fn importance_rises_with_heat_and_falls_with_age() {
        let r = rule();
        let fresh = recomputed_importance(0.5, 0.0, 0.0, r);
        assert!((fresh - 0.5).abs() < 1e-6);
        let hot = recomputed_importance(0.5, 10.0, 0.0, r);
        assert!(hot > 0.75 && hot < 0.8, "{hot}");
        let half = recomputed_importance(0.5, 0.0, 180.0, r);
        assert!((half - 0.25).abs() < 1e-6, "{half}");
        assert_eq!(recomputed_importance(0.1, 0.0, 10_000.0, r), 0.0);
        assert_eq!(recomputed_importance(1.0, 1e9, 0.0, r), 1.0);
        // monotone in heat and age
        let mut last = 0.0;
        for h in [0.0, 0.5, 1.0, 4.0, 100.0] {
            let v = recomputed_importance(0.4, h, 30.0, r);
            assert!(v >= last);
            last = v;
        }
    }

    #[test]
    fn heat_halves_and_cooling_is_idempotent() {
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let d = |n| t0 + Duration::days(n);
        assert_eq!(heat(8, None, None, d(10), 30.0), 0.0);
        assert!((heat(8, Some(t0), None, d(30), 30.0) - 4.0).abs() < 1e-9);
        assert!((heat(8, Some(t0), None, d(60), 30.0) - 2.0).abs() < 1e-9);
        // after cooling at day 30 (count written back as 4), day 60 gives 2 again
        assert!((heat(4, Some(t0), Some(d(30)), d(60), 30.0) - 2.0).abs() < 1e-9);

        let dec = |count, cooled, now| {
            cleanup_decision(0.5, count, t0, Some(t0), cooled, now, rule(), 0.1, 90)
        };
        assert_eq!(dec(8, None, d(10)).cooled_access_count, None);
        assert_eq!(dec(8, None, d(30)).cooled_access_count, Some(4));
        assert_eq!(dec(4, Some(d(30)), d(30)).cooled_access_count, None);
        assert_eq!(dec(4, Some(d(30)), d(60)).cooled_access_count, Some(2));
    }

    #[test]
    fn a_second_decision_at_the_same_instant_is_the_same() {
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let now = t0 + Duration::days(200);
        for count in [0u64, 1, 3, 7, 50] {
            for last in [None, Some(t0 + Duration::days(20)), Some(now)] {
                let a = cleanup_decision(0.3, count, t0, last, None, now, rule(), 0.1, 90);
                let count2 = a.cooled_access_count.unwrap_or(count);
                let cooled = a.cooled_access_count.map(|_| now);
                let b = cleanup_decision(0.3, count2, t0, last, cooled, now, rule(), 0.1, 90);
                assert_eq!(a.importance, b.importance, "{count} {last:?}");
                assert_eq!(a.delete, b.delete);
                assert_eq!(b.cooled_access_count, None);
            }
        }
    }

    #[test]
    fn cleanup_deletes_only_unimportant_and_idle() {
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let d = |n| t0 + Duration::days(n);
        let dec = |base, last: Option<DateTime<Utc>>, now| {
            cleanup_decision(base, 1, t0, last, None, now, rule(), 0.1, 90)
        };
        // low importance but accessed recently: kept
        assert!(!dec(0.1, Some(d(350)), d(365)).delete);
        // low importance, idle for a year: deleted
        assert!(dec(0.2, None, d(365)).delete);
        // important, idle: kept
        assert!(!dec(0.9, None, d(365)).delete);
        // young: kept whatever the importance
        assert!(!dec(0.05, None, d(30)).delete);
    }
}
