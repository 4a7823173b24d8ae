"""Talking to a source: list every page of its tools, or test the connection.

The coroutines run on a loop of their own (``run``), in a thread of their own when
the calling thread already runs one (a test's browser, an async view), so the
synchronous services and Celery tasks can call them as plain functions. Errors
come back as one line naming what failed, with the source's header values
masked out of it (``sources.secrets.scrub``)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp import Client

from config.aio import run_sync
from sources import accounts
from sources.capped import Overflow
from sources.connect import open_client, open_stdio_client
from sources.models import Source, SourceKind
from sources.secrets import decrypt_headers, scrub
from sources.stdio import StdioConfigError, stdio_spec

T = TypeVar("T")
MAX_TOOLS = 5000


class UpstreamError(Exception):
    """The source could not be reached or answered badly; the message says why."""


class Challenged(UpstreamError):
    """The source answered ``401`` with a Bearer challenge: it asks for OAuth.
    ``challenge`` is its ``WWW-Authenticate`` header, as it came."""

    def __init__(self, reason: str, challenge: str) -> None:
        super().__init__(reason)
        self.challenge = challenge


@dataclass
class Listing:
    tools: list[dict[str, Any]]
    server: str
    pages: int
    more: bool = False


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def reason(exc: BaseException, headers: dict[str, str]) -> str:
    """One line naming the failure (the innermost errors of the SDK's groups)."""
    parts = []
    for leaf in _leaves(exc):
        text = str(leaf) or type(leaf).__name__
        if leaf.__cause__ is not None and str(leaf.__cause__) not in text:
            text = f"{text} ({leaf.__cause__})"
        parts.append(f"{type(leaf).__name__}: {text}")
    return scrub("; ".join(dict.fromkeys(parts)), headers)[:1000]


async def _list(
    opened: AbstractAsyncContextManager[Client],
    max_pages: int,
    first_page_only: bool,
    notes: list[str],
) -> Listing:
    Overflow.set(notes)  # this task's context, which the SDK's requests inherit
    async with opened as client:
        info = client.server_info
        server = f"{info.name} {info.version}".strip() if info is not None else ""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for page_number in range(1, max_pages + 1):
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            # Counted before a tool is copied, and before another page is asked
            # for: a listing past the cap, in one page or over several, stops here.
            listed = len(tools) + len(page.tools)
            if listed > MAX_TOOLS:
                raise UpstreamError(
                    f"tools/list: more than {MAX_TOOLS} tools ({listed} by page "
                    f"{page_number}); the listing is refused"
                )
            tools += [
                tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                for tool in page.tools
            ]
            cursor = page.next_cursor
            if first_page_only:
                return Listing(tools, server, page_number, more=bool(cursor))
            if not cursor:
                return Listing(tools, server, page_number)
            if cursor in seen:
                raise UpstreamError("tools/list: the cursor repeats")
            seen.add(cursor)
        raise UpstreamError(f"tools/list: more than {max_pages} pages")


def list_tools(source: Source, *, first_page_only: bool = False) -> Listing:
    """Every tool the source lists (all pages), as the JSON of the MCP spec.

    A stdio source's command comes from the settings file, read now; its env
    values are masked out of any error like header values are. A source that
    runs as each person is listed with the first connected account's token
    (``sources.accounts``; ``NoAccount`` when nobody connected); a ``401``
    with a Bearer challenge is ``Challenged``."""
    from django.conf import settings

    timeout = float(source.timeout_seconds)
    http_errors: list[str] = []
    challenges: list[str] = []
    notes: list[str] = []  # why the capped transport stopped reading, if it did
    opened: AbstractAsyncContextManager[Client]
    if source.kind == SourceKind.STDIO:
        try:
            spec = stdio_spec(source.stdio_name)
        except StdioConfigError as exc:
            raise UpstreamError(str(exc)) from None
        headers = spec.env
        opened = open_stdio_client(spec, timeout=timeout, over=notes.append)
    else:
        headers = _headers(source)
        opened = open_client(
            source.url,
            headers,
            timeout=timeout,
            http_errors=http_errors,
            challenges=challenges,
        )
    try:
        pages = int(settings.QUIVER_SOURCE_MAX_PAGES)
        return run_sync(_list(opened, pages, first_page_only, notes))
    except Exception as exc:
        why = f"tools/list: {notes[0]}" if notes else reason(exc, headers)
        if http_errors:
            why = f"{', '.join(dict.fromkeys(http_errors))}: {why}"
        bearer = [c for c in challenges if c.lower().startswith("bearer")]
        if bearer:
            raise Challenged(why[:1000], bearer[0]) from None
        raise UpstreamError(why[:1000]) from None


def _headers(source: Source) -> dict[str, str]:
    """The source's shared headers, or for a source that runs as each person
    the first connected account's (never both)."""
    personal = accounts.lent()
    if personal.is_personal(source):
        return personal.sync_headers(source)
    return decrypt_headers(source)


def check_connection(source: Source) -> dict[str, Any]:
    """Initialize and read the first page of tools: ok with what was seen, or the
    reason it failed."""
    try:
        listing = list_tools(source, first_page_only=True)
    except Challenged as exc:
        asks = "the server asks each person for OAuth authorization; sync the "
        asks += "source to discover its authorization server"
        return {"ok": False, "reason": f"{exc}; {asks}", "oauth": True}
    except UpstreamError as exc:
        return {"ok": False, "reason": str(exc)}
    except Exception as exc:  # unreadable headers, no account, for two
        return {"ok": False, "reason": str(exc)}
    return {
        "ok": True,
        "server": listing.server,
        "tools_on_first_page": len(listing.tools),
        "more_pages": listing.more,
        "reason": "",
    }
