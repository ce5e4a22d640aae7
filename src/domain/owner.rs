//! Whose a memory is: a tenant's user, or a tenant's reference corpus, and
//! the hashed owner key the indexes and the change feed carry.

use serde::{Deserialize, Serialize};

use super::vocabulary::Tier;

pub type TenantId = String;

/// The tenant used when a deployment does not use tenants (CLI, dev mode, eval).
pub const DEFAULT_TENANT: &str = "default";

/// The owner key the indexes filter on: one tenant's user, or one tenant's
/// reference corpus. It is a hash, so index files never hold a user id in
/// clear; the two shapes carry different prefixes and never collide.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Owner(String);

const SEP: char = '\u{1f}';

fn digest(parts: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(parts.as_bytes())[..16])
}

impl Owner {
    pub fn user(tenant: &str, user_id: &str) -> Self {
        Owner(format!("u{}", digest(&format!("{tenant}{SEP}{user_id}"))))
    }

    pub fn reference(tenant: &str) -> Self {
        Owner(format!("r{}", digest(tenant)))
    }

    pub fn of(tenant: &str, tier: Tier, user_id: Option<&str>) -> Self {
        match (tier, user_id) {
            (Tier::Reference, _) | (_, None) => Owner::reference(tenant),
            (_, Some(user)) => Owner::user(tenant, user),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is a tenant's reference owner (not a user).
    pub fn is_reference(&self) -> bool {
        self.0.starts_with('r')
    }

    /// An owner from its key as the indexes and the change feed store it
    /// (`u` or `r` and 32 lowercase hex digits); `None` for anything else.
    pub fn from_key(key: &str) -> Option<Self> {
        let (kind, digest) = key.split_at_checked(1)?;
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (matches!(kind, "u" | "r") && digest.len() == 32 && digest.bytes().all(hex))
            .then(|| Owner(key.to_string()))
    }
}
