#!/usr/bin/env python3
"""What an open console costs the gateway, measured by hand (never in CI).

    cargo build --release --bin sezzlee
    python3 benches/console.py [--catalogs DIR] [--calls 2000] [--seconds 20]

One release gateway on a copy of the catalogs folder (default: the shipped
`catalogs/`; pass a folder of real documents for a heavier one). Two
phases of the same load, in turn: `search_tools` calls one after another
over plain HTTP (2026-07-28, a few queries in rotation), and the catalog
file rewritten every two seconds with a new summary (so every open page
draws itself again). In the second phase Debian's Chromium (headless,
$SEZZLEE_TEST_CHROMIUM or /usr/bin/chromium) holds the console open: the
Overview tab, its listen stream, and a second tab on Traffic and a third on
Changes, each drawn again on every change. Reported: search p50 and p95
with the console open ÷ without, the gateway's RSS (median of samples
taken each second) and its CPU time per search call open ÷ without, in one
run. The browsers share the machine's cores with the gateway and the load:
a rise in p95 with a flat gateway CPU is the browsers' drawing, not the
gateway's work.

Writes target/bench-console.json.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from bench_process import cpu_seconds, free_port, rss_kib, wait_ready

ROOT = Path(__file__).resolve().parents[1]
BIN = os.environ.get("SEZZLEE_BIN", str(ROOT / "target" / "release" / "sezzlee"))
CHROMIUM = os.environ.get("SEZZLEE_TEST_CHROMIUM", "/usr/bin/chromium")
QUERIES = ["cancel an order", "invoice for an order", "list orders", "add a note", "refund"]






def search(url, query, n):
    body = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {
            "name": "search_tools",
            "arguments": {"query": query, "limit": 10},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "sezzlee-bench-console", "version": "0"},
            },
        },
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "search_tools",
        },
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=10) as response:
        payload = response.read()
    elapsed = time.perf_counter() - started
    if b'"isError":true' in payload or b'"error"' in payload[:200]:
        raise SystemExit(f"search failed: {payload[:300]!r}")
    return elapsed






def phase(url, pid, edit_file, calls, label):
    """`calls` searches, the file edited every 2 s, RSS sampled each second."""
    stop = threading.Event()
    samples = []

    def editor():
        original = edit_file.read_text()
        n = 0
        while not stop.wait(2.0):
            n += 1
            edit_file.write_text(original.replace("summary:", f"summary: ({label} edit {n})", 1))
        edit_file.write_text(original)

    def sampler():
        while not stop.wait(1.0):
            samples.append(rss_kib(pid))

    threads = [threading.Thread(target=editor), threading.Thread(target=sampler)]
    for t in threads:
        t.start()
    times = []
    cpu_before = cpu_seconds(pid)
    try:
        for n in range(calls):
            times.append(search(url, QUERIES[n % len(QUERIES)], n))
    finally:
        stop.set()
        for t in threads:
            t.join()
    cpu = cpu_seconds(pid) - cpu_before
    times.sort()
    return {
        "calls": calls,
        "gateway_cpu_ms_per_call": cpu * 1000 / calls,
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": times[int(len(times) * 0.95)] * 1000,
        "rss_median_mib": statistics.median(samples) / 1024 if samples else 0,
        "rss_max_mib": max(samples) / 1024 if samples else 0,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--catalogs", default=str(ROOT / "catalogs"))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=300)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="sezzlee-bench-console-"))
    catalogs = work / "catalogs"
    shutil.copytree(args.catalogs, catalogs)
    edit_file = next(
        p for p in sorted(catalogs.rglob("*.yaml")) if "summary:" in p.read_text() and ".sezzlee." not in p.name
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    url = f"{base}/mcp"
    log = open(work / "gateway.log", "w")
    gateway = subprocess.Popen(
        [BIN, "serve", "--catalogs", str(catalogs), "--listen", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    browsers = []
    try:
        wait_ready(base, seconds=120)
        for n in range(args.warmup):
            search(url, QUERIES[n % len(QUERIES)], n)
        closed = phase(url, gateway.pid, edit_file, args.calls, "closed")
        # One headless browser per page (headless Chromium opens one tab
        # from its command line): Overview, Traffic and Changes.
        browsers = [
            subprocess.Popen(
                [
                    CHROMIUM,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    f"--user-data-dir={work / f'chromium-{page}'}",
                    "--remote-debugging-port=0",
                    f"{base}/console#/{page}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for page in ("overview", "traffic", "changes")
        ]
        # The pages load and open their listen streams.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{base}/console/api/overview", timeout=5) as r:
                if json.load(r)["listenStreams"] >= 3:
                    break
            time.sleep(0.2)
        else:
            raise SystemExit("the console's pages did not open their listen streams")
        opened = phase(url, gateway.pid, edit_file, args.calls, "open")
    finally:
        for browser in browsers:
            browser.terminate()
            browser.wait()
        gateway.terminate()
        gateway.wait()
        log.close()
    result = {
        "catalogs": args.catalogs,
        "closed": closed,
        "open": opened,
        "search_p50_ratio": opened["p50_ms"] / closed["p50_ms"],
        "search_p95_ratio": opened["p95_ms"] / closed["p95_ms"],
        "rss_ratio": opened["rss_median_mib"] / closed["rss_median_mib"],
        "gateway_cpu_ratio": opened["gateway_cpu_ms_per_call"] / closed["gateway_cpu_ms_per_call"],
    }
    (ROOT / "target").mkdir(exist_ok=True)
    (ROOT / "target" / "bench-console.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
