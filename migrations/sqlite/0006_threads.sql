-- Threads of the agent loop: working memory (pinned goal, summary, recent
-- turns) and every message, the source of truth for the conversation.
-- Times are epoch milliseconds; ids are UUID v7 text; JSON is TEXT.
--
-- summary: {"text", "open_todos", "commitments"}; it covers the messages with
-- seq <= summary_upto_seq (those are marked compacted).
-- turn_holder/turn_until: the lease of the one running turn (a second turn
-- gets 409 until it is released or expires), stored so that two nodes serving
-- the same thread see the same lock.
CREATE TABLE threads (
    id                TEXT PRIMARY KEY NOT NULL,
    tenant_id         TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    goal              TEXT,
    summary           TEXT NOT NULL DEFAULT '{}',
    summary_upto_seq  INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    last_activity_at  INTEGER NOT NULL,
    last_compacted_at INTEGER,
    turn_holder       TEXT,
    turn_until        INTEGER
);

CREATE INDEX threads_owner ON threads (tenant_id, user_id);
CREATE INDEX threads_activity ON threads (last_activity_at);

-- extraction_state: 'pending' (a user message not yet read by the
-- extractor), 'running' (claimed until extraction_until), 'done', or
-- 'skipped' (assistant and tool messages). Compaction only takes messages
-- that are 'done' or 'skipped', so extraction always reads raw text.
-- tool: the compact summary of a tool result ({name, status, summary,
-- key_fields, payload_id}); the full payload is a row of message_payloads.
CREATE TABLE messages (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id        TEXT NOT NULL,
    tenant_id        TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    role             TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content          TEXT NOT NULL,
    tool             TEXT,
    created_at       INTEGER NOT NULL,
    extraction_state TEXT NOT NULL CHECK (extraction_state IN ('pending', 'running', 'done', 'skipped')),
    extraction_until INTEGER,
    compacted        INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX messages_thread ON messages (thread_id, seq);
CREATE INDEX messages_owner ON messages (tenant_id, user_id);

-- Full tool-result payloads, out of the history: the prompt carries only the
-- summary and a pointer (payload id).
CREATE TABLE message_payloads (
    id         TEXT PRIMARY KEY NOT NULL,
    thread_id  TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE INDEX message_payloads_owner ON message_payloads (tenant_id, user_id);
