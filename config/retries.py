"""Whether an error answer may be sent again: every 429 and 5xx of the API and of
/mcp says so in its JSON envelope, ``"retryable": true`` or ``false``.

``true`` only when nothing the request asked for was done (no upstream
contacted, no change committed, no answer given) and its cause is expected to
pass (a limit, an outage); such an answer carries ``Retry-After`` (seconds). A
``false`` answer never carries ``Retry-After``: sending it again may do it twice
(a tool call whose upstream may have run) or cannot help (a query too slow, a
source's unreadable headers, an unexpected error). The clients retry a
``true`` answer and nothing else (docs/reference/api.md, "Errors")."""

from __future__ import annotations

from typing import Any

from django.http.response import HttpResponseBase

RETRY_AFTER_S = 5  # an outage's or a busy limit's wait, when nothing says more


def retry_body(body: dict[str, Any], retry_after: int | None) -> dict[str, Any]:
    """``body`` saying whether it may be sent again (None: it may not)."""
    return {**body, "retryable": retry_after is not None}


def retry_headers(retry_after: int | None) -> dict[str, str]:
    """The ``Retry-After`` a retryable answer carries (none for the others)."""
    return {} if retry_after is None else {"Retry-After": str(retry_after)}


def mark_retry(response: HttpResponseBase, retry_after: int | None) -> None:
    """Set or drop ``response``'s ``Retry-After`` to match its ``retryable``."""
    if retry_after is None:
        if response.has_header("Retry-After"):
            del response["Retry-After"]
    else:
        response["Retry-After"] = str(retry_after)
