"""Celery tasks of the catalog: thin, take ids, idempotent, call a service."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import OperationalError

from catalog.choices import EmbeddingStatus
from catalog.models import Catalog, Tool
from catalog.services import bulk_edit, embeddings, imports, query_encoder, work
from embeddings.backends import EmbeddingError
from jobs import services as jobs
from jobs.choices import JobKind, JobState
from jobs.models import Job

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

    def run(job: Job) -> None:
        imports.run_import(job, EmbeddingsInStep())
        jobs.send(TASK_QUERY_ENCODER, priority=work.EMBED_PRIORITY + 1)

    jobs.run_claimed(job_id, "import", run)


@shared_task
def run_bulk_edit(job_id: int) -> None:
    """Run (or resume) a bulk edit job from the tools it has not reached yet."""
    jobs.run_claimed(job_id, "bulk edit", bulk_edit.run_bulk_job)


TASK_QUERY_ENCODER = "catalog.tasks.build_query_encoder_if_due"


@shared_task
def build_query_encoder_if_due() -> str | None:
    """After an import or at worker start: train the static query encoder when
    there is none or the catalog has much outgrown it. Training runs in a child
    process (its ~300 MB of arrays never stay in the worker); concurrent calls
    build once (the command holds a lock). Returns the command's last line."""
    if not settings.QUIVER_QUERY_ENCODER_AUTO:
        return None
    return query_encoder.build_in_child_if_due()


@shared_task(
    bind=True,
    autoretry_for=RETRYABLE,
    retry_backoff=2,
    retry_jitter=True,
    max_retries=5,
)
def run_reindex(self, job_id: int) -> None:  # type: ignore[no-untyped-def]
    """Run (or resume) a re-index job from its saved cursor."""
    job = jobs.claim_job(job_id)
    if job is None:
        return
    try:
        embeddings.run_reindex(job)
    except jobs.JobLost:
        log.warning("re-index job %s was taken over by another worker", job_id)
    except RETRYABLE:
        if self.request.retries >= self.max_retries:
            jobs.fail_job(job, "embedding backend kept failing")
            return
        raise


@shared_task
def resume_interrupted_work() -> dict[str, int]:
    """Sent when a worker starts: take back at once the jobs of dead workers, send
    every waiting job and pending embedding again, and start a re-embed of every
    catalog whose vectors are not of the configured model."""
    swept = jobs.sweep(min_age_s=0)  # first: a dead worker's job goes first
    for catalog in Catalog.objects.exclude(
        active_embedding_model=embeddings.current_backend_id()
    ):
        if not catalog.jobs.filter(
            kind=JobKind.REINDEX, state__in=[JobState.QUEUED, JobState.RUNNING]
        ).exists():
            embeddings.start_reindex(catalog)
    return swept


@worker_ready.connect
def _resume_on_worker_start(sender: object = None, **kwargs: object) -> None:
    jobs.send(work.TASK_RESUME)
    jobs.send(TASK_QUERY_ENCODER, priority=work.EMBED_PRIORITY + 1)
