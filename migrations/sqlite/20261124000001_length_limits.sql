-- Brings values stored before the length limits (host/src/http/limits.rs, README "Limits")
-- within them, so no list row carries one huge value. The numbers are the limits as they were
-- when this migration was written. substr and length count characters in SQLite and Postgres.
-- A search's normalized_query stays as it was: a query this long never matched a valid one.
UPDATE chats SET title = substr(title, 1, 500) WHERE length(title) > 500;
UPDATE chats SET additional_system_prompt = substr(additional_system_prompt, 1, 32000)
    WHERE length(additional_system_prompt) > 32000;
UPDATE chats SET initiated_model = substr(initiated_model, 1, 256) WHERE length(initiated_model) > 256;
UPDATE chats SET last_used_model = substr(last_used_model, 1, 256) WHERE length(last_used_model) > 256;
UPDATE searches SET title = substr(title, 1, 500) WHERE length(title) > 500;
UPDATE searches SET query = substr(query, 1, 2000) WHERE length(query) > 2000;
