//! Command-line flags of the examples: `--name value`, no parser crate.
// Each example uses the helpers it needs.
#![allow(dead_code)]

/// The value after `name`, if the flag is given.
pub fn value(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The number after `name`, or `default` when absent or not a number.
pub fn number(name: &str, default: usize) -> usize {
    value(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}
