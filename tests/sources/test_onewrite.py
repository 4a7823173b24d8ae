"""A request to a source leaves in one write (sources.onewrite): headers and
body in one send, and a request abandoned before it left is never sent."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpcore2
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from sources.onewrite import OneWriteBackend
from tests.aio import run_async
from tests.upstream import Upstream, running_upstream


class Counted(httpcore2.AsyncNetworkStream):
    """The real stream, its writes counted."""

    def __init__(self, inner: httpcore2.AsyncNetworkStream, writes: list[int]):
        self.inner, self.writes = inner, writes

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self.writes.append(len(buffer))
        await self.inner.write(buffer, timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self.inner.read(max_bytes, timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class CountedBackend(httpcore2.AnyIOBackend):
    def __init__(self) -> None:
        self.writes: list[int] = []

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        return Counted(await super().connect_tcp(*args, **kwargs), self.writes)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with running_upstream() as running:
        yield running


def test_each_request_to_a_source_leaves_in_one_write(upstream):
    network = CountedBackend()
    requests: list[str] = []

    async def counted(request: httpx2.Request) -> None:
        requests.append(request.method)

    async def main() -> Any:
        transport = httpx2.AsyncHTTPTransport(trust_env=False)
        transport._pool._network_backend = OneWriteBackend(network)
        hooks = {"request": [counted]}
        http = httpx2.AsyncClient(transport=transport, event_hooks=hooks)
        async with (
            http,
            Client(streamable_http_client(upstream.url, http_client=http)) as client,
        ):
            return await client.call_tool("get_forecast", {"city": "Oslo"})

    result = run_async(main())
    assert result.structured_content["city"] == "Oslo"
    assert "POST" in requests
    assert len(network.writes) == len(requests)


def test_a_request_closed_before_it_was_read_never_leaves():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        async def main() -> None:
            backend = OneWriteBackend(httpcore2.AnyIOBackend())
            stream = await backend.connect_tcp("127.0.0.1", port, timeout=5)
            await stream.write(b"POST /mcp HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5)
            await stream.aclose()

        run_async(main())
        accepted, _ = server.accept()
        with accepted:
            accepted.settimeout(5)
            assert accepted.recv(1024) == b""
