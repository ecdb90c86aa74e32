"""Interop: the official Python MCP SDK (mcp==2.3.0) against a running sezzlee.

    SEZZLEE_URL=http://127.0.0.1:8080/mcp pytest -q tests/interop/test_python_sdk.py

The gateway must serve the shipped demo catalog (catalogs/) with its built-in
demo backend, as `sezzlee serve` does by default; tests/interop/run.sh starts
one. Every test runs once per connection mode: the stateless 2026-07-28 wire
(pinned, and reached through mode="auto"'s server/discover probe) and the
legacy initialize handshake offering 2025-11-25, 2025-06-18 and 2025-03-26.
"""

import json
import os
import re

import anyio
import mcp.client.session
import pytest
from mcp import Client, MCPError

URL = os.environ.get("SEZZLEE_URL")

MODES = {  # test id -> (Client mode, legacy handshake version)
    "2026-07-28": ("2026-07-28", None),
    "auto": ("auto", None),
    "legacy-2025-11-25": ("legacy", "2025-11-25"),
    "legacy-2025-06-18": ("legacy", "2025-06-18"),
    "legacy-2025-03-26": ("legacy", "2025-03-26"),
}

THE_THREE = ["invoke_tool", "load_tool", "search_tools"]
NOTES_TOOLS = {"add_order_note", "list_order_notes"}
VERSION = re.compile(r"[0-9a-f]{16}")
TOOL_CHANGED_MESSAGE = (
    "The tool 'cancel_order' changed after it was loaded, so the call was refused before "
    "reaching the backend. Load it again with load_tool and retry with the new version."
)


@pytest.fixture(params=list(MODES))
def run(request, monkeypatch):
    """Return run(body): open a Client in this mode, await body(client), return its value."""
    if not URL:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("SEZZLEE_URL is not set")
    mode, handshake = MODES[request.param]
    if handshake:
        # ClientSession.initialize() offers this module global as its protocolVersion.
        monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", handshake)

    def run_body(body):
        async def main():
            async with Client(URL, mode=mode) as client:
                # auto must settle on the stateless wire (server/discover answered);
                # legacy must get back exactly the version it offered.
                assert client.protocol_version == (handshake or "2026-07-28")
                return await body(client)

        return anyio.run(main)

    return run_body


def payload(result):
    """The JSON held in a tool result's single text block (no structuredContent)."""
    assert len(result.content) == 1, result.content
    assert result.content[0].type == "text", result.content
    assert result.structured_content is None, result.structured_content
    return json.loads(result.content[0].text)


def ok(result):
    """The payload of a successful tool result (isError absent)."""
    assert not result.is_error, result.content
    return payload(result)


def failed(result, code):
    """The payload of an isError tool result carrying error `code` in the envelope."""
    assert result.is_error is True, result.content
    body = payload(result)
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"], body
    assert body["retryable"] is False, body
    return body


def card_names(search):
    """Names of a search answer's results; each result is a card (name/description/parameters)."""
    for card in search["results"]:
        assert isinstance(card["name"], str) and card["name"], card
        assert isinstance(card["description"], str), card
        assert isinstance(card["parameters"], str), card
    return [card["name"] for card in search["results"]]


def call(name, arguments):
    return lambda client: client.call_tool(name, arguments)


def test_lists_exactly_the_three_tools(run):
    listing = run(lambda c: c.list_tools())
    assert sorted(t.name for t in listing.tools) == THE_THREE
    for tool in listing.tools:
        assert tool.description, tool.name
        assert tool.input_schema["type"] == "object", tool.name


def test_search_by_query_finds_create_order_in_the_top_five(run):
    found = ok(run(call("search_tools", {"query": "order"})))
    assert found["total"] >= 1, found
    assert "create_order" in card_names(found)[:5], found


def test_search_by_tag_returns_only_the_notes_tools(run):
    found = ok(run(call("search_tools", {"tags": ["Order Notes"]})))
    assert set(card_names(found)) == NOTES_TOOLS, found
    assert found["total"] == len(NOTES_TOOLS), found


def test_load_tool(run):
    tool = ok(run(call("load_tool", {"name": "get_order"})))
    assert tool["name"] == "get_order"
    assert isinstance(tool["description"], str) and tool["description"]
    assert tool["inputSchema"]["type"] == "object"
    assert "id" in tool["inputSchema"]["properties"]
    assert tool["inputSchema"]["required"] == ["id"]
    assert VERSION.fullmatch(tool["version"]), tool["version"]


def test_invoke_pinned_to_the_loaded_version(run):
    async def load_then_invoke(client):
        loaded = ok(await client.call_tool("load_tool", {"name": "get_order"}))
        return ok(
            await client.call_tool(
                "invoke_tool",
                {"name": "get_order", "arguments": {"id": 1}, "version": loaded["version"]},
            )
        )

    answer = run(load_then_invoke)
    assert answer["status"] == 200, answer
    assert answer["body"]["id"] == 1, answer


def test_invoke_pinned_to_a_stale_version_is_refused(run):
    async def invoke_stale(client):
        loaded = ok(await client.call_tool("load_tool", {"name": "cancel_order"}))
        current = loaded["version"]
        # A version this replica does not hold: what an agent that loaded the tool
        # before its revision was raised would send back.
        stale = current[:-1] + ("0" if current[-1] != "0" else "1")
        refused = await client.call_tool(
            "invoke_tool", {"name": "cancel_order", "arguments": {"id": 3}, "version": stale}
        )
        after = ok(await client.call_tool("invoke_tool", {"name": "get_order", "arguments": {"id": 3}}))
        return refused, after

    refused, after = run(invoke_stale)
    body = failed(refused, "tool_changed")
    assert body["message"] == TOOL_CHANGED_MESSAGE, body
    # Nothing was dispatched: order 3 was not cancelled.
    assert after["status"] == 200 and after["body"]["status"] == "open", after


def test_load_unknown_tool_is_unknown_tool(run):
    failed(run(call("load_tool", {"name": "nope"})), "unknown_tool")


def test_unknown_mcp_tool_is_a_protocol_error(run):
    # A JSON-RPC error response raises mcp.MCPError from call_tool (an isError result would be
    # returned instead). Catch it inside the client context: escaping `async with Client(...)`
    # it arrives wrapped in an ExceptionGroup from the SDK's task group.
    async def call_unknown(client):
        try:
            result = await client.call_tool("not_a_tool", {})
        except MCPError as error:
            return error
        return result

    error = run(call_unknown)
    assert isinstance(error, MCPError), f"tools/call of an unknown tool returned a result: {error}"
    assert error.code == -32602, (error.code, error.message)
