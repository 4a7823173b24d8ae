"""Waiting for a person's decision on an approval (``wait_for_approval``).

The clients poll ``GET /api/v1/approvals/{id}`` (an agent's key may read the
approvals its own calls asked for) until its status is no longer ``pending``.
The wait between polls starts at ``interval`` and grows by half each time up to
``max_interval``, with a little jitter; a 429 or 503 answer waits at least its
``Retry-After``; a connection that fails is tried again. Nothing waits past the
deadline: then ``ApprovalTimeout`` is raised, carrying the last status seen.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, cast

import httpx

from quiver_client.errors import APIError, ApprovalTimeout
from quiver_client.types import Approval
from quiver_client.wire import api_error

RETRY_STATUSES = frozenset({429, 503})
GROWTH = 1.5
JITTER = 0.1


def approval_key(approval_id: Any) -> str:
    """The id of ``approval_id``: a string, a UUID, or a ``PendingApproval``."""
    key = str(getattr(approval_id, "approval_id", approval_id) or "").strip()
    if not key:
        raise ValueError("approval_id: give the id a pending call answered")
    return key


class Waiter:
    """The polling schedule of one wait (pure: no I/O, a clock to read)."""

    def __init__(
        self,
        approval_id: Any,
        *,
        timeout: float | None,
        interval: float,
        max_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval <= 0 or max_interval < interval:
            raise ValueError("interval: above 0 and at most max_interval")
        self.approval_id = approval_key(approval_id)
        self.path = f"approvals/{self.approval_id}"
        self.clock = clock
        self.deadline = None if timeout is None else clock() + max(0.0, timeout)
        self.interval = interval
        self.max_interval = max_interval
        self.status = "pending"

    def decided(self, answer: Any) -> Approval | None:
        """The approval when a person (or its expiry) has decided it."""
        status = str(answer.get("status", "")) if isinstance(answer, dict) else ""
        self.status = status or self.status
        if status and status != "pending":
            return cast(Approval, answer)
        return None

    def next_wait(self, retry_after: float | None = None) -> float:
        """Seconds to sleep before the next poll; ``ApprovalTimeout`` when the
        deadline has come (or would come before the server's ``Retry-After``)."""
        wait = self.interval * (1 + random.uniform(-JITTER, JITTER))
        self.interval = min(self.max_interval, self.interval * GROWTH)
        if retry_after is not None:
            wait = max(wait, retry_after)
        if self.deadline is not None:
            left = self.deadline - self.clock()
            if left <= 0 or (retry_after is not None and retry_after > left):
                raise ApprovalTimeout(self.approval_id, self.status)
            wait = min(wait, left)
        return wait

    def settle(
        self, response: httpx.Response | None, failure: httpx.HTTPError | None
    ) -> tuple[Approval | None, float | None]:
        """After one poll: ``(approval, None)`` when decided, else ``(None,
        seconds)`` to wait; raises the API's error for any other answer."""
        if failure is not None:
            if isinstance(failure, httpx.TransportError):
                return None, self.next_wait()
            raise failure
        assert response is not None
        if response.status_code in RETRY_STATUSES:
            error: APIError = api_error(response)
            return None, self.next_wait(error.retry_after)
        if response.status_code >= 400:
            raise api_error(response)
        found = self.decided(response.json())
        return (found, None) if found is not None else (None, self.next_wait())
