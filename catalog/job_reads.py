"""What a reader may be shown of a job: the items naming tools they could be
offered; the rest only counted. The console's job pages and the jobs API both
read jobs through here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalog.models import Tool
from identity.access import access_for
from jobs.models import Job


@dataclass(frozen=True)
class JobForReader:
    """What one reader may be shown of a job's items and errors; the rest counted."""

    items: list[dict[str, Any]]
    hidden_items: int
    errors: list[str]
    hidden_errors: int


def job_for_reader(job: Job, reader: Any) -> JobForReader:
    """The job's items naming only tools the reader could be offered.

    Curators, compliance and admins see the whole catalog, so every item and
    error. Anyone else sees the items naming a tool ``Tool.objects.visible_to``
    lets them see (by name, in the job's catalog, as it is now), without the
    reason (a refusal's reason may name another tool, e.g. the holder of a
    provider name); every other item (hidden tools, deleted ones, nameless
    refusals) and every error (a failure's message may quote the document) is
    only counted."""
    access = access_for(reader)
    items = [item for item in job.items if isinstance(item, dict)]
    if access.sees_whole_catalog:
        return JobForReader(items, 0, list(job.errors), 0)
    names = {item["name"] for item in items if isinstance(item.get("name"), str)}
    visible = set(
        Tool.objects.visible_to(access)
        .filter(catalog_id=job.catalog_id, name__in=names)
        .values_list("name", flat=True)
    )
    shown = [{**item, "reason": ""} for item in items if item.get("name") in visible]
    return JobForReader(shown, len(job.items) - len(shown), [], len(job.errors))
