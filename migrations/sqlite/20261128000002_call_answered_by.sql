-- The provider and model that answered a call when they were not the ones requested (the
-- operator's fallback, after the requested provider's tries were exhausted); NULL when the
-- requested one answered. `provider` and `model` stay what the client asked for.
ALTER TABLE llm_calls ADD COLUMN answered_provider TEXT;
ALTER TABLE llm_calls ADD COLUMN answered_model TEXT;
