"""Reading at most so many bytes of an upstream's answer: a 60 MB result must not be
read whole before its size is checked.

A tool call's answer is capped at ``read_cap`` (twice the source's
``max_result_bytes`` plus 64 KiB, room for JSON escapes and the envelope; the exact
size is checked afterwards), every other answer at ``MESSAGE_CAP``. Over HTTP
``CappedTransport`` counts the body as it arrives and drops the connection past the
cap; over stdio ``capped_stdio_client`` reads the child's output in chunks. The call
learns why through ``Overflow``, a context variable the SDK's task copies, so the
note reaches exactly the call it concerns.
The rules: docs/explanation/security.md, Calls (A result cap caps what is read).
"""

from __future__ import annotations

import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from anyio.abc import Process
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)
MESSAGE_CAP = 16 * 1024 * 1024
CHUNK = 65536
STOP_WAIT_S = 2.0
# The notes of the call in progress (in its context; None outside a call).
Overflow: ContextVar[list[str] | None] = ContextVar("quiver_overflow", default=None)


def read_cap(max_result_bytes: int) -> int:
    return 2 * max_result_bytes + 65536


def too_large(read: int, cap: int, what: str = "result") -> str:
    return f"{what}: the answer passed {cap} bytes (read {read}); not read further"


class TooLarge(httpx2.StreamError):
    """The answer passed the cap (the SDK turns a stream error into a failed
    request for that call only)."""


def _note(reason: str) -> None:
    notes = Overflow.get()
    if notes is not None:
        notes.append(reason)


class CappedTransport(httpx2.AsyncBaseTransport):
    """``inner`` with the bodies of answers to ``tools/call`` capped at ``cap``,
    those of every other POST at ``MESSAGE_CAP``."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, cap: int) -> None:
        self.inner = inner
        self.cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if request.method != "POST":
            return response  # the session's own event stream: notifications only
        cap, what = (
            (self.cap, "result") if _is_tool_call(request) else (MESSAGE_CAP, "message")
        )
        encoding = response.headers.get("content-encoding", "identity").lower()
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _Capped(stream, cap, encoding, what)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _is_tool_call(request: httpx2.Request) -> bool:
    if request.method != "POST":
        return False
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return False
    return isinstance(message, dict) and message.get("method") == "tools/call"


class _Capped(httpx2.AsyncByteStream):
    def __init__(
        self, inner: httpx2.AsyncByteStream, cap: int, encoding: str, what: str
    ) -> None:
        self.inner = inner
        self.cap = cap
        self.encoding = encoding
        self.what = what

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.encoding not in ("", "identity"):
            reason = (
                f"{self.what}: the answer came compressed ({self.encoding}) "
                "although Quiver asks for none; refused, so its size cap holds"
            )
            _note(reason)
            raise TooLarge(reason)
        read = 0
        async for chunk in self.inner:
            read += len(chunk)
            if read > self.cap:
                reason = too_large(read, self.cap, self.what)
                _note(reason)
                raise TooLarge(reason)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def capped_stdio_client(
    params: StdioServerParameters,
    errlog: TextIO,
    *,
    cap: int,
    over: Callable[[str], None],
) -> AsyncIterator[tuple[Any, Any]]:
    """A transport (read and write streams) to a child started from
    ``params``, its output capped as the module says; ``over`` is told why when
    a message passes the cap (the connection is then over)."""
    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        stderr=errlog,
        start_new_session=True,
    )
    reader = _StdioReader(process, cap, over)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader.read)
        tasks.start_soon(reader.write)
        try:
            yield reader.read_stream, reader.write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await reader.stop()
            tasks.cancel_scope.cancel()


class _StdioReader:
    """Both pipes of one child: JSON-RPC lines out, capped lines in."""

    def __init__(self, process: Process, cap: int, over: Callable[[str], None]):
        self.process = process
        self.cap = cap
        self.over = over
        self.waiting: dict[Any, str] = {}  # request id -> method
        self.to_session, self.read_stream = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](0)
        self.write_stream, self.from_session = anyio.create_memory_object_stream[
            SessionMessage
        ](0)

    async def write(self) -> None:
        assert self.process.stdin is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with self.from_session:
                async for sent in self.from_session:
                    message = sent.message
                    if isinstance(message, types.JSONRPCRequest):
                        self.waiting[message.id] = message.method
                    line = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await self.process.stdin.send((line + "\n").encode())

    async def read(self) -> None:
        assert self.process.stdout is not None
        buffer = bytearray()
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async with self.to_session:
                async for chunk in self.process.stdout:
                    while (end := chunk.find(b"\n")) >= 0:
                        buffer += chunk[:end]
                        await self._deliver(bytes(buffer))
                        buffer.clear()
                        chunk = chunk[end + 1 :]
                    buffer += chunk
                    limit, what = self._limit()
                    if len(buffer) > limit:
                        self.over(too_large(len(buffer), limit, what))
                        return

    def _limit(self) -> tuple[int, str]:
        """What the message being read may take, and what it is called."""
        if all(m == "tools/call" for m in self.waiting.values()):
            return self.cap, "result"
        return max(self.cap, MESSAGE_CAP), "message"

    async def _deliver(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:  # logged as the SDK's reader logs it, never the line
            log.warning("Failed to parse JSONRPC message (%s)", type(exc).__name__)
            await self.to_session.send(ValueError(type(exc).__name__))
            return
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.waiting.pop(message.id, None)
        await self.to_session.send(SessionMessage(message))

    async def stop(self) -> None:
        """Close the child's stdin, then stop its process group if it lingers."""
        for stream in (self.write_stream, self.read_stream):
            stream.close()
        if self.process.stdin is not None:
            with suppress(OSError, anyio.BrokenResourceError):
                await self.process.stdin.aclose()
        for how in (None, signal.SIGTERM, signal.SIGKILL):
            if how is not None:
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, how)
            with anyio.move_on_after(STOP_WAIT_S):
                await self.process.wait()
            if self.process.returncode is not None:
                break
        with suppress(OSError):
            await self.process.aclose()
