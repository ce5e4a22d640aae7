//! The validation every entry point shares: texts, scores, ids, metadata,
//! within the limits the policy sets.

use crate::error::{Error, Result};

/// Limits shared by every entry point, taken from the policy.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_text_bytes: usize,
    pub max_metadata_bytes: usize,
    pub max_metadata_depth: usize,
}

impl Limits {
    /// The built-in limits with `max_text_bytes` (tests).
    pub fn with_text_bytes(max_text_bytes: usize) -> Self {
        Limits {
            max_text_bytes,
            max_metadata_bytes: MAX_METADATA_BYTES,
            max_metadata_depth: MAX_METADATA_DEPTH,
        }
    }
}

/// Checks a memory text: non-empty after trimming and within the size limit.
pub fn validate_text(text: &str, limits: Limits) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid("text", "text must not be empty"));
    }
    if text.len() > limits.max_text_bytes {
        return Err(Error::TooLarge {
            field: "text",
            message: format!(
                "text is {} bytes; the limit is {} bytes (policy limits.max_text_bytes)",
                text.len(),
                limits.max_text_bytes
            ),
        });
    }
    if text.contains('\0') {
        return Err(Error::invalid(
            "text",
            "text must not contain NUL characters",
        ));
    }
    Ok(())
}

/// Checks a score in 0..=1, naming the field on failure.
pub fn validate_unit(field: &'static str, value: f32) -> Result<()> {
    if !(0.0..=1.0).contains(&value) || value.is_nan() {
        return Err(Error::invalid(
            field,
            format!("{field} must be between 0 and 1, got {value}"),
        ));
    }
    Ok(())
}

/// Longest id, in bytes of UTF-8 (user, thread, tenant, document ids).
pub const MAX_ID_BYTES: usize = 256;

/// Smallest and largest model context window a request may name, in tokens
/// (`model_context_tokens` of context and prompt requests).
pub const MIN_CONTEXT_TOKENS: usize = 256;
pub const MAX_CONTEXT_TOKENS: usize = 10_000_000;

/// The sampling temperature a turn may ask for.
pub const MAX_TEMPERATURE: f32 = 2.0;

/// Checks a model context window against [`MIN_CONTEXT_TOKENS`] and
/// [`MAX_CONTEXT_TOKENS`].
pub fn validate_window(tokens: usize) -> Result<()> {
    if !(MIN_CONTEXT_TOKENS..=MAX_CONTEXT_TOKENS).contains(&tokens) {
        return Err(Error::invalid(
            "model_context_tokens",
            format!(
                "model_context_tokens must be between {MIN_CONTEXT_TOKENS} and {MAX_CONTEXT_TOKENS}"
            ),
        ));
    }
    Ok(())
}

/// Checks an identifier supplied by a caller (user, thread, tenant, document
/// ids): 1 to [`MAX_ID_BYTES`] bytes of UTF-8, any script (Chinese, emails, `:` `/` `@`
/// and spaces are fine), but none of the characters that make two ids look
/// the same or print what they are not: control characters (C0, C1, DEL),
/// invisible format characters (zero-width space/joiners, word joiner, BOM,
/// soft hyphen, the bidi embedding, override and isolate controls and the
/// other Unicode `Cf` characters), line and paragraph separators, and
/// noncharacters. See [`is_id_char`].
pub fn validate_id(field: &'static str, value: &str) -> Result<()> {
    validate_existing_id(field, value)?;
    if let Some(c) = value.chars().find(|c| !is_id_char(*c)) {
        return Err(Error::invalid(
            field,
            format!(
                "{field} must not contain invisible, bidi-control or format characters (found U+{:04X})",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// The rule ids were held to before [`validate_id`] restricted their
/// characters (length, no control characters): erasure and its verification
/// use it, so data stored under an id refused today can still be erased.
pub fn validate_existing_id(field: &'static str, value: &str) -> Result<()> {
    if value.is_empty() || value.len() > MAX_ID_BYTES {
        return Err(Error::invalid(
            field,
            format!("{field} must be 1 to {MAX_ID_BYTES} bytes long"),
        ));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(Error::invalid(
            field,
            format!("{field} must not contain control characters"),
        ));
    }
    Ok(())
}

/// Whether `c` may appear in an id: not a control character, not a Unicode
/// format character (general category `Cf`, listed here for Unicode 16), not
/// a line or paragraph separator, not a noncharacter.
pub fn is_id_char(c: char) -> bool {
    let u = c as u32;
    let refused = NOT_ID_CHARS.iter().any(|&(lo, hi)| (lo..=hi).contains(&u));
    let nonchar = (u & 0xFFFE) == 0xFFFE;
    !(c.is_control() || refused || nonchar)
}

/// The ranges [`is_id_char`] refuses besides control characters (`Cc`) and
/// the noncharacters U+nFFFE/U+nFFFF of every plane: the format characters
/// (`Cf`, Unicode 16), the line and paragraph separators, and the
/// noncharacters U+FDD0..U+FDEF.
const NOT_ID_CHARS: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x2029),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFDD0, 0xFDEF),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// [`is_id_char`] as a regular expression over a whole id, for the OpenAPI
/// document (`pattern`), built from the same table. It names the refused
/// characters of the Basic Multilingual Plane (`\uXXXX` escapes, which
/// ECMA-262, Python and Rust regexes all read alike); the few refused
/// characters above U+FFFF (format characters and noncharacters of the
/// other planes) are stated in the field's description instead, since a
/// pattern without the `u` flag cannot name them.
pub fn id_pattern() -> String {
    let mut class = String::from("\\u0000-\\u001F\\u007F-\\u009F");
    for &(lo, hi) in NOT_ID_CHARS.iter().filter(|(_, hi)| *hi <= 0xFFFF) {
        class.push_str(&format!("\\u{lo:04X}"));
        if hi != lo {
            class.push_str(&format!("-\\u{hi:04X}"));
        }
    }
    class.push_str("\\uFFFE-\\uFFFF");
    format!("^[^{class}]+$")
}

/// What [`validate_existing_id`] accepts, as a pattern: no control characters.
pub const EXISTING_ID_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$";

/// What [`validate_text`] accepts besides its length, as a pattern: no NUL,
/// and not only whitespace.
pub const TEXT_PATTERN: &str = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$";

/// Most bytes of a memory's `metadata` as compact JSON (the policy's
/// `limits.max_metadata_bytes` may lower it).
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Deepest nesting of `metadata` (the top-level object is depth 1).
pub const MAX_METADATA_DEPTH: usize = 8;

/// Checks a memory's metadata: at most `limits.max_metadata_bytes` bytes as
/// compact JSON and at most `limits.max_metadata_depth` levels of nesting
/// (the object itself is level 1), so that one memory cannot make a list page
/// or a reconcile load megabytes.
pub fn validate_metadata(
    metadata: &serde_json::Map<String, serde_json::Value>,
    limits: Limits,
) -> Result<()> {
    fn depth(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            serde_json::Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    let d = 1 + metadata.values().map(depth).max().unwrap_or(0);
    if d > limits.max_metadata_depth {
        return Err(Error::invalid(
            "metadata",
            format!(
                "metadata nests {d} levels deep; the limit is {} (policy limits.max_metadata_depth)",
                limits.max_metadata_depth
            ),
        ));
    }
    let bytes = serde_json::to_vec(metadata).map_or(usize::MAX, |b| b.len());
    if bytes > limits.max_metadata_bytes {
        return Err(Error::TooLarge {
            field: "metadata",
            message: format!(
                "metadata is {bytes} bytes as JSON; the limit is {} bytes (policy limits.max_metadata_bytes)",
                limits.max_metadata_bytes
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Kind, Status, Tier};

    #[test]
    fn tiers_kinds_and_statuses_round_trip_through_strings() {
        for t in Tier::ALL {
            assert_eq!(t.as_str().parse::<Tier>().unwrap(), t);
        }
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>().unwrap(), k);
        }
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>().unwrap(), s);
        }
        let err = "episodic".parse::<Tier>().unwrap_err();
        assert_eq!(err.field(), Some("tier"));
    }

    #[test]
    fn text_validation_names_the_problem() {
        let limits = Limits::with_text_bytes(8);
        assert!(validate_text("ok", limits).is_ok());
        assert_eq!(
            validate_text("   ", limits).unwrap_err().field(),
            Some("text")
        );
        assert!(matches!(
            validate_text("123456789", limits),
            Err(Error::TooLarge { .. })
        ));
        assert!(validate_unit("importance", 1.5).is_err());
        assert!(validate_unit("importance", f32::NAN).is_err());
        assert!(validate_unit("importance", 0.0).is_ok());
    }

    #[test]
    fn ids_keep_scripts_and_refuse_invisible_characters() {
        for ok in [
            "alice",
            "李雷",
            "ann@example.com",
            "tenant:a/b",
            "Ann Smith",
            "ユーザー",
        ] {
            assert!(validate_id("user_id", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "a\u{0}b",
            "a\nb",
            "ali\u{202E}ce",
            "a\u{200B}b",
            "a\u{200D}b",
            "\u{FEFF}a",
            "a\u{2066}b",
            "a\u{00AD}b",
            "a\u{2028}b",
            "a\u{FFFF}",
            "a\u{E0041}",
        ] {
            assert!(validate_id("user_id", bad).is_err(), "{bad:?}");
        }
        // Erasure still accepts what was accepted before the restriction.
        assert!(validate_existing_id("user_id", "ali\u{202E}ce").is_ok());
        assert!(validate_existing_id("user_id", "a\nb").is_err());
        let long = "x".repeat(MAX_ID_BYTES + 1);
        assert!(validate_id("user_id", &long).is_err());
        assert!(validate_id("user_id", &long[1..]).is_ok());
    }

    /// The OpenAPI pattern says what `validate_id` says, for every character
    /// of the Basic Multilingual Plane (the ones it can name).
    #[test]
    fn the_id_pattern_agrees_with_the_validator_on_every_bmp_character() {
        let pattern = regex::Regex::new(&id_pattern()).unwrap();
        let existing = regex::Regex::new(EXISTING_ID_PATTERN).unwrap();
        for u in 0..=0xFFFFu32 {
            let Some(c) = char::from_u32(u) else { continue };
            let id = format!("a{c}b");
            assert_eq!(
                pattern.is_match(&id),
                validate_id("user_id", &id).is_ok(),
                "U+{u:04X}"
            );
            assert_eq!(
                existing.is_match(&id),
                validate_existing_id("user_id", &id).is_ok(),
                "U+{u:04X}"
            );
        }
        let text = regex::Regex::new(TEXT_PATTERN).unwrap();
        let limits = Limits::with_text_bytes(1000);
        for t in ["ok", " a ", "", "   ", "\t\n", "a\0b", "\0"] {
            assert_eq!(text.is_match(t), validate_text(t, limits).is_ok(), "{t:?}");
        }
        assert!(validate_window(MIN_CONTEXT_TOKENS).is_ok());
        assert!(validate_window(MAX_CONTEXT_TOKENS).is_ok());
        assert!(validate_window(MIN_CONTEXT_TOKENS - 1).is_err());
        assert!(validate_window(MAX_CONTEXT_TOKENS + 1).is_err());
    }

    #[test]
    fn metadata_is_bounded_in_size_and_depth() {
        let limits = Limits {
            max_text_bytes: 100,
            max_metadata_bytes: 64,
            max_metadata_depth: 3,
        };
        let obj = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert!(validate_metadata(&obj(serde_json::json!({"a": {"b": 1}})), limits).is_ok());
        assert!(validate_metadata(&obj(serde_json::json!({"a": {"b": [1]}})), limits).is_ok());
        let deep = validate_metadata(
            &obj(serde_json::json!({"a": {"b": {"c": {"d": 1}}}})),
            limits,
        );
        assert_eq!(deep.unwrap_err().field(), Some("metadata"));
        let big = obj(serde_json::json!({"a": "x".repeat(100)}));
        assert!(matches!(
            validate_metadata(&big, limits),
            Err(Error::TooLarge {
                field: "metadata",
                ..
            })
        ));
        assert!(validate_metadata(&Default::default(), limits).is_ok());
    }
}
