"""Imports: a document in any provider format becomes tools, a chunk at a time.

The document is kept whole on the Job and the worker records each item created,
updated, unchanged or rejected with the reason, skipping items already recorded, so
a job picked up again after a worker died carries on where it stopped. Names are
settled for the whole document first (``import_names.plan_names``), the same way
again on resume. A chunk of ``QUIVER_IMPORT_CHUNK`` items commits its tools, change
records and the job's progress in one transaction (0: one transaction per tool).
How imports behave: docs/how-to/imports.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from audit.actors import Actor, stored_user
from catalog.choices import ImportOutcome
from catalog.formats import FormatError, ImportItem, detect_format, import_tools
from catalog.models import Catalog, Tool
from catalog.services import holds
from catalog.services.bulk_import import import_chunk, preview_items, rejection
from catalog.services.import_names import (
    REFUSE,
    NamePlan,
    check_names_option,
    plan_names,
)
from catalog.services.tools import ToolConflict, create_tool, update_tool
from catalog.spec import ToolSpec
from jobs import services as jobs
from jobs.choices import JobKind
from jobs.models import Job

PROGRESS_EVERY = 10
# A dry run runs in the web request (well inside the web server's 60 s timeout,
# QUIVER_WEB_TIMEOUT_SECONDS): it stops here and says so rather than hold a web
# thread longer.
DRY_RUN_DEADLINE_S = 30.0


def start_import(
    catalog: Catalog,
    document: Any,
    fmt: str | None,
    *,
    actor: Actor,
    names: str = REFUSE,
) -> Job:
    """Check the document's shape and the options now (a 4xx for the caller),
    then queue the job. ``names``: what becomes of a name breaking the rule for a
    new tool name (``catalog.services.import_names``)."""
    fmt, items = _read(document, fmt, names)
    with transaction.atomic():
        job = Job.objects.create(
            kind=JobKind.IMPORT,
            catalog=catalog,
            total=len(items),
            payload=document,
            options={"format": fmt, "names": names},
            created_by=stored_user(actor),
            counts={outcome.value: 0 for outcome in ImportOutcome},
        )
        jobs.enqueue_job(job)
    return job


def _read(document: Any, fmt: str | None, names: str) -> tuple[str, list[ImportItem]]:
    """The format read and the document's items; a ValidationError naming the
    document or the option otherwise."""
    try:
        check_names_option(names)
    except ValueError as exc:
        raise ValidationError({"names": [str(exc)]}) from exc
    try:
        fmt = fmt or detect_format(document)
        return fmt, import_tools(document, fmt)
    except FormatError as exc:
        raise ValidationError({"document": [str(exc)]}) from exc


def preview_import(
    catalog: Catalog,
    document: Any,
    fmt: str | None,
    *,
    actor: Actor,
    names: str = REFUSE,
) -> dict[str, Any]:
    """The dry run: what importing the document would do, and nothing written.

    The items go through the bulk path's checks against an in-memory view of the
    catalog (``bulk_import.preview_items``, no locks taken) whose writes never
    run; the transaction is rolled back all the same. Past
    ``DRY_RUN_DEADLINE_S`` it stops and says so (a 400 naming the document)."""
    fmt, items = _read(document, fmt, names)
    deadline = time.monotonic() + DRY_RUN_DEADLINE_S
    with transaction.atomic():
        plan = plan_names(catalog, items, names)
        entries = preview_items(
            catalog, plan.items, actor, lambda done: time.monotonic() < deadline
        )
        entries = [plan.annotate(entry) for entry in entries]
        transaction.set_rollback(True)
    if len(entries) < len(items):
        raise ValidationError({"document": [_too_long(len(entries), len(items))]})
    counts = {outcome.value: 0 for outcome in ImportOutcome}
    for entry in entries:
        counts[entry["outcome"]] += 1
    return {
        "dry_run": True,
        "catalog": catalog.slug,
        "format": fmt,
        "names": names,
        "total": len(entries),
        "counts": counts,
        "renamed": sum("renamed_from" in entry for entry in entries),
        "items": entries,
    }


def _too_long(done: int, total: int) -> str:
    return (
        f"document: the dry run checked {done} of {total} items in "
        f"{DRY_RUN_DEADLINE_S:g} s and stopped (nothing was written); split the "
        "file, or import it without a dry run"
    )


def run_import(job: Job, between: Callable[[Job], object] | None = None) -> Job:
    """Apply every item not yet recorded; good items land even when others fail.

    ``between`` is called after every chunk (every ``PROGRESS_EVERY`` items on the
    one-by-one path; the Celery task uses it to keep the embeddings in step with
    the import)."""
    items = import_tools(job.payload, job.options.get("format"))
    plan = plan_names(job.catalog, items, job.options.get("names", REFUSE))
    recorded = {entry["index"] for entry in job.items}
    actor = job.created_by
    size = int(settings.QUIVER_IMPORT_CHUNK)
    with jobs.keep_alive(job):
        if size > 0:
            _apply_chunks(job, plan, recorded, actor, between, size)
        else:
            _apply_items(job, plan, recorded, actor, between)
    return jobs.finish_job(job, "items", "counts", "done")


def _apply_chunks(
    job: Job,
    plan: NamePlan,
    recorded: set[int],
    actor: Actor,
    between: Callable[[Job], object] | None,
    size: int,
) -> None:
    todo = [item for item in plan.items if item.index not in recorded]
    for start in range(0, len(todo), size):
        chunk = todo[start : start + size]
        try:
            with transaction.atomic():
                _record(job, plan, import_chunk(job.catalog, chunk, actor))
        except IntegrityError:
            # Refused by a unique constraint (see import_chunk): nothing of the
            # chunk was kept; the one-by-one path gives each item its outcome.
            with transaction.atomic():
                screen = holds.Screen(job.catalog.pk)
                single = [
                    _import_one(job.catalog, *_parts(i), actor, screen) for i in chunk
                ]
                _record(job, plan, single)
        if between is not None:
            between(job)


def _parts(item: ImportItem) -> tuple[int, ToolSpec | None, str | None]:
    return item.index, item.spec, item.error


def _record(job: Job, plan: NamePlan, entries: list[dict[str, Any]]) -> None:
    """Add the chunk's outcomes to the job and save them in its transaction."""
    entries = [plan.annotate(entry) for entry in entries]
    job.items.extend(entries)
    for entry in entries:
        job.counts[entry["outcome"]] = job.counts.get(entry["outcome"], 0) + 1
    job.done = len(job.items)
    jobs.save_progress(job, "items", "counts", "done")


def _apply_items(
    job: Job,
    plan: NamePlan,
    recorded: set[int],
    actor: Actor,
    between: Callable[[Job], object] | None,
) -> None:
    screen = holds.Screen(job.catalog.pk)
    for position, item in enumerate(plan.items):
        if item.index in recorded:
            continue
        entry = _import_one(
            job.catalog, item.index, item.spec, item.error, actor, screen
        )
        entry = plan.annotate(entry)
        job.items.append(entry)
        job.counts[entry["outcome"]] = job.counts.get(entry["outcome"], 0) + 1
        job.done = len(job.items)
        if position % PROGRESS_EVERY == 0:
            jobs.save_progress(job, "items", "counts", "done")
            if between is not None:
                between(job)


def _import_one(
    catalog: Catalog,
    index: int,
    spec: ToolSpec | None,
    error: str | None,
    actor: Actor,
    screen: holds.Screen | None = None,
) -> dict[str, Any]:
    name = spec.name if spec is not None else None
    if spec is None:
        return {"index": index, "name": name, "outcome": "rejected", "reason": error}
    try:
        existing = Tool.objects.filter(catalog=catalog, name=spec.name).first()
        if existing is None:
            create_tool(catalog, spec, actor=actor, screen=screen, origin="import")
            outcome = ImportOutcome.CREATED
        else:
            written = update_tool(
                existing, spec, actor=actor, screen=screen, origin="import"
            )
            outcome = written.outcome
    except (ValidationError, ToolConflict) as exc:
        return rejection(index, name, exc)
    return {"index": index, "name": name, "outcome": outcome.value, "reason": ""}
