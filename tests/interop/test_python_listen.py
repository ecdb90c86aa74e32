"""Interop: the official Python SDK's `Client.listen(tools_list_changed=True)`
(mcp==2.3.0) on a sezzlee whose catalog files are edited while it listens.

    SEZZLEE_BIN=target/release/sezzlee pytest -q tests/interop/test_python_listen.py

Each test starts its own `sezzlee serve` (the binary named by SEZZLEE_BIN) on a
temporary copy of the shipped catalogs/ with the event watcher on, so it can
edit the files: an edit is reported once, as a typed ToolsListChanged event,
and `tools/list` then carries the next `sezzlee/catalogGeneration`; a re-save
of the same bytes is not reported; on SIGTERM the stream ends with the
graceful-closure result (the SDK's loop ends instead of raising
SubscriptionLost).
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

BIN = os.environ.get("SEZZLEE_BIN")
SHIPPED = Path(__file__).resolve().parents[2] / "catalogs"
GENERATION = "sezzlee/catalogGeneration"
DOCUMENT = "orders.yaml"
ORIGINAL_SUMMARY = "summary: Lists orders, newest first."


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def gateway(tmp_path):
    """A running sezzlee on a copy of catalogs/: yields (url, folder, process)."""
    if not BIN:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("SEZZLEE_BIN is not set")
    folder = tmp_path / "catalogs"
    shutil.copytree(SHIPPED, folder)
    port = free_port()
    log = open(tmp_path / "sezzlee.log", "wb")
    process = subprocess.Popen(
        [BIN, "serve", "--catalogs", str(folder), "--listen", f"127.0.0.1:{port}",
         "--watch", "events", "--debounce-ms", "50"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, (tmp_path / "sezzlee.log").read_text()
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "sezzlee did not become ready"
        time.sleep(0.1)
    yield f"{base}/mcp", folder, process
    if process.poll() is None:
        process.kill()
    process.wait()
    log.close()


def edit(folder, old, new):
    path = folder / DOCUMENT
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


async def generations(client):
    """The catalogGeneration stamp of each tool of tools/list (all equal)."""
    tools = (await client.list_tools()).tools
    assert sorted(tool.name for tool in tools) == ["invoke_tool", "load_tool", "search_tools"]
    return {tool.meta[GENERATION] for tool in tools}


async def next_event(sub, seconds):
    """The next event of the subscription, or None after `seconds`."""
    with anyio.move_on_after(seconds):
        return await sub.__anext__()
    return None


def test_an_edit_is_one_tools_list_changed_and_the_next_generation(gateway):
    url, folder, _ = gateway

    async def main():
        async with Client(url, mode="2026-07-28") as client:
            assert await generations(client) == {0}
            async with client.listen(tools_list_changed=True) as sub:
                assert sub.honored.tools_list_changed is True
                edit(folder, ORIGINAL_SUMMARY, "summary: Lists orders, most recent first.")
                event = await next_event(sub, 10)
                assert isinstance(event, ToolsListChanged), event
                assert await generations(client) == {1}
                # One edit, one notification: nothing else arrives.
                assert await next_event(sub, 1.0) is None

    anyio.run(main)


def test_a_resave_of_the_same_bytes_is_not_reported(gateway):
    url, folder, _ = gateway
    path = folder / DOCUMENT

    async def main():
        async with Client(url, mode="2026-07-28") as client:
            async with client.listen(tools_list_changed=True) as sub:
                path.write_bytes(path.read_bytes())
                os.utime(path)
                assert await next_event(sub, 1.5) is None
                assert await generations(client) == {0}
                edit(folder, ORIGINAL_SUMMARY, "summary: Lists every order.")
                assert isinstance(await next_event(sub, 10), ToolsListChanged)
                assert await generations(client) == {1}

    anyio.run(main)


def test_shutdown_ends_the_stream_gracefully(gateway):
    url, _, process = gateway

    async def main():
        async with Client(url, mode="2026-07-28") as client:
            async with client.listen(tools_list_changed=True) as sub:
                process.send_signal(signal.SIGTERM)
                events = []
                with anyio.fail_after(10):
                    # SubscriptionLost would be raised here on an abrupt drop.
                    async for event in sub:
                        events.append(event)
                assert events == []

    anyio.run(main)
    assert process.wait(timeout=10) == 0
