#!/usr/bin/env python3
"""Record a gateway's answers to a fixed set of MCP requests, and compare two recordings.

What it is for
--------------
Proving that a refactoring (e.g. splitting sezzlee into a Cargo workspace)
does not change behaviour: record the answers of the binary built before the
change, record the answers of the binary built after it, and compare the two
files. Both recordings must be byte-identical, request by request.

`record` starts `BINARY serve --catalogs DIR --listen 127.0.0.1:PORT --watch off`
(a free port; the working directory is an empty temporary folder so no stray
sezzlee.toml is read, and SEZZLEE_* variables are removed from its
environment), waits until `GET /readyz` answers 200, sends a fixed,
deterministic list of HTTP requests, one at a time and each on a new
connection, writes one JSON line per request, then stops the server.

Block "demo" (always; DIR defaults to this repository's catalogs/, whose demo
orders backend the gateway serves itself under /demo): server/discover,
tools/list, load_tool of every demo tool, search_tools with varied
query/limit/detail/tags (valid and invalid), invoke_tool end to end on the
demo backend (right and wrong version pins, unknown tools, invalid and missing
arguments, backend 404/409), the three tools in the three initialize-era
versions, JSON-RPC and transport errors (unknown methods, bad params,
malformed JSON, batches, missing/unsupported protocol versions, missing or
mismatched Mcp-* headers, content types, Accept, Origin, oversized body),
notifications (202), GET/DELETE/... on /mcp. subscriptions/listen is only
sent with parameters that are refused at once (a stream would never end).

Block "real" (with --real DIR, a folder of real OpenAPI documents): a second
server on that folder; search_tools with many agent-style sentences and
keywords, limits 1..50, both detail modes and tags; load_tool of a
deterministic sample of the tools those searches name; invoke_tool calls that
are refused before any network traffic (stale version pin, arguments of the
wrong kind, arguments the inputSchema refuses). As a guard, that server runs
with HTTP(S)_PROXY pointing at a closed local port, and the script warns if
any invoke_tool answer there came from a dispatch.

The request list is fixed in this file (no randomness). A few requests take a
value from an earlier answer of the same run (the version load_tool returned,
to pin it; in the real block, the tool names and tags the searches returned,
sorted). If a binary answers those differently, the later requests differ too
and `compare` reports them as different.

The demo backend keeps state (orders created, cancelled, purged): the requests
are sent strictly in order, so its answers are the same on every run.

Each line (ASCII JSON): {"n", "block", "label", "request": {"method", "path",
"headers", "body" | "body_b64" | "body_summary"}, "status", "headers",
"body" | "body_b64"}. Request headers are those the script sets (Host and
Content-Length are added on the wire); request bodies over 64 KiB are kept as
{bytes, sha256, prefix}. Response headers are all headers but `date` (wall
clock), sorted by name; response bodies are kept whole.
Masking: one narrow rule, `self_address`, rewrites the server's own address
`127.0.0.1:<its port>` to `127.0.0.1:{PORT}` in response headers and bodies
(the port is chosen per run); `record` prints how often it matched (normally
never). Nothing else is masked.

How to run
----------
    python3 scripts/answers.py record --binary target/release/sezzlee --out before.jsonl \
        [--catalogs catalogs] [--real /tmp/answers-real]
    python3 scripts/answers.py record --binary /path/to/new/sezzlee --out after.jsonl [same options]
    python3 scripts/answers.py compare before.jsonl after.jsonl

`compare` prints the number of requests compared and identical, each
difference (the request and both answers, truncated), and ends with the line
"N identical, M different"; it exits 0 when everything is identical, 1
otherwise. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODERN = "2026-07-28"
LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26"]
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"
INFO_KEY = "io.modelcontextprotocol/clientInfo"
ACCEPT = "application/json, text/event-stream"
STALE_VERSION = "0000000000000000"

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CATALOGS = REPO / "catalogs"

# The demo catalog's tools (catalogs/orders.yaml), sorted; the names found by
# an empty search are added to these, so another --catalogs folder is loaded too.
DEMO_TOOLS = [
    "add_order_note",
    "cancel_order",
    "create_order",
    "get_invoice",
    "get_order",
    "list_open_orders",
    "list_order_notes",
    "list_orders",
    "purge_order",
]

# Response headers never recorded: they vary with the wall clock.
UNRECORDED_HEADERS = {"date"}
# Request bodies longer than this are recorded as a summary (size, sha256, prefix).
MAX_RECORDED_BODY = 65536


def dumps(value) -> str:
    """Compact JSON, as a client would send it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------ server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(port: int, method: str, path: str, headers=(), body: bytes | None = None, timeout=120):
    """One HTTP request on a new connection: (status, [(name, value)], body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        try:
            conn.endheaders(body)
        except (BrokenPipeError, ConnectionResetError):
            # The server may answer (e.g. 413) before reading the whole body.
            pass
        response = conn.getresponse()
        data = response.read()
        return response.status, response.getheaders(), data
    finally:
        conn.close()


class Server:
    """`BINARY serve` on a free port, stopped on exit."""

    def __init__(self, binary: Path, catalogs: Path, extra_env: dict[str, str] | None = None):
        self.binary = binary
        self.catalogs = catalogs
        self.extra_env = extra_env or {}
        self.proc = None
        self.port = None
        self.workdir = None

    def __enter__(self):
        self.workdir = tempfile.mkdtemp(prefix="answers-server-")
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("SEZZLEE_") and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
        }
        env.update(self.extra_env)
        for attempt in range(5):
            self.port = free_port()
            log = open(os.path.join(self.workdir, f"server-{attempt}.log"), "wb")
            self.proc = subprocess.Popen(
                [
                    str(self.binary), "serve",
                    "--catalogs", str(self.catalogs),
                    "--listen", f"127.0.0.1:{self.port}",
                    "--watch", "off",
                ],
                cwd=self.workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
            log.close()
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    status, _, _ = ask(self.port, "GET", "/readyz", timeout=5)
                    if status == 200:
                        return self
                except OSError:
                    pass
                time.sleep(0.1)
            tail = Path(self.workdir, f"server-{attempt}.log").read_text(errors="replace")[-3000:]
            self.stop()
            if "in use" not in tail.lower():
                raise SystemExit(f"the server did not become ready on port {self.port}:\n{tail}")
        raise SystemExit("could not start the server on a free port")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __exit__(self, *exc):
        self.stop()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return False


# ------------------------------------------------------------------ recorder


class Masks:
    """The masking rules and how often each matched."""

    def __init__(self):
        self.counts = {"self_address": 0}

    def apply(self, text: str, port: int) -> str:
        own = f"127.0.0.1:{port}"
        if own in text:
            self.counts["self_address"] += text.count(own)
            text = text.replace(own, "127.0.0.1:{PORT}")
        return text


class Recorder:
    """Sends requests to one server and keeps one record per request."""

    def __init__(self, block: str, port: int, records: list, masks: Masks):
        self.block = block
        self.port = port
        self.records = records
        self.masks = masks
        self.next_id = 1

    def new_id(self) -> int:
        value = self.next_id
        self.next_id += 1
        return value

    # -- raw

    def send(self, label: str, method: str, path: str, headers: list, body: bytes | str | None = None):
        """Sends one request, records it, returns the record."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        status, response_headers, data = ask(self.port, method, path, headers, body)
        request = {"method": method, "path": path, "headers": [[n, v if isinstance(v, str) else v.decode("latin-1")] for n, v in headers]}
        if body is not None:
            if len(body) > MAX_RECORDED_BODY:
                request["body_summary"] = {
                    "bytes": len(body),
                    "sha256": hashlib.sha256(body).hexdigest(),
                    "prefix": body[:200].decode("utf-8", errors="replace"),
                }
            else:
                try:
                    request["body"] = body.decode("utf-8")
                except UnicodeDecodeError:
                    request["body_b64"] = base64.b64encode(body).decode()
        kept = sorted(
            ([n.lower(), self.masks.apply(v, self.port)] for n, v in response_headers if n.lower() not in UNRECORDED_HEADERS),
            key=lambda pair: pair[0],
        )
        record = {
            "n": len(self.records),
            "block": self.block,
            "label": label,
            "request": request,
            "status": status,
            "headers": kept,
        }
        try:
            record["body"] = self.masks.apply(data.decode("utf-8"), self.port)
        except UnicodeDecodeError:
            record["body_b64"] = base64.b64encode(data).decode()
        self.records.append(record)
        return record

    def post(self, label: str, body: bytes | str, headers: list, content_type=True, accept=True):
        """POST /mcp with the JSON content type and the Streamable HTTP Accept (unless turned off)."""
        base = []
        if content_type:
            base.append(("Content-Type", "application/json"))
        if accept:
            base.append(("Accept", ACCEPT))
        return self.send(label, "POST", "/mcp", base + list(headers), body)

    # -- modern era

    @staticmethod
    def modern_body(method: str, params: dict | None, id_) -> dict:
        params = dict(params or {})
        meta = dict(params.get("_meta") or {})
        meta.setdefault(VERSION_KEY, MODERN)
        meta.setdefault(CAPS_KEY, {})
        meta.setdefault(INFO_KEY, {"name": "answers-py", "version": "0.0.0"})
        params["_meta"] = meta
        body = {"jsonrpc": "2.0"}
        if id_ is not None:
            body["id"] = id_
        body["method"] = method
        body["params"] = params
        return body

    @staticmethod
    def modern_headers(body: dict) -> list:
        version = body.get("params", {}).get("_meta", {}).get(VERSION_KEY, MODERN)
        headers = [("MCP-Protocol-Version", version if isinstance(version, str) else MODERN), ("Mcp-Method", body.get("method", ""))]
        if body.get("method") in ("tools/call", "prompts/get"):
            name = body.get("params", {}).get("name", "")
            headers.append(("Mcp-Name", name if isinstance(name, str) else ""))
        return headers

    def modern(self, label: str, method: str, params: dict | None = None, id_="auto", edit=None, notification=False):
        """A well-formed 2026-07-28 request, optionally edited by edit(body, headers)."""
        if id_ == "auto":
            id_ = None if notification else self.new_id()
        body = self.modern_body(method, params, id_)
        headers = self.modern_headers(body)
        if notification:
            headers = [h for h in headers if h[0] == "MCP-Protocol-Version"]
        if edit is not None:
            edit(body, headers)
        return self.post(label, dumps(body), headers)

    def tool(self, label: str, name: str, arguments, era: str = MODERN, extra_headers=()):
        """tools/call of one of the three tools in `era`."""
        params = {"name": name, "arguments": arguments}
        if era == MODERN:
            if extra_headers:
                return self.modern(label, "tools/call", params, edit=lambda b, h: h.extend(extra_headers))
            return self.modern(label, "tools/call", params)
        return self.legacy(label, era, "tools/call", params, extra_headers=extra_headers)

    # -- legacy era

    def legacy(self, label: str, version: str | None, method: str, params=None, id_="auto", extra_headers=()):
        if id_ == "auto":
            id_ = self.new_id()
        body = {"jsonrpc": "2.0"}
        if id_ is not None:
            body["id"] = id_
        body["method"] = method
        if params is not None:
            body["params"] = params
        headers = [] if version in (None, "2025-03-26") else [("MCP-Protocol-Version", version)]
        return self.post(label, dumps(body), headers + list(extra_headers))


def tool_payload(record):
    """(payload, is_error) of a tools/call answer, or (None, None)."""
    try:
        body = json.loads(record["body"])
        result = body["result"]
        return json.loads(result["content"][0]["text"]), bool(result.get("isError"))
    except (KeyError, ValueError, TypeError, IndexError):
        return None, None


def initialize_params(version):
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "answers-py", "version": "0.0.0"}}


# ------------------------------------------------------------------ demo block

DEMO_QUERIES = [
    "",
    "order",
    "orders",
    "cancel order",
    "create order",
    "invoice",
    "purchase",
    "buy",
    "place order",
    "notes",
    "note",
    "add a note to an order",
    "I need to cancel the order a customer placed yesterday",
    "show me the invoice for order 3",
    "list all open orders",
    "which orders are still open?",
    "refund",
    "delete order permanently",
    "purge",
    "get order by id",
    "fetch one order",
    "status shipped",
    "limit",
    "orderId",
    "Facturación",
    "facturacion",
    "billing",
    "ORDER NOTES",
    "zzzz qqqq",
    "keyboard",
    "  spaces   around  ",
    "create_order",
    "GET /orders/{id}",
    "/invoices",
    "café ☕ 注文",
    "o",
    "list order",
    "order invoice",
    "cancel",
    "what tools can I use to manage customer purchases and their billing documents",
]
DEMO_LIMITS = [None, 1, 2, 3, 5, 7, 10, 20, 50, 0, -3, 500, 2.7, 49.9]
DEMO_DETAILS = [None, "card", "schema", "Schema", "", 3, "full"]
DEMO_TAGS = [
    None,
    [],
    ["orders"],
    ["ORDER NOTES"],
    ["facturacion"],
    ["Facturación"],
    ["orders", "BILLING"],
    ["billing"],
    ["admin"],
    ["Order"],
    ["notes"],
    ["nobody carries this"],
]


def search_args(query, limit, detail, tags):
    args = {}
    if query is not None:
        args["query"] = query
    if limit is not None:
        args["limit"] = limit
    if detail is not None:
        args["detail"] = detail
    if tags is not None:
        args["tags"] = tags
    return args


def demo_block(r: Recorder):
    # -- modern basics
    r.modern("discover", "server/discover")
    r.modern("tools/list", "tools/list")
    r.modern("tools/list, params absent", "tools/list", None)
    for id_ in ["req-1", "", 0, -7, 9007199254740993, 1.5]:
        r.modern(f"tools/list, id {id_!r}", "tools/list", id_=id_)
    r.modern("tools/list, unknown _meta keys kept", "tools/list", {"_meta": {"progressToken": 5, "x.example/other": [1]}})
    r.modern("tools/list, a session id is ignored", "tools/list", edit=lambda b, h: h.append(("Mcp-Session-Id", "abc")))
    r.modern("discover, extra params", "server/discover", {"cursor": "x", "extra": True})

    # -- the demo catalog's names (empty search), sorted, plus the known demo tools
    listing = r.tool("search_tools, everything (names for load_tool)", "search_tools", {"limit": 50})
    payload, _ = tool_payload(listing)
    found = [res["name"] for res in (payload or {}).get("results", []) if isinstance(res, dict) and "name" in res]
    names = sorted(set(found) | set(DEMO_TOOLS))

    # -- load_tool: every tool, every era; versions kept for the pins
    versions = {}
    for name in names:
        rec = r.tool(f"load_tool {name}", "load_tool", {"name": name})
        p, err = tool_payload(rec)
        if p and not err and isinstance(p.get("version"), str):
            versions[name] = p["version"]
    for era in LEGACY:
        for name in names:
            r.tool(f"load_tool {name} @{era}", "load_tool", {"name": name}, era=era)
    for label, args in [
        ("unknown name", {"name": "no_such_tool"}),
        ("wrong case", {"name": "GET_ORDER"}),
        ("a gateway tool's name", {"name": "search_tools"}),
        ("empty name", {"name": ""}),
        ("operationId instead of name", {"name": "getOrder"}),
        ("name is a number", {"name": 5}),
        ("name is null", {"name": None}),
        ("name is a list", {"name": ["get_order"]}),
        ("name missing", {}),
        ("extra argument", {"name": "get_order", "detail": "schema"}),
    ]:
        r.tool(f"load_tool, {label}", "load_tool", args)
        r.tool(f"load_tool, {label} @2025-06-18", "load_tool", args, era="2025-06-18")

    # -- search_tools: every query once with defaults, then a fixed walk through
    # query x limit x detail x tags (strides coprime with the list lengths)
    for q in DEMO_QUERIES:
        r.tool(f"search {q!r}", "search_tools", {"query": q})
    for i in range(160):
        q = DEMO_QUERIES[(i * 7) % len(DEMO_QUERIES)]
        limit = DEMO_LIMITS[(i * 3) % len(DEMO_LIMITS)]
        detail = DEMO_DETAILS[(i * 5) % len(DEMO_DETAILS)]
        tags = DEMO_TAGS[(i * 11) % len(DEMO_TAGS)]
        if detail == "schema" and limit in (None, 20, 50, 500, 49.9):
            limit = 3  # a schema page of everything is covered once below
        args = search_args(q, limit, detail, tags)
        r.tool(f"search walk {i}", "search_tools", args)
    r.tool("search, schema detail of everything", "search_tools", {"detail": "schema", "limit": 50})
    for tags in DEMO_TAGS:
        r.tool(f"search tags {tags!r}, limit 50", "search_tools", search_args(None, 50, None, tags))
    # the same questions again: answered from the search cache the third time
    for rep in range(3):
        for q in ["list order", "cancel order", "order invoice"]:
            for limit in (3, 20):
                r.tool(f"search {q!r} limit {limit} (repeat {rep})", "search_tools", {"query": q, "limit": limit})
    for label, args in [
        ("query is a number", {"query": 5}),
        ("query is a list", {"query": ["order"]}),
        ("limit is a string", {"limit": "5"}),
        ("limit is true", {"limit": True}),
        ("limit is an object", {"limit": {}}),
        ("tags is a string", {"tags": "x"}),
        ("tags holds a number", {"tags": [1]}),
        ("tags holds null", {"tags": ["orders", None]}),
        ("all null", {"query": None, "limit": None, "detail": None, "tags": None}),
        ("unknown argument", {"query": "order", "page": 2}),
        ("huge limit", {"limit": 1e300}),
        ("negative fraction", {"limit": -0.5}),
    ]:
        r.tool(f"search, {label}", "search_tools", args)
    for era in LEGACY:
        for q, extra in [("invoice", {}), ("cancel order", {"limit": 2}), ("", {"tags": ["orders"], "limit": 50}),
                         ("notes", {"detail": "schema", "limit": 2}), ("x", {"limit": "2"})]:
            r.tool(f"search {q!r} {extra} @{era}", "search_tools", {"query": q, **extra}, era=era)

    # -- invoke_tool on the demo backend (sequential: the backend keeps state)
    def v(name):
        return versions.get(name, STALE_VERSION)

    inv = lambda label, args, era=MODERN, extra=(): r.tool(f"invoke {label}", "invoke_tool", args, era=era, extra_headers=extra)
    inv("list_orders", {"name": "list_orders", "arguments": {}})
    inv("list_orders pinned", {"name": "list_orders", "arguments": {}, "version": v("list_orders")})
    inv("list_orders status open", {"name": "list_orders", "arguments": {"status": "open"}})
    inv("list_orders status shipped limit 1", {"name": "list_orders", "arguments": {"status": "shipped", "limit": 1}})
    inv("list_orders limit 1", {"name": "list_orders", "arguments": {"limit": 1}})
    inv("list_orders bad enum", {"name": "list_orders", "arguments": {"status": "lost"}})
    inv("list_orders limit 0", {"name": "list_orders", "arguments": {"limit": 0}})
    inv("list_orders limit 101", {"name": "list_orders", "arguments": {"limit": 101}})
    inv("list_orders limit string", {"name": "list_orders", "arguments": {"limit": "2"}})
    inv("list_orders unknown argument", {"name": "list_orders", "arguments": {"sort": "asc"}})
    inv("list_orders several problems", {"name": "list_orders", "arguments": {"status": 3, "limit": -1, "x": 1, "y/z~": 2}})
    inv("list_open_orders", {"name": "list_open_orders", "arguments": {}, "version": v("list_open_orders")})
    inv("list_open_orders fixed argument sent", {"name": "list_open_orders", "arguments": {"status": "shipped"}})
    for order_id in (1, 2, 3, 99):
        inv(f"get_order {order_id}", {"name": "get_order", "arguments": {"id": order_id}, "version": v("get_order")})
    inv("get_order missing id", {"name": "get_order", "arguments": {}})
    inv("get_order arguments absent", {"name": "get_order"})
    inv("get_order arguments null", {"name": "get_order", "arguments": None})
    inv("get_order id string", {"name": "get_order", "arguments": {"id": "1"}})
    inv("get_order id float", {"name": "get_order", "arguments": {"id": 1.5}})
    inv("get_order extra argument", {"name": "get_order", "arguments": {"id": 1, "verbose": True}})
    inv("get_order arguments as JSON text", {"name": "get_order", "arguments": "{\"id\": 2}"})
    inv("get_order arguments as other text", {"name": "get_order", "arguments": "id=2"})
    inv("get_order arguments a number", {"name": "get_order", "arguments": 5})
    inv("get_order arguments a list", {"name": "get_order", "arguments": [1]})
    inv("get_order arguments true", {"name": "get_order", "arguments": True})
    inv("get_order with a bearer token", {"name": "get_order", "arguments": {"id": 1}}, extra=[("Authorization", "Bearer opaque-token")])
    inv("create_order", {"name": "create_order", "arguments": {"item": "desk lamp", "quantity": 2}, "version": v("create_order")})
    inv("create_order with coupon", {"name": "create_order", "arguments": {"item": "standing desk", "quantity": 1, "coupon": "SPRING"}})
    inv("create_order coupon null", {"name": "create_order", "arguments": {"item": "chair", "quantity": 4, "coupon": None}})
    inv("create_order missing quantity", {"name": "create_order", "arguments": {"item": "desk lamp"}})
    inv("create_order quantity 0", {"name": "create_order", "arguments": {"item": "desk lamp", "quantity": 0}})
    inv("create_order read-only id", {"name": "create_order", "arguments": {"item": "desk lamp", "quantity": 1, "id": 77}})
    inv("create_order read-only status", {"name": "create_order", "arguments": {"item": "desk lamp", "quantity": 1, "status": "shipped"}})
    inv("create_order nothing", {"name": "create_order", "arguments": {}})
    inv("create_order unicode item", {"name": "create_order", "arguments": {"item": "clavier \u00e9\u00e8 \u2028 \U0001F600 \"quoted\"", "quantity": 3}})
    inv("get_order 4 (created)", {"name": "get_order", "arguments": {"id": 4}})
    inv("list_orders after creating", {"name": "list_orders", "arguments": {"limit": 100}})
    inv("cancel_order 1 pinned", {"name": "cancel_order", "arguments": {"id": 1}, "version": v("cancel_order")})
    inv("cancel_order 1 again", {"name": "cancel_order", "arguments": {"id": 1}})
    inv("cancel_order 2 shipped", {"name": "cancel_order", "arguments": {"id": 2}, "version": v("cancel_order")})
    inv("cancel_order 99", {"name": "cancel_order", "arguments": {"id": 99}})
    inv("cancel_order stale pin", {"name": "cancel_order", "arguments": {"id": 3}, "version": STALE_VERSION})
    inv("cancel_order another tool's version", {"name": "cancel_order", "arguments": {"id": 3}, "version": v("get_order")})
    inv("cancel_order stale pin, invalid arguments", {"name": "cancel_order", "arguments": {"id": "x"}, "version": STALE_VERSION})
    inv("cancel_order stale pin, arguments a number", {"name": "cancel_order", "arguments": 7, "version": STALE_VERSION})
    inv("cancel_order version a number", {"name": "cancel_order", "arguments": {"id": 3}, "version": 2})
    inv("cancel_order version null", {"name": "cancel_order", "arguments": {"id": 3}, "version": None})
    inv("cancel_order version empty", {"name": "cancel_order", "arguments": {"id": 3}, "version": ""})
    inv("cancel_order version upper case", {"name": "cancel_order", "arguments": {"id": 3}, "version": v("cancel_order").upper()})
    inv("add_order_note", {"name": "add_order_note", "arguments": {"id": 1, "text": "left at the door"}, "version": v("add_order_note")})
    inv("add_order_note second", {"name": "add_order_note", "arguments": {"id": 1, "text": "second note"}})
    inv("add_order_note missing text", {"name": "add_order_note", "arguments": {"id": 1}})
    inv("add_order_note order 99", {"name": "add_order_note", "arguments": {"id": 99, "text": "x"}})
    inv("list_order_notes 1", {"name": "list_order_notes", "arguments": {"id": 1}, "version": v("list_order_notes")})
    inv("list_order_notes 2", {"name": "list_order_notes", "arguments": {"id": 2}})
    inv("get_invoice 1", {"name": "get_invoice", "arguments": {"orderId": 1}, "version": v("get_invoice")})
    inv("get_invoice 3", {"name": "get_invoice", "arguments": {"orderId": 3}})
    inv("get_invoice 99", {"name": "get_invoice", "arguments": {"orderId": 99}})
    inv("get_invoice id instead of orderId", {"name": "get_invoice", "arguments": {"id": 1}})
    inv("purge_order 3", {"name": "purge_order", "arguments": {"id": 3}, "version": v("purge_order")})
    inv("purge_order 3 again", {"name": "purge_order", "arguments": {"id": 3}})
    inv("get_order 3 after purge", {"name": "get_order", "arguments": {"id": 3}})
    inv("unknown tool", {"name": "no_such_operation", "arguments": {}})
    inv("unknown tool, pinned and invalid arguments", {"name": "no_such_operation", "arguments": 5, "version": STALE_VERSION})
    inv("a gateway tool by name", {"name": "search_tools", "arguments": {}})
    inv("name missing", {"arguments": {"id": 1}})
    inv("name null", {"name": None})
    inv("name a number", {"name": 5, "arguments": {}})
    inv("nothing", {})
    # every tool: a stale pin is refused before anything else is checked
    for name in names:
        inv(f"{name} stale pin", {"name": name, "arguments": {}, "version": STALE_VERSION})
    # the legacy eras reach the same backend
    for era in LEGACY:
        inv(f"get_order 1 @{era}", {"name": "get_order", "arguments": {"id": 1}, "version": v("get_order")}, era=era)
        inv(f"get_invoice 2 @{era}", {"name": "get_invoice", "arguments": {"orderId": 2}}, era=era)
        inv(f"create_order @{era}", {"name": "create_order", "arguments": {"item": f"item for {era}", "quantity": 1}}, era=era)
        inv(f"cancel_order stale pin @{era}", {"name": "cancel_order", "arguments": {"id": 1}, "version": STALE_VERSION}, era=era)
        inv(f"get_order missing id @{era}", {"name": "get_order", "arguments": {}}, era=era)
        inv(f"unknown tool @{era}", {"name": "nope", "arguments": {}}, era=era)
    inv("list_orders at the end", {"name": "list_orders", "arguments": {"limit": 100}})

    # -- tools/call protocol errors (only the three tools exist)
    for era in [MODERN, "2025-06-18"]:
        for label, params in [
            ("a catalog tool called directly", {"name": "get_order", "arguments": {"id": 1}}),
            ("unknown tool", {"name": "nope", "arguments": {}}),
            ("empty name", {"name": "", "arguments": {}}),
            ("arguments a list", {"name": "search_tools", "arguments": [1]}),
            ("arguments a string", {"name": "search_tools", "arguments": "{}"}),
            ("arguments absent", {"name": "search_tools"}),
        ]:
            if era == MODERN:
                r.modern(f"tools/call, {label}", "tools/call", params)
            else:
                r.legacy(f"tools/call, {label} @{era}", era, "tools/call", params)
    r.modern("tools/call, name a number", "tools/call", {"name": 5, "arguments": {}},
             edit=lambda b, h: None)
    r.legacy("tools/call, name missing @2025-11-25", "2025-11-25", "tools/call", {"arguments": {}})

    # -- modern: unknown and removed methods
    for method in ["foo/bar", "resources/list", "resources/read", "prompts/list", "prompts/get", "initialize",
                   "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
                   "completion/complete", "tools/List", ""]:
        params = initialize_params(MODERN) if method == "initialize" else ({"name": "x"} if method == "prompts/get" else {"uri": "x://y"} if method == "resources/read" else {})
        r.modern(f"modern method {method!r}", method, params)

    # -- modern: _meta and version problems
    def drop_meta_key(key):
        return lambda b, h: b["params"]["_meta"].pop(key)

    r.modern("no protocol version in _meta (header says modern)", "tools/list", edit=drop_meta_key(VERSION_KEY))
    r.modern("no _meta at all (header says modern)", "tools/list", edit=lambda b, h: b["params"].pop("_meta"))
    r.modern("protocol version a number", "tools/list", edit=lambda b, h: b["params"]["_meta"].__setitem__(VERSION_KEY, 20260728))
    r.modern("no clientCapabilities", "tools/list", edit=drop_meta_key(CAPS_KEY))
    r.modern("clientCapabilities a list", "tools/list", edit=lambda b, h: b["params"]["_meta"].__setitem__(CAPS_KEY, []))
    r.modern("no clientInfo", "tools/list", edit=drop_meta_key(INFO_KEY))

    def with_version(body_version, header_version):
        def edit(b, h):
            b["params"]["_meta"][VERSION_KEY] = body_version
            h[:] = [x for x in h if x[0] != "MCP-Protocol-Version"]
            if header_version is not None:
                h.append(("MCP-Protocol-Version", header_version))
        return edit

    for body_v, header_v in [("1900-01-01", "1900-01-01"), ("2025-11-25", "2025-11-25"), ("2025-03-26", None),
                             ("2026-07-28", "2025-11-25"), ("1900-01-01", "2026-07-28"), ("", ""), ("2099-01-01", None)]:
        r.modern(f"version body {body_v!r} header {header_v!r}", "tools/list", edit=with_version(body_v, header_v))
        r.modern(f"tools/call version body {body_v!r} header {header_v!r}", "tools/call",
                 {"name": "search_tools", "arguments": {"limit": 1}}, edit=with_version(body_v, header_v))

    # -- modern: the Mcp-* headers
    call = {"name": "search_tools", "arguments": {"limit": 1}}

    def without(name):
        return lambda b, h: h.__setitem__(slice(None), [x for x in h if x[0].lower() != name])

    def replace(name, value):
        def edit(b, h):
            h[:] = [x for x in h if x[0].lower() != name]
            h.append((name, value))
        return edit

    def twice(name, value):
        return lambda b, h: h.append((name, value))

    for header in ["mcp-protocol-version", "mcp-method", "mcp-name"]:
        r.modern(f"tools/call without {header}", "tools/call", call, edit=without(header))
    r.modern("tools/list without mcp-method", "tools/list", edit=without("mcp-method"))
    r.modern("tools/list without mcp-protocol-version", "tools/list", edit=without("mcp-protocol-version"))
    for header, value in [("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/list"), ("mcp-name", "load_tool"),
                          ("mcp-name", "SEARCH_TOOLS"), ("mcp-name", ""), ("mcp-method", "TOOLS/CALL"),
                          ("mcp-name", "=?base64?c2VhcmNoX3Rvb2xz?="), ("mcp-name", "=?base64?bG9hZF90b29s?="),
                          ("mcp-name", "=?base64?***?="), ("mcp-name", "=?base64??="), ("mcp-name", " search_tools"),
                          ("mcp-name", "=?base64?/w==?=")]:
        r.modern(f"tools/call {header}: {value!r}", "tools/call", call, edit=replace(header, value))
    r.modern("tools/list mcp-method: tools/call", "tools/list", edit=replace("mcp-method", "tools/call"))
    r.modern("tools/list with an mcp-name", "tools/list", edit=twice("Mcp-Name", "search_tools"))
    r.modern("tools/call mcp-method twice", "tools/call", call, edit=twice("Mcp-Method", "tools/call"))
    r.modern("tools/call mcp-name twice", "tools/call", call, edit=twice("Mcp-Name", "search_tools"))
    r.modern("tools/call protocol version twice", "tools/call", call, edit=twice("MCP-Protocol-Version", MODERN))
    r.modern("tools/call mcp-name not ASCII", "tools/call", call, edit=replace("mcp-name", "caf\u00e9".encode("latin-1")))
    r.modern("tools/call mcp-name with a tab", "tools/call", call, edit=replace("mcp-name", "search\ttools"))
    r.modern("tools/call header names in upper case", "tools/call", call,
             edit=lambda b, h: h.__setitem__(slice(None), [(n.upper(), v) for n, v in h]))

    # -- content type, Accept, Origin
    body = dumps(Recorder.modern_body("tools/list", {}, 900001))
    mh = Recorder.modern_headers(json.loads(body))
    lbody = dumps({"jsonrpc": "2.0", "id": 900002, "method": "tools/list", "params": {}})
    lh = [("MCP-Protocol-Version", "2025-11-25")]
    for label, hb, hh in [("modern", body, mh), ("legacy", lbody, lh)]:
        r.post(f"{label}: no content type", hb, hh, content_type=False)
        r.post(f"{label}: text/plain", hb, [("Content-Type", "text/plain")] + hh, content_type=False)
        r.post(f"{label}: form content type", hb, [("Content-Type", "application/x-www-form-urlencoded")] + hh, content_type=False)
        r.post(f"{label}: json with charset", hb, [("Content-Type", "application/json; charset=utf-8")] + hh, content_type=False)
        r.post(f"{label}: no Accept", hb, hh, accept=False)
        r.post(f"{label}: Accept json only", hb, [("Accept", "application/json")] + hh, accept=False)
        r.post(f"{label}: Accept event-stream only", hb, [("Accept", "text/event-stream")] + hh, accept=False)
        r.post(f"{label}: Accept text/html", hb, [("Accept", "text/html")] + hh, accept=False)
        r.post(f"{label}: Accept */*", hb, [("Accept", "*/*")] + hh, accept=False)
        for origin in ["http://evil.example", "http://localhost:3000", "http://127.0.0.1", "http://localhost",
                       "https://localhost:8443", "null", "http://[::1]:5173", "http://localhost.evil.example"]:
            r.post(f"{label}: Origin {origin}", hb, hh + [("Origin", origin)])

    # -- JSON-RPC framing
    for label, raw in [
        ("truncated JSON", '{"jsonrpc": "2.0", "id": 1, "method": '),
        ("empty body", ""),
        ("whitespace body", "  \n"),
        ("null", "null"),
        ("a number", "123"),
        ("a string", '"tools/list"'),
        ("trailing garbage", '{"jsonrpc":"2.0","id":1,"method":"ping"} x'),
        ("single quotes", "{'jsonrpc': '2.0'}"),
        ("empty batch", "[]"),
        ("jsonrpc 1.0", '{"jsonrpc":"1.0","id":1,"method":"ping"}'),
        ("jsonrpc missing", '{"id":1,"method":"ping"}'),
        ("jsonrpc a number", '{"jsonrpc":2.0,"id":1,"method":"ping"}'),
        ("id null", '{"jsonrpc":"2.0","id":null,"method":"ping"}'),
        ("id an object", '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'),
        ("id true", '{"jsonrpc":"2.0","id":true,"method":"ping"}'),
        ("id 1e3", '{"jsonrpc":"2.0","id":1e3,"method":"ping"}'),
        ("id -0", '{"jsonrpc":"2.0","id":-0,"method":"ping"}'),
        ("id huge", '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}'),
        ("method a number", '{"jsonrpc":"2.0","id":1,"method":7}'),
        ("method missing", '{"jsonrpc":"2.0","id":1}'),
        ("a response", '{"jsonrpc":"2.0","id":1,"result":{}}'),
        ("an error response", '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}'),
        ("params a list", '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[1]}'),
        ("params a string", '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":"x"}'),
        ("params null", '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":null}'),
        ("duplicate id", '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}'),
        ("unicode escapes", '{"jsonrpc":"2.0","id":"\\u00e9\\ud83d\\ude00","method":"ping"}'),
        ("lone surrogate", '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'),
        ("nested deep", "[" * 200 + "]" * 200),
    ]:
        r.post(f"raw legacy-era body: {label}", raw, [("MCP-Protocol-Version", "2025-06-18")])
        r.post(f"raw modern-era body: {label}", raw, [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "ping")])
    r.post("raw body: invalid UTF-8", b'{"jsonrpc":"2.0","id":1,"method":"p\xffing"}', [])
    r.post("raw body: UTF-8 BOM", "\ufeff" + '{"jsonrpc":"2.0","id":1,"method":"ping"}', [])
    modern_item = Recorder.modern_body("tools/list", {}, 1)
    r.post("modern batch", dumps([modern_item]), Recorder.modern_headers(modern_item))
    r.post("legacy batch", dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]),
           [("MCP-Protocol-Version", "2025-06-18")])
    r.post("legacy batch of notifications", dumps([{"jsonrpc": "2.0", "method": "notifications/initialized"}]), [])

    # -- notifications
    for version in LEGACY:
        for method in ["notifications/initialized", "notifications/cancelled", "notifications/roots/list_changed", "notifications/unknown"]:
            body_n = {"jsonrpc": "2.0", "method": method}
            if method == "notifications/cancelled":
                body_n["params"] = {"requestId": 1, "reason": "user"}
            headers = [] if version == "2025-03-26" else [("MCP-Protocol-Version", version)]
            r.post(f"notification {method} @{version}", dumps(body_n), headers)
    r.post("notification, unsupported version header", dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
           [("MCP-Protocol-Version", "1900-01-01")])
    r.modern("modern notification", "notifications/cancelled", {"requestId": 1}, notification=True)
    r.modern("modern notification, unknown method", "notifications/whatever", {}, notification=True)
    r.modern("modern notification without capabilities", "notifications/cancelled", {}, notification=True,
             edit=drop_meta_key(CAPS_KEY))
    r.modern("modern notification with an unsupported version", "notifications/cancelled", {}, notification=True,
             edit=with_version("1900-01-01", "1900-01-01"))
    r.post("modern notification, _meta missing", dumps({"jsonrpc": "2.0", "method": "notifications/cancelled"}),
           [("MCP-Protocol-Version", MODERN)])

    # -- subscriptions/listen: only refusals that answer at once
    r.modern("listen, no notifications object", "subscriptions/listen", {})
    r.modern("listen, notifications a list", "subscriptions/listen", {"notifications": ["toolsListChanged"]})
    r.modern("listen, notifications true", "subscriptions/listen", {"notifications": True})
    r.modern("listen, wrong mcp-method", "subscriptions/listen", {"notifications": {"toolsListChanged": True}},
             edit=replace("mcp-method", "tools/list"))
    r.modern("listen, no capabilities", "subscriptions/listen", {"notifications": {"toolsListChanged": True}},
             edit=drop_meta_key(CAPS_KEY))
    r.modern("listen, unsupported version", "subscriptions/listen", {"notifications": {"toolsListChanged": True}},
             edit=with_version("1900-01-01", "1900-01-01"))
    r.legacy("listen @2025-11-25", "2025-11-25", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})

    # -- legacy era: initialize, then each request on its own
    for v_ in LEGACY:
        r.legacy(f"initialize {v_}", v_, "initialize", initialize_params(v_))
        r.legacy(f"initialize {v_}, no header", None, "initialize", initialize_params(v_))
    r.legacy("initialize 2024-01-01 (answered with the newest)", None, "initialize", initialize_params("2024-01-01"))
    r.legacy("initialize 2026-07-28 (no _meta)", None, "initialize", initialize_params(MODERN))
    r.legacy("initialize without protocolVersion", None, "initialize", {"capabilities": {}})
    r.legacy("initialize protocolVersion a number", None, "initialize", {"protocolVersion": 2025, "capabilities": {}})
    r.legacy("initialize no params", None, "initialize", None)
    r.legacy("initialize, string id", None, "initialize", initialize_params("2025-06-18"), id_="init-1")
    r.legacy("initialize 2025-06-18 with header 2025-11-25", "2025-11-25", "initialize", initialize_params("2025-06-18"))
    r.legacy("initialize, unsupported header", "1900-01-01", "initialize", initialize_params("2025-06-18"))
    r.legacy("initialize, session id sent", "2025-11-25", "initialize", initialize_params("2025-11-25"),
             extra_headers=[("Mcp-Session-Id", "a-session-we-never-issued")])
    for v_ in LEGACY:
        r.legacy(f"tools/list @{v_}", v_, "tools/list", {})
        r.legacy(f"tools/list @{v_}, cursor", v_, "tools/list", {"cursor": "abc"})
        r.legacy(f"ping @{v_}", v_, "ping", {})
        r.legacy(f"ping @{v_}, no params", v_, "ping")
        r.legacy(f"unknown method @{v_}", v_, "foo/bar", {})
        r.legacy(f"resources/list @{v_}", v_, "resources/list", {})
        r.legacy(f"server/discover @{v_}", v_, "server/discover", {})
        r.legacy(f"tools/list @{v_}, session id", v_, "tools/list", {}, extra_headers=[("Mcp-Session-Id", "abc")])
        r.tool(f"search_tools invoice @{v_}", "search_tools", {"query": "invoice"}, era=v_)
        r.tool(f"load_tool get_order @{v_}", "load_tool", {"name": "get_order"}, era=v_)
        r.tool(f"invoke_tool get_order 2 @{v_}", "invoke_tool", {"name": "get_order", "arguments": {"id": 2}}, era=v_)
    r.legacy("tools/list, no header at all", None, "tools/list", {})
    r.legacy("tools/list, header 1900-01-01", "1900-01-01", "tools/list", {})
    r.legacy("tools/list, header 2026-07-28 without _meta", "2026-07-28", "tools/list", {})
    r.legacy("tools/list, header empty", "", "tools/list", {})
    r.legacy("ping, _meta with only clientInfo", "2025-06-18", "ping", {"_meta": {INFO_KEY: {"name": "x"}}})

    # -- other HTTP methods and paths
    for method in ["GET", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]:
        r.send(f"{method} /mcp", method, "/mcp", [("Accept", ACCEPT)])
    r.send("GET /mcp with a session id", "GET", "/mcp", [("Accept", "text/event-stream"), ("Mcp-Session-Id", "abc")])
    r.send("DELETE /mcp with a session id", "DELETE", "/mcp", [("Mcp-Session-Id", "abc"), ("MCP-Protocol-Version", "2025-11-25")])
    r.send("POST /mcp/", "POST", "/mcp/", [("Content-Type", "application/json")], '{"jsonrpc":"2.0","id":1,"method":"ping"}')
    r.send("POST /mcp?x=1", "POST", "/mcp?x=1", [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")],
           '{"jsonrpc":"2.0","id":1,"method":"ping"}')
    r.send("POST /MCP", "POST", "/MCP", [("Content-Type", "application/json")], '{"jsonrpc":"2.0","id":1,"method":"ping"}')
    r.send("GET /healthz", "GET", "/healthz", [])
    r.send("GET /readyz", "GET", "/readyz", [])
    r.send("GET /nope", "GET", "/nope", [])
    r.send("POST /healthz", "POST", "/healthz", [("Content-Type", "application/json")], "{}")

    # -- the body size limit (default 4 MiB): just under and just over
    def padded(size):
        head = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"order","pad":"'
        tail = '"}}}'
        return head + "x" * (size - len(head) - len(tail)) + tail

    r.post("body of exactly 4 MiB", padded(4 * 1024 * 1024), [("MCP-Protocol-Version", "2025-06-18")])
    r.post("body 1 byte over 4 MiB", padded(4 * 1024 * 1024 + 1), [("MCP-Protocol-Version", "2025-06-18")])


# ------------------------------------------------------------------ real block

REAL_QUERIES = [
    # the shipped search tasks for these documents
    "list repository pull requests",
    "rerun failed workflow jobs",
    "create checkout session",
    "create payment intent",
    "vote for tv show",
    "add a new pet",
    "pet details by id",
    "list all pets",
    "register new pet",
    "trigger dag run",
    "task instance logs",
    # agent-style sentences
    "I want to charge a customer's card for 20 dollars",
    "refund the last payment of a customer",
    "create a new customer with an email address",
    "cancel a subscription at the end of the billing period",
    "list all invoices for a customer",
    "send an invoice to the customer by email",
    "open a new issue in a repository",
    "add a comment to a pull request",
    "merge the pull request once checks pass",
    "list the branches of a repository",
    "who starred my repository",
    "create a webhook that fires on push",
    "delete a repository permanently",
    "get the authenticated user's profile",
    "find pets that are available for adoption",
    "remove a pet from the store",
    "pause a DAG so it stops scheduling",
    "clear failed task instances of a dag run",
    "list the variables configured in airflow",
    "search for tv shows by name",
    "which episodes air today",
    "show the cast of a tv show",
    "how do I upload a file",
    "list events",
    # keywords
    "customer",
    "invoice",
    "refund",
    "webhook",
    "pull request",
    "issue comment",
    "gist",
    "release asset",
    "dag",
    "dagRun",
    "connection",
    "pool",
    "pet",
    "store",
    "show",
    "episode",
    "payment_intent",
    "subscription item",
    "price",
    "coupon",
    "balance transaction",
    "repos",
    "orgs members",
    "actions secrets",
    "list",
    "delete",
    "get",
    "",
    "zzzz qqqq",
    "café résumé naïve",
    "GET /pets/{petId}",
    "/v1/customers",
    "owner repo",
    "petId",
    "listPets",
]
REAL_LIMITS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 17, 20, 25, 30, 33, 40, 45, 49, 50]
REAL_FIXED_TAGS = [["pets"], ["PETS"], ["DAG"], ["dagrun"], ["repos"], ["issues"], ["pulls"], ["Pet"], ["nobody carries this"],
                   ["repos", "issues"], ["DAG", "DAGRun"]]


def wrong_value(schema):
    """A value `schema` certainly refuses (its type is declared and simple), or None."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind in ("integer", "number", "boolean", "array", "object"):
        return "not-a-" + kind
    if kind == "string":
        return 12345
    return None


def real_block(r: Recorder):
    r.modern("real: tools/list", "tools/list")
    first = r.tool("real: search everything, limit 1 (tag vocabulary)", "search_tools", {"limit": 1})
    p, _ = tool_payload(first)
    vocabulary = sorted(t for t in (p or {}).get("tags", []) if isinstance(t, str))
    step = max(1, len(vocabulary) // 12)
    tag_sets = [t for t in REAL_FIXED_TAGS] + [[t] for t in vocabulary[::step][:12]]

    names = set()

    def search(label, args, era=MODERN):
        rec = r.tool(label, "search_tools", args, era=era)
        p, err = tool_payload(rec)
        if p and not err:
            for res in p.get("results", []):
                if isinstance(res, dict) and isinstance(res.get("name"), str):
                    names.add(res["name"])
        return rec

    for q in REAL_QUERIES:
        search(f"real: search {q!r}", {"query": q})
    for i, q in enumerate(REAL_QUERIES):
        limit = REAL_LIMITS[(i * 5) % len(REAL_LIMITS)]
        search(f"real: search {q!r} limit {limit}", {"query": q, "limit": limit})
    for i, q in enumerate(REAL_QUERIES):
        limit = 1 + (i % 4)
        search(f"real: search {q!r} schema limit {limit}", {"query": q, "limit": limit, "detail": "schema"})
    for i, tags in enumerate(tag_sets):
        q = REAL_QUERIES[(i * 7) % len(REAL_QUERIES)]
        search(f"real: tags {tags!r}", {"tags": tags, "limit": 50})
        search(f"real: tags {tags!r} query {q!r}", {"query": q, "tags": tags, "limit": REAL_LIMITS[i % len(REAL_LIMITS)]})
    for limit in (10, 30, 50):
        search(f"real: schema detail, no query, limit {limit}", {"detail": "schema", "limit": limit})
    for era in LEGACY:
        for q in ["create payment intent", "list all pets", "trigger dag run"]:
            search(f"real: search {q!r} @{era}", {"query": q, "limit": 5}, era=era)
    # repeated questions (the search cache)
    for rep in range(2):
        for q in ["customer", "pull request", "list all pets"]:
            search(f"real: search {q!r} repeat {rep}", {"query": q, "limit": 10})

    # load_tool: every 4th of the names the searches returned, sorted
    ordered = sorted(names)
    sample = ordered[::4]
    definitions = {}
    for name in sample:
        rec = r.tool(f"real: load_tool {name}", "load_tool", {"name": name})
        p, err = tool_payload(rec)
        if p and not err:
            definitions[name] = p
    for name in ["no_such_tool", ordered[0].upper() if ordered else "X"]:
        r.tool(f"real: load_tool {name}", "load_tool", {"name": name})

    # invoke_tool, always refused before the network: every 2nd loaded tool
    for name in sorted(definitions)[::2]:
        d = definitions[name]
        schema = d.get("inputSchema") if isinstance(d.get("inputSchema"), dict) else {}
        r.tool(f"real: invoke {name} stale pin", "invoke_tool", {"name": name, "arguments": {}, "version": STALE_VERSION})
        r.tool(f"real: invoke {name} arguments a number", "invoke_tool", {"name": name, "arguments": 7})
        if schema.get("additionalProperties") is False:
            r.tool(f"real: invoke {name} unknown argument", "invoke_tool",
                   {"name": name, "arguments": {"zz_not_an_argument": True}, "version": d.get("version")})
        required = [k for k in schema.get("required", []) if isinstance(k, str)]
        if required:
            r.tool(f"real: invoke {name} no arguments", "invoke_tool", {"name": name, "arguments": {}})
            bad = wrong_value((schema.get("properties") or {}).get(required[0]))
            if bad is not None:
                r.tool(f"real: invoke {name} {required[0]} of the wrong type", "invoke_tool",
                       {"name": name, "arguments": {required[0]: bad}, "version": d.get("version")})
    r.tool("real: invoke unknown tool", "invoke_tool", {"name": "no_such_tool", "arguments": {}})


SAFE_INVOKE_ERRORS = {"tool_changed", "invalid_type", "invalid_arguments", "unknown_tool"}


def check_real_invokes(records):
    """Warns about real-block invoke_tool answers that did not stop before the network."""
    bad = []
    for rec in records:
        if rec["block"] != "real" or "invoke" not in rec["label"]:
            continue
        p, err = tool_payload(rec)
        if not err or not isinstance(p, dict) or p.get("error") not in SAFE_INVOKE_ERRORS:
            bad.append(rec["label"])
    for label in bad:
        print(f"WARNING: {label!r} was dispatched (or answered unexpectedly); fix the request set", file=sys.stderr)
    return not bad


# ------------------------------------------------------------------ commands


def cmd_record(args):
    binary = Path(args.binary).resolve()
    if not binary.is_file():
        raise SystemExit(f"no binary at {binary}")
    catalogs = Path(args.catalogs).resolve()
    records = []
    masks = Masks()
    print(f"demo block: {binary} serve --catalogs {catalogs} --listen 127.0.0.1:PORT --watch off")
    with Server(binary, catalogs) as server:
        demo_block(Recorder("demo", server.port, records, masks))
    demo_count = len(records)
    print(f"  {demo_count} requests")
    if args.real:
        real = Path(args.real).resolve()
        print(f"real block: {binary} serve --catalogs {real} --listen 127.0.0.1:PORT --watch off")
        blackhole = f"http://127.0.0.1:9"
        guard = {"HTTP_PROXY": blackhole, "HTTPS_PROXY": blackhole, "ALL_PROXY": blackhole,
                 "http_proxy": blackhole, "https_proxy": blackhole, "all_proxy": blackhole}
        with Server(binary, real, guard) as server:
            real_block(Recorder("real", server.port, records, masks))
        print(f"  {len(records) - demo_count} requests")
        check_real_invokes(records)
    with open(args.out, "w", encoding="utf-8") as out:
        for rec in records:
            # ASCII only: a raw U+2028 or U+0085 in a body would split the line for some readers.
            out.write(json.dumps(rec, ensure_ascii=True, separators=(",", ":")) + "\n")
    statuses = {}
    for rec in records:
        statuses[rec["status"]] = statuses.get(rec["status"], 0) + 1
    print(f"{len(records)} requests recorded into {args.out}; statuses: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))
    print("response headers not recorded: " + ", ".join(sorted(UNRECORDED_HEADERS)) + " (wall clock)")
    for rule, count in masks.counts.items():
        print(f"masking rule {rule} (127.0.0.1:<own port> -> 127.0.0.1:{{PORT}}): {count} occurrence(s) masked")


def shorten(text, limit=700, around=None):
    if text is None:
        return "<none>"
    if len(text) <= limit:
        return text
    if around is None or around < limit // 2:
        return text[:limit] + f"… ({len(text)} chars)"
    start = max(0, around - limit // 2)
    return "…" + text[start:start + limit] + f"… ({len(text)} chars)"


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def answer_text(rec):
    return rec.get("body", rec.get("body_b64"))


def show_answer(rec, at):
    if rec is None:
        return "    (no such line)"
    headers = ", ".join(f"{n}: {v}" for n, v in rec["headers"])
    return f"    status {rec['status']}; headers {headers}\n    body {shorten(answer_text(rec), around=at)}"


def cmd_compare(args):
    def load(path):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    a, b = load(args.a), load(args.b)
    total = max(len(a), len(b))
    same = 0
    different = 0
    print(f"comparing {args.a} ({len(a)} requests) with {args.b} ({len(b)} requests)")
    for i in range(total):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is not None and y is not None and x == y:
            same += 1
            continue
        different += 1
        ref = x or y
        req = ref["request"]
        body = req.get("body", req.get("body_b64", req.get("body_summary")))
        print(f"\n#{i} [{ref['block']}] {ref['label']}")
        print(f"  request {req['method']} {req['path']} {req['headers']}\n    {shorten(str(body), 400)}")
        if x is not None and y is not None and x["request"] != y["request"]:
            other = y["request"]
            print(f"  the requests differ; B sent {other['method']} {other['path']} {other['headers']}\n"
                  f"    {shorten(str(other.get('body', other.get('body_b64', other.get('body_summary')))), 400)}")
        at = None
        if x is not None and y is not None:
            fields = [k for k in ("request", "status", "headers", "body", "body_b64", "label", "block")
                      if x.get(k) != y.get(k)]
            print(f"  differs in: {', '.join(fields)}")
            if answer_text(x) != answer_text(y):
                at = first_difference(answer_text(x) or "", answer_text(y) or "")
                print(f"  bodies first differ at character {at}")
        print("  A:\n" + show_answer(x, at))
        print("  B:\n" + show_answer(y, at))
    print(f"\ncompared {total} requests: {same} identical, {different} different")
    print(f"{same} identical, {different} different")
    return 1 if different else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record a binary's answers")
    rec.add_argument("--binary", required=True, help="the sezzlee binary to run")
    rec.add_argument("--out", required=True, help="the JSON lines file to write")
    rec.add_argument("--catalogs", default=str(DEFAULT_CATALOGS), help="catalogs folder of the demo block [default: the repo's catalogs/]")
    rec.add_argument("--real", help="a folder of real OpenAPI documents: adds the real block")
    cmp_ = sub.add_parser("compare", help="compare two recordings")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    args = parser.parse_args(argv)
    if args.command == "record":
        cmd_record(args)
        return 0
    return cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main())
