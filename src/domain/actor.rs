//! Who is acting: a key's (or the local operator's) tenant, user binding and
//! admin right, and the pure checks every use case applies with them.

use crate::domain::{Memory, Tier};
use crate::error::{Error, Result};

/// Who is acting, and within which tenant and user they may act.
#[derive(Clone, Debug, PartialEq)]
pub struct Actor {
    /// Recorded in audit events: a key id, `cli`, `system`.
    pub id: String,
    pub tenant_id: String,
    /// `Some` restricts every operation to this user's memories (a user key).
    pub user_id: Option<String>,
    /// May write reference memory.
    pub admin: bool,
}

impl Actor {
    /// The local operator (CLI, dev mode): default tenant, every user, admin.
    pub fn local(id: &str) -> Self {
        Actor {
            id: id.to_string(),
            tenant_id: crate::domain::owner::DEFAULT_TENANT.to_string(),
            user_id: None,
            admin: true,
        }
    }

    /// Whether this actor may see a memory (tenant, and user when bound).
    pub fn can_read(&self, m: &Memory) -> bool {
        m.tenant_id == self.tenant_id
            && match (&self.user_id, m.tier) {
                (_, Tier::Reference) => true,
                (None, _) => true,
                (Some(u), _) => m.user_id.as_deref() == Some(u),
            }
    }

    /// Whether this actor may change a memory: reference memory is admin-only.
    pub fn can_write(&self, m: &Memory) -> bool {
        self.can_read(m) && (m.tier != Tier::Reference || self.admin)
    }

    /// The user a request may act for: a bound key forces its own user.
    pub fn user_for(&self, requested: Option<&str>) -> Result<Option<String>> {
        match (&self.user_id, requested) {
            (Some(bound), Some(r)) if bound != r => Err(Error::Forbidden(
                "this key may only act for its own user".into(),
            )),
            (Some(bound), _) => Ok(Some(bound.clone())),
            (None, r) => Ok(r.map(str::to_string)),
        }
    }
}
