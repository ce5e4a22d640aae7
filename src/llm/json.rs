//! Schema checks for a model's structured (JSON) answers: the object is cut
//! out of the reply (models wrap it in prose or code fences despite being
//! asked not to), parsed into a `deny_unknown_fields` type, and its values
//! checked. Anything off is [`LlmError::BadResponse`], never a panic.

use serde::de::DeserializeOwned;

use super::LlmError;

/// The outermost `{…}` of a reply, parsed into `T`.
pub fn parse_object<T: DeserializeOwned>(reply: &str) -> Result<T, LlmError> {
    let start = reply.find('{');
    let end = reply.rfind('}');
    let object = match (start, end) {
        (Some(s), Some(e)) if s < e => &reply[s..=e],
        _ => {
            return Err(LlmError::BadResponse(
                "the reply holds no JSON object".into(),
            ))
        }
    };
    serde_json::from_str(object)
        .map_err(|e| LlmError::BadResponse(format!("the JSON does not match the schema: {e}")))
}

/// A required text field: trimmed, not empty, at most `max_chars` characters.
pub fn text(field: &str, value: &str, max_chars: usize) -> Result<String, LlmError> {
    let t = value.trim();
    if t.is_empty() {
        return Err(LlmError::BadResponse(format!("`{field}` is empty")));
    }
    let n = t.chars().count();
    if n > max_chars {
        return Err(LlmError::BadResponse(format!(
            "`{field}` has {n} characters, more than {max_chars}"
        )));
    }
    Ok(t.to_string())
}

/// A list of at most `max_items` texts, each checked with [`text`].
pub fn texts(
    field: &str,
    values: &[String],
    max_items: usize,
    max_chars: usize,
) -> Result<Vec<String>, LlmError> {
    if values.len() > max_items {
        return Err(LlmError::BadResponse(format!(
            "`{field}` has {} items, more than {max_items}",
            values.len()
        )));
    }
    values.iter().map(|v| text(field, v, max_chars)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct T {
        a: u8,
    }

    #[test]
    fn objects_are_cut_out_and_checked() {
        assert_eq!(parse_object::<T>("{\"a\": 1}").unwrap(), T { a: 1 });
        assert_eq!(
            parse_object::<T>("Sure!\n```json\n{\"a\": 2}\n```").unwrap(),
            T { a: 2 }
        );
        for bad in [
            "",
            "no json",
            "}{",
            "{\"a\": 1, \"b\": 2}",
            "{\"a\": 300}",
            "{\"a\": \"1\"}",
        ] {
            assert!(
                matches!(parse_object::<T>(bad), Err(LlmError::BadResponse(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn texts_are_trimmed_and_bounded() {
        assert_eq!(text("f", "  hi ", 5).unwrap(), "hi");
        assert!(text("f", "   ", 5).is_err());
        assert!(text("f", "你好你好你好", 5).is_err());
        assert!(texts("f", &["a".into(), "b".into()], 1, 5).is_err());
        assert!(texts("f", &["a".into(), " ".into()], 5, 5).is_err());
    }
}
