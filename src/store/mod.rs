//! The memory store: the source of truth. Every write commits here first; the
//! search indexes are derived from it and can be rebuilt from it at any time.
//!
//! Contract, for every backend (SQLite embedded, PostgreSQL for clusters; one
//! contract test suite, `tests/integration/store_contract.rs`, runs on both):
//! - `insert` and `update` are atomic with their audit events: all or nothing.
//! - `update` is optimistic: it fails with `Conflict` when the stored version is
//!   not the one the caller read, so concurrent writers never lose a change.
//! - Deletes here are status changes (soft); physical erasure is a separate,
//!   explicit operation (the lifecycle's "forget all my data").
//! - `indexed_versions` lists exactly the memories the indexes should hold
//!   (status active or pending), so that divergence can be repaired.
//!
//! The trait is async; backends use sqlx pools and are safe to share. Both
//! backends are one implementation, [`SqlStore`], over a [`Dialect`] (`sql/`).

pub mod error;
mod sql;
pub mod tables;
pub mod url;
mod vector_blob;

pub use error::StoreError;
pub use sql::{postgres, sqlite, Dialect, GuardAt, SqlStore};

pub(crate) use vector_blob::{decode_vector, encode_vector};

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::lifecycle::SweepStep;
use crate::domain::thread::{Message, NewMessage, Payload, Summary, Thread};
use crate::domain::{Kind, Memory, Status, Tier};
use crate::error::Result;
use tables::{Table, Value};

/// What happened to a memory, for its history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    Create,
    Update,
    Supersede,
    Confirm,
    Reject,
    Reinforce,
    Expire,
    Archive,
    Delete,
    Restore,
    Access,
    /// The memory came in with an import of its user's export (by the
    /// admin named as the actor).
    Import,
}

impl AuditAction {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Create => "create",
            AuditAction::Update => "update",
            AuditAction::Supersede => "supersede",
            AuditAction::Confirm => "confirm",
            AuditAction::Reject => "reject",
            AuditAction::Reinforce => "reinforce",
            AuditAction::Expire => "expire",
            AuditAction::Archive => "archive",
            AuditAction::Delete => "delete",
            AuditAction::Restore => "restore",
            AuditAction::Access => "access",
            AuditAction::Import => "import",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        use AuditAction::*;
        [
            Create, Update, Supersede, Confirm, Reject, Reinforce, Expire, Archive, Delete,
            Restore, Access, Import,
        ]
        .into_iter()
        .find(|a| a.as_str() == s)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditEvent {
    pub memory_id: Uuid,
    pub tenant_id: String,
    pub user_id: Option<String>,
    pub action: AuditAction,
    /// Who did it: an API key id, `cli`, `system` (jobs).
    pub actor: String,
    pub at: DateTime<Utc>,
    pub before_text: Option<String>,
    pub after_text: Option<String>,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

impl AuditEvent {
    pub fn for_memory(
        memory: &Memory,
        action: AuditAction,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Self {
        AuditEvent {
            memory_id: memory.id,
            tenant_id: memory.tenant_id.clone(),
            user_id: memory.user_id.clone(),
            action,
            actor: actor.to_string(),
            at,
            before_text: None,
            after_text: None,
            details: serde_json::Value::Object(Default::default()),
        }
    }
}

/// A listing query: one tenant, optionally narrowed; cursor = the last id seen.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    pub tenant_id: String,
    /// `None` lists reference memory (user_id IS NULL) when `tier` is reference,
    /// or every owner of the tenant otherwise (admin listings).
    pub user_id: Option<String>,
    pub tier: Option<Tier>,
    pub status: Option<Status>,
    pub thread_id: Option<String>,
    pub kind: Option<Kind>,
    pub document_id: Option<String>,
    pub after: Option<Uuid>,
    pub limit: usize,
}

/// What an API key may do. `admin` and `agent` act for every user of their
/// tenant; only `admin` writes reference memory and manages keys; `user` is
/// bound to one user id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Agent,
    User,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Agent => "agent",
            Role::User => "user",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Role::Admin, Role::Agent, Role::User]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// A stored API key: never the secret, only its SHA-256.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    /// Public identifier (shown by `mnemo keys list`, recorded in audit events).
    pub id: String,
    pub tenant_id: String,
    /// Set for `user` keys (required) and optionally for `agent` keys.
    pub user_id: Option<String>,
    pub role: Role,
    /// Hex SHA-256 of the secret.
    pub secret_sha256: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A stored thread, by tenant and id.
#[derive(Clone, Copy, Debug)]
pub struct ThreadRef<'a> {
    pub tenant_id: &'a str,
    pub id: Uuid,
}

/// Whose texts an embedding-cache entry holds: the memory's tenant and user
/// (`None` for reference memory). The cache is kept per owner so that
/// erasing a user deletes one key range of it, without asking whether
/// another owner shares a text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheOwner {
    pub tenant_id: String,
    pub user_id: Option<String>,
}

impl CacheOwner {
    pub fn of(memory: &Memory) -> Self {
        CacheOwner {
            tenant_id: memory.tenant_id.clone(),
            user_id: memory.user_id.clone(),
        }
    }

    /// Items grouped by owner, owners in first-seen order (a batch of writes
    /// usually has one or a few).
    pub fn group<T>(items: impl IntoIterator<Item = (CacheOwner, T)>) -> Vec<(CacheOwner, Vec<T>)> {
        let mut groups: Vec<(CacheOwner, Vec<T>)> = Vec::new();
        for (owner, item) in items {
            match groups.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, group)) => group.push(item),
                None => groups.push((owner, vec![item])),
            }
        }
        groups
    }

    /// The `user_id` key column: '' for reference memory.
    pub(crate) fn user_key(&self) -> &str {
        self.user_id.as_deref().unwrap_or("")
    }
}

/// Counts by tier and status.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StoreStats {
    pub by_tier_status: Vec<(Tier, Status, u64)>,
    pub audit_events: u64,
    pub cached_embeddings: u64,
}

impl StoreStats {
    pub fn total(&self) -> u64 {
        self.by_tier_status.iter().map(|(_, _, n)| n).sum()
    }
}

/// The whole store, as the service holds it (`Arc<dyn MemoryStore>`): one
/// trait per concern below, so that a part of Mnemo can depend on only what
/// it uses (`&dyn ThreadStore`). Their methods are callable on a
/// `dyn MemoryStore` without importing them.
#[async_trait]
pub trait MemoryStore:
    Memories
    + EmbeddingCache
    + KeyStore
    + JobStore
    + ErasureStore
    + ThreadStore
    + ChangeFeed
    + TableCopy
    + Send
    + Sync
{
    /// Flushes anything buffered (WAL checkpoint) before shutdown.
    async fn close(&self) -> Result<()>;

    /// What the store's own upkeep (SQLite's WAL checkpoints, the erasure's
    /// purge) had to give up on, for `/readyz` and `/metrics`.
    fn upkeep(&self) -> UpkeepStatus {
        UpkeepStatus::default()
    }
}

/// The store's upkeep as counters of this process, shared by its clones.
#[derive(Debug, Default)]
pub struct Upkeep {
    checkpoints: std::sync::atomic::AtomicU64,
    checkpoints_incomplete: std::sync::atomic::AtomicU64,
    /// 0: none yet; 1: the last one completed; 2: it did not.
    last_checkpoint: std::sync::atomic::AtomicU8,
    vacuum_fallbacks: std::sync::atomic::AtomicU64,
}

impl Upkeep {
    /// A `TRUNCATE` checkpoint's outcome: `false` when it gave up within
    /// its time bound and left the WAL as a `PASSIVE` one did.
    pub fn checkpointed(&self, complete: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        self.checkpoints.fetch_add(1, Relaxed);
        if !complete {
            self.checkpoints_incomplete.fetch_add(1, Relaxed);
        }
        self.last_checkpoint
            .store(if complete { 1 } else { 2 }, Relaxed);
    }

    /// An erasure's purge that rewrote the whole database (`VACUUM`)
    /// because the page-by-page scrub could not vouch for the file.
    pub fn vacuumed(&self) {
        self.vacuum_fallbacks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn status(&self) -> UpkeepStatus {
        use std::sync::atomic::Ordering::Relaxed;
        UpkeepStatus {
            checkpoints: self.checkpoints.load(Relaxed),
            checkpoints_incomplete: self.checkpoints_incomplete.load(Relaxed),
            last_checkpoint_complete: match self.last_checkpoint.load(Relaxed) {
                0 => None,
                n => Some(n == 1),
            },
            purge_vacuum_fallbacks: self.vacuum_fallbacks.load(Relaxed),
        }
    }
}

/// [`Upkeep`]'s counts (all zero on PostgreSQL, which owns its WAL).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UpkeepStatus {
    /// SQLite WAL checkpoints run by this process (start, erasures, close).
    pub checkpoints: u64,
    /// Of those, the ones whose `TRUNCATE` did not complete within its time
    /// bound (a long reader in another process: a backup, a `sqlite3`
    /// shell); the WAL was copied as far as a `PASSIVE` checkpoint could and
    /// the next checkpoint completes it.
    pub checkpoints_incomplete: u64,
    /// Whether the last checkpoint completed (none yet: absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_checkpoint_complete: Option<bool>,
    /// Erasure purges that fell back to a `VACUUM` of the whole database
    /// (this SQLite has no `sqlite_dbpage`, or the scrub could not vouch for
    /// the file): every other write waited for the rewrite.
    pub purge_vacuum_fallbacks: u64,
}

/// Memories and their audit events.
#[async_trait]
pub trait Memories: Send + Sync {
    /// Inserts memories and their audit events in one transaction.
    async fn insert(&self, memories: &[Memory], events: &[AuditEvent]) -> Result<()>;
    async fn get(&self, id: Uuid) -> Result<Option<Memory>>;
    /// The memories among `ids` that exist, in no particular order.
    async fn get_many(&self, ids: &[Uuid]) -> Result<HashMap<Uuid, Memory>>;
    /// `get_many` on the calling thread, for a caller already on a blocking
    /// thread (a search's vector leg, right after its index search);
    /// `None` where the backend reads only asynchronously, and the caller
    /// awaits `get_many` instead.
    fn get_many_here(&self, _ids: &[Uuid]) -> Option<Result<HashMap<Uuid, Memory>>> {
        None
    }
    /// Replaces memories whose stored version equals `expected_version`
    /// (each gets `version = expected + 1`), with events, in one transaction.
    /// A version mismatch fails the whole call with `Conflict`.
    async fn update(&self, changes: &[(Memory, i64)], events: &[AuditEvent]) -> Result<()>;
    /// Inserts and optimistic updates (as `update`) with their audit events,
    /// all in one transaction: a reinforcement or a correction never leaves
    /// half its changes behind. With `from_thread`, the write commits only
    /// while that thread exists (`NotFound` otherwise, nothing written):
    /// memories extracted from a thread must not outlive its erasure.
    async fn write(
        &self,
        inserts: &[Memory],
        changes: &[(Memory, i64)],
        events: &[AuditEvent],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<()>;
    async fn list(&self, query: &ListQuery) -> Result<Vec<Memory>>;
    async fn history(&self, memory_id: Uuid) -> Result<Vec<AuditEvent>>;
    /// (id, version) of every memory the indexes should hold.
    async fn indexed_versions(&self) -> Result<Vec<(Uuid, i64)>>;
    /// Indexed memories in id order after `after`, for rebuilding indexes.
    async fn scan_indexed(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<Memory>>;
    /// Bumps access counters; not audited and not a version change.
    async fn record_access(&self, ids: &[Uuid], at: DateTime<Utc>) -> Result<()>;
    /// Active or pending memories of an owner with the same text hash.
    async fn find_by_text_hash(
        &self,
        tenant_id: &str,
        user_id: Option<&str>,
        text_sha256: &str,
    ) -> Result<Vec<Memory>>;
    /// Memory counts by tier and status, audit and embedding-cache counts
    /// (`mnemo stats`).
    async fn stats(&self) -> Result<StoreStats>;
    /// Memory counts by tier and status only (`/metrics`): one grouped count
    /// of `memories`, without the audit log's and the embedding cache's.
    async fn count_by_tier_status(&self) -> Result<Vec<(Tier, Status, u64)>>;
    /// How many memories (any status, until purged) a user holds: the
    /// `limits.max_memories_per_user` quota.
    async fn count_user_memories(&self, tenant_id: &str, user_id: &str) -> Result<u64>;
    /// The turns beside each of `ids` in its conversation: among the active
    /// memories of the same owner and `thread_id`, the one just before and
    /// the one just after it in id order (creation order). Ids without a
    /// user or a thread are left out.
    async fn turns_beside(&self, ids: &[Uuid]) -> Result<Vec<TurnsBeside>>;
    /// The text of the active memory of `tenant_id`/`user_id`/`thread_id`
    /// with the greatest id below `before`: the turn before a turn being
    /// embedded (which need not be stored yet).
    async fn turn_before(
        &self,
        tenant_id: &str,
        user_id: &str,
        thread_id: &str,
        before: Uuid,
    ) -> Result<Option<String>>;
}

pub use crate::domain::turns::TurnsBeside;

/// Passage embeddings of stored texts, per owner and model.
#[async_trait]
pub trait EmbeddingCache: Send + Sync {
    /// Cached passage embeddings of an owner's texts, by text hash.
    async fn cached_embeddings(
        &self,
        owner: &CacheOwner,
        model_id: &str,
        hashes: &[String],
    ) -> Result<HashMap<String, Vec<f32>>>;
    /// Caches passage embeddings of an owner's texts. Refused (`Conflict`)
    /// while the owner is being erased; with `from_thread`, written only
    /// while that thread exists (`NotFound`), as [`Memories::write`].
    async fn cache_embeddings(
        &self,
        owner: &CacheOwner,
        model_id: &str,
        entries: &[(String, Vec<f32>)],
        from_thread: Option<ThreadRef<'_>>,
    ) -> Result<()>;
}

/// API keys (only their secrets' SHA-256).
#[async_trait]
pub trait KeyStore: Send + Sync {
    /// Stores a new API key. A duplicate id or secret hash is a `Conflict`.
    async fn insert_api_key(&self, key: &ApiKey) -> Result<()>;
    /// The key whose secret has this SHA-256, revoked or not.
    async fn api_key_by_hash(&self, secret_sha256: &str) -> Result<Option<ApiKey>>;
    /// Every key, revoked ones included, oldest first.
    async fn list_api_keys(&self) -> Result<Vec<ApiKey>>;
    /// Marks a key revoked (it stops authenticating at once); `false` when no
    /// unrevoked key has this id. Keys are never deleted, so audit events
    /// that name them stay explainable.
    async fn revoke_api_key(&self, id: &str, at: DateTime<Utc>) -> Result<bool>;
    /// How many keys are not revoked.
    async fn count_active_api_keys(&self) -> Result<u64>;
}

/// What the lifecycle jobs (`jobs/`) select and write, and their leases.
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Memories due for a TTL-sweep step at `cutoff` (see [`SweepStep`]),
    /// in id order after `after`. Selection is by state and time only.
    async fn due_for_sweep(
        &self,
        step: SweepStep,
        cutoff: DateTime<Utc>,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<Memory>>;
    /// Physically deletes the memories among `ids` that are soft-deleted
    /// (others are left alone), scrubs the text from their audit events
    /// (action, actor and time stay) and drops cached embeddings of their
    /// texts that no other memory uses. Returns how many were purged.
    async fn purge(&self, ids: &[Uuid]) -> Result<u64>;
    /// Active long-term memories in id order after `after`, with the weekly
    /// cleanup's bookkeeping.
    async fn scan_for_cleanup(&self, after: Option<Uuid>, limit: usize) -> Result<Vec<CleanupRow>>;
    /// Writes recomputed importance and cooled access counts. Like
    /// `record_access`: no version change, no audit event.
    async fn write_heat(&self, updates: &[HeatUpdate]) -> Result<()>;
    /// Takes the job's lease until `until` if it is free, expired, or already
    /// held by `holder` (renewal). `false` = someone else is running it.
    async fn acquire_lease(
        &self,
        job: &str,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool>;
    /// Releases the lease if `holder` holds it; `completed` records a
    /// finished run (time and stats).
    async fn release_lease(
        &self,
        job: &str,
        holder: &str,
        completed: Option<(DateTime<Utc>, serde_json::Value)>,
    ) -> Result<()>;
    async fn job_state(&self, job: &str) -> Result<Option<JobState>>;
    /// Records `due` as the time the job's first run is due, unless a time
    /// is recorded already (a concurrent or earlier call wins), and returns
    /// the recorded time. One atomic upsert: nodes sharing the store agree.
    async fn schedule_first_run(&self, job: &str, due: DateTime<Utc>) -> Result<DateTime<Utc>>;
}

/// "Forget all my data": the intent, the deletion, the tombstone.
#[async_trait]
pub trait ErasureStore: Send + Sync {
    /// Records the intent to erase a user (idempotent). From here on the
    /// erasure completes even across a crash.
    async fn begin_erasure(
        &self,
        tenant_id: &str,
        user_id: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()>;
    /// Erasures begun and not completed, as (tenant, user, actor).
    async fn pending_erasures(&self) -> Result<Vec<(String, String, String)>>;
    /// Physically deletes every row of the user (memories in every status,
    /// their audit events, embedding-cache entries no one else uses, threads,
    /// messages and payloads). Idempotent.
    async fn erase_user(&self, tenant_id: &str, user_id: &str) -> Result<ErasedRows>;
    /// Makes sure the files no longer hold what `erase_user` deleted: a
    /// deleted row can survive as bytes (SQLite: stale copies of its cells
    /// in other pages' free space, which the purge zeroes page by page;
    /// PostgreSQL: dead tuples, which `VACUUM` reclaims). Runs before
    /// `complete_erasure`, so a crash before it has finished leaves the
    /// intent and the next run purges again. The weekly cleanup runs it
    /// too, for what the TTL sweep's purges left. Idempotent; costs in
    /// proportion to the database, not the user.
    async fn purge_erased(&self) -> Result<()>;
    /// Replaces the intent with a content-free tombstone, then makes sure
    /// nothing of the erased rows is left in the files (SQLite: WAL
    /// checkpoint; PostgreSQL: VACUUM).
    async fn complete_erasure(
        &self,
        tenant_id: &str,
        user_id: &str,
        counts: &serde_json::Value,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()>;
    /// What the store still holds of a user (all zero after an erasure).
    async fn user_footprint(&self, tenant_id: &str, user_id: &str) -> Result<UserFootprint>;
    /// When the user's last erasure completed, if any (`None` once its
    /// tombstone was scrubbed).
    async fn last_erasure(&self, tenant_id: &str, user_id: &str) -> Result<Option<DateTime<Utc>>>;
    /// Scrubs the hashed user id from the tombstones of erasures completed
    /// before `completed_before` whose change-feed entry is gone (every live
    /// node applied it and the feed was pruned): the receipt (tenant, counts,
    /// actor, time) stays, nothing in it names the user any more. Returns the
    /// tombstones scrubbed.
    async fn scrub_erasure_tombstones(&self, completed_before: DateTime<Utc>) -> Result<u64>;
}

/// Threads of the agent loop: messages, tool payloads, turn leases,
/// extraction claims and compaction.
///
/// Messages are written whole in one statement, so a stored message is a
/// complete one. Extraction state only moves forward (pending → running →
/// done; a failed run puts its claim back to pending), which is what makes
/// `compact_thread`'s check race-free: a message it sees complete stays so.
#[async_trait]
pub trait ThreadStore: Send + Sync {
    /// Stores a new thread. A duplicate id is a `Conflict`.
    async fn insert_thread(&self, thread: &Thread) -> Result<()>;
    /// A thread of the tenant (whichever user; the caller checks access).
    async fn get_thread(&self, tenant_id: &str, id: Uuid) -> Result<Option<Thread>>;
    /// Stores a message, its tool payload if any, and the thread's
    /// `last_activity_at`, in one transaction. User messages start `pending`
    /// extraction, the others `skipped`.
    async fn append_message(
        &self,
        message: &NewMessage,
        payload: Option<&Payload>,
    ) -> Result<Message>;
    /// A thread's messages, oldest first; only the uncompacted ones (the
    /// working memory) when `uncompacted_only`.
    async fn thread_messages(
        &self,
        thread_id: Uuid,
        uncompacted_only: bool,
    ) -> Result<Vec<Message>>;
    async fn get_payload(&self, thread_id: Uuid, id: Uuid) -> Result<Option<serde_json::Value>>;
    /// Takes the thread's turn lease until `until` if it is free or expired.
    /// `false` = another turn is running.
    async fn acquire_turn(
        &self,
        thread_id: Uuid,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool>;
    /// Releases the turn lease if `holder` holds it.
    async fn release_turn(&self, thread_id: Uuid, holder: &str) -> Result<()>;
    /// Atomically claims the thread's messages waiting for extraction
    /// (`pending`, or `running` with an expired claim) until `until`, and
    /// returns them oldest first. Two concurrent claims never share a message.
    async fn claim_extraction(
        &self,
        thread_id: Uuid,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Message>>;
    /// Ends a claim: `done`, or back to `pending` (the run failed).
    async fn finish_extraction(&self, seqs: &[i64], done: bool) -> Result<()>;
    /// In one transaction: replaces the summary (if the thread's
    /// `summary_upto_seq` is still `from_seq`) and marks the messages in
    /// `(from_seq, upto_seq]` compacted — only if every one of them has
    /// finished extraction and none is compacted. `false` = nothing written
    /// (a concurrent compaction, or a message still waiting for extraction).
    async fn compact_thread(
        &self,
        thread_id: Uuid,
        from_seq: i64,
        upto_seq: i64,
        summary: &Summary,
        at: DateTime<Utc>,
    ) -> Result<bool>;
    /// Threads idle since `idle_before`, not compacted since `cooled_before`,
    /// with more than `keep` uncompacted messages, as (tenant, thread id): the
    /// idle compaction's work.
    async fn idle_threads(
        &self,
        idle_before: DateTime<Utc>,
        cooled_before: DateTime<Utc>,
        keep: usize,
        limit: usize,
    ) -> Result<Vec<(String, Uuid)>>;
}

/// Clustered mode: the change feed and the nodes that follow it.
#[async_trait]
pub trait ChangeFeed: Send + Sync {
    /// The feed position of the latest committed change (0 when none): a
    /// node that rebuilds its indexes from the store first reads this, then
    /// follows the feed from it.
    async fn change_feed_head(&self) -> Result<i64>;
    /// Up to `limit` changes after position `after`, oldest first. Contract:
    /// a change is never skipped — once a change at position p is returned,
    /// every change that will ever be committed at a position below p has
    /// been returned too (a backend whose sequence values can commit out of
    /// order must hold back the rows it cannot yet vouch for).
    async fn index_changes(&self, after: i64, limit: usize) -> Result<Vec<IndexChange>>;
    /// Records that `node_id` has applied the feed up to `applied` (and is
    /// alive at `at`); registers the node on first call.
    async fn node_heartbeat(&self, node_id: &str, applied: i64, at: DateTime<Utc>) -> Result<()>;
    /// Removes a node from the registry (clean shutdown).
    async fn remove_node(&self, node_id: &str) -> Result<()>;
    /// Deletes the changes at positions up to `up_to` that every node alive
    /// since `live_since` has applied (all of them up to `up_to` when no node
    /// is alive); returns how many. Safe because a node that starts (or
    /// restarts) follows the feed from its head after reconciling, never from
    /// an older cursor: the caller passes an `up_to` read long enough ago that
    /// a starting node read a head at or above it (see
    /// [`crate::service::erasure::feed::FeedPruner`]).
    async fn prune_index_changes(&self, up_to: i64, live_since: DateTime<Utc>) -> Result<u64>;
    /// The nodes alive since `live_since`, and which of them have not yet
    /// applied the latest erasure of `owner_key`.
    async fn erasure_progress(
        &self,
        owner_key: &str,
        live_since: DateTime<Utc>,
    ) -> Result<ErasureProgress>;
}

/// Copying between backends (`mnemo migrate`): every table as rows of
/// [`Value`]s (see [`tables`]).
#[async_trait]
pub trait TableCopy: Send + Sync {
    /// Up to `limit` rows of `table`, in key order, after the row whose key
    /// is `after` (see [`Table::key_of`]). Columns in [`Table::columns`] order.
    async fn export_rows(
        &self,
        table: &Table,
        after: Option<&[Value]>,
        limit: usize,
    ) -> Result<Vec<Vec<Value>>>;
    /// Writes rows exactly as given, in one transaction, skipping every row
    /// whose key (or another unique column) exists already: re-importing is
    /// harmless. Keeps a generated key's counter past the imported keys.
    /// Returns how many rows were new.
    async fn import_rows(&self, table: &Table, rows: &[Vec<Value>]) -> Result<u64>;
    async fn count_rows(&self, table: &Table) -> Result<u64>;
    /// [`TableCopy::export_rows`] narrowed to one user's rows (`table` has
    /// `tenant_id` and `user_id` columns; see [`tables::USER_TABLES`]): the
    /// pages of an export (`mnemo export`).
    async fn export_user_rows(
        &self,
        table: &Table,
        tenant_id: &str,
        user_id: &str,
        after: Option<&[Value]>,
        limit: usize,
    ) -> Result<Vec<Vec<Value>>>;
    /// Restores one user's rows (`mnemo import`), all tables in one
    /// transaction: all or nothing. Every row must belong to
    /// (`tenant_id`, `user_id`) (`InvalidInput` otherwise). Rows are inserted
    /// as given, except that a generated key (audit and message `seq`) is
    /// assigned anew in the given order, and a thread's `summary_upto_seq`
    /// follows its messages' new numbers. A row whose key exists already is
    /// a `Conflict` (nothing written), and so is an erasure of the user in
    /// progress, and so is a file that names (in a row's key or a reference:
    /// `supersedes`, an audit event's memory, a message's thread…) a memory,
    /// thread or payload id the store holds already. Returns how many rows
    /// were written.
    async fn import_user_rows(
        &self,
        tenant_id: &str,
        user_id: &str,
        tables: &[(&Table, Vec<Vec<Value>>)],
    ) -> Result<u64>;

    /// `Conflict` when the rows name a memory, thread or payload id that
    /// the store holds under another user or tenant (ids of this user are
    /// let through: an import with `replace` erases them first). Writes
    /// nothing; `import_user_rows` checks again, in its transaction.
    async fn refuse_foreign_ids(
        &self,
        tenant_id: &str,
        user_id: &str,
        tables: &[(&Table, Vec<Vec<Value>>)],
    ) -> Result<()>;
}

/// One entry of the change feed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexChange {
    /// The feed position, to resume after.
    pub position: i64,
    pub kind: ChangeKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// The memory changed (or was purged): re-read it from the store.
    Memory(Uuid),
    /// Every document of this owner (`Owner::as_str`) must be erased.
    Erasure(String),
}

/// How far the live nodes are with an owner's erasure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErasureProgress {
    pub live_nodes: u64,
    /// Live nodes that have not applied the erasure yet.
    pub behind: Vec<String>,
}

/// A memory as the weekly cleanup sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct CleanupRow {
    pub memory: Memory,
    /// The importance the cleanup recomputes from (writer's or reinforced).
    pub base_importance: f32,
    pub cooled_at: Option<DateTime<Utc>>,
}

/// What the weekly cleanup writes back for one memory.
#[derive(Clone, Debug, PartialEq)]
pub struct HeatUpdate {
    pub id: Uuid,
    pub importance: f32,
    pub base_importance: f32,
    /// `Some` cools the access count to this value (and sets `cooled_at`).
    pub access_count: Option<u64>,
    pub cooled_at: DateTime<Utc>,
}

/// A job's lease, last completed run, and first run's due time.
#[derive(Clone, Debug, PartialEq)]
pub struct JobState {
    pub holder: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_completed_at: Option<DateTime<Utc>>,
    pub last_stats: Option<serde_json::Value>,
    /// When the job's first run is due, recorded by
    /// [`JobStore::schedule_first_run`] while no run has completed.
    pub first_due_at: Option<DateTime<Utc>>,
}

/// Rows an erasure deleted from the store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasedRows {
    pub memories: u64,
    /// Of `memories`, how many were pending candidates.
    pub candidates: u64,
    pub audit_events: u64,
    pub cached_embeddings: u64,
    pub threads: u64,
    /// Messages, with their tool payloads.
    pub messages: u64,
    /// API keys bound to the user: deleted, so no key row keeps the user id
    /// (and none authenticates any more).
    pub api_keys: u64,
}

/// Rows of a user left in the store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserFootprint {
    pub memories: u64,
    pub audit_events: u64,
    pub threads: u64,
    pub messages: u64,
    pub pending_erasures: u64,
    /// API keys bound to the user (revoked or not).
    pub api_keys: u64,
}

/// The hashed user id kept in erasure tombstones.
pub fn user_hash(tenant_id: &str, user_id: &str) -> String {
    text_hash(&format!("{tenant_id}\u{1f}{user_id}"))
}

/// The SHA-256 of a text, hex: the dedup and embedding-cache key.
pub fn text_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(text.as_bytes()))
}
