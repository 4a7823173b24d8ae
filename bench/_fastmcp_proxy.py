"""The FastMCP proxy, the fastest peer of issue 32, for bench/call_overhead.py.

Runs in the bench-only venv (``make bench-fastmcp``: .quiver/bench-fastmcp/venv,
from bench/fastmcp-requirements.txt), never in Quiver's: fastmcp ships and pins
an ``mcp`` of its own choosing. Given the upstream's URL, it connects one FastMCP
``Client`` to it and hands that connected client to ``create_proxy``, so every
proxied call reuses that one upstream session (fastmcp's documented way to keep
the session; given a URL instead it opens a new session per request). It serves
streamable HTTP (fastmcp's defaults) on a free loopback port, prints its URL and
serves until stdin closes.

    .quiver/bench-fastmcp/venv/bin/python bench/_fastmcp_proxy.py <upstream url>
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
import warnings

from fastmcp import Client
from fastmcp.server import create_proxy


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def listening(port: int, server: asyncio.Task[None]) -> None:
    """Until the proxy accepts connections (or its task ended)."""
    while not server.done():
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return
    server.result()  # raises why it stopped


async def stdin_closed() -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)


async def serve(upstream: str) -> None:
    port = free_port()
    async with Client(upstream) as backend:
        with warnings.catch_warnings():
            # "reusing existing session": the reuse is what this peer measures.
            warnings.simplefilter("ignore")
            proxy = create_proxy(backend, name="bench-proxy")
        server = asyncio.create_task(
            # host and port, not a bound socket: uvicorn given ``sockets`` left
            # Nagle on here, and each answer waited ~40 ms for the client's ACK.
            proxy.run_http_async(
                show_banner=False, log_level="warning", host="127.0.0.1", port=port
            )
        )
        await listening(port, server)
        print(f"http://127.0.0.1:{port}/mcp", flush=True)
        await stdin_closed()
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(sys.argv[1]))
