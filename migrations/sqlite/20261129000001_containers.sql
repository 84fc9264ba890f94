-- The python tool's sessions of /openai/v1 requests (host/src/store/containers.rs, docs/openai.md,
-- "Python files"): a container lives KEPT_FOR after it was last used, its files with it; a
-- request that names it (chatd_session) continues it. An expired container is never found, and
-- is deleted, with its files, when a later one is made.
CREATE TABLE containers (
    id         TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX containers_expires_at ON containers (expires_at);
-- The files a container's code wrote: a name written again is a new row, the newest row of a
-- name what a new session of the container finds in its folder.
CREATE TABLE container_files (
    id           TEXT PRIMARY KEY,
    container_id TEXT NOT NULL REFERENCES containers (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    mime_type    TEXT NOT NULL,
    size_bytes   BIGINT NOT NULL,
    created_at   TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    data         BLOB NOT NULL,
    UNIQUE (container_id, seq)
);
