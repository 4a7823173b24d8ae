"""Celery tasks of the jobs app: the sweeper, sent by every worker to itself."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from config.celery import app
from jobs import services as jobs
from jobs.periodic import PeriodicSend


@shared_task(name=jobs.SWEEP)
def sweep_waiting_work(min_age_s: float | None = None) -> dict[str, int]:
    """Send again the work the broker lost or never got (see jobs.services.sweep)."""
    age = settings.QUIVER_SWEEP_S if min_age_s is None else min_age_s
    return jobs.sweep(min_age_s=age)


class SweepTimer(PeriodicSend):
    """Every QUIVER_SWEEP_S seconds the worker sends itself a sweep, so work left
    waiting while the broker was down runs without restarting any worker."""

    task = jobs.SWEEP

    def every(self) -> float:
        return float(settings.QUIVER_SWEEP_S)


app.steps["worker"].add(SweepTimer)
