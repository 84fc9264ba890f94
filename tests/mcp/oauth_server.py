"""An MCP server that needs a login, on the official Python SDK's authorization support
(`mcp`, pinned in .ci/run): the SDK's authorization server routes (metadata, dynamic
registration, authorize, token, revoke) and its bearer check in front of the MCP endpoint, over
an in-memory provider that approves every authorization at once (the redirect goes straight
back with a code). Streamable HTTP on 127.0.0.1, a free port, announced on
stdout as `listening http://127.0.0.1:PORT/mcp`.

Refresh tokens rotate, and a rotated one presented again revokes its whole grant, as servers
that detect refresh-token reuse do. `GET /test/stats` says how many token requests (by grant
type), codes presented (accepted or not), registrations and revocations were made; `GET
/test/tokens` lists every token issued (for canary scans); `POST /test/revoke` ends every grant;
`POST /test/expire` makes every access token issued so far stop working (its next use is a 401),
as an expiry does; `POST /test/client` registers a public client beforehand (`client_id`,
`redirect_uri`), as an administrator does. With MCP_TEST_ISS=1 the authorization server names
itself in its answers (`iss`, RFC 9207) and says so in its metadata. Tools: `add`, and
`whoami`, which answers with the grant (one per login) of the access token the call carried.
"""

import json

import os
import secrets
import socket
import time

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

SCOPE = "tools"
STATS = {
    "authorization_code": 0,
    "codes_presented": 0,
    "refresh_token": 0,
    "registrations": 0,
    "revocations": 0,
}
SEND_ISS = os.environ.get("MCP_TEST_ISS") == "1"


class Provider:
    """Every authorization approved; tokens, codes and clients in memory."""

    def __init__(self):
        self.issuer = None  # set once the server's settings name it
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}
        self.used_refresh = set()
        self.grants = {}  # token -> grant id, so reuse can revoke a whole grant

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        STATS["registrations"] += 1
        # The server assigns the form (RFC 7591 lets it), and the client must follow what the
        # registration answer says: the SDK's revocation endpoint reads the secret from the form.
        if client_info.client_secret:
            client_info.token_endpoint_auth_method = "client_secret_post"
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        iss = self.issuer if SEND_ISS else None
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=iss
        )

    async def load_authorization_code(self, client, authorization_code):
        STATS["codes_presented"] += 1
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource, grant):
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        ttl = int(os.environ.get("MCP_TEST_TOKEN_TTL", "3600"))
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ttl,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        self.grants[access] = self.grants[refresh] = grant
        return OAuthToken(
            access_token=access,
            expires_in=ttl,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code):
        STATS["authorization_code"] += 1
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            client.client_id,
            authorization_code.scopes,
            authorization_code.resource,
            secrets.token_hex(8),
        )

    async def load_refresh_token(self, client, refresh_token):
        if refresh_token in self.used_refresh:
            # Reuse of a rotated refresh token: the whole grant is revoked.
            self._revoke_grant(self.grants.get(refresh_token))
            return None
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        STATS["refresh_token"] += 1
        if not refresh_token.resource:
            raise TokenError("invalid_grant", "the refresh lost its resource")
        self.refresh.pop(refresh_token.token, None)
        self.used_refresh.add(refresh_token.token)
        grant = self.grants.get(refresh_token.token)
        return self._issue(
            client.client_id, scopes or refresh_token.scopes, refresh_token.resource, grant
        )

    async def load_access_token(self, token):
        access = self.access.get(token)
        if access and access.expires_at and access.expires_at < time.time():
            return None
        return access

    async def revoke_token(self, token):
        STATS["revocations"] += 1
        self._revoke_grant(self.grants.get(token.token))

    def _revoke_grant(self, grant):
        for store in (self.access, self.refresh):
            for token in [t for t in store if self.grants.get(t) == grant]:
                del store[token]


class AdvertisesIss:
    """The SDK's metadata, saying the server names itself in its answers
    (`authorization_response_iss_parameter_supported`, RFC 9207), which the SDK does not."""

    METADATA = "/.well-known/oauth-authorization-server"

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != self.METADATA:
            return await self.app(scope, receive, send)
        sent = []

        async def keep(message):
            sent.append(message)

        await self.app(scope, receive, keep)
        start = next(m for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        if start["status"] == 200:
            metadata = json.loads(body)
            metadata["authorization_response_iss_parameter_supported"] = True
            body = json.dumps(metadata).encode()
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def main():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider()
    settings = AuthSettings(
        issuer_url=base,
        resource_server_url=f"{base}/mcp",
        required_scopes=[SCOPE],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
        validate_token_resource=True,
    )
    provider.issuer = str(settings.issuer_url)
    server = MCPServer(
        "chatd-oauth-test-server",
        auth_server_provider=provider,
        auth=settings,
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @server.tool()
    def whoami() -> str:
        """Says which login this call carried: its access token's grant."""
        token = get_access_token()
        if token is None:
            return "no token"
        return "grant " + provider.grants.get(token.token, "unknown")

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request):
        return JSONResponse(STATS)

    @server.custom_route("/test/tokens", methods=["GET"])
    async def tokens(request: Request):
        # Every token issued, for the tests' canary scans.
        return JSONResponse(sorted(provider.grants))

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request):
        # Every grant ends, as an administrator revoking the client's access does.
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": True})

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request):
        for token in provider.access.values():
            token.expires_at = 1
        return JSONResponse({"expired": len(provider.access)})

    @server.custom_route("/test/client", methods=["POST"])
    async def client(request: Request):
        # A public client registered beforehand, for one redirect URI.
        asked = await request.json()
        provider.clients[asked["client_id"]] = OAuthClientInformationFull(
            client_id=asked["client_id"],
            redirect_uris=[asked["redirect_uri"]],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=SCOPE,
        )
        return JSONResponse({"registered": asked["client_id"]})

    app = server.streamable_http_app(stateless_http=True)
    if SEND_ISS:
        app = AdvertisesIss(app)
    print(f"listening {base}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
