-- chatd's schema on PostgreSQL: the SQLite schema (migrations/sqlite) brought to the same state,
-- plus what several instances sharing the database need.
--
-- Ids and timestamps are TEXT in the C collation: fixed-width ISO-8601 UTC stamps with
-- microseconds and UUIDv7 ids then sort by byte, as on SQLite, whatever the database's locale
-- (a locale's collation may skip punctuation). JSON stays TEXT: the store writes and reads it
-- as text on both backends, and nothing queries inside it.

-- The next `updated_at` of a row (host/src/store/postgres/mod.rs): `now`, or the first
-- microsecond of the millisecond after `stored` when the clock has not moved past it, so that
-- `updatedAt` (milliseconds, as clients see it) increases on every update.
CREATE FUNCTION chatd_next_stamp(now TEXT, stored TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT GREATEST(
        now COLLATE "C",
        to_char(substr(stored, 1, 23)::timestamp + interval '1 millisecond',
                'YYYY-MM-DD"T"HH24:MI:SS.MS') || '000Z'
    )
$$;

CREATE TABLE chats (
    id                       TEXT COLLATE "C" PRIMARY KEY,
    title                    TEXT,
    created_at               TEXT COLLATE "C" NOT NULL,
    updated_at               TEXT COLLATE "C" NOT NULL,
    initiated_provider       TEXT,
    initiated_model          TEXT,
    last_used_provider       TEXT,
    last_used_model          TEXT,
    additional_system_prompt TEXT,
    -- JSON array of tool names
    enabled_tools            TEXT NOT NULL
);
CREATE INDEX chats_by_updated_at ON chats (updated_at, id);

CREATE TABLE messages (
    id         TEXT COLLATE "C" PRIMARY KEY,
    chat_id    TEXT COLLATE "C" NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    -- transcript position within the chat, 1-based
    seq        BIGINT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    role       TEXT NOT NULL,
    content    TEXT NOT NULL,
    name       TEXT,
    -- JSON object or NULL
    metadata   TEXT,
    UNIQUE (chat_id, seq)
);

CREATE TABLE searches (
    id                TEXT COLLATE "C" PRIMARY KEY,
    title             TEXT,
    query             TEXT,
    -- trimmed, lower-cased query: the reuseByQuery key
    normalized_query  TEXT COLLATE "C",
    created_at        TEXT COLLATE "C" NOT NULL,
    updated_at        TEXT COLLATE "C" NOT NULL,
    request_id        TEXT,
    latency_ms        BIGINT,
    error             TEXT,
    -- JSON array of result items
    results           TEXT NOT NULL,
    answer_text       TEXT,
    answer_request_id TEXT,
    -- JSON array of citations
    answer_citations  TEXT NOT NULL,
    answer_error      TEXT
);
CREATE INDEX searches_by_updated_at ON searches (updated_at, id);
CREATE INDEX searches_by_normalized_query ON searches (normalized_query, updated_at);

CREATE TABLE projects (
    id         TEXT COLLATE "C" PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
-- The reserved project whose members are the starred chats and searches.
INSERT INTO projects (id, name, created_at) VALUES ('starred', 'Starred', '2026-01-01T00:00:00.000Z');

CREATE TABLE project_chats (
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    chat_id    TEXT COLLATE "C" NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (project_id, chat_id)
);
CREATE INDEX project_chats_by_chat ON project_chats (chat_id);

CREATE TABLE project_searches (
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    search_id  TEXT COLLATE "C" NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (project_id, search_id)
);
CREATE INDEX project_searches_by_search ON project_searches (search_id);

-- Server processes sharing the database (host/src/store/postgres/liveness.rs). `lease_until` is
-- on the database's clock, so instances' clocks need not agree: an instance whose lease ran out
-- is gone, and the calls it left open are closed by another.
CREATE TABLE instances (
    id          TEXT COLLATE "C" PRIMARY KEY,
    started_at  TEXT COLLATE "C" NOT NULL,
    alive_at    TEXT COLLATE "C" NOT NULL,
    lease_until TIMESTAMPTZ NOT NULL
);

-- One row per model call: usage, latency and error. Kept when its chat is deleted (usage
-- accounting outlives the transcript). `instance_id`: the server that made the call, which
-- alone may end it while its lease holds.
CREATE TABLE llm_calls (
    id            TEXT COLLATE "C" PRIMARY KEY,
    chat_id       TEXT COLLATE "C" REFERENCES chats (id) ON DELETE SET NULL,
    provider      TEXT NOT NULL,
    model         TEXT NOT NULL,
    created_at    TEXT COLLATE "C" NOT NULL,
    completed_at  TEXT COLLATE "C",
    input_tokens  BIGINT,
    output_tokens BIGINT,
    total_tokens  BIGINT,
    latency_ms    BIGINT,
    error         TEXT,
    instance_id   TEXT COLLATE "C"
);
CREATE INDEX llm_calls_by_chat ON llm_calls (chat_id);
CREATE INDEX llm_calls_open ON llm_calls (instance_id) WHERE completed_at IS NULL;
