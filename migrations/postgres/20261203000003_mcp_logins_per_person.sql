-- Each person's own logins to an MCP server declared `per_user = true` (host/src/tools/mcp/
-- people.rs, docs/mcp-tools.md): a login is now keyed by its owner and its server, the person
-- whose calls it is used for; `''` is the operator's (a server every person shares), which
-- every login made before was. Led by the owner, so a person's logins are one index range.
ALTER TABLE mcp_logins ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE mcp_logins DROP CONSTRAINT mcp_logins_pkey;
ALTER TABLE mcp_logins ADD PRIMARY KEY (owner, server);
-- A login begun by Connect is for its owner too: the callback finishes that person's.
ALTER TABLE mcp_login_starts ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT '';
