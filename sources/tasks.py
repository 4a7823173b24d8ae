"""Celery tasks of sources: thin, take ids, idempotent, call a service."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from config.celery import app
from jobs import services as jobs
from jobs.periodic import PeriodicSend
from sources import services, sync
from sources.models import Source

log = logging.getLogger(__name__)
SYNC_DUE = "sources.tasks.sync_due_sources"
CHECK_EVERY_S = 60.0


@shared_task
def run_sync(job_id: int) -> None:
    """Run (or run again) a source's sync job; a job already taken does nothing."""
    jobs.run_claimed(job_id, "sync", sync.run_sync)


@shared_task
def sync_due_sources() -> int:
    """Queue a sync of every source not synced for ``QUIVER_SOURCE_SYNC_MINUTES``
    (0: periodic sync is off); a source with a sync waiting gets no second one."""
    minutes = int(settings.QUIVER_SOURCE_SYNC_MINUTES)
    if minutes <= 0:
        return 0
    cutoff = timezone.now() - timedelta(minutes=minutes)
    due = Source.objects.filter(Q(last_synced__isnull=True) | Q(last_synced__lt=cutoff))
    started = 0
    for source in due.only("pk", "catalog_id", "status"):
        services.start_sync(source, actor=None)
        started += 1
    return started


class SourceSyncTimer(PeriodicSend):
    """Every minute the worker asks for the due syncs (when periodic sync is on)."""

    task = SYNC_DUE

    def every(self) -> float:
        return CHECK_EVERY_S

    def enabled(self) -> bool:
        return settings.QUIVER_SOURCE_SYNC_MINUTES > 0


app.steps["worker"].add(SourceSyncTimer)
