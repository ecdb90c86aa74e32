"""Interop: a shaped answer read through the official Python SDK (mcp==2.3.0).

    SEZZLEE_BIN=target/release/sezzlee pytest -q tests/interop/test_python_shaped.py

Starts its own `sezzlee serve` on the shipped catalogs/ (demo backend
included) with a small response budget, creates enough orders that
list_orders no longer fits, and checks what an agent gets through the SDK:
a tool result whose text is valid JSON within the budget, the first orders
whole, every cut listed, and a message naming the next call; that call,
made as the message says, then fits whole.
"""

import json
import re
from pathlib import Path

import anyio
import pytest
from mcp import Client

import gateway_process

SHIPPED = Path(__file__).resolve().parents[2] / "catalogs"
BUDGET = 1500


@pytest.fixture
def url(tmp_path):
    base, process = gateway_process.start(
        tmp_path, SHIPPED, "--watch", "off", "--response-budget", str(BUDGET)
    )
    yield f"{base}/mcp"
    gateway_process.stop(process)


def text_of(result):
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    text = result.content[0].text
    assert len(text) <= BUDGET, len(text)
    return json.loads(text)


def test_a_list_over_the_budget_is_shaped_and_the_named_call_fits(url):
    async def main():
        async with Client(url, mode="2026-07-28") as client:
            loaded = text_of(await client.call_tool("load_tool", {"name": "list_orders"}))
            create = text_of(await client.call_tool("load_tool", {"name": "create_order"}))
            for i in range(30):
                result = await client.call_tool("invoke_tool", {
                    "name": "create_order", "version": create["version"],
                    "arguments": {"item": f"keyboard number {i} with a longer name", "quantity": i + 1},
                })
                assert not result.is_error, result.content
            shaped = await client.call_tool("invoke_tool", {
                "name": "list_orders", "version": loaded["version"], "arguments": {"limit": 100},
            })
            assert not shaped.is_error, shaped.content
            answer = text_of(shaped)
            orders = answer["body"]
            assert 0 < len(orders) < 30, answer
            assert all({"id", "item", "quantity"} <= set(order) for order in orders), orders
            cut = answer["shaped"][0]
            assert cut["at"] == "" and cut["kept"] == len(orders) and cut["of"] >= 30, answer
            assert answer["bytes"] > BUDGET, answer
            match = re.search(r"call again with limit=(\d+)", answer["message"], re.IGNORECASE)
            assert match, answer["message"]
            limit = int(match.group(1))
            assert limit == len(orders), answer["message"]
            again = text_of(await client.call_tool("invoke_tool", {
                "name": "list_orders", "version": loaded["version"], "arguments": {"limit": limit},
            }))
            assert "shaped" not in again, again
            assert len(again["body"]) == limit, again

    anyio.run(main)
