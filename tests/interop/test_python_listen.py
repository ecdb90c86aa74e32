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
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

import gateway_process

SHIPPED = Path(__file__).resolve().parents[2] / "catalogs"
GENERATION = "sezzlee/catalogGeneration"
DOCUMENT = "orders.yaml"
ORIGINAL_SUMMARY = "summary: Lists orders, newest first."


@pytest.fixture
def gateway(tmp_path):
    """A running sezzlee on a copy of catalogs/: yields (url, folder, process)."""
    folder = tmp_path / "catalogs"
    shutil.copytree(SHIPPED, folder)
    base, process = gateway_process.start(
        tmp_path, folder, "--watch", "events", "--debounce-ms", "50"
    )
    yield f"{base}/mcp", folder, process
    gateway_process.stop(process)


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
