//! Authentication: `Authorization: Bearer <key>` → the key's [`Actor`].
//!
//! - A `user` key is bound to its user (`Actor.user_id = Some(u)`): the engine
//!   refuses any other user id and hides other users' memories as not found.
//! - An `agent` key acts for any user of its tenant (the request names the user).
//! - An `admin` key also writes reference memory and reads `/metrics`.
//! - Tenants are namespaces: every actor carries its key's tenant and the
//!   engine scopes every read and write by it.
//!
//! In `--insecure-dev` mode a request without a key acts as the local operator
//! (default tenant, admin); a request that does present a key is still
//! checked, so clients can be tested against dev mode unchanged.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::AppState;
use crate::domain::Actor;
use crate::error::{Error, Result};

/// How requests are authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMode {
    /// Every `/v1` request needs a valid key.
    Keys,
    /// Requests without a key act as the local admin (loopback only).
    InsecureDev,
}

/// The actor of an authenticated request.
#[derive(Clone, Debug)]
pub struct Auth(pub Actor);

/// The actor id used for keyless requests in dev mode (audit events).
pub const DEV_ACTOR: &str = "insecure-dev";

fn bearer(value: &[u8]) -> Result<&str> {
    let text = std::str::from_utf8(value)
        .map_err(|_| Error::Unauthenticated("malformed Authorization header".into()))?;
    let (scheme, token) = text
        .trim()
        .split_once(' ')
        .ok_or_else(|| Error::Unauthenticated("expected `Authorization: Bearer <key>`".into()))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(Error::Unauthenticated(
            "expected `Authorization: Bearer <key>`".into(),
        ));
    }
    Ok(token.trim())
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let actor = match (parts.headers.get(AUTHORIZATION), state.auth) {
            (None, AuthMode::InsecureDev) => Actor::local(DEV_ACTOR),
            (None, AuthMode::Keys) => {
                return Err(Error::Unauthenticated(
                    "missing `Authorization: Bearer <key>` header (an operator creates keys with `mnemo keys create`)".into(),
                ))
            }
            (Some(value), _) => {
                let secret = bearer(value.as_bytes())?;
                let (_, actor) =
                    crate::service::keys::authenticate(state.engine.keys(), secret).await?;
                actor
            }
        };
        let span = tracing::Span::current();
        span.record("key_id", actor.id.as_str());
        span.record("tenant", actor.tenant_id.as_str());
        if let Some(limiter) = &state.rate_limiter {
            limiter.check(&actor.id)?;
        }
        Ok(Auth(actor))
    }
}

/// Only admin keys pass.
pub fn require_admin(actor: &Actor, what: &str) -> Result<()> {
    if actor.admin {
        Ok(())
    } else {
        Err(Error::Forbidden(format!("only admin keys may {what}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header_is_parsed_strictly() {
        assert_eq!(bearer(b"Bearer abc").unwrap(), "abc");
        assert_eq!(bearer(b"bearer  abc ").unwrap(), "abc");
        assert!(bearer(b"Basic abc").is_err());
        assert!(bearer(b"Bearer").is_err());
        assert!(bearer(b"Bearer   ").is_err());
    }
}
