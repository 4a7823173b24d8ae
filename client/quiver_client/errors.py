"""Exceptions: every API error carries the server's ``error``, ``detail`` and
``fields`` (the envelope of ``config/api_errors.py``)."""

from __future__ import annotations

from typing import Any


class QuiverError(Exception):
    """Base of every error this client raises."""


class QuiverConnectionError(QuiverError):
    """The server could not be reached, or did not answer in time."""


class QuiverTimeout(QuiverConnectionError):
    """The request took longer than the client's ``timeout``."""


class PendingApproval(QuiverError):
    """``call()`` of a tool that needs a person's approval: nothing ran. Send the
    same call again with ``approval_id`` once a person approved it. ``answer`` is
    the server's whole answer (``status`` ``pending_approval``)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.approval_id = str(answer.get("approval_id") or "")
        self.tool = str(answer.get("tool") or "")
        super().__init__(
            f"pending_approval {self.approval_id}: {answer.get('reason') or ''}"
        )


class ApprovalTimeout(QuiverError, TimeoutError):
    """``wait_for_approval`` gave up: no decision came within its ``timeout``.
    The approval may still be decided later (until it expires); ``status`` is
    the last one seen (``pending``)."""

    def __init__(self, approval_id: str, status: str = "pending") -> None:
        self.approval_id = approval_id
        self.status = status
        super().__init__(f"approval {approval_id}: still {status} when the wait ended")


class APIError(QuiverError):
    """A 4xx or 5xx answer.

    ``error`` is the server's code (``invalid``, ``not_authenticated``,
    ``permission_denied``, ``not_found``, ``throttled``, ``unavailable``...),
    ``detail`` names the field and the rule, ``fields`` maps each field to its
    messages (empty when the error is about no field). ``retryable`` is the
    server's word that sending the request again is safe and may succeed (a
    limit or an outage met before anything was done); the client retries only
    those. A tool call's ``Unavailable`` with ``retryable`` false may have run
    its tool: check ``detail`` (it names the call) before doing anything again.
    """

    def __init__(
        self,
        status_code: int,
        error: str,
        detail: str,
        fields: dict[str, Any] | None = None,
        *,
        retry_after: float | None = None,
        request_id: str | None = None,
        body: Any = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(f"{status_code} {error}: {detail}")
        self.status_code = status_code
        self.error = error
        self.detail = detail
        self.fields: dict[str, Any] = fields or {}
        self.retry_after = retry_after
        self.request_id = request_id
        self.body = body
        self.retryable = retryable


class BadRequest(APIError):
    """400: bad input; ``fields`` names each field and its rule."""


class AuthenticationError(APIError):
    """401: no key, or a bad, expired or revoked one."""


class PermissionDenied(APIError):
    """403: the key may not do this (scope, roles, unsafe tools)."""


class NeedsAuthorization(PermissionDenied):
    """403 ``needs_authorization``: the tool's server acts for each person, and
    the person the key acts for has not connected their account there (or it
    must be connected again); nothing ran. ``authorization_url`` is where that
    person connects it (None when the key acts for no person: use a key bound
    to one); then the same call can be sent again."""

    @property
    def authorization_url(self) -> str | None:
        body = self.body if isinstance(self.body, dict) else {}
        url = body.get("authorization_url")
        return str(url) if url else None


class NotFound(APIError):
    """404: no such thing, or one this key may not know of."""


class Conflict(APIError):
    """409."""


class PayloadTooLarge(APIError):
    """413: the body is over the server's limit."""


class RateLimited(APIError):
    """429 (after the client's retries, when it was retryable): ``retry_after``
    is the server's wait."""


class Unavailable(APIError):
    """503: a part of the service is out (``retryable``: retried first, nothing
    was done), or a call ran but its outcome could not be recorded (not
    retryable: never sent again)."""


class ServerError(APIError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
    503: Unavailable,
}


# Error codes whose answer has a class of its own, whatever its status.
_BY_CODE: dict[str, type[APIError]] = {"needs_authorization": NeedsAuthorization}


def error_class(status_code: int, error: str | None = None) -> type[APIError]:
    """The exception class for an HTTP status of 400 or more (and the
    envelope's ``error`` code, when it names a class of its own)."""
    if error in _BY_CODE:
        return _BY_CODE[error]
    if status_code in _BY_STATUS:
        return _BY_STATUS[status_code]
    return ServerError if status_code >= 500 else APIError
