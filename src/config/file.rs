//! The `--config` TOML file (`mnemo serve`, `mnemo keys`): one more source of
//! the same options the flags set, not a second schema.
//!
//! A key is the id of a flag in snake_case (`request_timeout_secs` for
//! `--request-timeout-secs`), of `serve`'s own flags or of the global ones
//! (`data_dir`, `policy`, `assets_dir`, `database_url`, …); the flags of a
//! [`SECTIONS`] prefix sit in that table (`[llm] base_url` for
//! `--llm-base-url`). [`ConfigFile::apply`] makes each value the default of
//! its flag, so clap's own order gives built-in defaults < file < `MNEMO_*`
//! variable < flag, and each value is parsed by the flag's own parser (a
//! file accepts exactly what the flag does). A key that names no flag, or a
//! value the flag refuses, is an [`Error::Config`] naming the key.
//!
//! So an option is one field of its `clap::Args` struct: its flag, its
//! variable and its file key all come from that field.

use std::path::Path;

use clap::{Arg, ArgAction, Command};

use crate::error::Error;

/// The command whose flags (besides the global ones) a file may set.
const FILE_COMMAND: &str = "serve";

/// Flag-name prefixes written as a TOML table: `--llm-base-url` is
/// `[llm] base_url`.
pub const SECTIONS: &[&str] = &["llm"];

/// One `key = value` of the file, with the flag id it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// As written (`listen`, `llm.base_url`), for error messages.
    key: String,
    /// The flag's id (`listen`, `llm_base_url`).
    id: String,
    value: String,
}

/// A parsed `--config` file, not yet checked against the flags.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    entries: Vec<Entry>,
    /// Prefixed to every key in errors (the file's path), when known.
    origin: Option<String>,
}

fn config_err(key: impl Into<String>, message: impl Into<String>) -> Error {
    Error::Config {
        key: key.into(),
        message: message.into(),
    }
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<Self, Error> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| config_err(&origin, format!("cannot read: {e}")))?;
        let mut file = Self::parse(&text).map_err(|e| match e {
            Error::Config { key, message } => config_err(format!("{origin}: {key}"), message),
            other => other,
        })?;
        file.origin = Some(origin);
        Ok(file)
    }

    pub fn parse(text: &str) -> Result<Self, Error> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| config_err("config", e.message()))?;
        let mut entries = Vec::new();
        for (key, value) in table {
            match value {
                toml::Value::Table(section) if SECTIONS.contains(&key.as_str()) => {
                    for (inner, value) in section {
                        let written = format!("{key}.{inner}");
                        let value = scalar(&written, value)?;
                        entries.push(Entry {
                            id: format!("{key}_{inner}"),
                            key: written,
                            value,
                        });
                    }
                }
                value => {
                    let value = scalar(&key, value)?;
                    entries.push(Entry {
                        id: key.clone(),
                        key,
                        value,
                    });
                }
            }
        }
        Ok(ConfigFile {
            entries,
            origin: None,
        })
    }

    /// The file key of `key` as written, with the file's path when known.
    fn named(&self, key: &str) -> String {
        match &self.origin {
            Some(origin) => format!("{origin}: {key}"),
            None => key.to_string(),
        }
    }

    /// `cmd` (the whole `mnemo` command) with the file's values as the
    /// defaults of their flags; refuses keys that name no flag and values
    /// their flag refuses.
    pub fn apply(&self, mut cmd: Command) -> Result<Command, Error> {
        for entry in &self.entries {
            let global = cmd
                .get_arguments()
                .find(|a| a.get_id() == entry.id.as_str() && a.is_global_set())
                .cloned();
            let local = cmd
                .find_subcommand(FILE_COMMAND)
                .and_then(|s| s.get_arguments().find(|a| a.get_id() == entry.id.as_str()))
                .cloned();
            let arg = match (global, local) {
                (Some(arg), _) => arg,
                (None, Some(arg)) => arg,
                (None, None) => return Err(self.unknown(&entry.key)),
            };
            if !settable(&arg, entry) {
                return Err(self.unknown(&entry.key));
            }
            check_value(&arg, &entry.value)
                .map_err(|message| config_err(self.named(&entry.key), message))?;
            let hide = arg.is_hide_env_values_set();
            let set = |a: Arg| {
                let a = a.default_value(entry.value.clone());
                // A secret's value stays out of --help, like its variable's.
                if hide {
                    a.hide_default_value(true)
                } else {
                    a
                }
            };
            cmd = if arg.is_global_set() {
                cmd.mut_arg(entry.id.as_str(), set)
            } else {
                // An option group's flag (`--database-url`) is on every
                // command that takes the group (`serve`, `keys list`, …).
                set_everywhere(cmd, &entry.id, &set)
            };
        }
        Ok(cmd)
    }

    fn unknown(&self, key: &str) -> Error {
        config_err(
            self.named(key),
            "unknown key (keys are `mnemo serve` and global flags in snake_case, \
             e.g. listen, data_dir, and [llm] base_url; see mnemo.example.toml)",
        )
    }
}

/// `cmd` with `set` applied to its flag `id` and to that of every
/// subcommand, at any depth, that has one.
fn set_everywhere(mut cmd: Command, id: &str, set: &dyn Fn(Arg) -> Arg) -> Command {
    if cmd.get_arguments().any(|a| a.get_id() == id) {
        cmd = cmd.mut_arg(id, set);
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, |s| set_everywhere(s, id, set));
    }
    cmd
}

/// Whether a file may set the flag: a named flag that takes a value or is a
/// switch, never `--config` itself, `--help` or `--version`, and a section's
/// flag only from its table (`[llm] model`, not `llm_model`).
fn settable(arg: &Arg, entry: &Entry) -> bool {
    let id = entry.id.as_str();
    let in_section = entry.key != entry.id;
    let section_flag = SECTIONS
        .iter()
        .any(|s| id.strip_prefix(s).is_some_and(|rest| rest.starts_with('_')));
    arg.get_long().is_some()
        && !matches!(id, "config" | "help" | "version")
        && in_section == section_flag
        && matches!(
            arg.get_action(),
            ArgAction::Set | ArgAction::SetTrue | ArgAction::SetFalse
        )
}

/// A TOML scalar as the text a flag would be given.
fn scalar(key: &str, value: toml::Value) -> Result<String, Error> {
    match value {
        toml::Value::String(s) => Ok(s),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(x) => Ok(x.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        toml::Value::Table(_) if !SECTIONS.contains(&key) => Err(config_err(
            key,
            format!("unknown section (the sections are {})", SECTIONS.join(", ")),
        )),
        _ => Err(config_err(key, "expected a string, a number or a boolean")),
    }
}

/// Runs `value` through the flag's own parser, alone (no variable, no other
/// flag), so that a bad value is reported against its file key.
fn check_value(arg: &Arg, value: &str) -> Result<(), String> {
    let probe = arg
        .clone()
        .env(None::<&str>)
        .global(false)
        .required(false)
        .default_value(value.to_string());
    Command::new("mnemo-config")
        .no_binary_name(true)
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(probe)
        .try_get_matches_from(std::iter::empty::<String>())
        .map(drop)
        .map_err(|e| {
            let why = std::error::Error::source(&e)
                .map(|s| s.to_string())
                .unwrap_or_else(|| e.kind().to_string());
            format!("invalid value `{value}`: {why}")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_become_prefixed_ids_and_values_text() {
        let f = ConfigFile::parse("listen = \"0.0.0.0:1\"\nmax_body_bytes = 4096\ninsecure_dev = true\n[llm]\nbase_url = \"http://h/v1\"\n").unwrap();
        let ids: Vec<(&str, &str, &str)> = f
            .entries
            .iter()
            .map(|e| (e.key.as_str(), e.id.as_str(), e.value.as_str()))
            .collect();
        assert!(ids.contains(&("listen", "listen", "0.0.0.0:1")));
        assert!(ids.contains(&("max_body_bytes", "max_body_bytes", "4096")));
        assert!(ids.contains(&("insecure_dev", "insecure_dev", "true")));
        assert!(ids.contains(&("llm.base_url", "llm_base_url", "http://h/v1")));
    }

    #[test]
    fn malformed_files_are_refused_naming_the_key() {
        let err = ConfigFile::parse("listen = [1, 2]").unwrap_err();
        assert!(err.to_string().contains("`listen`"), "{err}");
        let err = ConfigFile::parse("[server]\nlisten = \"x\"").unwrap_err();
        assert!(err.to_string().contains("`server`"), "{err}");
        assert!(ConfigFile::parse("listen = ").is_err());
    }
}
