-- The search index written behind (host/src/store/sqlite/search_index.rs): a message's insert
-- queues its rowid here, and the index takes the queued rows in batches, off the request path,
-- and before any search reads it. FTS5 writes a segment of its own for each transaction that
-- adds to it, and that segment was a third of a persisted completion's pages (BENCHMARKS.md).
CREATE TABLE messages_fts_pending (message_rowid INTEGER PRIMARY KEY);

DROP TRIGGER messages_fts_insert;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts_pending (message_rowid) VALUES (new.rowid);
END;
-- A row still queued was never indexed: an external-content index told to delete a row it
-- does not hold is corrupted, so only an indexed row is deleted from it.
DROP TRIGGER messages_fts_delete;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content)
        SELECT 'delete', old.rowid, old.content
        WHERE NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE message_rowid = old.rowid);
    DELETE FROM messages_fts_pending WHERE message_rowid = old.rowid;
END;
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content)
        SELECT 'delete', old.rowid, old.content
        WHERE NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE message_rowid = old.rowid);
    INSERT OR IGNORE INTO messages_fts_pending (message_rowid) VALUES (new.rowid);
END;
