-- Search over message text (GET /v1/message-search; host/src/store/postgres/message_search.rs):
-- each message's words, kept in a column of their own and indexed by GIN, with the `simple`
-- configuration (no language's stemming or stop words: chats are in any language).
--
-- A stored column, not an index on the expression: a search is `ORDER BY id DESC LIMIT n`, and
-- for a common word the planner walks the primary key backwards, testing each row; computing
-- the words there cost 13 µs a row (70 ms past 5,500 newer messages without the word), reading
-- them costs about 0.7 µs. Its statistics at ten times the default: with the default target
-- the planner knows a few dozen words' frequencies and guesses 0.5% of the rows for any other,
-- so it walked the whole table for a word in ten messages of a million (6 s); with 1000
-- (ANALYZE samples 300,000 rows, about 4 s at 1M messages) such a word goes through the index.
--
-- The first 100,000 characters of a message: a tsvector cannot pass 1 MB, and a longer text of
-- distinct words (a pasted log, a tool's output) would make its insert fail. On an existing
-- database the column and the index are made in the migration's transaction, writes waiting
-- (about 13 s at a million messages).
ALTER TABLE messages ADD COLUMN search_words tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', left(content, 100000))) STORED;
CREATE INDEX messages_text_search ON messages USING gin (search_words);
ALTER TABLE messages ALTER COLUMN search_words SET STATISTICS 1000;
