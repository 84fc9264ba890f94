"""An MCP server built on the official Python SDK (`mcp`, pinned in .ci/run), for chatd's tests
and its benchmark: streamable HTTP on 127.0.0.1, a free port, announced on stdout as
`listening http://127.0.0.1:PORT/mcp`.

Tools: `add` (structured and text content), `echo_auth` (says which Authorization header the
server received: a server that echoes the key), `slow` (sleeps), `fail` (an error result),
`picture` (an image), `grow` (adds the tool `grown` and says the tool list changed), `manual`
(a description of some 1,300 characters, for a server's tool-text cap). With MCP_TEST_KEY set, a request without `Authorization: Bearer <key>` is
refused with 401, and the refusal quotes the header it got (an echo in an error).
MCP_TEST_STATELESS=1 serves without sessions; MCP_TEST_JSON=1 answers calls with JSON bodies
instead of SSE streams.
"""

import asyncio
import base64
import json
import os
import socket

import uvicorn
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

KEY = os.environ.get("MCP_TEST_KEY")
SEEN = {"authorization": ""}

server = MCPServer("chatd-test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def echo_auth() -> str:
    """Says which Authorization header the server received."""
    return "the server received: " + SEEN["authorization"]


@server.tool()
async def slow(seconds: float) -> str:
    """Waits, then answers."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ToolError(reason)


@server.tool()
def picture() -> Image:
    """A tiny PNG."""
    return Image(data=base64.b64decode("iVBORw0KGgo="), format="png")


@server.tool(description="Reads the manual. " + "It explains every step at length. " * 40)
def manual() -> str:
    return "read"


def grown() -> str:
    """A tool added while the server runs."""
    return "grown"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `grown` and says the list changed."""
    server.add_tool(grown)
    await ctx.session.send_tool_list_changed()
    return "added grown"


class Gate:
    """Records the Authorization header and refuses a wrong key."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            SEEN["authorization"] = headers.get("authorization", "")
            if KEY and SEEN["authorization"] != f"Bearer {KEY}":
                body = json.dumps({"error": "bad key: " + SEEN["authorization"]}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    stateless = os.environ.get("MCP_TEST_STATELESS") == "1"
    json_response = os.environ.get("MCP_TEST_JSON") == "1"
    app = Gate(server.streamable_http_app(stateless_http=stateless, json_response=json_response))
    print(f"listening http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
