//! API keys ([`KeyStore`]): never the secret, only its SHA-256. Compiled once
//! per dialect `D` (see `sql/mod.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::Pool;

use super::rows::{guard_users, row_to_api_key};
use super::D;
use crate::error::Result;
use crate::store::sql::{conflict_if_duplicate, ms, GuardAt, SqlStore};
use crate::store::{ApiKey, KeyStore};

#[async_trait]
impl KeyStore for SqlStore<D> {
    async fn insert_api_key(&self, key: &ApiKey) -> Result<()> {
        // A key bound to a user is that user's data: refused (409) while the
        // user's erasure runs, so none is created behind its deletes.
        let mut tx = self.pool.begin().await?;
        let user: Vec<(&str, &str)> = key
            .user_id
            .as_deref()
            .map(|u| (key.tenant_id.as_str(), u))
            .into_iter()
            .collect();
        guard_users(&mut tx, &user, GuardAt::BeforeWrites).await?;
        sqlx::query(
            "INSERT INTO api_keys (id, tenant_id, user_id, role, secret_sha256, created_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&key.id)
        .bind(&key.tenant_id)
        .bind(&key.user_id)
        .bind(key.role.as_str())
        .bind(&key.secret_sha256)
        .bind(ms(key.created_at))
        .bind(key.revoked_at.map(ms))
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict_if_duplicate(e, || format!("API key {}", key.id)))?;
        guard_users(&mut tx, &user, GuardAt::AfterWrites).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn api_key_by_hash(&self, secret_sha256: &str) -> Result<Option<ApiKey>> {
        sqlx::query("SELECT * FROM api_keys WHERE secret_sha256 = $1")
            .bind(secret_sha256)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(row_to_api_key)
            .transpose()
    }

    async fn list_api_keys(&self) -> Result<Vec<ApiKey>> {
        sqlx::query("SELECT * FROM api_keys ORDER BY created_at, id")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(row_to_api_key)
            .collect()
    }

    async fn revoke_api_key(&self, id: &str, at: DateTime<Utc>) -> Result<bool> {
        let done =
            sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
                .bind(ms(at))
                .bind(id)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn count_active_api_keys(&self) -> Result<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NULL")
            .fetch_one(&self.pool)
            .await?;
        Ok(n as u64)
    }
}

/// Deletes every API key bound to a user (the user's erasure): a deleted key
/// no longer authenticates, and no key row keeps the user id. Returns the
/// keys deleted.
pub(super) async fn erase_user_keys(pool: &Pool<D>, tenant_id: &str, user_id: &str) -> Result<u64> {
    let done = sqlx::query("DELETE FROM api_keys WHERE tenant_id = $1 AND user_id = $2")
        .bind(tenant_id)
        .bind(user_id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}

/// The API keys bound to a user, revoked or not (erasure verification).
pub(super) async fn count_user_keys(pool: &Pool<D>, tenant_id: &str, user_id: &str) -> Result<u64> {
    let n: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM api_keys WHERE tenant_id = $1 AND user_id = $2")
            .bind(tenant_id)
            .bind(user_id)
            .fetch_one(pool)
            .await?;
    Ok(n as u64)
}
