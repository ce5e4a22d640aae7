-- API keys. The secret is shown once at creation and stored only as its
-- SHA-256 (hex): a leaked database does not leak working keys. Secrets are
-- 256-bit random values, so a plain hash (no salt, no KDF) is enough, and
-- lookup is by hash (no constant-time comparison needed).
CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY NOT NULL,
    tenant_id     TEXT NOT NULL,
    user_id       TEXT,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'agent', 'user')),
    secret_sha256 TEXT NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER,
    CHECK (role <> 'user' OR user_id IS NOT NULL)
);

CREATE INDEX api_keys_tenant ON api_keys (tenant_id, id);
