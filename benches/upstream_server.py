#!/usr/bin/env python3
"""An MCP server over stdio with N generated tools, for benches/upstreams.py.

Python's standard library only. It speaks the `initialize` era: the
handshake, `tools/list` (one page), and `tools/call` of any of its tools
(the answer echoes the arguments as text). `--openapi` prints instead an
OpenAPI 3.1 document with the same tools as operations (name, description,
the same input schema as the request body), so the bench can serve the same
tools both ways.

    python3 upstream_server.py --seed 3 --tools 50
    python3 upstream_server.py --seed 3 --tools 50 --openapi > api.json
"""

import argparse
import json
import random
import sys

VERBS = ["create", "list", "get", "update", "delete", "archive", "restore", "export",
         "import", "search", "merge", "assign", "approve", "reject", "schedule", "cancel"]
NOUNS = ["invoice", "customer", "ticket", "order", "shipment", "payment", "refund",
         "subscription", "report", "project", "task", "comment", "label", "webhook",
         "user", "team", "document", "folder", "alert", "device", "campaign", "coupon"]
DETAILS = ["for the current account", "by its identifier", "with optional filters",
           "in the given workspace", "and notify the owner", "as a background job",
           "including archived items", "sorted by creation date"]


def tools_of(seed: int, count: int) -> list:
    """`count` distinct tools, the same for the same seed."""
    rng = random.Random(seed)
    seen = set()
    tools = []
    while len(tools) < count:
        verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
        name = f"{verb}_{noun}"
        if name in seen:
            name = f"{name}_{len(tools)}"
        seen.add(name)
        detail = rng.choice(DETAILS)
        properties = {
            f"{noun}_id": {"type": "string", "description": f"The {noun}'s identifier."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            "note": {"type": "string", "description": f"Why the {noun} is {verb}d."},
        }
        tools.append({
            "name": name,
            "description": f"{verb.capitalize()} a {noun} {detail}.",
            "inputSchema": {"type": "object", "properties": properties,
                            "required": [f"{noun}_id"]},
        })
    return tools


def openapi(seed: int, tools: list) -> dict:
    paths = {}
    for tool in tools:
        paths[f"/{tool['name']}"] = {"post": {
            "operationId": tool["name"],
            "summary": tool["description"],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": tool["inputSchema"]}}},
            "responses": {"200": {"description": "ok"}},
        }}
    return {"openapi": "3.1.0", "info": {"title": f"Bench API {seed}", "version": "1"},
            "servers": [{"url": "http://127.0.0.1:9/"}], "paths": paths}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve(tools: list) -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "id" not in message or "method" not in message:
            continue
        method, ident = message["method"], message["id"]
        params = message.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                      "capabilities": {"tools": {"listChanged": True}},
                      "serverInfo": {"name": "bench-upstream", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": json.dumps(params.get("arguments"))}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": ident,
                  "error": {"code": -32601, "message": f"no method {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--tools", type=int, default=50)
    parser.add_argument("--openapi", action="store_true")
    args = parser.parse_args()
    tools = tools_of(args.seed, args.tools)
    if args.openapi:
        json.dump(openapi(args.seed, tools), sys.stdout)
    else:
        serve(tools)


if __name__ == "__main__":
    main()
