//! The closed vocabulary of a memory: its tier, kind and status, with their
//! text forms (the same in JSON, SQL, the index payloads and the CLI).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{Error, Result};

/// The three tiers of memory.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// A thread's recent turns and summary; belongs to one user and one thread.
    Working,
    /// Facts and preferences of one user, across threads.
    LongTerm,
    /// Read-only business knowledge shared by every user of a tenant.
    Reference,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Working, Tier::LongTerm, Tier::Reference];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Working => "working",
            Tier::LongTerm => "long_term",
            Tier::Reference => "reference",
        }
    }

    /// Working and long-term memories belong to a user; reference memory does not.
    pub fn is_user_tier(self) -> bool {
        !matches!(self, Tier::Reference)
    }
}

impl FromStr for Tier {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "working" => Ok(Tier::Working),
            "long_term" => Ok(Tier::LongTerm),
            "reference" => Ok(Tier::Reference),
            other => Err(Error::invalid(
                "tier",
                format!("unknown tier `{other}` (expected working, long_term or reference)"),
            )),
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What sort of thing a memory states. Half-lives and TTLs can differ per kind.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Preference,
    Fact,
    Event,
    Instruction,
    Document,
    Message,
    Summary,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Preference,
        Kind::Fact,
        Kind::Event,
        Kind::Instruction,
        Kind::Document,
        Kind::Message,
        Kind::Summary,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Preference => "preference",
            Kind::Fact => "fact",
            Kind::Event => "event",
            Kind::Instruction => "instruction",
            Kind::Document => "document",
            Kind::Message => "message",
            Kind::Summary => "summary",
        }
    }
}

impl FromStr for Kind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "kind",
                    format!(
                        "unknown kind `{s}` (expected one of {})",
                        Kind::ALL.map(Kind::as_str).join(", ")
                    ),
                )
            })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a memory is in its life. Only `active` (and, on request, `pending`)
/// memories are retrievable; the search indexes hold nothing else.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Active,
    Pending,
    Superseded,
    Expired,
    Archived,
    Deleted,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Active,
        Status::Pending,
        Status::Superseded,
        Status::Expired,
        Status::Archived,
        Status::Deleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Pending => "pending",
            Status::Superseded => "superseded",
            Status::Expired => "expired",
            Status::Archived => "archived",
            Status::Deleted => "deleted",
        }
    }

    /// Whether memories in this status live in the search indexes.
    pub fn is_indexed(self) -> bool {
        matches!(self, Status::Active | Status::Pending)
    }
}

impl FromStr for Status {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Status::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "status",
                    format!(
                        "unknown status `{s}` (expected one of {})",
                        Status::ALL.map(Status::as_str).join(", ")
                    ),
                )
            })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
