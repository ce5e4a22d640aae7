-- Memory lifecycle: the weekly cleanup's bookkeeping and the job leases.
--
-- base_importance: the importance its writer (or a reinforcement) gave a
-- memory; the weekly cleanup recomputes `importance` from it, access heat and
-- age, so the recomputation is idempotent. NULL = equal to `importance`.
-- cooled_at: when the cleanup last wrote a decayed access count back (heat is
-- measured from the later of this and last_accessed_at, never twice).
ALTER TABLE memories ADD COLUMN base_importance REAL;
ALTER TABLE memories ADD COLUMN cooled_at INTEGER;

-- Purging checks whether another memory still uses a cached embedding.
CREATE INDEX memories_text_hash ON memories (text_sha256);
-- The TTL sweep's selections.
CREATE INDEX memories_expiry ON memories (status, expires_at);

-- One row per job: who holds it and until when (a second runner gets
-- "already running" until the lease is released or expires), and what the
-- last completed run did.
CREATE TABLE job_leases (
    name              TEXT PRIMARY KEY NOT NULL,
    holder            TEXT,
    lease_expires_at  INTEGER,
    acquired_at       INTEGER,
    last_completed_at INTEGER,
    last_stats        TEXT
);
