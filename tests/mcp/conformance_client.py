"""The MCP conformance suite's client command: `conformance_client.py CHATD SERVER_URL`.

The suite appends the server's URL to its command and names the scenario in
MCP_CONFORMANCE_SCENARIO; this runs `chatd mcp call URL [TOOL ARGS]` with the tool the scenario
expects called, and for `auth/pre-registration` the client from MCP_CONFORMANCE_CONTEXT.
"""

import json
import os
import sys

# The Client ID Metadata Document URL the suite's `auth/basic-cimd` expects; chatd uses it only
# where the authorization server says it takes such documents.
CIMD = "https://conformance-test.local/client-metadata.json"

TOOLS = {
    "initialize": None,
    "tools_call": ("add_numbers", '{"a": 5, "b": 3}'),
    "sse-retry": ("test_reconnection", "{}"),
}


def main():
    chatd, url = sys.argv[1], sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    args = [chatd, "mcp", "call"]
    if scenario.startswith("auth/"):
        args += ["--client-metadata-url", CIMD]
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        if context.get("client_id"):
            args += ["--client-id", context["client_id"]]
        if context.get("client_secret"):
            args += ["--client-secret", context["client_secret"]]
        tool = ("test-tool", "{}")
    else:
        tool = TOOLS[scenario]
    args.append(url)
    if tool:
        args += list(tool)
    os.execv(chatd, args)


main()
