"""What the clients send and read on the wire: request bodies, the retry policy
for answers the server marks retryable, and API errors from answers."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx

from quiver_client.errors import APIError, PendingApproval, error_class
from quiver_client.types import ToolCallResult

API = "/api/v1/"
DEFAULT_CATALOG = "default"
USER_AGENT = "quiver-client/0.1"


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of an answer the server marks ``"retryable": true`` (a limit or an
    outage met before anything was done: nothing ran) and of a connection that
    never opened. Nothing else is sent again: not a 503 without the mark, and
    never a tool call whose tool may have run (the server answers that
    ``"retryable": false``, without ``Retry-After``).

    The wait is the server's ``Retry-After`` when it sends one, else
    ``backoff * 2**attempt`` (at most ``max_backoff``) plus up to 10% jitter. A
    ``Retry-After`` longer than ``max_wait`` is not waited for: the error is
    raised at once, carrying ``retry_after``.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_wait: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry ``attempt`` (0-based), None to give up."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait else None
        wait = min(self.max_backoff, self.backoff * 2**attempt)
        return wait * (1 + random.random() / 10)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date from now."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def api_error(response: httpx.Response) -> APIError:
    """The exception for an error answer, from the API's envelope when it has one."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    envelope = body if isinstance(body, dict) else {}
    error = envelope.get("error")
    detail = envelope.get("detail")
    fields = envelope.get("fields")
    cls = error_class(response.status_code, str(error) if error else None)
    return cls(
        response.status_code,
        str(error) if error else f"http_{response.status_code}",
        str(detail) if detail else (response.reason_phrase or ""),
        fields if isinstance(fields, dict) else {},
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        request_id=response.headers.get("X-Request-ID"),
        body=body,
        retryable=envelope.get("retryable") is True,
    )


def select_body(
    query: Any, messages: Sequence[Mapping[str, Any]] | None, options: dict[str, Any]
) -> dict[str, Any]:
    """The body of ``POST select``: exactly one of ``query`` and ``messages``."""
    if (query is None) == (messages is None):
        raise TypeError("select: give exactly one of query or messages")
    body = {k: v for k, v in options.items() if v is not None}
    if query is not None:
        body["query"] = query
    else:
        body["messages"] = [dict(m) for m in messages or ()]
    return body


def validate_body(
    output: Any, selection_id: str | None, format: str | None, catalog: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"output": output}
    for key, value in (
        ("selection_id", selection_id),
        ("format", format),
        ("catalog", catalog),
    ):
        if value is not None:
            body[key] = str(value)
    return body


def call_body(
    name: str,
    arguments: Mapping[str, Any] | None,
    catalog: str | None,
    selection_id: str | None,
    approval_id: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
    for key, value in (
        ("catalog", catalog),
        ("selection_id", selection_id),
        ("approval_id", approval_id),
    ):
        if value is not None:
            body[key] = str(value)
    return body


def call_answer(answer: Any) -> ToolCallResult:
    """The typed result, or ``PendingApproval`` when a person must approve."""
    if isinstance(answer, dict) and answer.get("status") == "pending_approval":
        raise PendingApproval(answer)
    return cast(ToolCallResult, answer)


def export_params(catalog: str | None) -> tuple[str, dict[str, str]]:
    slug = catalog or DEFAULT_CATALOG
    return f"catalogs/{slug}/export", {"format": "anthropic", "status": "active"}


def search_options(
    catalog: str | None, limit: int, fmt: str, options: dict[str, Any]
) -> dict[str, Any]:
    return {**options, "catalog": catalog, "max_candidates": limit, "format": fmt}


def request_headers(
    key: str | None, headers: Mapping[str, str] | None
) -> dict[str, str]:
    result = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if key:
        result["Authorization"] = f"Bearer {key}"
    result.update(headers or {})
    return result


def api_base_url(url: str) -> str:
    return url.rstrip("/") + API


def offered_names(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The deferred tools' names of an ``anthropic_tools()`` list."""
    return frozenset(str(t["name"]) for t in tools if t.get("defer_loading"))


def plain_output(output: Any) -> Any:
    """A provider SDK object as plain JSON (its ``model_dump``), else itself."""
    dump = getattr(output, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(output, list):
        return [plain_output(item) for item in output]
    return output
