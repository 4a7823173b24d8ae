"""A new row's INSERT sent on a connection of its own, its COMMIT read later.

A row that is its own transaction waits on the WAL flush at COMMIT. ``sender()``
is this thread's autocommit connection for ``part`` (one per thread; the server
commits each statement on its own): ``Sender.send`` sends the row's INSERT (``insert.
dollar_insert``, its values adapted by psycopg directly) and returns at once, and
``Sender.collect`` reads the server's reply, raising what it reports as Django's
errors, their messages led by ``part`` (``OperationalError`` for a lost connection
or a timeout, ``IntegrityError`` for a refused row, else ``DatabaseError``). No
thread hands work to another: Python's GIL would hold a writer thread back for as
long as the sending thread works on.
"""

from __future__ import annotations

import select
import threading
import time
import weakref

import psycopg
from django.db import DatabaseError, IntegrityError, OperationalError, connection
from django.db.models import Model
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.pq.abc import PGresult

from config.fast.insert import dollar_insert

# A connection idle longer than this is pinged before it carries a row, so a
# restarted database costs no answer.
PING_AFTER_IDLE_S = 2.0
WAIT_TIMEOUT_S = 30.0


class Sender:
    """One thread's connection: at most one row in flight at a time."""

    def __init__(self, part: str) -> None:
        self.part = part
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

    def send(self, obj: Model) -> None:
        if self._in_flight:  # a reply that was never collected
            self.collect(WAIT_TIMEOUT_S)
        if time.monotonic() - self._last_used > PING_AFTER_IDLE_S:
            self._ping()
        sql, values = dollar_insert(type(obj))
        try:
            conn = self.connection()
            row = [value(obj) for value in values]
            params = self._transformer.dump_sequence(row, [PyFormat.TEXT] * len(row))
            conn.pgconn.send_query_params(sql, params)
        except psycopg.OperationalError as exc:
            self.close()
            raise OperationalError(f"{self.part}: {exc}") from exc
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
            raise _error(self.part, bad[0])

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
                        f"{self.part}: the row was not committed within {timeout:.0f} s"
                    )
        except (psycopg.OperationalError, OperationalError, OSError) as exc:
            self.close()
            raise OperationalError(f"{self.part}: {exc}") from exc

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._in_flight = None, False


def _error(part: str, result: PGresult) -> DatabaseError:
    message = (result.error_message or b"").decode(errors="replace").strip()
    state = (result.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
    kind = IntegrityError if state.startswith("23") else DatabaseError
    return kind(f"{part}: {message} (SQLSTATE {state})")


_local = threading.local()
_all: weakref.WeakSet[Sender] = weakref.WeakSet()
_all_lock = threading.Lock()


def sender(part: str) -> Sender:
    """This thread's sender for ``part`` (made on first use)."""
    mine: dict[str, Sender] = _local.__dict__.setdefault("senders", {})
    found = mine.get(part)
    if found is None:
        found = mine[part] = Sender(part)
        with _all_lock:
            _all.add(found)
    return found


def close_all() -> None:
    """Close every thread's connection (tests, before the database goes)."""
    with _all_lock:
        senders = list(_all)
    for one in senders:
        one.close()
