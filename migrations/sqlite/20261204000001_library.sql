-- Each person's library of documents (POST /v1/files; host/src/store/library.rs, docs/files.md):
-- the original bytes, kept here (as on PostgreSQL, where the database is the one shared
-- service), what processing made of them, and their chunks. One owner's same bytes are one file
-- (the UNIQUE sha256). A file is `processing` until the worker (host/src/library/mod.rs)
-- stores its chunks (`ready`) or its error (`failed`); `leased_by` is the instance working on
-- it, and a file leased by an instance no longer alive is taken over.
CREATE TABLE library_files (
    id         TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    sha256     TEXT NOT NULL,
    collection TEXT,
    status     TEXT NOT NULL CHECK (status IN ('processing', 'ready', 'failed')),
    error      TEXT,
    pages      BIGINT,
    chunks     BIGINT,
    -- How many times a worker took it: a file that stopped its worker three times fails.
    attempts   BIGINT NOT NULL DEFAULT 0,
    leased_by  TEXT,
    created_at TEXT NOT NULL,
    -- Last: SQLite reads a row's columns in order, and the others are read without walking
    -- through the bytes (up to 25 MiB of overflow pages).
    content    BLOB NOT NULL,
    UNIQUE (owner_id, sha256)
);
CREATE INDEX library_files_by_owner ON library_files (owner_id, created_at, id);
CREATE INDEX library_files_processing ON library_files (created_at) WHERE status = 'processing';

-- A file's text in chunks (host/src/library/chunks.rs), `seq` the chunk's index in its file,
-- `page` 1-based where the format has pages. Deleted with their file.
-- `id` is the rowid, made explicit: the FTS index is keyed by it, and an implicit rowid may
-- be renumbered by VACUUM (`chatd backup` runs VACUUM INTO), which would point the index at
-- other chunks.
CREATE TABLE library_chunks (
    id      INTEGER PRIMARY KEY,
    file_id TEXT NOT NULL REFERENCES library_files (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    page    BIGINT,
    text    TEXT NOT NULL,
    UNIQUE (file_id, seq)
);

-- The chunks' words (host/src/store/library_search.rs): an FTS5 index that keeps no copy of the
-- text (external content, keyed by the chunk's `id`), kept in step by triggers, so a file
-- is indexed once, when its chunks are stored, and never again per query. Porter stemming over
-- unicode61 (case and diacritics folded): "invoices" finds "invoice".
CREATE VIRTUAL TABLE library_chunks_fts USING fts5(
    text,
    content = 'library_chunks',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER library_chunks_fts_insert AFTER INSERT ON library_chunks BEGIN
    INSERT INTO library_chunks_fts (rowid, text) VALUES (new.id, new.text);
END;
-- A file's deletion removes its chunks by cascade, which fires this too.
CREATE TRIGGER library_chunks_fts_delete AFTER DELETE ON library_chunks BEGIN
    INSERT INTO library_chunks_fts (library_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
