"""The official Python SDK's MCP client (`mcp`, pinned in .ci/run) against chatd's /mcp, for
chatd's tests: connects to argv[1] (with `Authorization: Bearer $MCP_TEST_TOKEN` when set),
initializes, lists the tools, calls the tool argv[2] with the JSON arguments argv[3], and prints
one JSON object: the negotiated protocol version, the tool names, and the call's result.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url, tool, arguments):
    headers = {}
    if os.environ.get("MCP_TEST_TOKEN"):
        headers["Authorization"] = "Bearer " + os.environ["MCP_TEST_TOKEN"]
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool(tool, json.loads(arguments))
                print(json.dumps({
                    "protocolVersion": init.protocol_version,
                    "tools": [t.name for t in tools.tools],
                    "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
                }), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
