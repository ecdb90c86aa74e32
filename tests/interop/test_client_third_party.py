"""Interop: `sezzlee client` (the binary SEZZLEE_BIN names) against MCP servers nobody
here wrote — the official Python SDK's own server (mcp==2.3.0, MCPServer)
and FastMCP (fastmcp==4.1.6, FastMCP.from_openapi) — over Streamable HTTP.

    SEZZLEE_BIN=target/release/sezzlee pytest -q tests/interop/test_client_third_party.py

Each server (tests/interop/servers/) is started on a free loopback port by a
module fixture; every test runs the client as a subprocess and checks its
output and exit code (0 success, 1 tool failure, 2 protocol error).

What the servers really do, read from their source, and asserted as such:
- MCPServer answers a call of an unknown tool with an isError result
  ("Unknown tool: NAME", mcpserver/server.py), not a JSON-RPC error, so the
  client reports it as a tool failure (exit 1); so does FastMCP.
- mcp 2.3.0 serves 2026-07-28 in stateless *and* stateful mode (it routes on
  the MCP-Protocol-Version header first), so the client stays modern there
  unless told `--era legacy`; a 2025-only server is emulated by
  servers/sdk_server.py --legacy-only (400 + -32600 for a modern version,
  as mcp 1.x answers) to exercise the automatic fallback.
- FastMCP 4.1.6 registers no subscriptions/listen handler (its LowLevelServer
  passes none to the SDK), so listen is answered 404 + -32601 and the client
  exits 2; its change notifications reach only legacy sessions' GET streams,
  which this client does not open.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
BIN = os.environ.get("SEZZLEE_BIN")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(script: str, *args: str):
    """Start servers/SCRIPT on a free port; return (url, process) once it accepts."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / script), "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{script} exited {process.returncode}: {process.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}/mcp", process
        except OSError:
            time.sleep(0.1)
    process.kill()
    pytest.fail(f"{script} did not listen on {port} within 60 s")


def stop(process) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def binary():
    if not BIN:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("SEZZLEE_BIN is not set")
    return BIN


def server_fixture(script: str, *args: str):
    @pytest.fixture(scope="module")
    def fixture():
        url, process = start(script, *args)
        yield url
        stop(process)

    return fixture


sdk_stateless = server_fixture("sdk_server.py", "--mode", "stateless")
sdk_stateful = server_fixture("sdk_server.py", "--mode", "stateful")
sdk_legacy_only = server_fixture("sdk_server.py", "--mode", "stateful", "--legacy-only")
fastmcp = server_fixture("fastmcp_server.py", "--page-size", "2")


def client(binary, url, *args, timeout=60):
    """Run `sezzlee client URL ARGS…`; return the CompletedProcess."""
    return subprocess.run(
        [binary, "client", url, *args], capture_output=True, text=True, timeout=timeout
    )


def as_json(done):
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"stdout is not JSON (exit {done.returncode}): {done.stdout!r} {done.stderr!r}")


def ok(done):
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return done


def post(url, body, headers):
    """A raw POST; returns (status, body text)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


# ------------------------------------------------------------ official SDK, stateless


def test_sdk_discover_settles_on_the_modern_era(binary, sdk_stateless):
    found = as_json(ok(client(binary, sdk_stateless, "--json", "discover")))
    assert found["era"] == "modern"
    assert found["protocolVersion"] == "2026-07-28"
    assert found["serverInfo"]["name"] == "interop-sdk"
    assert found["sessionId"] is None
    assert "2026-07-28" in found["supportedVersions"]


def test_sdk_tools_are_listed_and_called(binary, sdk_stateless):
    listed = as_json(ok(client(binary, sdk_stateless, "--json", "tools")))
    names = {tool["name"] for tool in listed["tools"]}
    assert {"add", "fail", "echo_header", "add_tool"} <= names
    add = next(tool for tool in listed["tools"] if tool["name"] == "add")
    assert add["outputSchema"]["properties"]["result"]["type"] == "integer"

    done = ok(client(binary, sdk_stateless, "--json", "call", "add", '{"a": 2, "b": 3}'))
    result = as_json(done)
    assert result.get("isError") in (None, False)
    assert result["structuredContent"] == {"result": 5}
    assert "warning" not in done.stderr
    human = ok(client(binary, sdk_stateless, "call", "add", '{"a": 20, "b": 22}'))
    assert human.stdout.strip() == "42"


def test_sdk_error_split(binary, sdk_stateless):
    # A tool that raises: a result with isError (exit 1), content carried.
    raised = client(binary, sdk_stateless, "--json", "call", "fail")
    assert raised.returncode == 1, (raised.stdout, raised.stderr)
    result = as_json(raised)
    assert result["isError"] is True
    assert "fail" in result["content"][0]["text"]
    # An unknown tool: MCPServer also answers with an isError result.
    unknown = client(binary, sdk_stateless, "--json", "call", "no_such_tool")
    assert unknown.returncode == 1, (unknown.stdout, unknown.stderr)
    assert as_json(unknown)["content"][0]["text"] == "Unknown tool: no_such_tool"
    # Arguments the tool's schema refuses: a tool failure as well.
    invalid = client(binary, sdk_stateless, "call", "add", '{"a": "x"}')
    assert invalid.returncode == 1
    # A URL that is not an MCP endpoint: a protocol error (exit 2).
    nowhere = client(binary, sdk_stateless.replace("/mcp", "/nowhere"), "--json", "tools")
    assert nowhere.returncode == 2, (nowhere.stdout, nowhere.stderr)
    assert as_json(nowhere)["error"]["httpStatus"] == 404


def test_sdk_checks_mirrored_headers_and_accepts_the_base64_sentinel(binary, sdk_stateless):
    # echo_header's region carries x-mcp-header: Region. The first call does
    # not know the schema; the SDK refuses it with -32020, the client lists
    # the tools and retries with Mcp-Param-Region (Base64 for non-ASCII).
    done = ok(client(binary, sdk_stateless, "--json", "call", "echo_header", '{"region": "Zürich"}'))
    echoed = json.loads(as_json(done)["content"][0]["text"])
    assert echoed == {"region": "Zürich", "header": "=?base64?WsO8cmljaA==?="}
    done = ok(client(binary, sdk_stateless, "--json", "call", "echo_header", '{"region": "eu-west1"}'))
    assert json.loads(as_json(done)["content"][0]["text"])["header"] == "eu-west1"


def test_sdk_listen_hears_a_tool_added_on_the_server(binary, sdk_stateless):
    listener = subprocess.Popen(
        [binary, "client", sdk_stateless, "--json", "listen", "--count", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ack = json.loads(listener.stdout.readline())
        assert ack["event"] == "acknowledged"
        assert ack["honoured"] == {"toolsListChanged": True}
        assert ack["notHonoured"] == []
        ok(client(binary, sdk_stateless, "call", "add_tool", '{"name": "added_later"}'))
        out, err = listener.communicate(timeout=30)
    finally:
        if listener.poll() is None:
            listener.kill()
    assert listener.returncode == 0, err
    event = json.loads(out.splitlines()[0])
    assert event["method"] == "notifications/tools/list_changed"
    assert event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == ack["subscriptionId"]
    names = {tool["name"] for tool in as_json(ok(client(binary, sdk_stateless, "--json", "tools")))["tools"]}
    assert "added_later" in names


# ------------------------------------------------------------ official SDK, stateful


def test_sdk_stateful_legacy_session_is_carried_and_ended(binary, sdk_stateful):
    tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    # The server really requires its session on the legacy path.
    status, _ = post(sdk_stateful, tools_list, {"mcp-protocol-version": "2025-11-25"})
    assert status == 400
    found = as_json(ok(client(binary, sdk_stateful, "--json", "--era", "legacy", "discover")))
    assert found["era"] == "legacy"
    assert found["protocolVersion"] == "2025-11-25"
    session = found["sessionId"]
    assert session
    # The client ended it with DELETE on exit: the server no longer knows it.
    status, _ = post(
        sdk_stateful, tools_list, {"mcp-protocol-version": "2025-11-25", "mcp-session-id": session}
    )
    assert status == 404
    # Calls in the legacy era go through on a session.
    assert ok(client(binary, sdk_stateful, "--era", "legacy", "call", "add", '{"a": 1, "b": 2}')).stdout.strip() == "3"
    failed = client(binary, sdk_stateful, "--era", "legacy", "call", "fail")
    assert failed.returncode == 1
    # listen needs 2026-07-28: refused by the client before any request.
    refused = client(binary, sdk_stateful, "--json", "--era", "legacy", "listen")
    assert refused.returncode == 2
    assert as_json(refused)["error"]["kind"] == "unsupported"


def test_sdk_stateful_server_still_serves_the_modern_era(binary, sdk_stateful):
    found = as_json(ok(client(binary, sdk_stateful, "--json", "discover")))
    assert found["era"] == "modern"
    assert found["sessionId"] is None


def test_a_legacy_only_server_gets_the_initialize_fallback(binary, sdk_legacy_only):
    found = as_json(ok(client(binary, sdk_legacy_only, "--json", "discover")))
    assert found["era"] == "legacy"
    assert found["protocolVersion"] == "2025-11-25"
    assert found["sessionId"]
    assert ok(client(binary, sdk_legacy_only, "call", "add", '{"a": 4, "b": 5}')).stdout.strip() == "9"
    names = {tool["name"] for tool in as_json(ok(client(binary, sdk_legacy_only, "--json", "tools")))["tools"]}
    assert {"add", "fail"} <= names
    # Forcing the modern era on it is a protocol error, not a fallback.
    forced = client(binary, sdk_legacy_only, "--json", "--era", "modern", "tools")
    assert forced.returncode == 2
    assert as_json(forced)["error"]["kind"] == "unsupported"


# ------------------------------------------------------------ FastMCP from_openapi


def test_fastmcp_lists_every_page(binary, fastmcp):
    listed = as_json(ok(client(binary, fastmcp, "--json", "tools")))
    names = [tool["name"] for tool in listed["tools"]]
    assert sorted(names) == ["create_item", "delete_item", "get_item", "get_price", "health", "list_items"]
    assert listed["pages"] == 3, "six tools at two per page"
    # One tools/list answer is one page: the server really paginates.
    status, text = post(
        fastmcp,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
            },
        },
        {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"},
    )
    assert status == 200
    page = json.loads(text)["result"]
    assert len(page["tools"]) == 2 and page["nextCursor"]


def test_fastmcp_calls_reach_the_api(binary, fastmcp):
    found = as_json(ok(client(binary, fastmcp, "--json", "discover")))
    assert found["era"] == "modern"
    assert found["serverInfo"]["name"] == "interop-fastmcp"
    done = ok(client(binary, fastmcp, "--json", "call", "get_item", '{"item_id": 1}'))
    assert as_json(done)["structuredContent"] == {"id": 1, "name": "keyboard", "price": 70}
    assert "warning" not in done.stderr
    created = ok(client(binary, fastmcp, "--json", "call", "create_item", '{"name": "pen", "price": 3}'))
    assert as_json(created)["structuredContent"]["name"] == "pen"


def test_fastmcp_output_is_checked_against_the_output_schema(binary, fastmcp):
    # get_price declares {"cents": integer}; the API answers a string and
    # FastMCP passes it on: the client still succeeds, with a warning.
    done = ok(client(binary, fastmcp, "--json", "call", "get_price", '{"item_id": 1}'))
    assert as_json(done)["structuredContent"] == {"cents": "7000"}
    assert "does not match its outputSchema" in done.stderr, done.stderr
    # A matching answer draws no warning.
    fine = ok(client(binary, fastmcp, "call", "get_item", '{"item_id": 2}'))
    assert "warning" not in fine.stderr


def test_fastmcp_error_split(binary, fastmcp):
    # The API answers 404: FastMCP turns it into an isError result.
    missing = client(binary, fastmcp, "--json", "call", "get_item", '{"item_id": 999}')
    assert missing.returncode == 1, (missing.stdout, missing.stderr)
    assert "404" in as_json(missing)["content"][0]["text"]
    # An unknown tool: an isError result too.
    unknown = client(binary, fastmcp, "--json", "call", "no_such_tool")
    assert unknown.returncode == 1
    assert "no_such_tool" in as_json(unknown)["content"][0]["text"]


def test_fastmcp_has_no_listen(binary, fastmcp):
    refused = client(binary, fastmcp, "--json", "listen")
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    error = as_json(refused)["error"]
    assert error["code"] == -32601
    assert error["httpStatus"] == 404


def test_fastmcp_legacy_era_with_a_session(binary, fastmcp):
    found = as_json(ok(client(binary, fastmcp, "--json", "--era", "legacy", "discover")))
    assert found["era"] == "legacy"
    assert found["sessionId"]
    listed = as_json(ok(client(binary, fastmcp, "--json", "--era", "legacy", "tools")))
    assert len(listed["tools"]) == 6 and listed["pages"] == 3
