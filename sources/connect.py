"""One connection to a source's MCP server with the official SDK client.

``open_client`` gives a connected ``mcp.Client`` for a streamable HTTP ``url``
with the source's headers (already decrypted by the caller) and a timeout on
every HTTP exchange. The SDK follows a redirect only when it stays on the
endpoint's origin and keeps the method; anything else fails with an error naming
the location. Which addresses may be reached at all is decided on every connection
(``sources.netguard.GuardedBackend``: resolved once, every address checked, the
connection made to a checked address), and no proxy from the environment is used,
so the check is of the address actually reached."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TextIO

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from sources.capped import MESSAGE_CAP, CappedTransport, capped_stdio_client
from sources.netguard import GuardedBackend
from sources.onewrite import OneWriteBackend
from sources.secrets import scrub
from sources.stdio import StdioSpec

DEFAULT_TIMEOUT_S = 30.0
STDERR_LINE_CHARS = 2000
STDERR_LINES = 1000
stderr_log = logging.getLogger("sources.stdio.stderr")


class _NoStdioOutput(logging.Filter):
    """The SDK's stdio client logs a line it cannot parse with the exception, whose
    text holds the line itself: whatever a command printed (its env's secrets, if
    it printed them) would reach Quiver's logs. Keep the message and the
    exception's type only."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()} ({type(record.exc_info[1]).__name__})"
            record.args = None
        record.exc_info = None
        record.exc_text = None
        return True


# The streamable HTTP client logs an answer it cannot parse the same way (a
# validation error quotes the answer): an upstream echoing a secret would reach
# the log.
for _name in ("mcp.client.stdio", "mcp.client.streamable_http"):
    logging.getLogger(_name).addFilter(_NoStdioOutput())


@asynccontextmanager
async def open_client(
    url: str,
    headers: dict[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    mode: str = "auto",
    http_errors: list[str] | None = None,
    result_cap: int | None = None,
    challenges: list[str] | None = None,
) -> AsyncIterator[Client]:
    """A connected client; ``mode="auto"`` speaks the 2026-07-28 protocol to a
    server that has it and falls back to the initialize handshake otherwise.

    ``http_errors``, when given, gets one line per HTTP answer that was not a
    success ("HTTP 401 Unauthorized"), which the SDK's errors do not name.
    ``result_cap``, when given, is the most read of an answer to a tool call;
    any other answer is read to ``MESSAGE_CAP`` at most (``sources.capped``).
    ``challenges``, when given, gets the ``WWW-Authenticate`` header of each
    ``401`` (a server asking for OAuth names its resource metadata there)."""

    async def note(response: httpx2.Response) -> None:
        if http_errors is not None and response.status_code >= 300:
            http_errors.append(f"HTTP {response.status_code} {response.reason_phrase}")
        if challenges is not None and response.status_code == 401:
            challenges.append(response.headers.get("www-authenticate", "")[:4000])

    transport = CappedTransport(guarded_transport(), result_cap or MESSAGE_CAP)
    # What is counted is what is kept: a compressed answer could not be capped.
    sent = dict(headers or {}) | {"Accept-Encoding": "identity"}
    http = httpx2.AsyncClient(
        event_hooks={"response": [note]},
        headers=sent,
        timeout=httpx2.Timeout(timeout),
        follow_redirects=False,
        transport=transport,
        trust_env=False,
    )
    async with (
        http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


@asynccontextmanager
async def open_stdio_client(
    spec: StdioSpec,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    mode: str = "auto",
    result_cap: int | None = None,
    over: Callable[[str], None] | None = None,
) -> AsyncIterator[Client]:
    """A connected client to the command of a stdio entry of the settings file,
    started as a child process of Quiver (with the SDK's safe inherited
    environment plus the entry's ``env``) and stopped when the block ends. Every
    request waits at most ``timeout`` seconds. No network address is involved, so
    the deny-list of ``sources.netguard`` has nothing to check.

    The child's output is read by Quiver's capped transport (``sources.capped``:
    an answer to a tool call to ``result_cap``, any message to ``MESSAGE_CAP``),
    which tells ``over`` why it ended the connection."""
    params = StdioServerParameters(
        command=spec.command,
        args=list(spec.args),
        env=dict(spec.env),
        cwd=spec.cwd,
    )
    with ScrubbedStderr(spec) as errlog:
        told = over or (lambda reason: None)
        cap = result_cap or MESSAGE_CAP
        transport = capped_stdio_client(params, errlog, cap=cap, over=told)
        async with Client(transport, mode=mode, read_timeout_seconds=timeout) as client:
            yield client


class ScrubbedStderr:
    """The stdio command's stderr, through a pipe: each line is logged (at most
    ``STDERR_LINE_CHARS`` characters, ``STDERR_LINES`` lines a process) under
    ``sources.stdio.stderr`` with the entry's env values masked, instead of the
    child writing straight into Quiver's own stderr, where a command that prints
    its token would put it into the worker's log."""

    def __init__(self, spec: StdioSpec) -> None:
        self.spec = spec
        self._read, write = os.pipe()
        self.errlog = os.fdopen(write, "w")
        self._thread = threading.Thread(
            target=self._drain, name=f"stdio-stderr-{spec.name}", daemon=True
        )

    def __enter__(self) -> TextIO:
        self._thread.start()
        return self.errlog

    def __exit__(self, *exc: object) -> None:
        self.errlog.close()  # the child's copy closes when it exits: EOF

    def _drain(self) -> None:
        logged = 0
        with os.fdopen(self._read, "r", errors="replace") as lines:
            for line in lines:
                if logged < STDERR_LINES:
                    text = scrub(line.rstrip("\n")[:STDERR_LINE_CHARS], self.spec.env)
                    stderr_log.warning("stdio source %s: %s", self.spec.name, text)
                logged += 1
        if logged > STDERR_LINES:
            stderr_log.warning(
                "stdio source %s: %d more stderr lines not logged",
                self.spec.name,
                logged - STDERR_LINES,
            )


def guarded_transport() -> httpx2.AsyncHTTPTransport:
    """httpx's transport with its connection pool on the guarded network backend,
    each request in one write (``sources.onewrite``; httpx takes no backend
    argument: the pool's attribute is set in its place)."""
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    transport._pool._network_backend = OneWriteBackend(GuardedBackend())
    return transport
