-- The library's vectors (host/src/store/library_vectors.rs, docs/files.md): each chunk's
-- embedding by the model named, as little-endian f32, scaled to unit length, so a question is
-- scored by a dot product, exactly, in chatd (no vector extension is needed). A chunk may have
-- vectors of two models while a change of embedding model re-embeds in the background; they go
-- with their chunk.
CREATE TABLE library_vectors (
    model   TEXT COLLATE "C" NOT NULL,
    file_id TEXT COLLATE "C" NOT NULL,
    seq     BIGINT NOT NULL,
    vector  BYTEA NOT NULL,
    PRIMARY KEY (model, file_id, seq),
    FOREIGN KEY (file_id, seq) REFERENCES library_chunks (file_id, seq) ON DELETE CASCADE
);
CREATE INDEX library_vectors_by_chunk ON library_vectors (file_id, seq);

-- The model whose vectors answer questions: the configured one once every chunk has its
-- vector; until then, the one before it (one row, or none before a model was ever named).
CREATE TABLE library_embedding (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    serving TEXT NOT NULL
);
