-- API keys (mirrors migrations/sqlite/0002_api_keys.sql). The secret is
-- stored only as its SHA-256 (hex).
CREATE TABLE api_keys (
    id            TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    tenant_id     TEXT NOT NULL,
    user_id       TEXT,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'agent', 'user')),
    secret_sha256 TEXT NOT NULL UNIQUE,
    created_at    BIGINT NOT NULL,
    revoked_at    BIGINT,
    CHECK (role <> 'user' OR user_id IS NOT NULL)
);

CREATE INDEX api_keys_tenant ON api_keys (tenant_id, id);
