"""An HTTP/1.1 request leaves in one write: headers and body in one send.

httpcore writes a request's head and its body separately, so each call to a
source's server was two TCP segments, two system calls here and two wake-ups of
the server (it parses the head, then waits for the body). ``OneWriteBackend``
wraps a network backend so that its streams keep what is written until the next
read, when it leaves at once: an HTTP/1.1 client writes the whole request before
it reads the answer, so nothing waits on bytes held back.

Bytes still held when a stream is closed are dropped, never sent late: the
request they belong to was abandoned (a cancelled or timed-out call) before it
left, so the server never sees it."""

from __future__ import annotations

import ssl
from typing import Any

import httpcore2


class OneWriteStream(httpcore2.AsyncNetworkStream):
    """A connection whose writes leave together at the next read."""

    def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
        self.inner = inner
        self._held = bytearray()
        self._timeout: float | None = None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._held += buffer
        self._timeout = timeout

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._flush()
        return await self.inner.read(max_bytes, timeout)

    async def _flush(self) -> None:
        if self._held:
            data = bytes(self._held)
            self._held.clear()
            await self.inner.write(data, self._timeout)

    async def aclose(self) -> None:
        self._held.clear()  # an abandoned request never leaves late
        await self.inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        await self._flush()
        tls = await self.inner.start_tls(ssl_context, server_hostname, timeout)
        return OneWriteStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class OneWriteBackend(httpcore2.AsyncNetworkBackend):
    """``inner``'s connections, as ``OneWriteStream``s."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend) -> None:
        self.inner = inner

    async def connect_tcp(
        self, host: str, port: int, *args: Any, **options: Any
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self.inner.connect_tcp(host, port, *args, **options)
        return OneWriteStream(stream)

    async def connect_unix_socket(
        self, path: str, *args: Any, **options: Any
    ) -> httpcore2.AsyncNetworkStream:
        stream = await self.inner.connect_unix_socket(path, *args, **options)
        return OneWriteStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
