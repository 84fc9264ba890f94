-- Search over message text (GET /v1/message-search; host/src/store/postgres/message_search.rs):
-- a GIN index on the words of `messages.content`, with the `simple` configuration (no
-- language's stemming or stop words: chats are in any language). The query repeats this
-- expression, which is what lets it use the index.
CREATE INDEX messages_text_search ON messages USING gin (to_tsvector('simple', content));
