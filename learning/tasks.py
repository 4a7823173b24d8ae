"""Celery tasks of learning: thin, take ids, idempotent, call a service."""

from __future__ import annotations

from celery import shared_task

from catalog.models import Catalog
from config.celery import app
from jobs.periodic import PeriodicSend
from learning.services import evaluations, proposals, stalled

SWEEP_STALLED = "learning.tasks.sweep_stalled_runs"
CHECK_EVERY_S = 60.0


@shared_task
def run_evaluation(evaluation_id: int) -> str | None:
    """Run one queued evaluation (a run already taken or gone is left alone)."""
    claimed = evaluations.claim_evaluation(evaluation_id)
    if claimed is None:
        return None
    return evaluations.run_evaluation(claimed).state


@shared_task
def find_label_proposals(catalog_id: int | None = None) -> int:
    """Propose labels from recent use for one catalog, or for every catalog (run
    it periodically, e.g. hourly from celery beat); idempotent."""
    catalogs = Catalog.objects.all()
    if catalog_id is not None:
        catalogs = catalogs.filter(pk=catalog_id)
    return sum(proposals.find_proposals(catalog) for catalog in catalogs)


@shared_task
def sweep_stalled_runs() -> dict[str, int]:
    """Send again the evaluations and learns left queued; fail those whose worker
    stopped (learning.services.stalled); idempotent."""
    return stalled.sweep()


class StalledRunTimer(PeriodicSend):
    """Every minute the worker asks for the stalled-run sweep."""

    task = SWEEP_STALLED

    def every(self) -> float:
        return CHECK_EVERY_S


app.steps["worker"].add(StalledRunTimer)
