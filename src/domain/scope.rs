//! Who may see what. Every query is scoped to one tenant and one user; the
//! scope becomes an [`IndexFilter`] that both indexes apply *inside* their
//! search, so another user's memories are never even candidates.

use super::owner::{Owner, TenantId, DEFAULT_TENANT};
use super::vocabulary::{Kind, Status, Tier};
use crate::error::{Error, Result};

/// A retrieval scope: whose memories a query may see.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    pub tenant_id: TenantId,
    pub user_id: String,
    /// Working memory is searched only for this thread.
    pub thread_id: Option<String>,
    pub tiers: Vec<Tier>,
    pub include_pending: bool,
    pub kinds: Option<Vec<Kind>>,
}

impl Scope {
    /// All tiers of one user in the default tenant.
    pub fn user(user_id: impl Into<String>) -> Self {
        Scope {
            tenant_id: DEFAULT_TENANT.to_string(),
            user_id: user_id.into(),
            thread_id: None,
            tiers: Tier::ALL.to_vec(),
            include_pending: false,
            kinds: None,
        }
    }

    pub fn with_thread(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    pub fn with_tiers(mut self, tiers: Vec<Tier>) -> Self {
        self.tiers = tiers;
        self
    }

    pub fn validate(&self) -> Result<()> {
        super::validate::validate_id("tenant_id", &self.tenant_id)?;
        super::validate::validate_id("user_id", &self.user_id)?;
        if let Some(t) = &self.thread_id {
            super::validate::validate_id("thread_id", t)?;
        }
        if self.tiers.is_empty() {
            return Err(Error::invalid("tiers", "at least one tier is required"));
        }
        Ok(())
    }

    /// The filter both indexes apply. Working memory joins only when a thread
    /// is given: a thread's turns are not evidence in another thread.
    pub fn filter(&self) -> IndexFilter {
        let mut clauses = Vec::with_capacity(3);
        let user = Owner::user(&self.tenant_id, &self.user_id);
        for tier in &self.tiers {
            match tier {
                Tier::LongTerm => clauses.push(ScopeClause {
                    owner: user.clone(),
                    tier: Tier::LongTerm,
                    thread_id: None,
                }),
                Tier::Working => {
                    if let Some(thread) = &self.thread_id {
                        clauses.push(ScopeClause {
                            owner: user.clone(),
                            tier: Tier::Working,
                            thread_id: Some(thread.clone()),
                        });
                    }
                }
                Tier::Reference => clauses.push(ScopeClause {
                    owner: Owner::reference(&self.tenant_id),
                    tier: Tier::Reference,
                    thread_id: None,
                }),
            }
        }
        clauses.sort_by_key(|c| c.tier);
        clauses.dedup();
        let statuses = if self.include_pending {
            vec![Status::Active, Status::Pending]
        } else {
            vec![Status::Active]
        };
        IndexFilter {
            clauses,
            statuses,
            kinds: self.kinds.clone(),
        }
    }
}

/// One alternative of a scope: an owner's memories of one tier (and thread).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeClause {
    pub owner: Owner,
    pub tier: Tier,
    pub thread_id: Option<String>,
}

/// The filter an index applies inside its search:
/// `(clause₁ OR clause₂ OR …) AND status ∈ statuses AND kind ∈ kinds`.
/// An empty clause list matches nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexFilter {
    pub clauses: Vec<ScopeClause>,
    pub statuses: Vec<Status>,
    pub kinds: Option<Vec<Kind>>,
}

impl IndexFilter {
    /// The filter as one filter per clause, each with the same statuses and
    /// kinds: their union is this filter. A vector index searches each on its
    /// own and merges by score ([`crate::vector::merge_nearest`]), so that a
    /// clause costs what its own points cost: a user's few memories are
    /// scored exactly from the owner index while the tenant's reference
    /// chunks go through the graph, instead of one graph walk under an OR
    /// whose cardinality is the reference tier's.
    pub fn per_clause(&self) -> impl Iterator<Item = IndexFilter> + '_ {
        self.clauses.iter().map(|c| IndexFilter {
            clauses: vec![c.clone()],
            statuses: self.statuses.clone(),
            kinds: self.kinds.clone(),
        })
    }

    /// Whether an indexed entry passes the filter; the reference semantics that
    /// each backend's translation must agree with (tested in the contracts).
    pub fn matches(
        &self,
        owner: &Owner,
        tier: Tier,
        thread_id: Option<&str>,
        status: Status,
        kind: Kind,
    ) -> bool {
        let in_scope = self.clauses.iter().any(|c| {
            &c.owner == owner
                && c.tier == tier
                && c.thread_id.as_deref().is_none_or(|t| Some(t) == thread_id)
        });
        in_scope
            && self.statuses.contains(&status)
            && self.kinds.as_ref().is_none_or(|ks| ks.contains(&kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_memory_needs_a_thread() {
        let scope = Scope::user("alice");
        let f = scope.filter();
        assert!(f.clauses.iter().all(|c| c.tier != Tier::Working));
        let f = Scope::user("alice").with_thread("t1").filter();
        let alice = Owner::user("default", "alice");
        assert!(f.matches(
            &alice,
            Tier::Working,
            Some("t1"),
            Status::Active,
            Kind::Message
        ));
        assert!(!f.matches(
            &alice,
            Tier::Working,
            Some("t2"),
            Status::Active,
            Kind::Message
        ));
    }

    #[test]
    fn another_user_or_tenant_never_matches() {
        let f = Scope::user("alice").with_thread("t1").filter();
        for owner in [
            Owner::user("default", "bob"),
            Owner::user("other", "alice"),
            Owner::reference("other"),
        ] {
            for tier in Tier::ALL {
                assert!(!f.matches(&owner, tier, Some("t1"), Status::Active, Kind::Fact));
            }
        }
        assert!(f.matches(
            &Owner::reference("default"),
            Tier::Reference,
            None,
            Status::Active,
            Kind::Document
        ));
    }

    #[test]
    fn pending_only_on_request() {
        let alice = Owner::user("default", "alice");
        let mut scope = Scope::user("alice");
        assert!(!scope
            .filter()
            .matches(&alice, Tier::LongTerm, None, Status::Pending, Kind::Fact));
        scope.include_pending = true;
        assert!(scope
            .filter()
            .matches(&alice, Tier::LongTerm, None, Status::Pending, Kind::Fact));
    }
}
