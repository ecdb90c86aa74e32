"""An MCP server built with FastMCP (fastmcp==4.1.6) by
`FastMCP.from_openapi` on a small OpenAPI document, over Streamable HTTP,
for the `sezzlee client` interop tests
(tests/interop/test_client_third_party.py).

    python fastmcp_server.py --port PORT [--page-size N]

The API behind the document is a real ASGI app (Starlette) reached through
httpx2's ASGI transport, so every tool call is a real HTTP exchange with
real status codes, without a second port. `--page-size` sets FastMCP's
`list_page_size`: tools/list then answers in pages with `nextCursor`.
"""

import argparse

import httpx2
import uvicorn
from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

ITEMS = {1: {"id": 1, "name": "keyboard", "price": 70}, 2: {"id": 2, "name": "mouse", "price": 25}}

# The path parameter every /items/{item_id} operation takes.
ITEM_ID = {"name": "item_id", "in": "path", "required": True, "schema": {"type": "integer"}}


def json_ok(schema):
    """A 200 response with a JSON body of `schema`."""
    return {"description": "ok", "content": {"application/json": {"schema": schema}}}


SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Shop", "version": "1.0.0"},
    "servers": [{"url": "http://shop.test"}],
    "paths": {
        "/items": {
            "get": {
                "operationId": "list_items",
                "summary": "Lists the items.",
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": "create_item",
                "summary": "Creates an item.",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["name", "price"],
                                "properties": {"name": {"type": "string"}, "price": {"type": "integer"}},
                            }
                        }
                    },
                },
                "responses": {"201": {"description": "created"}},
            },
        },
        "/items/{item_id}": {
            "get": {
                "operationId": "get_item",
                "summary": "Fetches one item.",
                "parameters": [ITEM_ID],
                "responses": {
                    "200": json_ok(
                        {
                            "type": "object",
                            "properties": {
                                "id": {"type": "integer"},
                                "name": {"type": "string"},
                                "price": {"type": "integer"},
                            },
                        }
                    ),
                    "404": {"description": "no such item"},
                },
            },
            "delete": {
                "operationId": "delete_item",
                "summary": "Deletes one item.",
                "parameters": [ITEM_ID],
                "responses": {"204": {"description": "deleted"}},
            },
        },
        "/items/{item_id}/price": {
            "get": {
                "operationId": "get_price",
                "summary": "The item's price in cents (the API answers a string: it breaks its own contract).",
                "parameters": [ITEM_ID],
                "responses": {
                    "200": json_ok(
                        {
                            "type": "object",
                            "required": ["cents"],
                            "properties": {"cents": {"type": "integer"}},
                        }
                    )
                },
            }
        },
        "/health": {
            "get": {
                "operationId": "health",
                "summary": "Says whether the shop is up.",
                "responses": {"200": {"description": "ok"}},
            }
        },
    },
}


async def list_items(request: Request) -> JSONResponse:
    return JSONResponse(list(ITEMS.values()))


async def create_item(request: Request) -> JSONResponse:
    body = await request.json()
    item = {"id": max(ITEMS) + 1, "name": body["name"], "price": body["price"]}
    ITEMS[item["id"]] = item
    return JSONResponse(item, status_code=201)


async def get_item(request: Request) -> JSONResponse:
    item = ITEMS.get(int(request.path_params["item_id"]))
    if item is None:
        return JSONResponse({"detail": "no such item"}, status_code=404)
    return JSONResponse(item)


async def delete_item(request: Request) -> JSONResponse:
    ITEMS.pop(int(request.path_params["item_id"]), None)
    return JSONResponse(None, status_code=204)


async def get_price(request: Request) -> JSONResponse:
    item = ITEMS.get(int(request.path_params["item_id"]), {"price": 0})
    return JSONResponse({"cents": f"{item['price'] * 100}"})


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"up": True})


backend = Starlette(
    routes=[
        Route("/items", list_items, methods=["GET"]),
        Route("/items", create_item, methods=["POST"]),
        Route("/items/{item_id}", get_item, methods=["GET"]),
        Route("/items/{item_id}", delete_item, methods=["DELETE"]),
        Route("/items/{item_id}/price", get_price, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--page-size", type=int, default=None)
    args = parser.parse_args()
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=backend), base_url="http://shop.test")
    server = FastMCP.from_openapi(SPEC, client=client, name="interop-fastmcp", list_page_size=args.page_size)
    app = server.http_app(path="/mcp")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
