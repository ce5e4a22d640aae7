//! What MCP tools answer, as compact text: an explicit `status:` first line,
//! then one or two lines per memory (its id, labels, and its text on one
//! line). Never raw JSON dumps; an empty result says plainly that it is not
//! an error. Pure functions over engine types.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::domain::context::ContextBlock;
use crate::domain::ranking::Hit;
use crate::domain::{Kind, Memory, Status};
use crate::error::Error;
use crate::service::{Outcome, Remembered};

/// The answer to a search that found nothing.
pub const NO_MEMORIES: &str = "status: ok · no memories found: not an error, do not retry";

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `id=… · tier · kind · status · date`, then the text indented.
pub fn memory(m: &Memory) -> String {
    let mut out = format!(
        "id={} · {} · {} · {} · {} · importance {:.2}",
        m.id,
        m.tier,
        m.kind,
        m.status,
        m.created_at.format("%Y-%m-%d"),
        m.importance
    );
    if m.status == Status::Pending {
        let _ = write!(out, " · confidence {:.2}", m.confidence);
    }
    if let Some(e) = m.expires_at {
        let _ = write!(out, " · expires {}", e.format("%Y-%m-%dT%H:%M:%SZ"));
    }
    let _ = write!(out, "\n  {}", one_line(&m.text));
    out
}

fn pending_note(m: &Memory, threshold: f32) -> String {
    format!(
        "\nnote: stored as a PENDING candidate (confidence {:.2} is below {:.2}): it is not \
         recalled until confirmed. Ask the user, then call confirm_memory or reject_memory with \
         id={}.",
        m.confidence, threshold, m.id
    )
}

/// What `remember` did.
pub fn remembered(r: &Remembered, pending_threshold: f32) -> String {
    let outcome = match r.outcome {
        Outcome::Created => "created: stored as a new memory".to_string(),
        Outcome::Reinforced => {
            "reinforced: the same fact was already stored; it was reinforced, no copy made"
                .to_string()
        }
        Outcome::Promoted => {
            "promoted: the same fact was a pending candidate; it is now active".to_string()
        }
        Outcome::Superseded { old } => {
            format!("superseded: stored as a correction of id={old}, which is no longer recalled")
        }
    };
    let mut out = format!("status: ok · {outcome}\n{}", memory(&r.memory));
    if r.memory.status == Status::Pending {
        out.push_str(&pending_note(&r.memory, pending_threshold));
    }
    out
}

/// A ranked list of hits, best first.
pub fn hits(hits: &[Hit]) -> String {
    if hits.is_empty() {
        return NO_MEMORIES.to_string();
    }
    let mut out = format!(
        "status: ok · {} {}, best first",
        hits.len(),
        if hits.len() == 1 {
            "memory"
        } else {
            "memories"
        }
    );
    for (i, h) in hits.iter().enumerate() {
        let m = &h.memory;
        let _ = write!(
            out,
            "\n{}. id={} · {} · {} · {} · score {:.3}\n   {}",
            i + 1,
            m.id,
            m.tier,
            m.kind,
            m.created_at.format("%Y-%m-%d"),
            h.score,
            one_line(&m.text)
        );
    }
    out
}

/// The memory block for a prompt, under a status line with its token count.
pub fn context(block: &ContextBlock) -> String {
    if block.memory_ids.is_empty() {
        return format!(
            "{NO_MEMORIES} (the memory block is empty; budget {} tokens)",
            block.budget_tokens
        );
    }
    format!(
        "status: ok · {} memories · {} of {} tokens; insert the block below as it is\n{}",
        block.memory_ids.len(),
        block.tokens,
        block.budget_tokens,
        block.text
    )
}

/// One changed memory after `update_memory`, `forget_memory`, `confirm_memory`
/// or `reject_memory`.
pub fn changed(what: &str, m: &Memory) -> String {
    format!("status: ok · {what}\n{}", memory(m))
}

/// Pending candidates, oldest first, with the cursor of the next page.
pub fn pending(memories: &[Memory], next_cursor: Option<&str>) -> String {
    if memories.is_empty() {
        return "status: ok · no pending memories: not an error, nothing to review".into();
    }
    let mut out = format!(
        "status: ok · {} pending {}, oldest first; confirm_memory or reject_memory each after \
         asking the user",
        memories.len(),
        if memories.len() == 1 {
            "candidate"
        } else {
            "candidates"
        }
    );
    for (i, m) in memories.iter().enumerate() {
        let _ = write!(out, "\n{}. {}", i + 1, memory(m));
    }
    if let Some(c) = next_cursor {
        let _ = write!(out, "\nnext_cursor: {c} (pass it as `cursor` for more)");
    }
    out
}

/// The user's active long-term memories grouped by kind.
pub fn profile(memories: &[Memory], truncated: bool) -> String {
    if memories.is_empty() {
        return "status: ok · no long-term memories yet: not an error".into();
    }
    let mut by_kind: BTreeMap<Kind, Vec<&Memory>> = BTreeMap::new();
    for m in memories {
        by_kind.entry(m.kind).or_default().push(m);
    }
    let mut out = format!(
        "status: ok · {} active long-term memories{}",
        memories.len(),
        if truncated {
            " (the oldest ones only: more exist, use recall to search them)"
        } else {
            ""
        }
    );
    for (kind, ms) in by_kind {
        let _ = write!(out, "\n\n## {kind} ({})", ms.len());
        for m in ms {
            let _ = write!(
                out,
                "\n- {} (id={}, {})",
                one_line(&m.text),
                m.id,
                m.created_at.format("%Y-%m-%d")
            );
        }
    }
    out
}

/// An error as the text of an MCP tool error. User errors keep their
/// message; internal ones are logged here in full and answered generically.
pub fn error(e: &Error) -> String {
    let code = match serde_json::to_value(e.code()) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "internal".into(),
    };
    if !e.is_user_error() {
        tracing::error!(error = %e, "MCP tool failed");
        return format!("status: error · {code} · internal error (logged on the server)");
    }
    let hint = match e {
        Error::NotFound { .. } => " (it does not exist or is not this user's: check the id)",
        Error::Overloaded { .. } => " (retry in a few seconds)",
        Error::Conflict(_) => " (the memory is not in a state this tool applies to)",
        _ => "",
    };
    format!("status: error · {code} · {e}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    use crate::domain::Tier;

    fn sample(text: &str, kind: Kind) -> Memory {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let mut m = Memory::sample(Tier::LongTerm, Some("u"), text, t);
        m.kind = kind;
        m
    }

    #[test]
    fn empty_results_say_so_plainly() {
        assert_eq!(hits(&[]), NO_MEMORIES);
        assert!(NO_MEMORIES.contains("not an error, do not retry"));
        assert!(pending(&[], None).contains("no pending memories"));
        assert!(profile(&[], false).contains("no long-term memories"));
    }

    #[test]
    fn hits_are_numbered_with_ids_on_one_line_each() {
        let m = sample("The user prefers\n  green tea", Kind::Preference);
        let out = hits(&[Hit::unranked(m.clone(), 0.5)]);
        assert!(
            out.starts_with("status: ok · 1 memory, best first"),
            "{out}"
        );
        assert!(out.contains(&format!("1. id={} · long_term · preference", m.id)));
        assert!(out.contains("   The user prefers green tea"), "{out}");
    }

    #[test]
    fn pending_memories_tell_the_agent_what_to_do() {
        let mut m = sample("The user may like jazz", Kind::Preference);
        m.status = Status::Pending;
        m.confidence = 0.3;
        let out = remembered(
            &Remembered {
                memory: m.clone(),
                outcome: Outcome::Created,
            },
            0.6,
        );
        assert!(out.contains("PENDING"), "{out}");
        assert!(out.contains("confirm_memory"));
        assert!(out.contains(&m.id.to_string()));
    }

    #[test]
    fn profile_groups_by_kind() {
        let ms = vec![
            sample("Lives in Lyon", Kind::Fact),
            sample("Likes tea", Kind::Preference),
            sample("Works at Acme", Kind::Fact),
        ];
        let out = profile(&ms, false);
        let pref = out.find("## preference (1)").unwrap();
        let fact = out.find("## fact (2)").unwrap();
        assert!(pref < fact, "kinds in a stable order: {out}");
        assert!(out.contains("- Lives in Lyon (id="));
    }

    #[test]
    fn errors_carry_code_and_message_but_internals_stay_hidden() {
        let out = error(&Error::not_found("memory 42"));
        assert!(out.starts_with("status: error · not_found · memory 42 not found"));
        let out = error(&Error::internal("disk on fire at /secret/path"));
        assert!(!out.contains("/secret/path"), "{out}");
        assert!(out.contains("internal"));
    }
}
