//! Ranking with a manual clock: recency and importance act as the policy says.

use std::sync::Arc;

use chrono::Duration;
use mnemo::domain::Actor;
use mnemo::domain::{NewMemory, Scope};
use mnemo::service::SearchRequest;

use crate::common::*;

#[tokio::test]
async fn at_equal_relevance_the_newer_memory_ranks_first() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    // The same text twice would reinforce one memory (lifecycle); this test
    // is about decay between two equal memories, so it turns that off.
    let mut policy = mnemo::policy::Policy::default();
    policy.lifecycle.reinforce_duplicates = false;
    let engine = engine_with(dir.path(), Arc::new(clock.clone()), policy).await;
    let actor = Actor::local("test");
    let old = engine
        .add(
            &actor,
            vec![long_term("u", "the user parks on level three")],
            true,
        )
        .await
        .unwrap()[0]
        .id;
    clock.advance(Duration::days(10));
    let new = engine
        .add(
            &actor,
            vec![long_term("u", "the user parks on level three")],
            true,
        )
        .await
        .unwrap()[0]
        .id;
    let hits = engine
        .search(SearchRequest::new(
            Scope::user("u"),
            "where does the user park",
        ))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].memory.id, new);
    assert_eq!(hits[1].memory.id, old);
    assert!(hits[0].breakdown.decay_factor > hits[1].breakdown.decay_factor);
}

#[tokio::test]
async fn a_memory_several_half_lives_old_ranks_below_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    // Decay's own factor, without the learned stage (whose `recency`
    // feature orders these two too, not by this factor).
    let mut policy = mnemo::policy::Policy::default();
    policy.retrieval.learned.enabled = false;
    let engine = engine_with(dir.path(), Arc::new(clock.clone()), policy).await;
    let actor = Actor::local("test");
    let half_life = engine.policy().decay.half_life_days.long_term;
    // Equally relevant to the query (same matched words, same length).
    let old = engine
        .add(
            &actor,
            vec![long_term("u", "dentist appointment tuesday")],
            true,
        )
        .await
        .unwrap()[0]
        .id;
    clock.advance(Duration::days((half_life * 4.0) as i64));
    let fresh = engine
        .add(
            &actor,
            vec![long_term("u", "dentist appointment friday")],
            true,
        )
        .await
        .unwrap()[0]
        .id;
    let hits = engine
        .search(SearchRequest::new(Scope::user("u"), "dentist appointment"))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 2);
    assert_eq!(
        (hits[0].memory.id, hits[1].memory.id),
        (fresh, old),
        "{hits:#?}"
    );
    assert!((hits[0].breakdown.fused_score - hits[1].breakdown.fused_score).abs() < 1e-6);
    let floor = engine.policy().decay.floor;
    assert!((hits[1].breakdown.decay_factor - (floor + (1.0 - floor) / 16.0)).abs() < 1e-3);
    assert!((hits[0].breakdown.decay_factor - 1.0).abs() < 1e-6);

    // Without decay the two are tied: decay is what ordered them.
    let mut req = SearchRequest::new(Scope::user("u"), "dentist appointment");
    req.decay = false;
    let hits = engine.search(req).await.unwrap().hits;
    assert!((hits[0].score - hits[1].score).abs() < 1e-6);
}

#[tokio::test]
async fn importance_breaks_ties_as_the_policy_says() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let actor = Actor::local("test");
    let mk = |importance| NewMemory {
        importance: Some(importance),
        ..long_term("u", "allergic to peanuts")
    };
    let added = engine
        .add(&actor, vec![mk(0.2), mk(0.9)], true)
        .await
        .unwrap();
    let hits = engine
        .search(SearchRequest::new(Scope::user("u"), "peanuts"))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits[0].memory.id, added[1].id);
    let w = engine.policy().decay.importance_weight;
    assert!((hits[0].breakdown.importance_factor - (1.0 + w * 0.8)).abs() < 1e-5);
    assert!((hits[1].breakdown.importance_factor - (1.0 - w * 0.6)).abs() < 1e-5);
    assert!(hits[0].score > hits[1].score);
}

#[tokio::test]
async fn expired_memories_are_not_returned() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let engine = engine_in(dir.path(), Arc::new(clock.clone())).await;
    let m = NewMemory {
        expires_at: Some(t0() + Duration::days(2)),
        ..long_term("u", "the user is on leave this Wednesday")
    };
    engine
        .add(&Actor::local("test"), vec![m], true)
        .await
        .unwrap();
    let search = || SearchRequest::new(Scope::user("u"), "leave Wednesday");
    assert_eq!(engine.search(search()).await.unwrap().hits.len(), 1);
    clock.advance(Duration::days(3));
    assert!(engine.search(search()).await.unwrap().hits.is_empty());
}

#[tokio::test]
async fn every_fusion_method_explains_each_hit_with_raw_scores_and_contributions() {
    use mnemo::policy::FusionKind;
    for method in [
        FusionKind::Dbsf,
        FusionKind::MinMax,
        FusionKind::Weighted,
        FusionKind::Rrf,
        FusionKind::Calibrated,
        FusionKind::Absolute,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut policy = mnemo::policy::Policy::default();
        policy.retrieval.fusion.method = method;
        policy.retrieval.rerank.enabled = true;
        // The fusion method's own explanation (the learned stage, on by
        // default, would replace its score: `learned` tests that).
        policy.retrieval.learned.enabled = false;
        policy.embedding.all_minilm_l6_v2.min_vector_similarity = 0.0;
        let engine = engine_with(dir.path(), Arc::new(manual()), policy).await;
        let actor = Actor::local("test");
        engine
            .add(
                &actor,
                vec![
                    long_term("u", "the user drinks green tea every morning"),
                    long_term("u", "the user bought a green bicycle"),
                    long_term("u", "the meeting moved to Thursday"),
                ],
                true,
            )
            .await
            .unwrap();
        let hits = engine
            .search(SearchRequest::new(Scope::user("u"), "green tea"))
            .await
            .unwrap()
            .hits;
        assert!(!hits.is_empty(), "{method:?}");
        assert!(
            hits[0].memory.text.contains("green tea"),
            "{method:?}: {hits:#?}"
        );
        for h in &hits {
            let b = &h.breakdown;
            let sum = b.bm25_contribution.unwrap_or(0.0) + b.vector_contribution.unwrap_or(0.0);
            assert!((sum - b.fused_score).abs() < 1e-5, "{method:?}: {b:?}");
            assert_eq!(b.bm25_score.is_some(), b.bm25_contribution.is_some());
            assert_eq!(
                b.vector_similarity.is_some(),
                b.vector_contribution.is_some()
            );
            if let Some(s) = b.vector_similarity {
                assert!((-1.0..=1.0).contains(&s), "the raw cosine is kept: {s}");
            }
            // `absolute` shows its scales; the second stage (switched on
            // here) its signals, and its factor is part of the final score.
            let absolute = method == FusionKind::Absolute;
            assert_eq!(b.bm25_full_match_score.is_some(), absolute, "{b:?}");
            assert_eq!(b.vector_confidence, absolute.then_some(1.0), "{b:?}");
            let r = b.rerank.expect("the second stage saw every hit");
            let product = b.fused_score * b.decay_factor * b.importance_factor * r.factor;
            assert!((product - b.final_score).abs() < 1e-5, "{b:?}");
        }
        if method == FusionKind::Absolute {
            // "green tea" is held as a pair by the first hit only.
            let r = hits[0].breakdown.rerank.unwrap();
            assert_eq!(r.phrase, 1.0, "{hits:#?}");
            assert!(hits[1..]
                .iter()
                .all(|h| h.breakdown.rerank.unwrap().phrase == 0.0));
        }
    }
}

/// `[retrieval.conversation]`: a hit that is a turn brings the turns beside
/// it in its conversation (same user, same thread, creation order), each
/// with a share of its score, and never another user's turn.
#[tokio::test]
async fn a_turn_brings_its_neighbours_with_a_share_of_its_score() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = mnemo::policy::Policy::default();
    policy.retrieval.conversation.enabled = true;
    let weight = policy.retrieval.conversation.weight;
    let engine = engine_with(dir.path(), Arc::new(manual()), policy).await;
    let actor = Actor::local("test");
    let turn = |user: &str, text: &str| NewMemory {
        thread_id: Some("session-1".into()),
        ..long_term(user, text)
    };
    let turns = engine
        .add(
            &actor,
            vec![
                turn("u", "Caroline: I spent the weekend up north"),
                turn("u", "Melanie: which painting did you finish there?"),
                turn("u", "Caroline: a sunrise over the frozen lake"),
                turn("u", "Melanie: wonderful, send me a photo"),
                long_term("u", "Caroline keeps bees"),
            ],
            true,
        )
        .await
        .unwrap();
    // Another user's conversation of the same thread id, same words.
    engine
        .add(
            &actor,
            vec![
                turn("v", "Melanie: which painting did you finish there?"),
                turn("v", "Caroline: a portrait of my grandmother"),
            ],
            true,
        )
        .await
        .unwrap();
    let ids: Vec<_> = turns.iter().map(|m| m.id).collect();
    let search = |conversation: bool| {
        let engine = engine.clone();
        async move {
            let mut req = SearchRequest::new(Scope::user("u"), "which painting did Melanie finish");
            // The lexical leg alone: the hashing embedder of the tests
            // finds likeness in any text, a real model would not.
            req.legs = mnemo::service::Legs::Lexical;
            if !conversation {
                let mut ranking = engine.policy().ranking();
                ranking.context = None;
                req.ranking = Some(ranking);
            }
            engine.search(req).await.unwrap().hits
        }
    };

    let plain = search(false).await;
    assert_eq!(plain[0].memory.id, ids[1]);
    assert!(
        plain.iter().all(|h| h.memory.id != ids[2]),
        "the answer shares no word"
    );

    let hits = search(true).await;
    assert_eq!(hits[0].memory.id, ids[1]);
    assert!(hits
        .iter()
        .all(|h| h.memory.user_id.as_deref() == Some("u")));
    for beside in [ids[0], ids[2]] {
        let h = hits
            .iter()
            .find(|h| h.memory.id == beside)
            .expect("turn beside the hit");
        let lent = h.breakdown.context.expect("lent score in the breakdown");
        assert_eq!(lent.beside, ids[1]);
        assert!((lent.lent_score - weight * hits[0].score).abs() < 1e-6);
        assert_eq!(h.score, lent.lent_score);
        assert!(h.score < hits[0].score);
    }
    // Two turns away, and outside any conversation: nothing lent.
    for far in [ids[3], ids[4]] {
        assert!(hits
            .iter()
            .filter(|h| h.memory.id == far)
            .all(|h| h.breakdown.context.is_none()));
    }
}

#[tokio::test]
async fn the_lexical_leg_searches_without_the_querys_stop_words() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_in(dir.path(), Arc::new(manual())).await;
    let actor = Actor::local("test");
    let added = engine
        .add(
            &actor,
            vec![
                long_term("u", "I'm saving for a down payment on an apartment"),
                long_term("u", "我妈妈的生日是农历八月十五"),
                long_term("u", "My job: a nurse at the city hospital, night shifts"),
            ],
            true,
        )
        .await
        .unwrap();
    let lexical = |query: &'static str, stop_words: bool| {
        let engine = engine.clone();
        async move {
            let mut req = SearchRequest::new(Scope::user("u"), query);
            req.legs = mnemo::service::Legs::Lexical;
            let mut ranking = engine.policy().ranking();
            ranking.query_stop_words = stop_words;
            req.ranking = Some(ranking);
            engine.search(req).await.unwrap().hits
        }
    };
    // Only function words are shared: found without the filter, not with it.
    let ids =
        |hits: &[mnemo::domain::ranking::Hit]| hits.iter().map(|h| h.memory.id).collect::<Vec<_>>();
    assert!(ids(&lexical("What do I do for a living?", false).await).contains(&added[0].id));
    assert!(lexical("What do I do for a living?", true).await.is_empty());
    assert!(ids(&lexical("我的目标是多少", false).await).contains(&added[1].id));
    assert!(lexical("我的目标是多少", true).await.is_empty());
    // A content word still matches, and the default policy drops stop words.
    let hits = engine
        .search({
            let mut req = SearchRequest::new(Scope::user("u"), "what is my job?");
            req.legs = mnemo::service::Legs::Lexical;
            req
        })
        .await
        .unwrap()
        .hits;
    assert_eq!(ids(&hits), [added[2].id]);
}

#[tokio::test]
async fn a_memory_in_the_other_script_is_aligned_and_shows_it() {
    // The tests' hashing embedder runs on MiniLM's table, whose shifts are
    // 0; give it e5-like ones to exercise the service's alignment.
    let search = |shift: f32| async move {
        let dir = tempfile::tempdir().unwrap();
        let mut policy = mnemo::policy::Policy::default();
        policy
            .embedding
            .all_minilm_l6_v2
            .cross_script_shift_cjk_query = shift;
        policy.embedding.all_minilm_l6_v2.min_vector_similarity = -1.0;
        let engine = engine_with(dir.path(), Arc::new(manual()), policy).await;
        let actor = Actor::local("test");
        engine
            .add(
                &actor,
                vec![
                    long_term("u", "I take the subway to the office"),
                    long_term("u", "我每天早上去公园跑步"),
                ],
                true,
            )
            .await
            .unwrap();
        let mut req = SearchRequest::new(Scope::user("u"), "我每天怎么去上班");
        req.legs = mnemo::service::Legs::Vector;
        let hits = engine.search(req).await.unwrap().hits;
        let english = hits
            .iter()
            .find(|h| h.memory.text.starts_with("I take"))
            .expect("the English memory is a vector candidate")
            .breakdown
            .clone();
        let chinese = hits
            .iter()
            .find(|h| h.memory.text.starts_with("我每天"))
            .expect("the Chinese memory is a vector candidate")
            .breakdown
            .clone();
        (english, chinese)
    };
    let (plain_en, plain_zh) = search(0.0).await;
    assert_eq!(plain_en.vector_script_shift, None);
    let (en, zh) = search(0.2).await;
    // The English memory (all Latin) gets the whole shift, in its cosine
    // and in the breakdown; the Chinese memory, in the query's script, none.
    let shift = en.vector_script_shift.expect("shown for the other script");
    assert!((shift - 0.2).abs() < 1e-6, "{shift}");
    let raised = en.vector_similarity.unwrap() - plain_en.vector_similarity.unwrap();
    assert!((raised - 0.2).abs() < 1e-4, "{raised}");
    assert_eq!(zh.vector_script_shift, None);
    assert_eq!(zh.vector_similarity, plain_zh.vector_similarity);
}

#[tokio::test]
async fn a_time_the_query_names_lifts_the_memory_told_then() {
    let dir = tempfile::tempdir().unwrap();
    let clock = manual();
    let mut policy = mnemo::policy::Policy::default();
    policy.lifecycle.reinforce_duplicates = false;
    // `[retrieval.temporal]`'s factor itself, without the learned stage.
    policy.retrieval.learned.enabled = false;
    let engine = engine_with(dir.path(), Arc::new(clock.clone()), policy).await;
    let actor = Actor::local("test");
    let add = |text: &'static str| {
        let engine = engine.clone();
        let actor = actor.clone();
        async move {
            engine
                .add(&actor, vec![long_term("u", text)], true)
                .await
                .unwrap()[0]
                .id
        }
    };
    // Told on 2026-01-01 and on 2026-06-10; asked on 2026-10-01.
    let january = add("the user went camping near the lake").await;
    clock.advance(Duration::days(160));
    let june = add("the user went camping near the hill").await;
    clock.advance(Duration::days(113));
    let search = |query: &'static str, temporal: bool| {
        let engine = engine.clone();
        async move {
            let mut req = SearchRequest::new(Scope::user("u"), query);
            let mut ranking = engine.policy().ranking();
            if !temporal {
                ranking.temporal = None;
            }
            req.ranking = Some(ranking);
            engine.search(req).await.unwrap().hits
        }
    };
    // Without a named time, decay puts the newer one first.
    let plain = search("where did the user go camping?", true).await;
    assert_eq!(plain[0].memory.id, june);
    assert!(plain.iter().all(|h| h.breakdown.temporal.is_none()));
    for query in [
        "where did the user go camping in January?",
        "user camping 一月份",
        "where did the user go camping 9 months ago?",
    ] {
        let hits = search(query, true).await;
        assert_eq!(hits[0].memory.id, january, "{query}");
        let t = hits[0].breakdown.temporal.as_ref().expect("a signal");
        assert!(t.in_window, "{query}");
        assert_eq!(t.start.date_naive().to_string(), "2026-01-01", "{query}");
        assert!(t.factor > 1.0);
        let other = hits.iter().find(|h| h.memory.id == june).unwrap();
        assert!(!other.breakdown.temporal.as_ref().unwrap().in_window);
        assert_eq!(other.breakdown.temporal.as_ref().unwrap().factor, 1.0);
    }
    // The same query with the signal off: the newer one again.
    let off = search("where did the user go camping in January?", false).await;
    assert_eq!(off[0].memory.id, june);
    assert!(off.iter().all(|h| h.breakdown.temporal.is_none()));
}
