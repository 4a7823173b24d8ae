"""Exceptions any app may raise that the error envelope knows how to answer."""

from __future__ import annotations


class Conflict(Exception):
    """The change conflicts with what exists (answered 409 naming ``field``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class LimitReached(Exception):
    """Too much of something is waiting already (answered 429 naming ``field``
    and the limit, with ``Retry-After``): try again once some of it is done."""

    def __init__(self, field: str, message: str, *, retry_after: int = 30) -> None:
        super().__init__(message)
        self.field = field
        self.retry_after = retry_after


class AppendOnlyError(RuntimeError):
    """Code tried to change or delete an append-only record (the database refuses
    too, for the audit log)."""
