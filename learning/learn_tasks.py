"""Celery tasks of learning's learn job (kept apart from the labels' tasks)."""

from __future__ import annotations

from celery import shared_task

from catalog.models import Catalog
from learning.services import learn


@shared_task
def run_learn(model_id: int) -> str | None:
    """Run one queued learn (a learn already taken or gone is left alone)."""
    claimed = learn.claim(model_id)
    if claimed is None:
        return None
    return learn.run_learn(claimed).state


@shared_task
def relearn_if_due(catalog_id: int) -> int | None:
    """Queue a re-learn of the catalog when QUIVER_RELEARN_ON_CHANGE is on."""
    catalog = Catalog.objects.filter(pk=catalog_id).first()
    if catalog is None:
        return None
    model = learn.relearn_on_change(catalog)
    return model.version if model is not None else None
