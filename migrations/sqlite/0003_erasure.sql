-- "Forget all my data". An intent is recorded before anything is erased and
-- removed when every store is clean, so a crash in the middle resumes at the
-- next start. It holds the user id only while the erasure is in progress.
CREATE TABLE erasure_intents (
    tenant_id  TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    actor      TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);

-- What stays after an erasure: a content-free tombstone. The user id is
-- hashed (SHA-256 of tenant and user id), so the row proves an erasure took
-- place without keeping who it was for in clear.
CREATE TABLE erasure_receipts (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id    TEXT NOT NULL,
    user_hash    TEXT NOT NULL,
    counts       TEXT NOT NULL,
    actor        TEXT NOT NULL,
    completed_at INTEGER NOT NULL
);

CREATE INDEX erasure_receipts_user ON erasure_receipts (tenant_id, user_hash, seq);
