"""A selection's audit row sent before its answer is rendered, committed before it
is sent.

A row's COMMIT waits for the WAL flush, which would add straight to the answer's
latency: ``send_soon`` sends the INSERT on a connection of its own
(``config.fast.beside``) and the caller collects its reply (``PendingEvent.wait``)
before a byte of the answer goes out, so an answer is never sent without its
committed row and a row that could not be written turns the answer into an error.
Inside a transaction the row is written at once in it, as ``record_event`` does.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db import connection

from audit.models import AuditEvent
from config.exceptions import AppendOnlyError
from config.fast import beside
from config.fast import insert as fast_insert
from config.fast.beside import WAIT_TIMEOUT_S

PART = "audit"


class PendingEvent:
    """An audit row on its way; ``wait`` returns it once committed, or raises what
    the database answered (``OperationalError`` for a lost connection or a
    timeout, ``IntegrityError`` for a refused row, else ``DatabaseError``)."""

    def __init__(self, event: AuditEvent, sender: beside.Sender | None = None) -> None:
        self.event = event
        self._sender = sender
        self.waited_ms = 0.0

    def wait(self, timeout: float = WAIT_TIMEOUT_S) -> AuditEvent:
        if self._sender is not None:
            began = time.perf_counter()
            sender, self._sender = self._sender, None
            try:
                sender.collect(timeout)
            finally:
                self.waited_ms += (time.perf_counter() - began) * 1000
        return self.event


def sends_beside() -> bool:
    """Whether this thread's writes commit on their own (no transaction is open),
    so a row committed on another connection commits exactly as it would here."""
    return (
        settings.QUIVER_AUDIT_SEND_EARLY
        and connection.get_autocommit()
        and not connection.in_atomic_block
    )


def send_soon(event: AuditEvent) -> PendingEvent:
    """Send ``event``'s INSERT on this thread's audit connection (or, in a
    transaction, write it in that transaction at once)."""
    if not sends_beside():
        event.save()
        return PendingEvent(event)
    sender = beside.sender(PART)
    sender.send(event)
    return PendingEvent(event, sender)


def insert(event: AuditEvent) -> AuditEvent:
    """``event.save()`` of a new event, in the caller's transaction if any."""
    if event.pk is not None:
        raise AppendOnlyError("audit events cannot be modified")
    fast_insert.insert(event)
    return event


def close_all() -> None:
    """Close every thread's audit connection (tests, before the database goes)."""
    beside.close_all()


def pending_total_ms(pending: list[PendingEvent]) -> float:
    return sum(handle.waited_ms for handle in pending)


def wait_all(pending: list[PendingEvent]) -> list[AuditEvent]:
    return [handle.wait() for handle in pending]
