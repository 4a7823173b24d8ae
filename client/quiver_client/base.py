"""What both clients keep between calls: the retry policy and the tools each
catalog last offered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from quiver_client.errors import QuiverConnectionError, QuiverTimeout
from quiver_client.wire import (
    DEFAULT_CATALOG,
    RetryPolicy,
    api_error,
    offered_names,
)


class ClientBase:
    """What both clients share: settings and the names offered per catalog."""

    def __init__(
        self,
        url: str,
        key: str | None,
        *,
        timeout: float | httpx.Timeout,
        retry: RetryPolicy | None,
    ) -> None:
        self.url = url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._key = key
        # Anthropic names offered per catalog slug, from the last anthropic_tools().
        self._offered: dict[str, frozenset[str]] = {}

    def _settle(
        self,
        attempt: int,
        call: str,
        response: httpx.Response | None,
        failure: httpx.HTTPError | None,
    ) -> tuple[float | None, Any]:
        """After one attempt of ``call``: ``(seconds, None)`` to wait and try again,
        or ``(None, answer)`` with the decoded JSON answer; raises the error to
        give up with. A connection not made (refused, or its connect timed out)
        and an answer the server marks retryable are retried as ``retry``
        allows; any other answer, timeout or transport failure is not (the
        request may have run)."""
        if failure is not None:
            if isinstance(failure, httpx.ConnectTimeout | httpx.ConnectError):
                wait = self.retry.delay(attempt, None)
                if wait is not None:
                    return wait, None
            if isinstance(failure, httpx.TimeoutException):
                raise QuiverTimeout(f"{call}: {failure}") from failure
            raise QuiverConnectionError(f"{call}: {failure}") from failure
        assert response is not None
        if response.status_code < 400:
            return None, (response.json() if response.content else None)
        error = api_error(response)
        if error.retryable:
            wait = self.retry.delay(attempt, error.retry_after)
            if wait is not None:
                return wait, None
        raise error

    def _remember(self, catalog: str | None, tools: list[Any]) -> None:
        self._offered[catalog or DEFAULT_CATALOG] = offered_names(tools)

    def _known_offer(
        self, catalog: str | None, tools: Sequence[Mapping[str, Any]] | None
    ) -> frozenset[str] | None:
        """The names the model was given: ``tools`` when the caller passes the
        list it sent, else the last ``anthropic_tools(catalog)`` of this client
        (never refreshed behind the caller's back: a tool added since is not in
        the request the model answers)."""
        if tools is not None:
            return offered_names(tools)
        return self._offered.get(catalog or DEFAULT_CATALOG)
