"""A selection's audit row sent before its answer is rendered, committed before it
is sent.

A selection's row is its own transaction, and its COMMIT waits for the WAL flush (a
few milliseconds on a real disk): written on the request's path, that wait adds
straight to the answer's latency. ``send_soon`` sends the row's INSERT on a
connection of its own (one per thread, autocommit: one statement and its
parameters, which the server commits on its own) and returns at once; the server
executes and flushes while the answer is serialised and rendered on this thread,
and the caller collects the server's reply (``PendingEvent.wait``) before a byte of
the answer goes out. An answer is never sent without its committed row, and a row
that could not be written turns the answer into an error. The statement is made
once per process and each row's values are adapted by psycopg directly (Django's
INSERT compiler and a client-side quoted statement cost more per row). No
thread hands work to another: Python's GIL would hold a writer thread back for as
long as the request thread renders.

Inside a transaction (a batch of selections, a test) the row is written at once in
that transaction, exactly as ``record_event`` does.
"""

from __future__ import annotations

import functools
import select
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, IntegrityError, OperationalError, connection
from django.db.models import Model
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.pq.abc import PGresult

from audit.models import AuditEvent
from config.copy_rows import column_value
from config.exceptions import AppendOnlyError

WAIT_TIMEOUT_S = 30.0
# A connection idle longer than this is pinged before it carries a row, so a
# restarted database costs no answer.
PING_AFTER_IDLE_S = 2.0


class PendingEvent:
    """An audit row on its way; ``wait`` returns it once committed, or raises what
    the database answered (``OperationalError`` for a lost connection or a
    timeout, ``IntegrityError`` for a refused row, else ``DatabaseError``)."""

    def __init__(self, event: AuditEvent, sender: _Sender | None = None) -> None:
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
    sender = _sender()
    sender.send(event)
    return PendingEvent(event, sender)


@functools.cache
def _row() -> tuple[str, int, tuple[Callable[[Model], Any], ...]]:
    """``INSERT INTO <table> (<columns>)`` of a new row, how many columns, and
    what each stores for an event (as ``save`` would; its JSON encoded once)."""
    meta = AuditEvent._meta
    fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    head = f"INSERT INTO {quote(meta.db_table)} ({columns})"
    return head, len(fields), tuple(column_value(f, connection) for f in fields)


@functools.cache
def _insert() -> tuple[bytes, tuple[Callable[[Model], Any], ...]]:
    """The row's INSERT with a parameter per column (libpq's ``$n``)."""
    head, count, columns = _row()
    marks = ", ".join(f"${n}" for n in range(1, count + 1))
    return f"{head} VALUES ({marks})".encode(), columns


@functools.cache
def _insert_returning() -> tuple[str, str, tuple[Callable[[Model], Any], ...]]:
    """The row's INSERT on Django's connection (``%s`` parameters), giving back
    its id, and the primary key's attribute name."""
    head, count, columns = _row()
    pk = AuditEvent._meta.pk
    assert pk is not None
    quote = connection.ops.quote_name
    marks = ", ".join(["%s"] * count)
    sql = f"{head} VALUES ({marks}) RETURNING {quote(str(pk.column))}"
    return sql, pk.attname, columns


def insert(event: AuditEvent) -> AuditEvent:
    """``event.save()`` of a new event with its INSERT made once per process (the
    ORM's compiler cost more than the statement: ~5% of a tool call's CPU each)
    on Django's connection, in the caller's transaction if any; its id set."""
    if event.pk is not None:
        raise AppendOnlyError("audit events cannot be modified")
    sql, attname, columns = _insert_returning()
    with connection.cursor() as cursor:
        cursor.execute(sql, [value(event) for value in columns])
        row = cursor.fetchone()
    assert row is not None
    setattr(event, attname, row[0])
    event._state.adding = False
    event._state.db = connection.alias
    return event


class _Sender:
    """One thread's audit connection: at most one row in flight at a time."""

    def __init__(self) -> None:
        self._conn: psycopg.Connection | None = None
        self._transformer = Transformer()
        self._in_flight = False
        self._last_used = 0.0

    def connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed or self._conn.broken:
            params = connection.get_connection_params()
            params.pop("cursor_factory", None)
            try:
                self._conn = psycopg.connect(**params, autocommit=True)
            except psycopg.OperationalError as exc:
                raise OperationalError(str(exc)) from exc
            self._transformer = Transformer(self._conn)
        return self._conn

    def send(self, event: AuditEvent) -> None:
        if self._in_flight:  # an answer that was never rendered left one
            self.collect(WAIT_TIMEOUT_S)
        if time.monotonic() - self._last_used > PING_AFTER_IDLE_S:
            self._ping()
        sql, columns = _insert()
        try:
            conn = self.connection()
            row = [value(event) for value in columns]
            params = self._transformer.dump_sequence(row, [PyFormat.TEXT] * len(row))
            conn.pgconn.send_query_params(sql, params)
        except psycopg.OperationalError as exc:
            self.close()
            raise OperationalError(f"audit: {exc}") from exc
        self._in_flight = True

    def _ping(self) -> None:
        """A dead connection is replaced before it carries a row."""
        try:
            self.connection().execute("SELECT 1")
        except psycopg.Error:
            self.close()

    def collect(self, timeout: float) -> None:
        """Read the server's reply to the row in flight; raise what it reports."""
        self._in_flight = False
        self._last_used = time.monotonic()
        results = self._results(timeout)
        bad = [r for r in results if r.status != pq.ExecStatus.COMMAND_OK]
        if bad:
            raise _error(bad[0])

    def _results(self, timeout: float) -> list[PGresult]:
        conn = self.connection()
        pgconn, deadline = conn.pgconn, time.monotonic() + timeout
        results: list[PGresult] = []
        try:
            while True:
                pgconn.consume_input()
                while not pgconn.is_busy():
                    result = pgconn.get_result()
                    if result is None:
                        return results
                    results.append(result)
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([pgconn.socket], [], [], left)[0]:
                    raise OperationalError(
                        f"audit: the row was not committed within {timeout:.0f} s"
                    )
        except (psycopg.OperationalError, OperationalError, OSError) as exc:
            self.close()
            raise OperationalError(f"audit: {exc}") from exc

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._in_flight = None, False


def _error(result: PGresult) -> DatabaseError:
    message = (result.error_message or b"").decode(errors="replace").strip()
    state = (result.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
    kind = IntegrityError if state.startswith("23") else DatabaseError
    return kind(f"audit: {message} (SQLSTATE {state})")


_local = threading.local()
_all: weakref.WeakSet[_Sender] = weakref.WeakSet()
_all_lock = threading.Lock()


def _sender() -> _Sender:
    sender = getattr(_local, "sender", None)
    if sender is None:
        sender = _local.sender = _Sender()
        with _all_lock:
            _all.add(sender)
    return sender


def close_all() -> None:
    """Close every thread's audit connection (tests, before the database goes)."""
    with _all_lock:
        senders = list(_all)
    for sender in senders:
        sender.close()


def pending_total_ms(pending: list[PendingEvent]) -> float:
    return sum(handle.waited_ms for handle in pending)


def wait_all(pending: list[PendingEvent]) -> list[AuditEvent]:
    return [handle.wait() for handle in pending]
