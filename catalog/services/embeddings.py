"""Tool embeddings: compute, store, keep fresh, and switch models safely.

A tool's vector is recomputed only when the hash of (its embedding text, model id)
changes. Workers claim tools with ``SELECT ... FOR UPDATE SKIP LOCKED`` so two workers
never embed the same tool for the same text and model at once, and a tool is marked
ready or failed (with the reason) in the same transaction its vector is written in.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from psycopg import sql

from audit.actors import Actor, stored_user
from catalog.choices import EmbeddingStatus
from catalog.coherence import dispersed_descriptions
from catalog.embedding_text import embedding_key, embedding_keys, embedding_text
from catalog.models import Catalog, Tool, ToolEmbedding
from catalog.services.tools import tool_to_spec
from embeddings.backends import (
    LOCAL_MODEL_ID,
    EmbeddingBackend,
    backend_from_settings,
    get_local_backend,
)
from jobs import services as jobs
from jobs.choices import JobKind
from jobs.models import Job

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def current_backend() -> EmbeddingBackend:
    """The configured backend, built once per process (the model loads once)."""
    return backend_from_settings(dict(settings.QUIVER_EMBEDDINGS))


def embedding_batch_size() -> int:
    return int(settings.QUIVER_EMBED_BATCH)


def pending_tool_ids(catalog_id: int, limit: int, after_id: int = 0) -> list[int]:
    return list(
        Tool.objects.filter(
            catalog_id=catalog_id,
            embedding_status=EmbeddingStatus.PENDING,
            id__gt=after_id,
        )
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )


def embed_tools(tool_ids: Iterable[int], *, force: bool = False) -> dict[str, int]:
    """Embed these tools with the current model, skipping up-to-date ones.

    Returns counts of embedded, unchanged, skipped (claimed by another worker)."""
    ids = list(tool_ids)
    with transaction.atomic():
        tools = list(
            Tool.objects.select_for_update(skip_locked=True)
            .filter(pk__in=ids)
            .order_by("id")
        )
        counts = _embed_locked(tools, force)
    counts["skipped"] = len(ids) - len(tools)
    _activate_models(tools)
    return counts


def embed_pending_batch(tool_id: int, size: int) -> dict[str, int]:
    """Embed ``tool_id`` and up to ``size - 1`` other pending tools of its catalog.

    The batch is claimed with ``FOR UPDATE SKIP LOCKED`` in the same statement
    that picks it, so concurrent workers each take different pending tools and
    every batch is full (rather than all asking for the same first pending ids
    and finding them locked)."""
    with transaction.atomic():
        own = list(Tool.objects.select_for_update(skip_locked=True).filter(pk=tool_id))
        if not own:
            return {"embedded": 0, "unchanged": 0, "skipped": 1}
        tools = own + _claim_pending(own[0].catalog_id, size - 1, exclude=tool_id)
        counts = _embed_locked(tools, force=False)
    counts["skipped"] = 0
    _activate_models(tools)
    return counts


def embed_some_pending(catalog_id: int, size: int) -> dict[str, int]:
    """Embed up to ``size`` pending tools of the catalog that no worker holds."""
    with transaction.atomic():
        tools = _claim_pending(catalog_id, size)
        counts = _embed_locked(tools, force=False)
    counts["skipped"] = 0
    _activate_models(tools)
    return counts


def keep_embeddings_in_step(catalog_id: int) -> int:
    """Embed pending tools here until at most ``QUIVER_IMPORT_EMBED_LAG`` remain.

    Called by an import between items: an import is cheaper per tool than an
    embedding, so without this it runs far ahead of the workers and the catalog
    is only searchable by meaning long after the import says it is done. Returns
    how many were embedded; embedding errors propagate to the caller."""
    limit = int(settings.QUIVER_IMPORT_EMBED_LAG)
    done = 0
    if limit <= 0:
        return done
    while pending_count(catalog_id) > limit:
        counts = embed_some_pending(catalog_id, embedding_batch_size())
        if counts["embedded"] + counts["unchanged"] == 0:
            break  # every pending tool is in another worker's hands
        done += counts["embedded"]
    return done


def pending_count(catalog_id: int) -> int:
    return Tool.objects.filter(
        catalog_id=catalog_id, embedding_status=EmbeddingStatus.PENDING
    ).count()


def _claim_pending(catalog_id: int, limit: int, exclude: int = 0) -> list[Tool]:
    """Lock and return up to ``limit`` pending tools, oldest first, skipping any
    another transaction holds."""
    if limit <= 0:
        return []
    return list(
        Tool.objects.select_for_update(skip_locked=True)
        .filter(catalog_id=catalog_id, embedding_status=EmbeddingStatus.PENDING)
        .exclude(pk=exclude)
        .order_by("id")[:limit]
    )


def _embed_locked(tools: list[Tool], force: bool) -> dict[str, int]:
    """Embed the (row-locked) tools that need it and mark them all ready."""
    backend = current_backend()
    todo = _needing_vectors(tools, backend.model_id, force)
    if todo:
        vectors = backend.embed_documents([text for _, text, _ in todo])
        _store(todo, vectors, backend)
    Tool.objects.filter(pk__in=[tool.pk for tool in tools]).update(
        embedding_status=EmbeddingStatus.READY, embedding_error=""
    )
    return {"embedded": len(todo), "unchanged": len(tools) - len(todo)}


def _activate_models(tools: list[Tool]) -> None:
    model_id = current_backend_id()
    catalog_ids = {tool.catalog_id for tool in tools}
    for catalog_id in catalog_ids:
        _activate_model(catalog_id, model_id)
    # New vectors change answers: moving ``updated`` makes selection read them
    # (snapshots holding vectors, answer caches); the version is for tool edits.
    Catalog.objects.filter(pk__in=catalog_ids).update(updated=timezone.now())


def _needing_vectors(
    tools: list[Tool], model_id: str, force: bool
) -> list[tuple[Tool, str, str]]:
    """(tool, text to embed, its key) for the tools whose stored vector is not
    of their current text; their descriptions' coherence is tested in one batch."""
    existing = dict(
        ToolEmbedding.objects.filter(tool__in=tools, model_id=model_id).values_list(
            "tool_id", "text_hash"
        )
    )
    specs = [(tool, tool_to_spec(tool)) for tool in tools]
    stale = [
        (tool, spec)
        for tool, spec in specs
        if force or existing.get(tool.pk) not in embedding_keys(spec, model_id)
    ]
    dispersed = dispersed_descriptions(
        [spec.description for _, spec in stale], _coherence_backend().embed_documents
    )
    return [
        (
            tool,
            embedding_text(spec, dispersed=left_out),
            embedding_key(spec, model_id, dispersed=left_out),
        )
        for (tool, spec), left_out in zip(stale, dispersed, strict=True)
    ]


def _coherence_backend() -> EmbeddingBackend:
    """The bundled MiniLM the coherence line is set on (catalog.coherence): the
    configured backend when it is that model, else the shared local one."""
    backend = current_backend()
    return backend if backend.model_id == LOCAL_MODEL_ID else get_local_backend()


def _store(
    todo: list[tuple[Tool, str, str]], vectors: Any, backend: EmbeddingBackend
) -> None:
    rows = [
        ToolEmbedding(
            tool=tool,
            catalog_id=tool.catalog_id,
            model_id=backend.model_id,
            dimension=backend.dimension,
            text_hash=digest,
            embedding=vectors[i].tolist(),
        )
        for i, (tool, _text, digest) in enumerate(todo)
    ]
    ToolEmbedding.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["tool", "model_id"],
        update_fields=["text_hash", "embedding", "dimension", "created"],
    )


def mark_failed(tool_ids: Iterable[int], reason: str) -> None:
    """After the last retry: the tool stays findable by lexical scorers, flagged."""
    Tool.objects.filter(pk__in=list(tool_ids)).update(
        embedding_status=EmbeddingStatus.FAILED, embedding_error=reason[:2000]
    )


def hnsw_index_name(model_id: str, catalog_id: int) -> str:
    digest = hashlib.sha1(model_id.encode()).hexdigest()[:10]
    return f"toolemb_hnsw_{digest}_{catalog_id}"


def ensure_hnsw_index(model_id: str, dimension: int, catalog_id: int) -> None:
    """A partial HNSW cosine index per (model, catalog): a vector of one model is
    never compared with another's, and a catalog's search never scans another's."""
    # DDL takes no bound parameters: psycopg composes and quotes every part.
    statement = sql.SQL(
        "CREATE INDEX IF NOT EXISTS {name} ON catalog_toolembedding "
        "USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
        "WHERE model_id = {model} AND catalog_id = {catalog}"
    ).format(
        name=sql.Identifier(hnsw_index_name(model_id, catalog_id)),
        dimension=sql.Literal(int(dimension)),
        model=sql.Literal(model_id),
        catalog=sql.Literal(int(catalog_id)),
    )
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(statement.as_string(connection.connection))


def start_reindex(
    catalog: Catalog, *, force: bool = False, actor: Actor = None, enqueue: bool = True
) -> Job:
    """Create a job that (re-)embeds the whole catalog with the current model and
    queue it for a worker (or leave it to the caller to run, enqueue=False)."""
    with transaction.atomic():
        job = Job.objects.create(
            kind=JobKind.REINDEX,
            catalog=catalog,
            total=Tool.objects.filter(catalog=catalog).count(),
            options={"force": force, "model_id": current_backend_id()},
            counts={"embedded": 0, "unchanged": 0, "failed": 0, "cursor": 0},
            created_by=stored_user(actor),
        )
        if force:
            Tool.objects.filter(catalog=catalog).update(
                embedding_status=EmbeddingStatus.PENDING
            )
        if enqueue:
            jobs.enqueue_job(job)
    return job


def current_backend_id() -> str:
    return current_backend().model_id


def run_reindex(job: Job, progress: Callable[[Job], None] | None = None) -> Job:
    """Walk the catalog in id order from the saved cursor; resumable after a crash."""
    backend = current_backend()
    ensure_hnsw_index(backend.model_id, backend.dimension, job.catalog_id)
    with jobs.keep_alive(job):
        _reindex_batches(job, progress)
    _activate_model(job.catalog_id, backend.model_id)
    job.counts["failed"] = Tool.objects.filter(
        catalog_id=job.catalog_id, embedding_status=EmbeddingStatus.FAILED
    ).count()
    job.done = job.total
    return jobs.finish_job(job, "done", "counts")


def _reindex_batches(job: Job, progress: Callable[[Job], None] | None) -> None:
    force = bool(job.options.get("force"))
    while True:
        cursor = int(job.counts.get("cursor", 0))
        ids = list(
            Tool.objects.filter(catalog_id=job.catalog_id, id__gt=cursor)
            .order_by("id")
            .values_list("id", flat=True)[: embedding_batch_size()]
        )
        if not ids:
            return
        result = embed_tools(ids, force=force)
        for key in ("embedded", "unchanged"):
            job.counts[key] = job.counts.get(key, 0) + result[key]
        job.counts["cursor"] = ids[-1]
        job.done = min(job.total, job.done + len(ids))
        jobs.save_progress(job, "counts", "done")
        if progress is not None:
            progress(job)


def _activate_model(catalog_id: int, model_id: str) -> None:
    """Switch selection to the new model only once every tool has its vector.

    Called after every batch, whoever embedded it (a re-index job or the per-tool
    tasks), so the switch happens as soon as the last vector lands."""
    active = Catalog.objects.filter(pk=catalog_id).values_list(
        "active_embedding_model", flat=True
    )
    if list(active) == [model_id]:
        return
    total = Tool.objects.filter(catalog_id=catalog_id).count()
    have = ToolEmbedding.objects.filter(
        catalog_id=catalog_id, model_id=model_id
    ).count()
    if have >= total:
        Catalog.objects.filter(pk=catalog_id).update(active_embedding_model=model_id)
