-- chatd's initial schema.
-- Portable on purpose (SQLite now, Postgres later): TEXT ids and fixed-width ISO-8601 UTC
-- timestamps with microseconds (they sort as text; clients see milliseconds), JSON kept in TEXT
-- columns, ON CONFLICT clauses both accept.

CREATE TABLE chats (
    id                       TEXT PRIMARY KEY,
    title                    TEXT,
    created_at               TEXT NOT NULL,
    updated_at               TEXT NOT NULL,
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
    id         TEXT PRIMARY KEY,
    chat_id    TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    -- transcript position within the chat, 1-based
    seq        BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    role       TEXT NOT NULL,
    content    TEXT NOT NULL,
    name       TEXT,
    -- JSON object or NULL
    metadata   TEXT,
    UNIQUE (chat_id, seq)
);

CREATE TABLE searches (
    id                TEXT PRIMARY KEY,
    title             TEXT,
    query             TEXT,
    -- trimmed, lower-cased query: the reuseByQuery key
    normalized_query  TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
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
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
-- The reserved project whose members are the starred chats and searches.
INSERT INTO projects (id, name, created_at) VALUES ('starred', 'Starred', '2026-01-01T00:00:00.000Z');

CREATE TABLE project_chats (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    chat_id    TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, chat_id)
);
CREATE INDEX project_chats_by_chat ON project_chats (chat_id);

CREATE TABLE project_searches (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    search_id  TEXT NOT NULL REFERENCES searches (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, search_id)
);
CREATE INDEX project_searches_by_search ON project_searches (search_id);

-- One row per model call: usage, latency and error. Kept when its chat is deleted (usage
-- accounting outlives the transcript).
CREATE TABLE llm_calls (
    id            TEXT PRIMARY KEY,
    chat_id       TEXT REFERENCES chats (id) ON DELETE SET NULL,
    provider      TEXT NOT NULL,
    model         TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    completed_at  TEXT,
    input_tokens  BIGINT,
    output_tokens BIGINT,
    total_tokens  BIGINT,
    latency_ms    BIGINT,
    error         TEXT
);
CREATE INDEX llm_calls_by_chat ON llm_calls (chat_id);
