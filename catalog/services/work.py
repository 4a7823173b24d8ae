"""The catalog's background work, sent through the jobs app by task name: the
tasks that run its kinds of job, a tool's embedding, and the pending embeddings
every sweep sends again. ``register`` lends them to jobs at start-up
(``CatalogConfig.ready``)."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from catalog.choices import EmbeddingStatus
from catalog.models import Tool
from jobs import services as jobs
from jobs.choices import JobKind

EMBED_TOOL = "catalog.tasks.embed_tool"
TASK_RESUME = "catalog.tasks.resume_interrupted_work"
SWEEP_MAX_BATCHES = 16
# On Redis a lower number is served first; jobs, sweeps and resumes use 0, so a
# dead worker's job is taken over before the embeddings queued behind it.
EMBED_PRIORITY = 6
JOB_TASKS = {
    JobKind.IMPORT: "catalog.tasks.run_import",
    JobKind.REINDEX: "catalog.tasks.run_reindex",
    JobKind.BULK: "catalog.tasks.run_bulk_edit",
}


def register() -> None:
    """The catalog's kinds of job and its sweep of pending embeddings."""
    for kind, task in JOB_TASKS.items():
        jobs.register_job_task(kind, task)
    jobs.register_sweeper("embedding_batches", send_pending_embeddings)


def enqueue_embedding(tool_id: int) -> None:
    """Embed this tool after commit, behind any job waiting in the queue."""
    jobs.enqueue(EMBED_TOOL, tool_id, priority=EMBED_PRIORITY)


def send_pending_embeddings(cutoff: datetime) -> int:
    """One embedding batch per batch of tools left pending since ``cutoff`` (each
    task fills its batch; a row lock claims each tool), bounded so that a down
    embedding endpoint does not fill the queue with retries."""
    pending = Tool.objects.filter(
        embedding_status=EmbeddingStatus.PENDING, updated__lt=cutoff
    ).order_by("id")
    stride = int(settings.QUIVER_EMBED_BATCH)
    firsts = pending.values_list("id", flat=True)[: stride * SWEEP_MAX_BATCHES : stride]
    return sum(
        jobs.send(EMBED_TOOL, tool_id, priority=EMBED_PRIORITY) for tool_id in firsts
    )
