-- Logins to MCP servers that need one (host/src/store/logins.rs, docs/mcp-tools.md): each
-- server's tokens and client, sealed (AES-256-GCM) under a key from CHATD_SECRET_KEY, or on
-- SQLite the data folder's key file; `key_id` names the key. Shared by every instance on
-- PostgreSQL, where a refresh holds the row's lock. Never exported: after an import, log in
-- again.
CREATE TABLE mcp_logins (
    server     TEXT PRIMARY KEY,
    sealed     BLOB NOT NULL,
    key_id     TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
-- Logins begun by an authenticated Connect, each found once by the callback its redirect
-- reaches (on any instance), within ten minutes: keyed by the SHA-256 of its `state`, its
-- PKCE verifier and the browser it is bound to sealed as above.
CREATE TABLE mcp_login_starts (
    state_hash TEXT PRIMARY KEY,
    server     TEXT NOT NULL,
    sealed     BLOB NOT NULL,
    key_id     TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX mcp_login_starts_expiry ON mcp_login_starts (expires_at);
