-- Runs shared by the instances of one deployment (host/src/runs/shared.rs): which instance owns
-- each chat or search stream, and its events, so any instance can replay and follow a run, and
-- the database, not one process's memory, decides that a chat has one stream at a time.

-- A run: one persisted chat stream or search stream. `tag` is the run's part of its SSE ids
-- (`<tag>-<seq>`, as 8 hex digits). A run is live until `ended_at` is set, by its owner as it
-- sends its terminal event, or by another instance once the owner's lease ran out.
CREATE TABLE runs (
    id          TEXT COLLATE "C" PRIMARY KEY,
    -- 'chat' or 'search'
    kind        TEXT NOT NULL,
    -- the chat's or the search's id
    target_id   TEXT COLLATE "C" NOT NULL,
    tag         BIGINT NOT NULL,
    instance_id TEXT COLLATE "C" NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    ended_at    TIMESTAMPTZ
);
-- One live run per chat or search, whichever instances are asked: the 409 and the joining of a
-- search's stream rest on this index.
CREATE UNIQUE INDEX runs_live ON runs (kind, target_id) WHERE ended_at IS NULL;
CREATE INDEX runs_by_owner ON runs (instance_id) WHERE ended_at IS NULL;
-- Ended runs are deleted a while after their end.
CREATE INDEX runs_ended ON runs (ended_at) WHERE ended_at IS NOT NULL;

-- A run's events in order: `seq` is the event's 1-based position, its SSE id's second part.
-- `data` is the event's JSON text exactly as sent.
CREATE TABLE run_events (
    run_id   TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    name     TEXT NOT NULL,
    data     TEXT NOT NULL,
    terminal BOOLEAN NOT NULL,
    PRIMARY KEY (run_id, seq)
);
