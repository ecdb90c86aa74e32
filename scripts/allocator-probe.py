#!/usr/bin/env python3
"""The large-request probe of scripts/allocator-compare.sh.

Sends ROUNDS x COUNT `invoke_tool` calls whose request body is about
SIZE bytes (`create_order` with a SIZE-byte `item` and `quantity: 0`, so the
gateway reads, parses and validates it, then refuses it as invalid and the
demo backend stores nothing), to a gateway at URL whose process id is PID,
and prints the resident set (VmRSS, /proc/PID/status, in MiB) at start,
after each round and after IDLE seconds without requests:

    start 15.2
    round1 205.3 idle1 190.1
    ...
"""
import json
import sys
import time
import urllib.request

url, pid = sys.argv[1], int(sys.argv[2])
size = int(sys.argv[3]) if len(sys.argv) > 3 else 3_000_000
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 4
idle = float(sys.argv[5]) if len(sys.argv) > 5 else 30
count = 5


def rss_mib():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS")


def call(body):
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        answer = reply.read()
    if b"invalid_arguments" not in answer:
        raise SystemExit(f"unexpected answer: {answer[:300]!r}")


out = [f"start {rss_mib():.1f}"]
for r in range(1, rounds + 1):
    for i in range(count):
        # A fresh string each call, so no two bodies are the same bytes.
        item = (f"{r}-{i}-" + "x" * size)[:size]
        arguments = {"name": "create_order", "arguments": {"item": item, "quantity": 0}}
        body = json.dumps(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call",
             "params": {"name": "invoke_tool", "arguments": arguments}}
        ).encode()
        call(body)
    out.append(f"round{r} {rss_mib():.1f}")
    time.sleep(idle)
    out.append(f"idle{r} {rss_mib():.1f}")
print(" ".join(out))
