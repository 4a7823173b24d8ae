"""Exceptions any app may raise that the error envelope knows how to answer."""

from __future__ import annotations


class Conflict(Exception):
    """The change conflicts with what exists (answered 409 naming ``field``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class AppendOnlyError(RuntimeError):
    """Code tried to change or delete an append-only record (the database refuses
    too, for the audit log)."""
