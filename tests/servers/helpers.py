"""What the official servers' tests do through Quiver and straight to a server:
an agent's REST calls, an MCP client on /mcp, and the SDK's own client on the
server itself (to compare what Quiver answers with what the server gave)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from rest_framework.test import APIClient

from audit.models import AuditEvent
from tests.aio import run_async

EXECUTE = "/api/v1/tool-calls/execute"


def agent(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def execute(key: str, name: str, arguments: dict[str, Any], **more: Any) -> Any:
    """POST /api/v1/tool-calls/execute as the agent: the status and the answer."""
    body = {"name": name, "arguments": arguments, **more}
    answer = agent(key).post(EXECUTE, body, format="json")
    return answer.status_code, answer.json()


def select(key: str, query: str, **more: Any) -> list[str]:
    body = {"query": query, "max_candidates": 5, **more}
    answer = agent(key).post("/api/v1/select", body, format="json")
    assert answer.status_code == 200, answer.json()
    return [tool["name"] for tool in answer.json()["tools"]]


def on_mcp(url: str, key: str, work: Callable[[Client], Awaitable[Any]]) -> Any:
    """``work`` with an official MCP client connected to Quiver's /mcp."""

    async def main() -> Any:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with http, Client(transport) as client:
            return await work(client)

    return run_async(main())


def straight(url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The server's own answer to the call, with the SDK's client, no Quiver."""

    async def main() -> dict[str, Any]:
        async with Client(streamable_http_client(url)) as client:
            result = await client.call_tool(name, arguments)
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    return run_async(main())


def call_rows(call_id: str) -> list[AuditEvent]:
    """A call's audit events: its start (whose id is the call_id) and what
    followed it (the outcome names the start)."""
    rows = AuditEvent.objects.filter(event_type="tool_call").order_by("pk")
    return [
        row
        for row in rows
        if str(row.pk) == call_id or str(row.input.get("call_id")) == call_id
    ]
