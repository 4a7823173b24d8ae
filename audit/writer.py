"""A selection's audit row written beside its answer, committed before it is sent.

A selection's row is its own transaction, and its COMMIT waits for the WAL flush (a
few milliseconds on a real disk): on the request's thread that wait adds straight to
the answer's latency. ``record_event_soon`` hands the INSERT to a small pool of
writer threads, each with its own database connection, so the flush overlaps the
answer's serialisation and rendering. The caller then waits on the handle
(``PendingEvent.wait``) before a byte of the answer goes out: an answer is never
sent without its committed row, and a row that could not be written turns the
answer into an error.

Inside a transaction (a batch of selections, a test) the row is written at once in
that transaction, exactly as ``record_event`` does.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, connections

from audit.models import AuditEvent

WAIT_TIMEOUT_S = 30.0
Job = tuple[Future[AuditEvent], Callable[[], AuditEvent]] | None


class PendingEvent:
    """An audit row being written; ``wait`` returns it once committed, or raises
    what the write raised (``OperationalError`` when it did not finish in time)."""

    def __init__(self, future: Future[AuditEvent]) -> None:
        self._future = future
        self.waited_ms = 0.0

    @classmethod
    def written(cls, event: AuditEvent) -> PendingEvent:
        future: Future[AuditEvent] = Future()
        future.set_result(event)
        return cls(future)

    def wait(self, timeout: float = WAIT_TIMEOUT_S) -> AuditEvent:
        began = time.perf_counter()
        try:
            return self._future.result(timeout)
        except FutureTimeout as exc:
            raise OperationalError(
                f"audit: the row was not committed within {timeout:.0f} s"
            ) from exc
        finally:
            self.waited_ms += (time.perf_counter() - began) * 1000


def writes_beside() -> bool:
    """Whether this thread's writes commit on their own (no transaction is open),
    so a row written on another connection commits exactly as it would here."""
    return (
        settings.QUIVER_AUDIT_WRITERS > 0
        and connection.get_autocommit()
        and not connection.in_atomic_block
    )


def record_event_soon(build: Callable[[], AuditEvent]) -> PendingEvent:
    """Write the event ``build`` makes: on a writer thread when this thread is
    in autocommit, else here, in the open transaction."""
    if not writes_beside():
        event = build()
        event.save()
        return PendingEvent.written(event)
    return PendingEvent(WRITERS.submit(build))


def _write(build: Callable[[], AuditEvent]) -> AuditEvent:
    """On a writer thread: its own connection, checked first when the last use
    failed or it is past its age, so a restarted database costs no answer."""
    connection.close_if_unusable_or_obsolete()
    event = build()
    event.save()
    return event


class _Writers:
    """The process's writer threads, started on first use (after a server's fork),
    taking jobs from one queue; ``stop`` closes their connections and ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def submit(self, build: Callable[[], AuditEvent]) -> Future[AuditEvent]:
        future: Future[AuditEvent] = Future()
        with self._lock:
            if not self._threads:
                self._start(int(settings.QUIVER_AUDIT_WRITERS))
            self._jobs.put((future, build))
        return future

    def _start(self, count: int) -> None:
        for number in range(count):
            thread = threading.Thread(
                target=self._run, name=f"audit-writer-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, build = job
            try:
                future.set_result(_write(build))
            except BaseException as exc:  # the waiting request re-raises it
                future.set_exception(exc)
        connections.close_all()

    def stop(self) -> None:
        """End the threads once they finish what they hold (tests, shutdown)."""
        with self._lock:
            threads, self._threads = self._threads, []
            for _ in threads:
                self._jobs.put(None)
        for thread in threads:
            thread.join()


WRITERS = _Writers()


def pending_total_ms(pending: list[PendingEvent]) -> float:
    return sum(handle.waited_ms for handle in pending)


def wait_all(pending: list[PendingEvent]) -> list[Any]:
    return [handle.wait() for handle in pending]
