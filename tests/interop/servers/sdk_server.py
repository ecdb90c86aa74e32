"""An MCP server built with the official Python SDK (mcp==2.3.0,
`mcp.server.mcpserver.MCPServer`) over Streamable HTTP, for the
`sezzlee client` interop tests (tests/interop/test_client_third_party.py).

    python sdk_server.py --port PORT --mode stateless|stateful [--legacy-only] [--mutable]

--mode stateless  `stateless_http=True`: no sessions (what a 2026-07-28
                  client sees anyway: the SDK serves 2026-07-28 requests
                  per request in both modes).
--mode stateful   the SDK's default: `initialize` mints an `Mcp-Session-Id`
                  that DELETE ends (a later request with it gets 404).
--legacy-only     puts a 2025-era server's answer in front of the SDK: a
                  request whose MCP-Protocol-Version is not a handshake
                  version gets 400 + JSON-RPC -32600 "Bad Request:
                  Unsupported protocol version" (what mcp 1.x servers
                  answer), so a dual-era client must fall back to
                  `initialize` on its own. mcp 2.3.0 itself always serves
                  2026-07-28 (streamable_http_manager.py routes on the
                  header before the stateless/stateful split).
--mutable         for the upstream tests (tests/interop/test_upstreams.py):
                  counts every tools/call the server receives, by tool name,
                  and adds two tools, change_description (gives `add` a new
                  description and publishes a tools list change, so a
                  gateway's pinned version of `add` goes stale) and calls
                  (the counts, as JSON), so a test can tell that a call a
                  gateway refused never reached this server.

Tools: add (typed, so it has an outputSchema and structuredContent), fail
(raises: an isError result), echo_header (an argument mirrored into the
Mcp-Param-Region header), and add_tool (registers a tool at run time and
publishes a tools list change to subscriptions/listen streams).
"""

import argparse
import json
from collections import Counter
from typing import Annotated

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

HANDSHAKE_VERSIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

server = MCPServer("interop-sdk", version="1.0.0", instructions="A test server.")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail(reason: str = "boom") -> str:
    """Always raises."""
    raise ValueError(f"the tool failed on purpose: {reason}")


@server.tool()
def echo_header(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    ctx: Context,
) -> str:
    """Returns the Mcp-Param-Region header the request carried."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None) or {}
    return json.dumps({"region": region, "header": headers.get("mcp-param-region")})


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Registers a tool named NAME and tells listeners the list changed."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"Added at run time as {name}.")
    await ctx.notify_tools_changed()
    return f"added {name}"


CALLS: Counter[str] = Counter()


async def change_description(description: str, ctx: Context) -> str:
    """Gives the add tool a new description and tells listeners the list changed."""
    # Registered again under its own name: only its description differs.
    server.remove_tool("add")
    server.add_tool(add, description=description)
    await ctx.notify_tools_changed()
    return f"add is now described as {description!r}"


def calls() -> str:
    """The tools/call requests this server received, counted by tool name (JSON)."""
    return json.dumps(dict(CALLS))


def mutable() -> None:
    """Counts each tools/call before it is dispatched (an unknown tool or
    invalid arguments included) and registers change_description and calls."""
    dispatch = server.call_tool

    async def counted(name, arguments, context=None):
        CALLS[name] += 1
        return await dispatch(name, arguments, context)

    # MCPServer's tools/call handler calls self.call_tool: the instance
    # attribute stands in for the method.
    server.call_tool = counted
    server.add_tool(change_description)
    server.add_tool(calls)


def legacy_only(app):
    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            version = headers.get(b"mcp-protocol-version")
            if version is not None and version.decode("latin-1") not in HANDSHAKE_VERSIONS:
                text = version.decode("latin-1")
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": "server-error",
                        "error": {
                            "code": -32600,
                            "message": f"Bad Request: Unsupported protocol version: {text}",
                        },
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=["stateless", "stateful"], required=True)
    parser.add_argument("--legacy-only", action="store_true")
    parser.add_argument("--mutable", action="store_true")
    args = parser.parse_args()
    if args.mutable:
        mutable()
    app = server.streamable_http_app(
        stateless_http=args.mode == "stateless", json_response=False
    )
    if args.legacy_only:
        app = legacy_only(app)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
