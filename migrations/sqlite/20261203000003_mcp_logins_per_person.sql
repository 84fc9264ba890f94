-- Each person's own logins to an MCP server declared `per_user = true` (host/src/tools/mcp/
-- people.rs, docs/mcp-tools.md): a login is now keyed by its server and its owner, the person
-- whose calls it is used for; `''` is the operator's (a server every person shares), which
-- every login made before was. Led by the owner, so a person's logins are one index range.
-- SQLite cannot change a primary key in place: the table is made again, its rows kept.
CREATE TABLE mcp_logins_by_owner (
    owner      TEXT NOT NULL DEFAULT '',
    server     TEXT NOT NULL,
    sealed     BLOB NOT NULL,
    key_id     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (owner, server)
);
INSERT INTO mcp_logins_by_owner (owner, server, sealed, key_id, updated_at)
    SELECT '', server, sealed, key_id, updated_at FROM mcp_logins;
DROP TABLE mcp_logins;
ALTER TABLE mcp_logins_by_owner RENAME TO mcp_logins;
-- A login begun by Connect is for its owner too: the callback finishes that person's.
ALTER TABLE mcp_login_starts ADD COLUMN owner TEXT NOT NULL DEFAULT '';
