-- Each person's library of documents (POST /v1/files; host/src/store/library.rs, docs/files.md):
-- the original bytes, kept here because the database is the one service every instance shares,
-- what processing made of them, and their chunks. One owner's same bytes are one file (the
-- UNIQUE sha256). A file is `processing` until a worker (host/src/library/mod.rs) stores its
-- chunks (`ready`) or its error (`failed`); `leased_by` is the instance working on it, and a
-- file leased by an instance whose lease on the database ran out is taken over by another.
CREATE TABLE library_files (
    id         TEXT COLLATE "C" PRIMARY KEY,
    owner_id   TEXT COLLATE "C" NOT NULL,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    sha256     TEXT COLLATE "C" NOT NULL,
    collection TEXT,
    status     TEXT NOT NULL CHECK (status IN ('processing', 'ready', 'failed')),
    error      TEXT,
    pages      BIGINT,
    chunks     BIGINT,
    -- How many times a worker took it: a file that stopped its worker three times fails.
    attempts   BIGINT NOT NULL DEFAULT 0,
    leased_by  TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    -- Last: the other columns are read without walking the bytes.
    content    BYTEA NOT NULL,
    UNIQUE (owner_id, sha256)
);
CREATE INDEX library_files_by_owner ON library_files (owner_id, created_at, id);
CREATE INDEX library_files_processing ON library_files (created_at) WHERE status = 'processing';

-- A file's text in chunks (host/src/library/chunks.rs), `seq` the chunk's index in its file,
-- `page` 1-based where the format has pages. Deleted with their file. `words` is the chunk's
-- words for the keyword search (host/src/store/library_search.rs), stored and GIN-indexed, so
-- a file is indexed once, when its chunks are stored, never per query: English stemming
-- ("invoices" finds "invoice"), as SQLite's porter tokenizer does, over the first 100,000
-- characters (a tsvector cannot pass 1 MB; a chunk is far shorter). Every run of characters
-- that are not letters or digits is a space first, so words are cut where SQLite's unicode61
-- tokenizer and the question's words cut them (PostgreSQL's own parser would keep `4.2.1`,
-- `acme.com` or `a-b` as one lexeme, which the question's `4`, `2`, `1` would never match).
CREATE TABLE library_chunks (
    file_id TEXT COLLATE "C" NOT NULL REFERENCES library_files (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    page    BIGINT,
    text    TEXT NOT NULL,
    words   tsvector GENERATED ALWAYS AS (to_tsvector('english',
                regexp_replace(left(text, 100000), '[^[:alnum:]]+', ' ', 'g'))) STORED,
    PRIMARY KEY (file_id, seq)
);
CREATE INDEX library_chunks_words ON library_chunks USING gin (words);
