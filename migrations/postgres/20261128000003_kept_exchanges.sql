-- The server tools' exchange of an /openai/v1 completion that ended with calls of the client's
-- own tools (host/src/store/exchanges.rs, docs/openai.md): kept for a bounded time under each
-- client call's id, and put back into the model's context when the client's next request
-- carries that id, on whichever instance it lands. Not users' data: never exported, deleted
-- once expired.
CREATE TABLE kept_exchanges (
    call_id    TEXT COLLATE "C" PRIMARY KEY,
    exchange   TEXT NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX kept_exchanges_expiry ON kept_exchanges (expires_at);
