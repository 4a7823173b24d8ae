"""Celery tasks of the catalog: thin, take ids, idempotent, call a service."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

from catalog.choices import EmbeddingStatus, JobState
from catalog.embeddings.backends import EmbeddingError
from catalog.models import Catalog, Job, Tool
from catalog.services import embeddings, imports

log = logging.getLogger(__name__)
RETRYABLE = (EmbeddingError, OperationalError, OSError)


@shared_task(
    bind=True,
    autoretry_for=RETRYABLE,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=5,
)
def embed_tool(self, tool_id: int) -> dict[str, int] | None:  # type: ignore[no-untyped-def]
    """Embed one tool, batching in other pending tools of its catalog."""
    tool = (
        Tool.objects.filter(pk=tool_id).only("catalog_id", "embedding_status").first()
    )
    if tool is None or tool.embedding_status == EmbeddingStatus.READY:
        return None
    try:
        return embeddings.embed_pending_batch(
            tool_id, embeddings.embedding_batch_size()
        )
    except RETRYABLE as exc:
        if self.request.retries >= self.max_retries:
            embeddings.mark_failed([tool_id], f"embedding failed: {exc}")
            return None
        raise


class EmbeddingsInStep:
    """Between import items: embed while the import is too far ahead (see
    ``keep_embeddings_in_step``). After an embedding error it stops trying for
    the rest of the import, which goes on; the per-tool tasks retry those tools
    with backoff, so a down embedding endpoint costs an import one attempt."""

    def __init__(self) -> None:
        self.failed = False

    def __call__(self, job: Job) -> None:
        if self.failed:
            return
        try:
            embeddings.keep_embeddings_in_step(job.catalog_id)
        except (EmbeddingError, OSError) as exc:
            self.failed = True
            log.warning("import %s stops embedding along the way: %s", job.pk, exc)


@shared_task
def run_import(job_id: int) -> None:
    """Run (or resume) an import job."""
    job = imports.claim_job(job_id)
    if job is None:
        return
    try:
        imports.run_import(job, EmbeddingsInStep())
    except Exception as exc:
        log.exception("import job %s failed", job_id)
        imports.fail_job(job, f"{type(exc).__name__}: {exc}")
        raise


@shared_task(
    bind=True,
    autoretry_for=RETRYABLE,
    retry_backoff=2,
    retry_jitter=True,
    max_retries=5,
)
def run_reindex(self, job_id: int) -> None:  # type: ignore[no-untyped-def]
    """Run (or resume) a re-index job from its saved cursor."""
    job = imports.claim_job(job_id)
    if job is None:
        return
    try:
        embeddings.run_reindex(job)
    except RETRYABLE:
        if self.request.retries >= self.max_retries:
            imports.fail_job(job, "embedding backend kept failing")
            return
        raise


@shared_task
def resume_interrupted_work() -> dict[str, int]:
    """Sent when a worker starts: re-queue jobs left running by a dead worker and
    every tool still pending, so nothing stays pending after a crash; start a
    re-embed of every catalog whose vectors are not of the configured model."""
    resumed = 0
    for job in Job.objects.filter(state__in=[JobState.QUEUED, JobState.RUNNING]):
        # A job still inside its lease may belong to a live worker: try again once
        # the lease has run out; claim_job refuses it if its heartbeat went on.
        task = run_import if job.kind == "import" else run_reindex
        task.apply_async((job.pk,), countdown=imports.lease_remaining(job) + 1)
        resumed += 1
    for catalog in Catalog.objects.exclude(
        active_embedding_model=embeddings.current_backend_id()
    ):
        if not catalog.jobs.filter(
            kind="reindex", state__in=[JobState.QUEUED, JobState.RUNNING]
        ).exists():
            embeddings.start_reindex(catalog)
    pending = 0
    for tool_id in Tool.objects.filter(
        embedding_status=EmbeddingStatus.PENDING
    ).values_list("id", flat=True)[:10000:64]:
        embed_tool.delay(tool_id)
        pending += 1
    return {"jobs": resumed, "embedding_batches": pending}


@worker_ready.connect
def _resume_on_worker_start(sender: object = None, **kwargs: object) -> None:
    resume_interrupted_work.delay()
