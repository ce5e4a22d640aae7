//! The embedding cache ([`EmbeddingCache`]): `(tenant_id, user_id, model_id,
//! text_sha256) → vector`, per owner, vectors in half precision. Compiled
//! once per dialect `D` (see `sql/mod.rs`).

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::{QueryBuilder, Row as _};

use super::rows::{guard_users, refuse_if_thread_gone};
use super::D;
use crate::error::Result;
use crate::store::sql::{GuardAt, SqlStore};
use crate::store::{decode_vector, encode_vector, CacheOwner, EmbeddingCache, ThreadRef};

#[async_trait]
impl EmbeddingCache for SqlStore<D> {
    async fn cached_embeddings(
        &self,
        owner: &CacheOwner,
        model_id: &str,
        hashes: &[String],
    ) -> Result<HashMap<String, Vec<f32>>> {
        let mut out = HashMap::new();
        for chunk in hashes.chunks(500) {
            let mut qb: QueryBuilder<D> = QueryBuilder::new(
                "SELECT text_sha256, vector FROM embedding_cache WHERE tenant_id = ",
            );
            qb.push_bind(owner.tenant_id.clone())
                .push(" AND user_id = ")
                .push_bind(owner.user_key().to_string())
                .push(" AND model_id = ")
                .push_bind(model_id.to_string())
                .push(" AND text_sha256 IN (");
            let mut sep = qb.separated(", ");
            for h in chunk {
                sep.push_bind(h.clone());
            }
            qb.push(")");
            for row in qb.build().fetch_all(&self.pool).await? {
                let hash: String = row.try_get(0)?;
                let blob: Vec<u8> = row.try_get(1)?;
                out.insert(hash, decode_vector(&blob)?);
            }
        }
        Ok(out)
    }

    async fn cache_embeddings(
        &self,
        owner: &CacheOwner,
        model_id: &str,
        entries: &[(String, Vec<f32>)],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<()> {
        // A user's vectors are theirs as much as their texts: none may land
        // behind an erasure.
        let users: Vec<(&str, &str)> = owner
            .user_id
            .as_deref()
            .map(|user| (owner.tenant_id.as_str(), user))
            .into_iter()
            .collect();
        let mut tx = self.pool.begin().await?;
        guard_users(&mut tx, &users, GuardAt::BeforeWrites).await?;
        for (hash, vector) in entries {
            sqlx::query(
                "INSERT INTO embedding_cache (tenant_id, user_id, model_id, text_sha256, vector) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (tenant_id, user_id, model_id, text_sha256) DO UPDATE SET vector = excluded.vector",
            )
            .bind(&owner.tenant_id)
            .bind(owner.user_key())
            .bind(model_id)
            .bind(hash)
            .bind(encode_vector(vector))
            .execute(&mut *tx)
            .await?;
        }
        guard_users(&mut tx, &users, GuardAt::AfterWrites).await?;
        if let Some(thread) = from_thread {
            refuse_if_thread_gone(&mut tx, thread).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
