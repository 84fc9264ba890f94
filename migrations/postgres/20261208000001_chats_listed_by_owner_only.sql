-- Every list of chats is one owner's (since the people migration), answered from
-- chats_by_owner (owner_id, updated_at, id); chats_by_updated_at served none, yet every write
-- that bumps a chat's updated_at (each call's start and end) rewrote its entry: on SQLite 3 of
-- a persisted completion's 22 pages (BENCHMARKS.md, "A completion's chat read where its
-- writes go").
DROP INDEX IF EXISTS chats_by_updated_at;
