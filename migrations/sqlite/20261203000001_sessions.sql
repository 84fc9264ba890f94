-- Sign-in for the web client (host/src/store/sessions.rs, docs/teams.md "Signing in"). A login
-- link (`chatd users login-link NAME`) and a session are kept as the SHA-256 of their secret
-- (hex), never the secret. A link works once (`used_at`) and until `expires_at`; a session
-- is the person's until `expires_at` or until it is ended (`ended_at`: signed out, or ended
-- from the list of sessions). Neither is exported: both are short-lived credentials.
CREATE TABLE login_links (
    secret_sha256 TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id),
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    used_at       TEXT
);

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id),
    secret_sha256 TEXT NOT NULL UNIQUE,
    via           TEXT NOT NULL,
    user_agent    TEXT,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    ended_at      TEXT
);
CREATE INDEX sessions_by_user ON sessions (user_id, created_at);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
CREATE INDEX login_links_by_expiry ON login_links (expires_at);
