-- Erasing a user (and purging deleted memories) removes the cached
-- embeddings of their texts by text hash; the primary key starts with the
-- model id, so without this index each of those deletes scans the whole cache.
CREATE INDEX embedding_cache_text ON embedding_cache (text_sha256);
