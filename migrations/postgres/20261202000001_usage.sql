-- Usage and budgets (host/src/usage/, docs/teams.md). `usage_ledger`: one row per model call
-- made for a person (every route, `persist: false` too), apart from the chats' `llm_calls` so
-- a call that keeps nothing of its chat is still counted; `cost_nanos` is USD × 10⁹ (exact
-- sums), NULL when the model had no price. `usage_holds`: what a request running now may still
-- spend (its estimate, less what its calls already recorded), counted against budgets until the
-- request ends or the hold expires (`expires_at`: a dead instance's holds stop counting).
-- A budget is JSON, `{"usd": N | "tokens": N, "period": "day" | "week" | "month"}`.
ALTER TABLE users ADD COLUMN budget TEXT;
ALTER TABLE api_keys ADD COLUMN budget TEXT;

CREATE TABLE usage_ledger (
    id            TEXT COLLATE "C" PRIMARY KEY,
    user_id       TEXT COLLATE "C" NOT NULL,
    key_id        TEXT COLLATE "C",
    source        TEXT NOT NULL,
    provider      TEXT NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_nanos    BIGINT,
    created_at    TEXT COLLATE "C" NOT NULL
);
CREATE INDEX usage_by_user ON usage_ledger (user_id, created_at);
CREATE INDEX usage_by_key ON usage_ledger (key_id, created_at);
CREATE INDEX usage_by_time ON usage_ledger (created_at);

CREATE TABLE usage_holds (
    id          TEXT COLLATE "C" PRIMARY KEY,
    user_id     TEXT COLLATE "C" NOT NULL,
    key_id      TEXT COLLATE "C",
    tokens      BIGINT NOT NULL,
    cost_nanos  BIGINT NOT NULL,
    expires_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX holds_by_user ON usage_holds (user_id, expires_at);
CREATE INDEX holds_by_key ON usage_holds (key_id, expires_at);
