-- Clustered mode: every `mnemo serve` node keeps its own lexical (tantivy)
-- index, derived from this store and kept current by following this change
-- feed (see src/cluster.rs).
--
-- One row per change a node must apply, in commit order by `seq` (SQLite
-- serializes writers, so a higher seq never commits before a lower one):
-- - memory_id: this memory changed (the follower re-reads it from the store
--   and upserts or deletes its document);
-- - owner_key: this owner was erased (the follower deletes and purges every
--   document of the owner). It is the hashed key the indexes already hold
--   (`Owner::user`: 'u' || the first 32 hex digits of the user hash), never
--   the user id.
-- Written by triggers, so every write path (and the erasure) feeds it in its
-- own transaction without any code of its own.
CREATE TABLE index_changes (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT,
    owner_key TEXT,
    CHECK ((memory_id IS NULL) <> (owner_key IS NULL))
);

CREATE INDEX index_changes_owner ON index_changes (owner_key, seq);

-- Every memory change writes an audit event in the same transaction.
CREATE TRIGGER index_changes_on_audit AFTER INSERT ON audit_events
BEGIN
    INSERT INTO index_changes (memory_id) VALUES (NEW.memory_id);
END;

-- An erasure completes with its receipt (after the store rows are gone).
CREATE TRIGGER index_changes_on_erasure AFTER INSERT ON erasure_receipts
BEGIN
    INSERT INTO index_changes (owner_key) VALUES ('u' || substr(NEW.user_hash, 1, 32));
END;

-- The nodes following the feed: how far each has applied it, and when it
-- last said so. A node whose heartbeat is older than the liveness window is
-- not waited for by erasure verification.
CREATE TABLE nodes (
    node_id      TEXT PRIMARY KEY NOT NULL,
    applied_seq  INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
);
