"""One connection to a source's MCP server with the official SDK client.

``open_client`` gives a connected ``mcp.Client`` for a streamable HTTP ``url``
with the source's headers (already decrypted by the caller) and a timeout on
every HTTP exchange. The SDK follows a redirect only when it stays on the
endpoint's origin and keeps the method; anything else fails with an error naming
the location. Which addresses may be reached at all is decided before connecting
(``check_url``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

DEFAULT_TIMEOUT_S = 30.0


@asynccontextmanager
async def open_client(
    url: str,
    headers: dict[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """A connected client; ``mode="auto"`` speaks the 2026-07-28 protocol to a
    server that has it and falls back to the initialize handshake otherwise."""
    http = httpx2.AsyncClient(
        headers=dict(headers or {}),
        timeout=httpx2.Timeout(timeout),
        follow_redirects=False,
    )
    async with (
        http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client
