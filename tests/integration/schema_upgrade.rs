//! A store written by an earlier release opens under this one: the
//! migrations run over real data, not only over an empty schema.
//!
//! 0008 re-keys the embedding cache by owner: each entry of the old,
//! text-keyed cache is copied to every owner whose memories have the text;
//! the old f32 blobs keep decoding next to the new half-precision ones.

use std::path::Path;

use mnemo::store::postgres::PgStore;
use mnemo::store::sqlite::SqliteStore;
use mnemo::store::{text_hash, CacheOwner, MemoryStore};
use sqlx::migrate::Migrator;

use crate::backends::PgSchema;

/// The statements run on a store at schema version 7, in either dialect.
fn old_rows() -> Vec<String> {
    let memory = |id: &str, tier: &str, user: Option<&str>, text: &str| {
        let user = user.map_or("NULL".to_string(), |u| format!("'{u}'"));
        format!(
            "INSERT INTO memories (id, tenant_id, tier, user_id, kind, text, text_sha256, \
             importance, confidence, status, created_at, updated_at, version) VALUES \
             ('{id}', 'default', '{tier}', {user}, 'fact', '{text}', '{}', 0.5, 0.9, 'active', 0, 0, 1)",
            text_hash(text)
        )
    };
    let cached = |text: &str, blob_hex: &str| {
        format!(
            "INSERT INTO embedding_cache (model_id, text_sha256, vector) VALUES ('m', '{}', {blob_hex})",
            text_hash(text)
        )
    };
    vec![
        memory(
            "018f0000-0000-7000-8000-000000000001",
            "long_term",
            Some("alice"),
            "shared text",
        ),
        memory(
            "018f0000-0000-7000-8000-000000000002",
            "long_term",
            Some("bob"),
            "shared text",
        ),
        memory(
            "018f0000-0000-7000-8000-000000000003",
            "reference",
            None,
            "reference text",
        ),
        cached("shared text", "X'0000803f000000bf'"),
        cached("reference text", "X'0000003f'"),
        cached("text of a memory long gone", "X'0000803f'"),
    ]
}

async fn check_upgraded(store: &dyn MemoryStore) {
    let owner = |user: Option<&str>| CacheOwner {
        tenant_id: "default".into(),
        user_id: user.map(str::to_string),
    };
    let hashes: Vec<String> = [
        "shared text",
        "reference text",
        "text of a memory long gone",
    ]
    .iter()
    .map(|t| text_hash(t))
    .collect();
    for user in ["alice", "bob"] {
        let got = store
            .cached_embeddings(&owner(Some(user)), "m", &hashes)
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "{user}: {got:?}");
        assert_eq!(got[&hashes[0]], vec![1.0, -0.5], "{user}: old f32 blob");
    }
    let reference = store
        .cached_embeddings(&owner(None), "m", &hashes)
        .await
        .unwrap();
    assert_eq!(reference.len(), 1);
    assert_eq!(reference[&hashes[1]], vec![0.5]);
    assert_eq!(
        store.stats().await.unwrap().cached_embeddings,
        3,
        "orphan dropped"
    );
    // Erasing alice takes her copy only.
    store
        .begin_erasure("default", "alice", "t", chrono::Utc::now())
        .await
        .unwrap();
    let rows = store.erase_user("default", "alice").await.unwrap();
    assert_eq!(rows.cached_embeddings, 1);
    assert_eq!(
        store
            .cached_embeddings(&owner(Some("bob")), "m", &hashes)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn sqlite_store_at_schema_7_upgrades_its_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
        migrate_to_7(Path::new("migrations/sqlite"), &pool).await;
        for sql in old_rows() {
            sqlx::query(&sql).execute(&pool).await.unwrap();
        }
        pool.close().await;
    }
    let store = SqliteStore::open(&path).await.unwrap();
    check_upgraded(&store).await;
}

#[tokio::test]
async fn postgres_store_at_schema_7_upgrades_its_cache() {
    let schema = PgSchema::create().await;
    {
        let pool = sqlx::PgPool::connect_with(schema.options()).await.unwrap();
        migrate_to_7(Path::new("migrations/postgres"), &pool).await;
        for sql in old_rows() {
            let sql = sql.replace("X'", "'\\x");
            sqlx::query(&sql).execute(&pool).await.unwrap();
        }
        pool.close().await;
    }
    let store = PgStore::connect_with(schema.options(), 2).await.unwrap();
    check_upgraded(&store).await;
}

/// Applies the migrations of `dir` up to version 7, as a release of that
/// schema left the database.
async fn migrate_to_7<'a, A>(dir: &Path, db: A)
where
    A: sqlx::Acquire<'a>,
    <A::Connection as std::ops::Deref>::Target: sqlx::migrate::Migrate,
{
    let dir = crate::common::repo_root().join(dir);
    let mut migrator = Migrator::new(dir).await.unwrap();
    migrator.migrations = migrator
        .migrations
        .iter()
        .filter(|m| m.version <= 7)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    assert_eq!(migrator.migrations.len(), 7);
    migrator.run(db).await.unwrap();
}
