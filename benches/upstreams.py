#!/usr/bin/env python3
"""Upstream MCP servers behind sezzlee, measured by hand (never in CI).

    cargo build --release --bin sezzlee
    target/interop-venv/bin/python benches/upstreams.py [--calls 500] [--servers 20] [--tools 50]

(target/interop-venv is the venv tests/interop/run.sh makes: the official
Python SDK, mcp==2.3.0.) Two figures, each a ratio measured in one run:

1. Overhead of a call: the same tool (`add` of tests/interop/servers/
   sdk_server.py, a Python SDK server over Streamable HTTP at 2026-07-28)
   called `--calls` times directly with the SDK's client, then as many times
   through sezzlee's invoke_tool with the same client: p50 through ÷ p50
   direct (target ≤ 1.3).
2. Scale: `--servers` stdio servers of `--tools` generated tools each
   (benches/upstream_server.py) as upstream files, against the same tools
   as OpenAPI operations (one document per server): search_tools p50 over
   the tools' own descriptions, and the gateway's RSS (the upstream
   processes not counted; their RSS is printed apart), upstream ÷ OpenAPI.

Prints a table and writes target/bench-upstreams.json.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import anyio
from mcp import Client
from bench_process import free_port, rss_kib, wait_http

ROOT = Path(__file__).resolve().parents[1]
BIN = os.environ.get("SEZZLEE_BIN", str(ROOT / "target" / "release" / "sezzlee"))
SERVER = ROOT / "benches" / "upstream_server.py"
SDK_SERVER = ROOT / "tests" / "interop" / "servers" / "sdk_server.py"






def status(base):
    with urllib.request.urlopen(f"{base}/status", timeout=5) as response:
        return json.load(response)


def serve(folder, log):
    port = free_port()
    process = subprocess.Popen(
        [BIN, "serve", "--catalogs", str(folder), "--listen", f"127.0.0.1:{port}",
         "--watch", "poll"],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/readyz")
    return base, process




def children_rss_kib(pid):
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            total += rss_kib(int(entry.name))
    return total


def p50(values):
    return statistics.median(values)


async def timed_calls(url, name, arguments, calls):
    async with Client(url, mode="2026-07-28") as client:
        for _ in range(20):
            await client.call_tool(name, arguments)
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await client.call_tool(name, arguments)
            times.append(time.perf_counter() - started)
            assert not result.is_error, result.content
        return times


def overhead(calls, scratch):
    port = free_port()
    python = sys.executable
    server = subprocess.Popen([python, str(SDK_SERVER), "--port", str(port), "--mode", "stateless"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = scratch / "overhead"
    folder.mkdir()
    (folder / "sdk.mcp.yaml").write_text(f"url: http://127.0.0.1:{port}/mcp\nnamespace: sdk\n")
    try:
        wait_http(f"http://127.0.0.1:{port}/mcp")
        with open(scratch / "overhead.log", "wb") as log:
            base, gateway = serve(folder, log)
        try:
            deadline = time.monotonic() + 30
            while not any(u["state"] == "up" and u["tools"] for u in status(base)["upstreams"]):
                assert time.monotonic() < deadline, status(base)["upstreams"]
                time.sleep(0.1)
            direct = anyio.run(timed_calls, f"http://127.0.0.1:{port}/mcp", "add",
                               {"a": 2, "b": 40}, calls)
            through = anyio.run(timed_calls, f"{base}/mcp", "invoke_tool",
                                {"name": "sdk_add", "arguments": {"a": 2, "b": 40}}, calls)
        finally:
            gateway.kill()
            gateway.wait()
    finally:
        server.kill()
        server.wait()
    return {"calls": calls, "direct_p50_ms": p50(direct) * 1e3,
            "through_p50_ms": p50(through) * 1e3, "ratio": p50(through) / p50(direct)}


async def timed_searches(url, queries):
    async with Client(url, mode="2026-07-28") as client:
        for query in queries[:20]:
            await client.call_tool("search_tools", {"query": query})
        times = []
        for query in queries:
            started = time.perf_counter()
            result = await client.call_tool("search_tools", {"query": query})
            times.append(time.perf_counter() - started)
            assert not result.is_error, result.content
        return times


def scale(servers, tools, scratch):
    upstream = scratch / "upstream"
    documents = scratch / "openapi"
    upstream.mkdir()
    documents.mkdir()
    queries = []
    for seed in range(servers):
        (upstream / f"bench{seed}.mcp.yaml").write_text(
            f"command: {sys.executable}\nargs: [{json.dumps(str(SERVER))}, --seed, '{seed}', "
            f"--tools, '{tools}']\nnamespace: u{seed}\n")
        spec = subprocess.run([sys.executable, str(SERVER), "--seed", str(seed), "--tools",
                               str(tools), "--openapi"], check=True, capture_output=True).stdout
        (documents / f"u{seed}.json").write_bytes(spec)
        document = json.loads(spec)
        queries += [op["post"]["summary"].rstrip(".").lower() for op in document["paths"].values()]
    figures = {}
    for kind, folder in [("upstream", upstream), ("openapi", documents)]:
        with open(scratch / f"{kind}.log", "wb") as log:
            base, gateway = serve(folder, log)
        try:
            deadline = time.monotonic() + 60
            while status(base)["tools"] < servers * tools:
                assert time.monotonic() < deadline, "the tools never all appeared"
                time.sleep(0.2)
            time.sleep(1)
            times = anyio.run(timed_searches, f"{base}/mcp", queries)
            figures[kind] = {"search_p50_ms": p50(times) * 1e3, "rss_kib": rss_kib(gateway.pid),
                             "children_rss_kib": children_rss_kib(gateway.pid)}
        finally:
            gateway.kill()
            gateway.wait()
    figures["search_ratio"] = figures["upstream"]["search_p50_ms"] / figures["openapi"]["search_p50_ms"]
    figures["rss_ratio"] = figures["upstream"]["rss_kib"] / figures["openapi"]["rss_kib"]
    return figures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--tools", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        result = {"overhead": overhead(args.calls, scratch),
                  "scale": scale(args.servers, args.tools, scratch)}
    print(json.dumps(result, indent=2))
    out = ROOT / "target" / "bench-upstreams.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
