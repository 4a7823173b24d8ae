"""Celery side of the call path. Pending approvals past their expiry become
``expired`` (one ``approval`` audit event each), run by every worker on a short
interval, as the audit sealer is (audit/tasks.py); calls left in flight past
their deadline by a process that stopped get their ``interrupted`` outcome
(``calls.attempts.sweep_interrupted``), every ``QUIVER_SWEEP_S``. Idempotent:
a run finds only what is still due, and concurrent runs skip each other's rows."""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from calls.attempts import sweep_interrupted
from calls.decisions import expire_due
from config.celery import app
from jobs.periodic import PeriodicSend

log = logging.getLogger(__name__)
SWEEP_CALLS = "calls.tasks.sweep_interrupted_calls"


@shared_task
def expire_approvals() -> int:
    """Expire the pending approvals that are due; returns how many."""
    return expire_due()


def _loop(stop: threading.Event, interval: float) -> None:
    from django.db import close_old_connections, connections

    while not stop.wait(interval):
        try:
            expire_due()
        except Exception:  # a bad round must not end the loop; the next retries
            log.exception("approval expiry round failed")
        finally:
            close_old_connections()
    connections.close_all()


class ExpiryThread:
    """``expire_due`` in a daemon thread, every ``interval`` seconds, until
    stopped."""

    def __init__(self, interval: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_loop,
            args=(self._stop, interval),
            name="approval-expiry",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


@worker_ready.connect
def _start_approval_expiry(sender: object = None, **kwargs: object) -> None:
    ExpiryThread(settings.QUIVER_APPROVAL_EXPIRY_INTERVAL_S)


@shared_task
def sweep_interrupted_calls() -> int:
    """Record ``interrupted`` for the calls in flight past their deadline."""
    return sweep_interrupted()


class InterruptedCallTimer(PeriodicSend):
    """Every QUIVER_SWEEP_S seconds the worker asks for the interrupted calls."""

    task = SWEEP_CALLS

    def every(self) -> float:
        return float(settings.QUIVER_SWEEP_S)


app.steps["worker"].add(InterruptedCallTimer)
