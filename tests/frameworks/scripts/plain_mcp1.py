"""A plain mcp 1.x client (the SDK the frameworks pin) calling a tool found by
search_tools by its own name, twice without and twice after listing the
search's list_cursor page. Prints one JSON object: the requests each part sent
and the results' structured content. Run by tests/frameworks in the frameworks'
venv with QUIVER_URL and QUIVER_API_KEY set."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PaginatedRequestParams

sent: list[str] = []


async def count(request: httpx.Request) -> None:
    method = json.loads(request.content or b"{}").get("method", "(answer)")
    if not method.startswith("notifications/"):
        sent.append(method)


async def calls(session: ClientSession, name: str) -> tuple[list[str], list[Any]]:
    """Two calls of ``name``, and the requests they took."""
    sent.clear()
    results = [await session.call_tool(name, {"city": c}) for c in ("Lyon", "Nice")]
    return list(sent), [result.structuredContent for result in results]


async def main() -> None:
    url, key = os.environ["QUIVER_URL"], os.environ["QUIVER_API_KEY"]
    http = httpx.AsyncClient(
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
        event_hooks={"request": [count]},
    )
    async with (
        http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        found = await session.call_tool("search_tools", {"query": "weather forecast"})
        answer = found.structuredContent or {}
        name = answer["tools"][0]["name"]
        before, results = await calls(session, name)
        cursor = PaginatedRequestParams(cursor=answer["list_cursor"])
        page = await session.list_tools(params=cursor)
        after, again = await calls(session, name)
    print(
        json.dumps(
            {
                "name": name,
                "listed": [tool.name for tool in page.tools],
                "without_cursor": before,
                "with_cursor": after,
                "results": results + again,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
