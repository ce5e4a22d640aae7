-- Memories: the source of truth. Times are epoch milliseconds (UTC), ids are
-- UUID v7 text (time-ordered, so `ORDER BY id` is creation order).
CREATE TABLE memories (
    id               TEXT PRIMARY KEY NOT NULL,
    tenant_id        TEXT NOT NULL,
    tier             TEXT NOT NULL CHECK (tier IN ('working', 'long_term', 'reference')),
    user_id          TEXT,
    thread_id        TEXT,
    kind             TEXT NOT NULL,
    text             TEXT NOT NULL,
    text_sha256      TEXT NOT NULL,
    importance       REAL NOT NULL,
    confidence       REAL NOT NULL,
    status           TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    last_accessed_at INTEGER,
    access_count     INTEGER NOT NULL DEFAULT 0,
    expires_at       INTEGER,
    source           TEXT NOT NULL DEFAULT '{}',
    metadata         TEXT NOT NULL DEFAULT '{}',
    embedding_model  TEXT,
    version          INTEGER NOT NULL,
    supersedes       TEXT,
    superseded_by    TEXT,
    CHECK ((tier = 'reference') = (user_id IS NULL))
);

CREATE INDEX memories_owner ON memories (tenant_id, user_id, tier, status, id);
CREATE INDEX memories_status ON memories (status, id);
CREATE INDEX memories_thread ON memories (tenant_id, user_id, thread_id, id);
CREATE INDEX memories_dedup ON memories (tenant_id, user_id, text_sha256);
CREATE INDEX memories_document ON memories (tenant_id, json_extract(source, '$.document_id'));

-- Every change to a memory. Content (before/after text) is erased with the
-- user; the row keeps the action, actor and time.
CREATE TABLE audit_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id   TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    user_id     TEXT,
    action      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    at          INTEGER NOT NULL,
    before_text TEXT,
    after_text  TEXT,
    details     TEXT NOT NULL DEFAULT '{}'
);

CREATE INDEX audit_memory ON audit_events (memory_id, seq);
CREATE INDEX audit_owner ON audit_events (tenant_id, user_id, seq);

-- Document embeddings by (model, text hash), so that re-ingesting the same
-- text (re-runs of an evaluation, reindex) does not embed it again.
CREATE TABLE embedding_cache (
    model_id    TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    vector      BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
);
