"""Celery side of the audit log: the sealer runs in every worker process's main
process, on a short interval, so rows are sealed within a bounded delay (unless
``QUIVER_AUDIT_SEALER_IN_WORKERS`` is false: a sealer process of its own,
``audit_seal --every``, does it)."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from audit.sealing import seal_and_checkpoint, start_sealer_thread


@shared_task
def seal_audit_chain() -> int:
    """Seal pending audit rows and write a checkpoint if one is due (idempotent)."""
    return seal_and_checkpoint()


@worker_ready.connect
def _start_audit_sealer(sender: object = None, **kwargs: object) -> None:
    # Several workers may each run one: the chain lock makes them take turns.
    if settings.QUIVER_AUDIT_SEALER_IN_WORKERS:
        start_sealer_thread(settings.QUIVER_AUDIT_SEAL_INTERVAL_S)
