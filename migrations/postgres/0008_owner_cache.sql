-- Forget-all erases one owner's rows; this migration makes each of those
-- deletes touch that owner's pages only (same change as SQLite's 0008).
--
-- The embedding cache is kept per owner: (tenant_id, user_id), with '' as
-- the user of reference memory. Erasing a user deletes one key range, and no
-- longer asks, text by text, whether another owner shares the text (that
-- question needed the global `memories_text_hash` index). The price: two
-- owners with the same text each embed it once. Entries are copied to every
-- owner whose memories have the text; entries no memory uses are dropped.
CREATE TABLE embedding_cache_by_owner (
    tenant_id   TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    model_id    TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    vector      BYTEA NOT NULL,
    PRIMARY KEY (tenant_id, user_id, model_id, text_sha256)
);
INSERT INTO embedding_cache_by_owner (tenant_id, user_id, model_id, text_sha256, vector)
    SELECT DISTINCT ON (m.tenant_id, coalesce(m.user_id, ''), c.model_id, c.text_sha256)
        m.tenant_id, coalesce(m.user_id, ''), c.model_id, c.text_sha256, c.vector
    FROM memories m JOIN embedding_cache c ON c.text_sha256 = m.text_sha256;
DROP TABLE embedding_cache;
ALTER TABLE embedding_cache_by_owner RENAME TO embedding_cache;
ALTER TABLE embedding_cache RENAME CONSTRAINT embedding_cache_by_owner_pkey TO embedding_cache_pkey;

-- Duplicate lookups and purges ask per owner (`memories_dedup`).
DROP INDEX memories_text_hash;

-- Only reference documents have a document id.
DROP INDEX memories_document;
CREATE INDEX memories_document ON memories (tenant_id, (source->>'document_id'))
    WHERE source->>'document_id' IS NOT NULL;
