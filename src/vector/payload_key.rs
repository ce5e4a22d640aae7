//! The key that hides client-chosen thread ids in vector payloads.
//!
//! A thread id is chosen by the client (often a user name, a ticket number or
//! a conversation title), so the vector index never stores it in clear: the
//! payload's `thread_id` is `t` + 32 hex digits of
//! SHA-256(key ‖ owner key ‖ 0x1f ‖ thread id), and filters hash the same way
//! before they reach the engine. Binding the owner means one thread id of two
//! users gives two unrelated values. The owner key itself is already a hash
//! ([`Owner`]).
//!
//! The embedded engine keeps its key in a file beside the shard
//! ([`PayloadKey::load_or_create`], 32 random bytes, per data dir); the Qdrant
//! server backend derives its key from the collection name so that every node
//! sharing the collection agrees ([`PayloadKey::derived`]): that hides the raw
//! ids from the server's files and logs but, unlike a secret, does not stop
//! someone who knows the collection from confirming a guessed thread id.

use std::path::Path;

use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::domain::Owner;
use crate::error::Result;
use crate::vector::VectorError;

const KEY_LEN: usize = 32;

/// See the module docs.
#[derive(Clone)]
pub struct PayloadKey([u8; KEY_LEN]);

impl std::fmt::Debug for PayloadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PayloadKey(..)")
    }
}

impl PayloadKey {
    /// A fresh random key.
    pub fn random() -> Self {
        let mut k = [0u8; KEY_LEN];
        rand::rng().fill_bytes(&mut k);
        PayloadKey(k)
    }

    /// A key every holder of `label` derives alike (the server backend).
    pub fn derived(label: &str) -> Self {
        let mut h = Sha256::new();
        h.update(b"mnemo payload key\x1f");
        h.update(label.as_bytes());
        PayloadKey(h.finalize().into())
    }

    /// Reads the key file at `path`; `None` when there is none.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let k: [u8; KEY_LEN] = hex::decode(bytes.trim_ascii())
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| {
                        VectorError::invalid(format!(
                            "payload key file {} is damaged (expected {} hex digits)",
                            path.display(),
                            KEY_LEN * 2
                        ))
                    })?;
                Ok(Some(PayloadKey(k)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(VectorError::io("cannot read payload key file", path, e)),
        }
    }

    /// Writes the key to `path` durably (temporary file, fsync, rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |e: std::io::Error| VectorError::io("cannot write payload key file", path, e);
        let tmp = path.with_extension("tmp");
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp).map_err(io)?;
            f.write_all(hex::encode(self.0).as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// The thread id as payloads and filters carry it.
    pub fn thread(&self, owner: &Owner, thread_id: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.0);
        h.update(owner.as_str().as_bytes());
        h.update([0x1f]);
        h.update(thread_id.as_bytes());
        format!("t{}", hex::encode(&h.finalize()[..16]))
    }

    /// Whether a payload's `thread_id` already has the hashed shape (`t` and
    /// 32 lowercase hex digits), so a migration leaves it alone.
    pub fn is_hashed_thread(value: &str) -> bool {
        value.len() == 33
            && value.starts_with('t')
            && value[1..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_hashes_are_keyed_and_bound_to_the_owner() {
        let (a, b) = (PayloadKey::random(), PayloadKey::random());
        let alice = Owner::user("default", "alice");
        let bob = Owner::user("default", "bob");
        let h = a.thread(&alice, "support-ticket-42");
        assert!(PayloadKey::is_hashed_thread(&h), "{h}");
        assert!(!h.contains("support"));
        assert_eq!(h, a.thread(&alice, "support-ticket-42"), "deterministic");
        assert_ne!(h, b.thread(&alice, "support-ticket-42"), "keyed");
        assert_ne!(h, a.thread(&bob, "support-ticket-42"), "bound to the owner");
        assert!(!PayloadKey::is_hashed_thread("t1"));
        assert!(!PayloadKey::is_hashed_thread(&h.to_uppercase()));
        assert_eq!(
            PayloadKey::derived("mnemo").thread(&alice, "x"),
            PayloadKey::derived("mnemo").thread(&alice, "x")
        );
    }

    #[test]
    fn a_saved_key_loads_back_and_a_damaged_one_is_refused() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("payload.key");
        assert!(PayloadKey::load(&path).unwrap().is_none());
        let k = PayloadKey::random();
        k.save(&path).unwrap();
        let owner = Owner::user("default", "alice");
        let back = PayloadKey::load(&path).unwrap().unwrap();
        assert_eq!(back.thread(&owner, "t"), k.thread(&owner, "t"));
        std::fs::write(&path, "not hex").unwrap();
        assert!(matches!(
            PayloadKey::load(&path),
            Err(crate::Error::Vector(_))
        ));
    }
}
