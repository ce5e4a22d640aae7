-- Memory lifecycle (mirrors migrations/sqlite/0004_lifecycle.sql): the weekly
-- cleanup's bookkeeping and the job leases.
ALTER TABLE memories ADD COLUMN base_importance DOUBLE PRECISION;
ALTER TABLE memories ADD COLUMN cooled_at BIGINT;

CREATE INDEX memories_text_hash ON memories (text_sha256);
CREATE INDEX memories_expiry ON memories (status, expires_at);

-- One row per job. The lease lives in the database, so with several nodes on
-- one PostgreSQL a job runs on one node at a time: taking it is a single
-- atomic upsert whose WHERE clause only lets a free, expired or own lease be
-- overwritten.
CREATE TABLE job_leases (
    name              TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    holder            TEXT,
    lease_expires_at  BIGINT,
    acquired_at       BIGINT,
    last_completed_at BIGINT,
    last_stats        JSONB
);
