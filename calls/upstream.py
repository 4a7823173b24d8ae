"""Calling a tool on a source's MCP server, with the official SDK client.

Opening an SDK client costs round trips, so each process keeps one connected client
per source (per connected account, for a source that runs as each person) in a pool
on one event loop thread. A client is keyed by everything that shapes the connection
(source, account, url, encrypted headers, timeout), so an edit or a refreshed token
makes a new one and closes the old; a broken one is dropped. The whole call, one
retry of an idempotent tool after a connection failure included, stays within the
source's timeout, and what comes back is capped as it is read (``sources.capped``)
and scrubbed of the source's secrets (``sources.secrets``) before anyone sees it.
The rules: docs/explanation/security.md, Calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp import Client
from mcp.shared.exceptions import MCPError

from config.aio import LoopThread, per_process
from sources.capped import Overflow, read_cap
from sources.connect import open_client, open_stdio_client
from sources.secrets import Scrubber
from sources.stdio import StdioConfigError, StdioSpec, stdio_spec
from telemetry import metrics, tracing

log = logging.getLogger(__name__)
CONNECTION_CLOSED = -32000  # the SDK's code when the transport went away
LIST_PAGE_CAP = 100
CONNECTION_ERRORS = (httpx2.TransportError, OSError, ConnectionError)


@dataclass(frozen=True)
class Target:
    """Where a call goes: a source's url, headers (decrypted) and timeout; for a
    stdio source (``kind`` "stdio") the settings file's entry ``stdio_name``,
    read at every call (``stdio``, with a fingerprint of it in the key, so a
    changed command replaces the pooled process)."""

    source_id: int
    source_name: str
    url: str
    headers: dict[str, str] = field(hash=False, compare=False)
    # The person's connection whose token the headers hold (0: the source's own).
    account: int = 0
    # The source's catalog: with its name, the source's label in the metrics.
    catalog: str = field(default="", compare=False)
    headers_fingerprint: str = ""
    timeout: float = 30.0
    kind: str = "mcp"
    stdio_name: str = ""
    stdio: StdioSpec | None = field(default=None, hash=False, compare=False)
    max_result_bytes: int = 100_000

    @property
    def key(self) -> tuple[Any, ...]:
        stdio = self.stdio.fingerprint if self.stdio is not None else ""
        return (
            self.source_id,
            self.account,
            self.kind,
            self.url,
            self.stdio_name,
            stdio,
            self.headers_fingerprint,
            self.timeout,
            self.max_result_bytes,
        )

    @property
    def secrets(self) -> dict[str, str]:
        """The values no error may show: the headers, or the command's env."""
        return dict(self.stdio.env) if self.stdio is not None else self.headers

    def opened(
        self,
        over: Callable[[str], None] | None = None,
        statuses: list[str] | None = None,
    ) -> Any:
        """The SDK client's context manager for this target, its answers capped
        (``over`` hears why a stdio connection was ended; ``statuses`` gets each
        HTTP answer that was no success)."""
        cap = read_cap(self.max_result_bytes)
        if self.stdio is not None:
            return open_stdio_client(
                self.stdio, timeout=self.timeout, result_cap=cap, over=over
            )
        return open_client(
            self.url,
            self.headers,
            timeout=self.timeout,
            result_cap=cap,
            http_errors=statuses,
        )


def fingerprint(secret_text: str) -> str:
    return hashlib.sha256(secret_text.encode()).hexdigest()


@dataclass(frozen=True)
class UpstreamResult:
    """The upstream's answer as it was: its content blocks and structured content."""

    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    is_error: bool
    attempts: int
    # The source's own secrets were found in it (and masked).
    masked: bool = False


class UpstreamFailure(Exception):
    """No result from the upstream: it could not be reached, broke, was too slow,
    or answered something that is not a tool result."""

    def __init__(
        self,
        reason: str,
        *,
        timed_out: bool = False,
        attempts: int = 1,
        unauthorized: bool = False,
    ):
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out
        self.attempts = attempts
        # The upstream answered 401: it refused the credential, ran nothing.
        self.unauthorized = unauthorized


class _BrokenConnection(Exception):
    """The connection failed: the call may be retried if the tool is idempotent."""


class _Connection:
    """One connected client, held open by a task of the pool's loop."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.overflow = ""  # why the transport ended it (a result over the cap)
        self.statuses: list[str] = []  # its HTTP answers that were no success
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._hold())

    @property
    def alive(self) -> bool:
        return not self.task.done() and not self.stop.is_set()

    async def _hold(self) -> None:
        target = self.target
        try:
            async with target.opened(self._overflowed, self.statuses) as client:
                await _list_every_page(client)
                self.client = client
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:  # reported to the callers waiting on ready
            self.error = exc
        finally:
            self.client = None
            self.ready.set()

    async def connected(self) -> Client:
        await self.ready.wait()
        if self.client is None:
            raise _BrokenConnection(_describe(self.error) or "connection closed")
        return self.client

    def close(self) -> None:
        self.stop.set()

    @property
    def unauthorized(self) -> bool:
        """Whether the upstream answered 401 (the credential refused)."""
        return any(status.startswith("HTTP 401") for status in self.statuses)

    def _overflowed(self, reason: str) -> None:
        self.overflow = reason
        self.close()


async def _list_every_page(client: Client) -> None:
    """The SDK keeps each listed tool's output schema (to check results) and, on
    2026-07-28 connections, its header mirroring: list every page once."""
    cursor: str | None = None
    for _ in range(LIST_PAGE_CAP):
        page = await client.list_tools(cursor=cursor)
        cursor = page.next_cursor
        if not cursor:
            return


class _Pool(LoopThread):
    """The process's event loop thread and its connected clients."""

    def __init__(self) -> None:
        self.connections: dict[tuple[Any, ...], _Connection] = {}
        super().__init__("quiver-upstream")

    def connection(self, target: Target) -> _Connection:
        """The pooled connection for ``target`` (on the loop), opening one when
        there is none or it broke; other keys of the same source and account
        are closed."""
        found = self.connections.get(target.key)
        if found is not None and found.alive:
            return found
        for key, other in list(self.connections.items()):
            if key[:2] == target.key[:2] or not other.alive:
                other.close()
                del self.connections[key]
        made = _Connection(target)
        self.connections[target.key] = made
        return made

    def drop(self, connection: _Connection) -> None:
        connection.close()
        if self.connections.get(connection.target.key) is connection:
            del self.connections[connection.target.key]

    async def close_all(self) -> None:
        for connection in list(self.connections.values()):
            self.drop(connection)


def pool() -> _Pool:
    """This process's pool (a new one after a fork: threads do not survive it)."""
    return per_process("upstream-pool", _Pool)


def call_upstream(
    target: Target, name: str, arguments: dict[str, Any], *, idempotent: bool
) -> UpstreamResult:
    """Call ``name`` upstream within the target's timeout; ``UpstreamFailure``
    when no result came back. Timed by source and outcome in the metrics, and
    a ``quiver.call.upstream`` span, whose trace the MCP SDK carries to the
    upstream in the request's ``_meta`` (``traceparent``)."""
    began, outcome = time.perf_counter(), "failed"
    with tracing.span("quiver.call.upstream", **_span_facts(target, name)):
        try:
            result = _call_upstream(target, name, arguments, idempotent=idempotent)
            outcome = "failed" if result.is_error else "ran"
            tracing.annotate(**{"quiver.attempts": result.attempts})
            return result
        except UpstreamFailure as exc:
            outcome = "timed_out" if exc.timed_out else "failed"
            tracing.annotate(**{"quiver.attempts": exc.attempts})
            raise
        finally:
            tracing.annotate(**{"quiver.outcome": outcome})
            source = metrics.source_name(target.catalog, target.source_name)
            metrics.upstream_answered(source, outcome, time.perf_counter() - began)


def _span_facts(target: Target, name: str) -> dict[str, Any]:
    """RPC conventions for the call (the tool's name, where; no arguments)."""
    where = urlsplit(target.url) if target.kind != "stdio" else None
    return {
        "rpc.system": "mcp",
        "rpc.method": "tools/call",
        "gen_ai.tool.name": name,
        "quiver.source": target.source_name,
        "server.address": where.hostname if where else None,
        "server.port": where.port if where else None,
    }


def _call_upstream(
    target: Target, name: str, arguments: dict[str, Any], *, idempotent: bool
) -> UpstreamResult:
    deadline = time.monotonic() + target.timeout
    if target.kind == "stdio":
        try:
            spec = stdio_spec(target.stdio_name)
        except StdioConfigError as exc:
            raise UpstreamFailure(f"source {target.source_name!r}: {exc}") from None
        target = dataclasses.replace(target, stdio=spec)
    work = pool()
    coroutine = _call(work, target, name, arguments, idempotent, deadline)
    scrub = Scrubber.of(target.secrets)
    try:
        result = work.submit(coroutine, target.timeout + 5)
    except TimeoutError as exc:  # the loop itself did not answer in time
        raise UpstreamFailure(_timed_out(target), timed_out=True) from exc
    except UpstreamFailure as exc:  # no header value or stdio env in a reason
        exc.reason = scrub(exc.reason)
        exc.args = (exc.reason,)
        raise
    # Scrubbed here, in the caller's thread: the pool's loop serves every call.
    content = scrub.value(result.content)
    structured = scrub.value(result.structured_content)
    masked = content != result.content or structured != result.structured_content
    return dataclasses.replace(
        result, content=content, structured_content=structured, masked=masked
    )


async def _call(
    work: _Pool,
    target: Target,
    name: str,
    arguments: dict[str, Any],
    idempotent: bool,
    deadline: float,
) -> UpstreamResult:
    attempts = 0
    while True:
        attempts += 1
        remaining = deadline - time.monotonic()
        connection = work.connection(target)
        try:
            result = await asyncio.wait_for(
                _attempt(connection, name, arguments), max(remaining, 0.001)
            )
        except TimeoutError as exc:
            raise UpstreamFailure(
                _timed_out(target), timed_out=True, attempts=attempts
            ) from exc
        except _BrokenConnection as exc:
            work.drop(connection)
            if connection.unauthorized:
                reason = f"source {target.source_name!r}: refused the credential (401)"
                raise UpstreamFailure(
                    reason, attempts=attempts, unauthorized=True
                ) from exc
            retry = idempotent and attempts == 1 and deadline > time.monotonic()
            if retry:
                why = Scrubber(target.secrets)(str(exc))
                log.info("retrying idempotent %s on %s: %s", name, target.url, why)
                continue
            reason = f"source {target.source_name!r}: {exc}"
            raise UpstreamFailure(_tried(reason, attempts), attempts=attempts) from exc
        except UpstreamFailure as exc:
            exc.attempts = attempts
            if connection.unauthorized:
                work.drop(connection)
                exc.unauthorized = True
            raise
        return UpstreamResult(
            content=[
                block.model_dump(by_alias=True, exclude_none=True, mode="json")
                for block in result.content
            ],
            structured_content=result.structured_content,
            is_error=bool(result.is_error),
            attempts=attempts,
        )


async def _attempt(
    connection: _Connection, name: str, arguments: dict[str, Any]
) -> Any:
    """One ``tools/call``. An answer the transport stopped reading fails the
    call naming the cap, never retried (``sources.capped``)."""
    client = await connection.connected()
    notes: list[str] = []
    Overflow.set(notes)  # this task's own context, which the request's inherits
    try:
        return await _request(connection, client, name, arguments)
    except (_BrokenConnection, UpstreamFailure) as exc:
        over = notes[0] if notes else connection.overflow
        if not over:
            raise
        target = connection.target
        reason = (
            f"{over}; source {target.source_name!r} allows "
            f"{target.max_result_bytes} bytes (max_result_bytes)"
        )
        raise UpstreamFailure(reason) from exc


async def _request(
    connection: _Connection, client: Client, name: str, arguments: dict[str, Any]
) -> Any:
    try:
        return await client.call_tool(name, arguments)
    except MCPError as exc:
        if exc.code == CONNECTION_CLOSED:
            raise _BrokenConnection(_describe(exc)) from exc
        # A protocol error (a session the server forgot, say): the next call
        # opens a new connection, and this one is not retried. (An answer over
        # the cap is this call's alone: the connection stays.)
        if not Overflow.get():
            connection.close()
        reason = f"source {connection.target.source_name!r}: {_describe(exc)}"
        raise UpstreamFailure(reason) from exc
    except CONNECTION_ERRORS as exc:
        raise _BrokenConnection(_describe(exc)) from exc
    except (RuntimeError, ValueError) as exc:  # e.g. structured content off schema
        reason = f"source {connection.target.source_name!r}: {_describe(exc)}"
        raise UpstreamFailure(reason) from exc


def _describe(exc: BaseException | None) -> str:
    """One line for an exception, its first leaf when it is a group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if exc is None:
        return ""
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]


def _timed_out(target: Target) -> str:
    return f"source {target.source_name!r}: no answer within {target.timeout:g} s"


def _tried(reason: str, attempts: int) -> str:
    return reason if attempts == 1 else f"{reason} (after {attempts} attempts)"
