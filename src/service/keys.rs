//! API keys: creation, revocation, and resolving a presented secret to the
//! [`Actor`] it may act as. Used by `mnemo keys` and by the HTTP API's
//! authentication; both go through the store's key methods only.
//!
//! A secret is `mnemo_` followed by 32 random bytes in hex (256 bits). Only its
//! SHA-256 is stored; it is shown once, at creation. Lookup is by hash, so no
//! constant-time comparison is involved. Revocation takes effect on the next
//! request (there is no cache).

use chrono::{DateTime, Utc};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::domain::validate::validate_id;
use crate::domain::Actor;
use crate::error::{Error, Result};
use crate::store::{ApiKey, KeyStore, Role};

/// The prefix of every secret, so that leaked keys are recognisable by scanners.
pub const SECRET_PREFIX: &str = "mnemo_";

/// The hex SHA-256 of a secret: what the store keeps.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

/// Creates a key and returns it with its secret (the only time the secret
/// exists outside the caller's hands). A `user` key needs a user id; an
/// `admin` key must not have one (it acts for the whole tenant).
pub async fn create(
    store: &dyn KeyStore,
    tenant_id: &str,
    user_id: Option<&str>,
    role: Role,
    now: DateTime<Utc>,
) -> Result<(ApiKey, String)> {
    validate_id("tenant_id", tenant_id)?;
    if let Some(u) = user_id {
        validate_id("user_id", u)?;
    }
    match (role, user_id) {
        (Role::User, None) => {
            return Err(Error::invalid(
                "user_id",
                "a user key is bound to one user: give --user",
            ))
        }
        (Role::Admin, Some(_)) => {
            return Err(Error::invalid(
                "user_id",
                "an admin key acts for the whole tenant and cannot be bound to a user",
            ))
        }
        _ => {}
    }
    let secret = format!("{SECRET_PREFIX}{}", random_hex(32));
    let key = ApiKey {
        id: format!("key_{}", random_hex(8)),
        tenant_id: tenant_id.to_string(),
        user_id: user_id.map(str::to_string),
        role,
        secret_sha256: hash_secret(&secret),
        created_at: now,
        revoked_at: None,
    };
    store.insert_api_key(&key).await?;
    Ok((key, secret))
}

/// The actor a key acts as: its tenant; bound to its user when it has one;
/// admin only for `admin` keys.
pub fn actor_for(key: &ApiKey) -> Actor {
    Actor {
        id: key.id.clone(),
        tenant_id: key.tenant_id.clone(),
        user_id: key.user_id.clone(),
        admin: key.role == Role::Admin,
    }
}

/// Resolves a presented secret. Unknown and revoked keys are the same
/// `Unauthenticated` error, so a caller cannot tell which.
pub async fn authenticate(store: &dyn KeyStore, secret: &str) -> Result<(ApiKey, Actor)> {
    let invalid = || Error::Unauthenticated("invalid or revoked API key".into());
    if !secret.starts_with(SECRET_PREFIX) || secret.len() > 256 {
        return Err(invalid());
    }
    match store.api_key_by_hash(&hash_secret(secret)).await? {
        Some(key) if key.revoked_at.is_none() => {
            let actor = actor_for(&key);
            Ok((key, actor))
        }
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::KeyStore;

    #[tokio::test]
    async fn created_keys_authenticate_until_revoked() {
        let store = SqliteStore::in_memory().await.unwrap();
        let now = Utc::now();
        let (key, secret) = create(&store, "acme", Some("ann"), Role::User, now)
            .await
            .unwrap();
        assert!(secret.starts_with(SECRET_PREFIX));
        assert_ne!(key.secret_sha256, secret);
        let (_, actor) = authenticate(&store, &secret).await.unwrap();
        assert_eq!(actor.tenant_id, "acme");
        assert_eq!(actor.user_id.as_deref(), Some("ann"));
        assert!(!actor.admin);
        assert_eq!(store.count_active_api_keys().await.unwrap(), 1);
        assert!(store.revoke_api_key(&key.id, now).await.unwrap());
        assert!(!store.revoke_api_key(&key.id, now).await.unwrap());
        assert!(matches!(
            authenticate(&store, &secret).await,
            Err(Error::Unauthenticated(_))
        ));
        assert!(authenticate(&store, "mnemo_nope").await.is_err());
        assert_eq!(store.count_active_api_keys().await.unwrap(), 0);
        assert_eq!(store.list_api_keys().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn roles_and_user_binding_are_checked() {
        let store = SqliteStore::in_memory().await.unwrap();
        let now = Utc::now();
        assert!(create(&store, "t", None, Role::User, now).await.is_err());
        assert!(create(&store, "t", Some("u"), Role::Admin, now)
            .await
            .is_err());
        let (admin, _) = create(&store, "t", None, Role::Admin, now).await.unwrap();
        assert!(actor_for(&admin).admin);
        let (agent, _) = create(&store, "t", None, Role::Agent, now).await.unwrap();
        let a = actor_for(&agent);
        assert!(!a.admin && a.user_id.is_none());
    }
}
