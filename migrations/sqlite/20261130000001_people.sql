-- People and their keys (host/src/store/people.rs, docs/teams.md). The built-in admin is the
-- holder of ADMIN_TOKEN: a row of its own, so its keys have an owner, and the owner of every
-- chat and search made before people existed. A key is kept as the SHA-256 of its secret
-- (hex), never the secret; `scopes` is a JSON array of `chat`, `openai`, `mcp`, `admin`.
CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL,
    disabled   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TEXT NOT NULL
);
INSERT INTO users (id, name, role, disabled, created_at)
VALUES ('admin', 'admin', 'admin', FALSE, '2026-01-01T00:00:00.000000Z');

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id),
    name       TEXT NOT NULL,
    secret_sha256 TEXT NOT NULL UNIQUE,
    scopes     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT
);
CREATE INDEX api_keys_by_user ON api_keys (user_id, created_at);

-- Whose each chat and search is: everything before people existed is the built-in admin's.
ALTER TABLE chats ADD COLUMN owner_id TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE searches ADD COLUMN owner_id TEXT NOT NULL DEFAULT 'admin';
CREATE INDEX chats_by_owner ON chats (owner_id, updated_at, id);
CREATE INDEX searches_by_owner ON searches (owner_id, updated_at, id);

-- The front door's python containers and kept tool exchanges are their maker's too.
ALTER TABLE containers ADD COLUMN owner_id TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE kept_exchanges ADD COLUMN owner_id TEXT NOT NULL DEFAULT 'admin';
