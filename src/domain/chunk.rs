//! Cutting reference documents into chunks: each at most `max_chars`
//! characters, cut at paragraph, then sentence, then word boundaries, with the
//! tail of one chunk repeated at the head of the next (`overlap_chars`) so that
//! a fact straddling a cut is still found whole in one chunk.

/// Splits text into sentence-like units that keep their trailing whitespace,
/// so that concatenating them gives the text back.
fn units(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end_of_unit = match c {
            '。' | '！' | '？' | '；' => true,
            '.' | '!' | '?' | ';' => chars.peek().is_none_or(|(_, n)| n.is_whitespace()),
            '\n' => chars.peek().is_some_and(|(_, n)| *n == '\n'),
            _ => false,
        };
        if end_of_unit {
            let mut end = i + c.len_utf8();
            while let Some((j, n)) = chars.peek().copied() {
                if !n.is_whitespace() {
                    break;
                }
                end = j + n.len_utf8();
                chars.next();
            }
            out.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Cuts a unit longer than `max` characters at whitespace when it can.
fn hard_split(unit: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = unit;
    while rest.chars().count() > max {
        let cut = rest
            .char_indices()
            .nth(max)
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let head = &rest[..cut];
        let at = head
            .rfind(char::is_whitespace)
            .filter(|&i| i > cut / 2)
            .map(|i| i + head[i..].chars().next().map_or(1, char::len_utf8))
            .unwrap_or(cut);
        out.push(&rest[..at]);
        rest = &rest[at..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Cuts `text` into chunks. Every chunk is non-empty after trimming and at most
/// `max_chars` characters; `overlap_chars` must be smaller than `max_chars`.
pub fn chunk(text: &str, max_chars: usize, overlap_chars: usize) -> Vec<String> {
    let max = max_chars.max(1);
    let overlap = overlap_chars.min(max.saturating_sub(1));
    let pieces: Vec<&str> = units(text)
        .into_iter()
        .flat_map(|u| hard_split(u, max))
        .collect();
    let len = |s: &str| s.chars().count();
    let mut chunks: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut current_len = 0;
    for piece in pieces {
        let plen = len(piece);
        if current_len + plen > max && !current.is_empty() {
            chunks.push(current.concat());
            // Carry whole trailing pieces into the next chunk, up to `overlap`.
            let mut carried: Vec<&str> = Vec::new();
            let mut carried_len = 0;
            for p in current.iter().rev() {
                let l = len(p);
                if carried_len + l > overlap || carried_len + l + plen > max {
                    break;
                }
                carried.push(p);
                carried_len += l;
            }
            carried.reverse();
            current = carried;
            current_len = carried_len;
        }
        current.push(piece);
        current_len += plen;
    }
    if !current.is_empty() {
        chunks.push(current.concat());
    }
    chunks
        .into_iter()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_text_is_one_chunk() {
        assert_eq!(
            chunk("Opening hours are 9 to 5.", 100, 10),
            vec!["Opening hours are 9 to 5."]
        );
    }

    #[test]
    fn cuts_at_sentence_boundaries_with_overlap() {
        let text = "First sentence here. Second sentence here. Third sentence here.";
        let chunks = chunk(text, 45, 25);
        assert_eq!(
            chunks,
            vec![
                "First sentence here. Second sentence here.",
                "Second sentence here. Third sentence here."
            ]
        );
    }

    #[test]
    fn chinese_sentences_are_units() {
        let text = "退货需要在三十天内办理。请保留收据。会员可以免费送货。";
        let chunks = chunk(text, 18, 0);
        assert_eq!(
            chunks,
            vec!["退货需要在三十天内办理。请保留收据。", "会员可以免费送货。"]
        );
    }

    proptest! {
        #[test]
        fn chunks_respect_the_limit_and_lose_no_words(
            words in prop::collection::vec("[a-z]{1,12}[.!?]?|[一-龥]{1,6}。?", 0..200),
            max in 10usize..200,
            overlap in 0usize..50,
        ) {
            let text = words.join(" ");
            let chunks = chunk(&text, max, overlap);
            for c in &chunks {
                prop_assert!(c.chars().count() <= max, "{c:?} over {max}");
                prop_assert!(!c.trim().is_empty());
            }
            let all: String = chunks.concat();
            for w in text.split_whitespace() {
                // A word longer than max is split, so check its pieces' text.
                if w.chars().count() <= max {
                    prop_assert!(all.contains(w), "lost {w:?}");
                }
            }
        }
    }
}
