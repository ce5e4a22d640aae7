//! The privacy property: random sequences of add / update / delete over many
//! users and tenants, checked after every step against an in-memory model —
//! no search returns another user's memory, and no deleted memory comes back.

use std::collections::HashMap;
use std::sync::Arc;

use mnemo::domain::Actor;
use mnemo::domain::{MemoryPatch, Scope, Tier};
use mnemo::service::{Legs, SearchRequest};
use proptest::prelude::*;
use uuid::Uuid;

use crate::common::*;

const USERS: [&str; 4] = ["ann", "ben", "cho", "dev"];
const TENANTS: [&str; 2] = ["default", "acme"];
const WORDS: [&str; 6] = ["tea", "coffee", "paris", "dentist", "guitar", "咖啡"];

#[derive(Clone, Debug)]
enum Op {
    Add {
        tenant: usize,
        user: usize,
        words: Vec<usize>,
    },
    Update {
        pick: usize,
        words: Vec<usize>,
    },
    Delete {
        pick: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let words = prop::collection::vec(0..WORDS.len(), 1..4);
    prop_oneof![
        4 => (0..TENANTS.len(), 0..USERS.len(), words.clone())
            .prop_map(|(tenant, user, words)| Op::Add { tenant, user, words }),
        1 => (any::<usize>(), words).prop_map(|(pick, words)| Op::Update { pick, words }),
        1 => any::<usize>().prop_map(|pick| Op::Delete { pick }),
    ]
}

#[derive(Clone, Debug)]
struct Model {
    tenant: String,
    user: String,
    deleted: bool,
}

fn actor(tenant: &str) -> Actor {
    Actor {
        tenant_id: tenant.to_string(),
        ..Actor::local("prop")
    }
}

fn text(words: &[usize]) -> String {
    words
        .iter()
        .map(|w| WORDS[*w])
        .collect::<Vec<_>>()
        .join(" ")
}

async fn check(engine: &mnemo::Engine, model: &HashMap<Uuid, Model>) {
    for tenant in TENANTS {
        for user in USERS {
            for legs in [Legs::Lexical, Legs::Vector, Legs::Hybrid] {
                for q in WORDS {
                    let mut scope = Scope::user(user).with_tiers(vec![Tier::LongTerm]);
                    scope.tenant_id = tenant.to_string();
                    let mut req = SearchRequest::new(scope, q);
                    req.legs = legs;
                    req.top_k = Some(100);
                    for hit in engine.search(req).await.unwrap().hits {
                        let m = &model[&hit.memory.id];
                        assert_eq!((m.tenant.as_str(), m.user.as_str()), (tenant, user), "leak");
                        assert!(!m.deleted, "deleted memory came back");
                    }
                }
            }
        }
    }
}

/// Applies `ops`, checking the privacy property after each.
async fn run_ops(engine: &mnemo::Engine, ops: Vec<Op>) {
    let mut model: HashMap<Uuid, Model> = HashMap::new();
    let mut ids: Vec<Uuid> = Vec::new();
    for op in ops {
        match op {
            Op::Add {
                tenant,
                user,
                words,
            } => {
                let added = engine
                    .add(
                        &actor(TENANTS[tenant]),
                        vec![long_term(USERS[user], &text(&words))],
                        true,
                    )
                    .await
                    .unwrap();
                model.insert(
                    added[0].id,
                    Model {
                        tenant: TENANTS[tenant].into(),
                        user: USERS[user].into(),
                        deleted: false,
                    },
                );
                ids.push(added[0].id);
            }
            Op::Update { pick, words } if !ids.is_empty() => {
                let id = ids[pick % ids.len()];
                let m = model[&id].clone();
                let patch = MemoryPatch {
                    text: Some(text(&words)),
                    ..Default::default()
                };
                let r = engine.update(&actor(&m.tenant), id, patch, true).await;
                // Updating a deleted memory is allowed (it stays deleted).
                r.unwrap();
            }
            Op::Delete { pick } if !ids.is_empty() => {
                let id = ids[pick % ids.len()];
                let tenant = model[&id].tenant.clone();
                engine.delete(&actor(&tenant), id).await.unwrap();
                model.get_mut(&id).unwrap().deleted = true;
            }
            _ => {}
        }
        check(engine, &model).await;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]
    #[test]
    fn no_search_leaks_across_users_or_resurrects_deletes(ops in prop::collection::vec(op(), 1..20)) {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let engine = engine_in(dir.path(), Arc::new(manual())).await;
            run_ops(&engine, ops).await;
        });
    }

    /// The same property with the PostgreSQL store.
    #[test]
    fn no_search_leaks_on_postgres(ops in prop::collection::vec(op(), 1..20)) {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let (engine, _schema) = engine_on_postgres(dir.path(), Arc::new(manual())).await;
            run_ops(&engine, ops).await;
            engine.shutdown().await.unwrap();
        });
    }
}
