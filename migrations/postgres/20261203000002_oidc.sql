-- Signing in with an OpenID Connect provider (host/src/signin/, docs/teams.md). A person
-- signed in that way is known by the provider's issuer and subject (`oidc_subject`, one
-- person each). A sign-in begun and not yet finished is kept in `oidc_logins` under the
-- SHA-256 of its `state`, with the SHA-256 of the browser's binding cookie, until its callback
-- takes it (once) or it expires: the callback may reach any instance.
ALTER TABLE users ADD COLUMN oidc_subject TEXT COLLATE "C";
CREATE UNIQUE INDEX users_by_oidc_subject ON users (oidc_subject);

CREATE TABLE oidc_logins (
    state_sha256   TEXT COLLATE "C" PRIMARY KEY,
    browser_sha256 TEXT COLLATE "C" NOT NULL,
    nonce          TEXT NOT NULL,
    verifier       TEXT NOT NULL,
    created_at     TEXT COLLATE "C" NOT NULL,
    expires_at     TEXT COLLATE "C" NOT NULL
);
CREATE INDEX oidc_logins_by_expiry ON oidc_logins (expires_at);
