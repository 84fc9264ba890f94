-- Files the python tool's code wrote in a chat (host/src/tools/python/, docs/python.md): kept
-- with the chat, listed in its tool messages' metadata.files, downloadable from
-- GET /v1/chats/:chatId/files/:fileId, and deleted with it. A name written again is a new row;
-- the newest row of a name is what a new session of the chat finds in its folder.
CREATE TABLE chat_files (
    id         TEXT PRIMARY KEY,
    chat_id    TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    -- Orders the rows of one chat (and of one name) as they were written.
    seq        BIGINT NOT NULL,
    data       BLOB NOT NULL,
    UNIQUE (chat_id, seq)
);
