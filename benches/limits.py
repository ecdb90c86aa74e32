#!/usr/bin/env python3
"""What limits cost an allowed call, and what a flood costs another caller,
measured by hand (never in CI).

    cargo build --release --bin sezzlee
    target/interop-venv/bin/python benches/limits.py [--calls 1000]

(target/interop-venv is the venv tests/interop/run.sh makes: the official
Python SDK, mcp==2.3.0; redis-server from Debian for the shared case.)

1. Overhead: `invoke_tool get_order` on the shipped catalogs (the demo
   backend built in), `--calls` times with the SDK's client, against three
   gateways started in turn: no `[limits]`, local rates, and rates shared
   through a redis-server on loopback. p50 of each ÷ p50 without limits
   (targets ≤ 1.05 local, ≤ 1.3 Redis).
2. Fairness: with local rates, caller B's invoke p50 alone, then while
   caller A floods (as fast as it can, refused past its rate): the ratio
   (target ≤ 1.3). Callers are told apart by API keys.

Writes target/bench-limits.json.
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from bench_process import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[1]
BIN = os.environ.get("SEZZLEE_BIN", str(ROOT / "target" / "release" / "sezzlee"))
REDIS = os.environ.get("SEZZLEE_TEST_REDIS", "/usr/bin/redis-server")
KEYS = {"A": "bench-key-a-5d2e", "B": "bench-key-b-9c1f"}






def serve(scratch, name, limits):
    config = scratch / f"{name}.toml"
    keys = "".join(
        f'[[auth.api_keys]]\nheader = "x-api-key"\nkey_env = "BENCH_KEY_{who}"\nsubject = "caller-{who}"\n'
        for who in KEYS
    )
    config.write_text(keys + limits)
    port = free_port()
    env = dict(os.environ, **{f"BENCH_KEY_{who}": key for who, key in KEYS.items()})
    log = open(scratch / f"{name}.log", "wb")
    process = subprocess.Popen(
        [BIN, "serve", "--catalogs", str(ROOT / "catalogs"), "--listen", f"127.0.0.1:{port}",
         "--watch", "off", "--demo-backend", "on", "--config", str(config)],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    wait_ready(base)
    return base, process


async def interleaved(urls, calls):
    """`calls` invokes on each of `urls`, one on each in turn."""
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, url in urls.items():
            http = await stack.enter_async_context(httpx2.AsyncClient(headers={"x-api-key": KEYS["B"]}))
            clients[name] = await stack.enter_async_context(client_as(url, "B", http))
        arguments = {"name": "get_order", "arguments": {"id": 1}}
        for client in clients.values():
            for _ in range(20):
                await client.call_tool("invoke_tool", arguments)
        times = {name: [] for name in clients}
        for _ in range(calls):
            for name, client in clients.items():
                started = time.perf_counter()
                await client.call_tool("invoke_tool", arguments)
                times[name].append(time.perf_counter() - started)
        return times


def client_as(url, who, http_client):
    """The SDK's client on `url` as caller `who` (its API key on every request)."""
    return Client(streamable_http_client(url, http_client=http_client), mode="2026-07-28")


async def timed_invokes(url, who, calls):
    async with httpx2.AsyncClient(headers={"x-api-key": KEYS[who]}) as http, client_as(url, who, http) as client:
        for _ in range(20):
            await client.call_tool("invoke_tool", {"name": "get_order", "arguments": {"id": 1}})
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("invoke_tool", {"name": "get_order", "arguments": {"id": 1}})
            times.append(time.perf_counter() - started)
        return times


async def flood(url, seconds):
    """Caller A calling as fast as four connections allow, for `seconds`;
    prints what it sent and what was refused."""
    counts = {"sent": 0, "refused": 0}
    end = time.monotonic() + seconds

    async def one():
        async with httpx2.AsyncClient(headers={"x-api-key": KEYS["A"]}) as http, client_as(url, "A", http) as client:
            while time.monotonic() < end:
                result = await client.call_tool("invoke_tool", {"name": "get_order", "arguments": {"id": 1}})
                counts["sent"] += 1
                counts["refused"] += int(bool(result.is_error))

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(one)
    print(json.dumps(counts))


def flood_while(url, calls, seconds=8):
    """Caller A floods from a process of its own (so it does not share the
    timed client's event loop) while B is timed; B's times, A's counts."""
    flooder = subprocess.Popen([sys.executable, __file__, "--flood", url, "--seconds", str(seconds)],
                               stdout=subprocess.PIPE)
    time.sleep(1.0)
    times = anyio.run(timed_invokes, url, "B", calls)
    out, _ = flooder.communicate()
    counts = json.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {"sent": 0, "refused": 0}
    return times, counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--flood", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=30, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood:
        anyio.run(flood, args.flood, args.seconds)
        return
    result = {}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        redis_port = free_port()
        redis = subprocess.Popen([REDIS, "--port", str(redis_port), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        rates = "[limits]\ninvoke_per_minute = 600000\nsearch_per_minute = 600000\n"
        cases = {
            "none": "",
            "local": rates,
            "redis": rates + f'redis_url = "redis://127.0.0.1:{redis_port}/0"\n',
        }
        p50 = {}
        try:
            # The three gateways at once, called in turn, round after round:
            # each ratio is measured over the same moments.
            served = {name: serve(scratch, name, limits) for name, limits in cases.items()}
            try:
                times = anyio.run(interleaved, {name: f"{base}/mcp" for name, (base, _) in served.items()},
                                  args.calls)
                p50 = {name: statistics.median(t) * 1e3 for name, t in times.items()}
            finally:
                for _, process in served.values():
                    process.kill()
                    process.wait()
            # Fairness: A limited to 60 a minute floods, B is timed.
            fair = "[limits]\ninvoke_per_minute = 60\n[[limits.groups]]\nsubject = \"caller-B\"\ninvoke_per_minute = 600000\n"
            base, process = serve(scratch, "fair", fair)
            try:
                alone = anyio.run(timed_invokes, f"{base}/mcp", "B", args.calls // 2)
                flooded, counts = flood_while(f"{base}/mcp", args.calls // 2)
            finally:
                process.kill()
                process.wait()
        finally:
            redis.kill()
            redis.wait()
    result["overhead"] = {
        "p50_ms": p50,
        "local_ratio": p50["local"] / p50["none"],
        "redis_ratio": p50["redis"] / p50["none"],
    }
    result["fairness"] = {
        "b_alone_p50_ms": statistics.median(alone) * 1e3,
        "b_flooded_p50_ms": statistics.median(flooded) * 1e3,
        "ratio": statistics.median(flooded) / statistics.median(alone),
        "a_sent": counts["sent"],
        "a_refused": counts["refused"],
    }
    print(json.dumps(result, indent=2))
    (ROOT / "target" / "bench-limits.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
