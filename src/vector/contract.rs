//! The vector index contract as tests, run against every backend: the
//! embedded index always (`vector::edge::tests::contract`), a Qdrant server
//! when `MNEMO_TEST_QDRANT_URL` names one (`vector::qdrant::tests::contract`,
//! reported as ignored otherwise: see `make test`).
//!
//! Each test is a function taking a factory that opens an empty index of a
//! given dimension; [`vector_contract_tests!`] turns them into `#[test]`s.

use std::collections::HashSet;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use super::{keyword_filter, VectorIndex, VectorPoint};
use crate::domain::scope::{IndexFilter, Scope};
use crate::domain::{Kind, Owner, Status, Tier};
use crate::error::Error;

/// An empty index for one test, and whatever must live (a temporary
/// directory) or run (dropping a server collection) as long as it.
pub(crate) struct Fixture {
    index: Arc<dyn VectorIndex>,
    cleanup: Option<Box<dyn FnOnce()>>,
    _keep: Option<Box<dyn std::any::Any>>,
}

impl Fixture {
    pub(crate) fn new(index: Arc<dyn VectorIndex>) -> Self {
        Fixture {
            index,
            cleanup: None,
            _keep: None,
        }
    }

    /// Keeps `value` alive as long as the index.
    pub(crate) fn keeping(mut self, value: impl std::any::Any) -> Self {
        self._keep = Some(Box::new(value));
        self
    }

    /// Runs `f` when the fixture is dropped (even after a failed assertion).
    pub(crate) fn on_drop(mut self, f: impl FnOnce() + 'static) -> Self {
        self.cleanup = Some(Box::new(f));
        self
    }

    pub(crate) fn index(&self) -> &dyn VectorIndex {
        &*self.index
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(f) = self.cleanup.take() {
            f();
        }
    }
}

/// One `#[test]` per contract function, each calling `$make` (a
/// `fn(usize) -> Fixture`), with the given attributes (e.g. `#[ignore]`).
macro_rules! vector_contract_tests {
    ($make:path $(, #[$attr:meta])*) => {
        $crate::vector::contract::vector_contract_tests!(@each $make, [$(#[$attr])*],
            nearest_first_with_cosine_scores,
            upsert_with_the_same_id_replaces_vector_and_payload,
            filters_isolate_owners_tiers_threads_statuses_and_kinds,
            empty_clauses_statuses_or_kinds_return_nothing,
            delete_and_delete_owner_leave_the_others_alone,
            entries_and_counts_follow_every_write,
            clear_removes_everything_and_the_index_stays_usable
        );
    };
    (@each $make:path, $attrs:tt, $($name:ident),+) => {
        $(
            $crate::vector::contract::vector_contract_tests!(@one $make, $attrs, $name);
        )+
    };
    (@one $make:path, [$(#[$attr:meta])*], $name:ident) => {
        #[test]
        $(#[$attr])*
        fn $name() {
            $crate::vector::contract::$name(&$make);
        }
    };
}
pub(crate) use vector_contract_tests;

pub(crate) fn point(id: Uuid, vector: Vec<f32>, owner: &Owner, tier: Tier) -> VectorPoint {
    VectorPoint {
        id,
        vector,
        owner: owner.clone(),
        tier,
        thread_id: None,
        status: Status::Active,
        kind: Kind::Fact,
        created_at_ms: 1_700_000_000_000,
        importance: 0.5,
        version: 1,
    }
}

pub(crate) fn random_vec(rng: &mut StdRng, dim: usize) -> Vec<f32> {
    (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

pub(crate) fn alice() -> Owner {
    Owner::user("default", "alice")
}

pub(crate) fn bob() -> Owner {
    Owner::user("default", "bob")
}

pub(crate) fn ids(hits: &[(Uuid, f32)]) -> Vec<Uuid> {
    hits.iter().map(|h| h.0).collect()
}

pub(crate) fn sorted(mut v: Vec<(Uuid, i64)>) -> Vec<(Uuid, i64)> {
    v.sort();
    v
}

pub(crate) fn alice_long_term() -> IndexFilter {
    Scope::user("alice")
        .with_tiers(vec![Tier::LongTerm])
        .filter()
}

/// A fixed population over owners, tiers, threads, statuses and kinds.
pub(crate) fn population(rng: &mut StdRng, dim: usize, n: usize, tenant: &str) -> Vec<VectorPoint> {
    let owners = [
        Owner::user(tenant, "alice"),
        Owner::user(tenant, "bob"),
        Owner::user(tenant, "carol"),
        Owner::reference(tenant),
    ];
    let threads = [None, Some("t1"), Some("t2")];
    (0..n)
        .map(|_| {
            let owner = owners[rng.random_range(0..owners.len())].clone();
            let tier = if owner == Owner::reference(tenant) {
                Tier::Reference
            } else {
                [Tier::Working, Tier::LongTerm][rng.random_range(0..2)]
            };
            VectorPoint {
                id: Uuid::new_v4(),
                vector: random_vec(rng, dim),
                owner,
                tier,
                thread_id: threads[rng.random_range(0..3)].map(str::to_string),
                status: Status::ALL[rng.random_range(0..Status::ALL.len())],
                kind: Kind::ALL[rng.random_range(0..Kind::ALL.len())],
                created_at_ms: rng.random_range(0..1_000_000),
                importance: rng.random(),
                version: rng.random_range(1..10),
            }
        })
        .collect()
}

pub(crate) fn matching(points: &[VectorPoint], f: &IndexFilter) -> HashSet<Uuid> {
    points
        .iter()
        .filter(|p| f.matches(&p.owner, p.tier, p.thread_id.as_deref(), p.status, p.kind))
        .map(|p| p.id)
        .collect()
}

pub(crate) fn nearest_first_with_cosine_scores(make: &dyn Fn(usize) -> Fixture) {
    let fx = make(3);
    let idx = fx.index();
    assert_eq!(idx.dim(), 3);
    let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    idx.upsert(vec![
        point(a, vec![2.0, 0.0, 0.0], &alice(), Tier::LongTerm),
        point(b, vec![1.0, 1.0, 0.0], &alice(), Tier::LongTerm),
        point(c, vec![0.0, 0.0, 1.0], &alice(), Tier::LongTerm),
    ])
    .unwrap();
    let q = [1.0, 0.2, 0.0];
    let hits = idx.search(&q, &alice_long_term(), 10).unwrap();
    assert_eq!(ids(&hits), vec![a, b, c]);
    let expected = [
        cosine(&q, &[2.0, 0.0, 0.0]),
        cosine(&q, &[1.0, 1.0, 0.0]),
        cosine(&q, &[0.0, 0.0, 1.0]),
    ];
    for (hit, want) in hits.iter().zip(expected) {
        assert!(
            (hit.1 - want).abs() < 1e-4,
            "score {} != cosine {want}",
            hit.1
        );
    }
    // The limit is honoured, best first.
    assert_eq!(
        ids(&idx.search(&q, &alice_long_term(), 1).unwrap()),
        vec![a]
    );
    assert!(idx.search(&q, &alice_long_term(), 0).unwrap().is_empty());
    // Wrong dimensions are refused, not truncated.
    assert!(matches!(
        idx.search(&[1.0, 0.0], &alice_long_term(), 5),
        Err(Error::Vector(_))
    ));
    let err = idx
        .upsert(vec![point(
            Uuid::now_v7(),
            vec![1.0; 4],
            &alice(),
            Tier::LongTerm,
        )])
        .unwrap_err();
    assert!(err.to_string().contains('4'), "{err}");
}

pub(crate) fn upsert_with_the_same_id_replaces_vector_and_payload(make: &dyn Fn(usize) -> Fixture) {
    let fx = make(2);
    let idx = fx.index();
    let id = Uuid::now_v7();
    let mut p = point(id, vec![1.0, 0.0], &alice(), Tier::Working);
    p.thread_id = Some("t1".into());
    idx.upsert(vec![p.clone()]).unwrap();
    let t1 = Scope::user("alice")
        .with_thread("t1")
        .with_tiers(vec![Tier::Working])
        .filter();
    assert_eq!(ids(&idx.search(&[1.0, 0.0], &t1, 5).unwrap()), vec![id]);

    // Same id, new vector, no thread, new version, long-term tier.
    let mut q = point(id, vec![0.0, 1.0], &alice(), Tier::LongTerm);
    q.version = 2;
    idx.upsert(vec![q]).unwrap();
    assert_eq!(idx.entries().unwrap(), vec![(id, 2)]);
    assert_eq!(idx.count_owner(&alice()).unwrap(), 1);
    assert!(
        idx.search(&[1.0, 0.0], &t1, 5).unwrap().is_empty(),
        "old payload must be gone"
    );
    let hits = idx.search(&[0.0, 1.0], &alice_long_term(), 5).unwrap();
    assert_eq!(ids(&hits), vec![id]);
    assert!((hits[0].1 - 1.0).abs() < 1e-4, "the new vector is searched");
}

pub(crate) fn filters_isolate_owners_tiers_threads_statuses_and_kinds(
    make: &dyn Fn(usize) -> Fixture,
) {
    let fx = make(8);
    let idx = fx.index();
    let mut rng = StdRng::seed_from_u64(7);
    let points = population(&mut rng, 8, 300, "default");
    idx.upsert(points.clone()).unwrap();
    let mut scopes = vec![
        Scope::user("alice"),
        Scope::user("alice").with_thread("t1"),
        Scope::user("bob")
            .with_thread("t2")
            .with_tiers(vec![Tier::Working]),
        Scope::user("carol").with_tiers(vec![Tier::Reference]),
        Scope::user("nobody"),
    ];
    let mut pending = Scope::user("bob").with_thread("t1");
    pending.include_pending = true;
    pending.kinds = Some(vec![Kind::Fact, Kind::Event]);
    scopes.push(pending);
    let q = random_vec(&mut rng, 8);
    for scope in scopes {
        let f = scope.filter();
        let want = matching(&points, &f);
        let got = idx.search(&q, &f, 1000).unwrap();
        assert_eq!(
            ids(&got).into_iter().collect::<HashSet<_>>(),
            want,
            "{scope:?}"
        );
        // A small limit returns the best of exactly that set, across its
        // clauses (a scope's tiers are searched clause by clause and merged).
        let mut best: Vec<(f32, Uuid)> = points
            .iter()
            .filter(|p| want.contains(&p.id))
            .map(|p| (cosine(&q, &p.vector), p.id))
            .collect();
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        let best: Vec<Uuid> = best.into_iter().take(3).map(|(_, id)| id).collect();
        let top = idx.search(&q, &f, 3).unwrap();
        assert_eq!(ids(&top), best, "{scope:?}");
        assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
    }
    // Bob's points are never candidates for Alice, whatever the limit.
    let bob_ids: HashSet<_> = points
        .iter()
        .filter(|p| p.owner == bob())
        .map(|p| p.id)
        .collect();
    assert!(!bob_ids.is_empty());
    let got = idx
        .search(&q, &Scope::user("alice").with_thread("t1").filter(), 1000)
        .unwrap();
    assert!(got.iter().all(|h| !bob_ids.contains(&h.0)));
}

pub(crate) fn empty_clauses_statuses_or_kinds_return_nothing(make: &dyn Fn(usize) -> Fixture) {
    let fx = make(2);
    let idx = fx.index();
    idx.upsert(vec![point(
        Uuid::now_v7(),
        vec![1.0, 0.0],
        &alice(),
        Tier::LongTerm,
    )])
    .unwrap();
    let full = alice_long_term();
    assert_eq!(idx.search(&[1.0, 0.0], &full, 5).unwrap().len(), 1);
    let no_clauses = IndexFilter {
        clauses: vec![],
        ..full.clone()
    };
    assert!(idx.search(&[1.0, 0.0], &no_clauses, 5).unwrap().is_empty());
    let no_statuses = IndexFilter {
        statuses: vec![],
        ..full.clone()
    };
    assert!(idx.search(&[1.0, 0.0], &no_statuses, 5).unwrap().is_empty());
    let no_kinds = IndexFilter {
        kinds: Some(vec![]),
        ..full.clone()
    };
    assert!(idx.search(&[1.0, 0.0], &no_kinds, 5).unwrap().is_empty());
    let key = crate::vector::PayloadKey::random();
    assert!(keyword_filter(&no_clauses, &key).is_none());
    assert!(keyword_filter(&full, &key).is_some());
}

pub(crate) fn delete_and_delete_owner_leave_the_others_alone(make: &dyn Fn(usize) -> Fixture) {
    let fx = make(4);
    let idx = fx.index();
    let mut rng = StdRng::seed_from_u64(3);
    let mut points = Vec::new();
    for (owner, n) in [(alice(), 5), (bob(), 7), (Owner::user("other", "alice"), 3)] {
        for _ in 0..n {
            points.push(point(
                Uuid::now_v7(),
                random_vec(&mut rng, 4),
                &owner,
                Tier::LongTerm,
            ));
        }
    }
    idx.upsert(points.clone()).unwrap();
    assert_eq!(idx.count_owner(&alice()).unwrap(), 5);
    assert_eq!(idx.count_owner(&bob()).unwrap(), 7);

    // Delete one of alice's points, plus an unknown id (not an error).
    let gone = points[0].id;
    idx.delete(&[gone, Uuid::now_v7()]).unwrap();
    idx.delete(&[]).unwrap();
    assert_eq!(idx.count_owner(&alice()).unwrap(), 4);
    assert!(!idx.entries().unwrap().iter().any(|e| e.0 == gone));

    assert_eq!(idx.delete_owner(&bob()).unwrap(), 7);
    assert_eq!(idx.count_owner(&bob()).unwrap(), 0);
    assert_eq!(
        idx.delete_owner(&bob()).unwrap(),
        0,
        "second time: nothing left"
    );
    let q = random_vec(&mut rng, 4);
    assert!(idx
        .search(&q, &Scope::user("bob").filter(), 100)
        .unwrap()
        .is_empty());
    // Alice (here and in the other tenant) is untouched.
    assert_eq!(idx.count_owner(&alice()).unwrap(), 4);
    assert_eq!(idx.count_owner(&Owner::user("other", "alice")).unwrap(), 3);
    let left: HashSet<_> = idx.entries().unwrap().into_iter().map(|e| e.0).collect();
    let want: HashSet<_> = points
        .iter()
        .filter(|p| p.owner != bob() && p.id != gone)
        .map(|p| p.id)
        .collect();
    assert_eq!(left, want);
}

pub(crate) fn clear_removes_everything_and_the_index_stays_usable(make: &dyn Fn(usize) -> Fixture) {
    let fx = make(4);
    let idx = fx.index();
    let mut rng = StdRng::seed_from_u64(9);
    idx.upsert(population(&mut rng, 4, 50, "default")).unwrap();
    assert_eq!(idx.entries().unwrap().len(), 50);
    idx.clear().unwrap();
    assert!(idx.entries().unwrap().is_empty());
    assert_eq!(idx.count_owner(&alice()).unwrap(), 0);
    let id = Uuid::now_v7();
    idx.upsert(vec![point(id, vec![1.0; 4], &alice(), Tier::LongTerm)])
        .unwrap();
    assert_eq!(
        ids(&idx.search(&[1.0; 4], &alice_long_term(), 5).unwrap()),
        vec![id]
    );
    idx.flush().unwrap();
    assert_eq!(idx.entries().unwrap(), vec![(id, 1)]);
}

/// `entries`, `entry_count` and `count_owner` reflect every upsert,
/// replacement and delete at once (a backend must read its own writes).
pub(crate) fn entries_and_counts_follow_every_write(make: &dyn Fn(usize) -> Fixture) {
    let fx = make(4);
    let idx = fx.index();
    assert!(idx.entries().unwrap().is_empty());
    let mut rng = StdRng::seed_from_u64(21);
    let mut points = population(&mut rng, 4, 40, "default");
    assert_eq!(idx.entry_count().unwrap(), 0);
    idx.upsert(points.clone()).unwrap();
    let want = |points: &[VectorPoint]| sorted(points.iter().map(|p| (p.id, p.version)).collect());
    assert_eq!(sorted(idx.entries().unwrap()), want(&points));
    assert_eq!(idx.entry_count().unwrap(), points.len());
    for owner in [alice(), bob()] {
        let n = points.iter().filter(|p| p.owner == owner).count();
        assert_eq!(idx.count_owner(&owner).unwrap(), n);
    }
    // A new version of some points, and a few deletes.
    for p in points.iter_mut().take(10) {
        p.version += 1;
    }
    idx.upsert(points[..10].to_vec()).unwrap();
    let gone: Vec<Uuid> = points.drain(30..).map(|p| p.id).collect();
    idx.delete(&gone).unwrap();
    assert_eq!(sorted(idx.entries().unwrap()), want(&points));
    assert_eq!(
        idx.entry_count().unwrap(),
        points.len(),
        "replaced once, deleted gone"
    );
    let n = points.iter().filter(|p| p.owner == alice()).count();
    assert_eq!(idx.count_owner(&alice()).unwrap(), n);
    assert_eq!(
        idx.count_owner(&Owner::user("default", "nobody")).unwrap(),
        0
    );
    idx.flush().unwrap();
    idx.optimize().unwrap();
    assert_eq!(sorted(idx.entries().unwrap()), want(&points));
}
