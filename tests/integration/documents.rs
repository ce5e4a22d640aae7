//! Reference documents: replacing a document with more chunks than one list
//! page (500) leaves none of the old chunks active, in one transaction.

use std::sync::Arc;

use mnemo::domain::Actor;
use mnemo::domain::{Status, Tier};
use mnemo::policy::Policy;
use mnemo::service::DocumentInput;
use mnemo::store::ListQuery;
use mnemo::Engine;

use crate::common::*;

/// `n` sentences, each its own chunk at `chunk_chars = 60`.
fn document(tag: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("Clause {i} of version {tag} covers refunds."))
        .collect::<Vec<_>>()
        .join("\n\n")
}

async fn chunks(engine: &Engine, document_id: &str) -> Vec<mnemo::domain::Memory> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = engine
            .store()
            .list(&ListQuery {
                tenant_id: "default".into(),
                tier: Some(Tier::Reference),
                document_id: Some(document_id.into()),
                after,
                limit: 500,
                ..Default::default()
            })
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        out.extend(page);
    }
    out
}

#[tokio::test]
async fn replacing_a_document_of_over_500_chunks_leaves_no_old_chunk_active() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = Policy::default();
    policy.reference.chunk_chars = 60;
    policy.reference.chunk_overlap_chars = 0;
    let engine = engine_with(dir.path(), Arc::new(manual()), policy).await;
    let admin = Actor::local("admin");
    let ingest = |tag: &'static str, n: usize| {
        let engine = engine.clone();
        let admin = admin.clone();
        async move {
            engine
                .ingest_document(
                    &admin,
                    DocumentInput {
                        document_id: Some("refunds".into()),
                        text: document(tag, n),
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
        }
    };
    let v1 = ingest("one", 620).await;
    assert_eq!(v1.chunk_ids.len(), 620);
    assert_eq!(v1.replaced_chunks, 0);
    // Two replacements: the second finds 620 + 610 rows, 1,230 of them
    // deleted chunks ahead of the live ones in id order.
    let v2 = ingest("two", 610).await;
    assert_eq!(v2.replaced_chunks, 620);
    let v3 = ingest("three", 605).await;
    assert_eq!(v3.replaced_chunks, 610);

    let all = chunks(&engine, "refunds").await;
    assert_eq!(all.len(), 620 + 610 + 605);
    let active: Vec<_> = all.iter().filter(|m| m.status == Status::Active).collect();
    assert_eq!(active.len(), 605);
    assert!(active.iter().all(|m| v3.chunk_ids.contains(&m.id)));
    assert!(all
        .iter()
        .filter(|m| !v3.chunk_ids.contains(&m.id))
        .all(|m| m.status == Status::Deleted));
    // The indexes hold only the live version.
    engine.commit().await.unwrap();
    let lexical = engine.lexical().versions(&v2.chunk_ids).unwrap();
    assert!(
        lexical.is_empty(),
        "{} old chunks still indexed",
        lexical.len()
    );
    assert_eq!(engine.lexical().versions(&v3.chunk_ids).unwrap().len(), 605);
    assert_eq!(engine.vectors().versions(&v3.chunk_ids).unwrap().len(), 605);

    // Deleting the document removes all 605 live chunks, past one page.
    assert_eq!(
        engine.delete_document(&admin, "refunds").await.unwrap(),
        605
    );
    assert!(chunks(&engine, "refunds")
        .await
        .iter()
        .all(|m| m.status == Status::Deleted));
    assert!(
        engine.delete_document(&admin, "refunds").await.is_err(),
        "now not found"
    );
}
