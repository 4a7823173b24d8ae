"""Bulk edits of tools: one change (status, roles, tags, category, or delete) on a
set of tools, each tool changed through the single-tool services, so each gets its
own version, ToolChange and ``tool_changed`` audit event, with the same reason.

The set is always resolved through ``Tool.objects.managed_by(actor)``: a bulk edit
never reaches a tool its actor may not change, whatever ids or filter it names.
Sets of at most ``BULK_INLINE_MAX`` tools are changed at once; larger ones (up to
``BULK_MAX_TOOLS``) become one Job of kind ``bulk`` per catalog, which a worker
applies with progress like an import, resolving the set again when it runs (the
actor may have lost access in between).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from audit.actors import Actor, stored_user
from catalog.choices import ImportOutcome, ToolStatus
from catalog.models import Tool
from catalog.naming import hidden_characters
from catalog.querysets import ToolQuerySet
from catalog.services.tools import (
    ToolConflict,
    clean_reason,
    delete_tool,
    set_tool_status,
    tool_to_spec,
    update_tool,
)
from jobs import services as jobs
from jobs.choices import JobKind
from jobs.models import Job

BULK_INLINE_MAX = 50
BULK_MAX_TOOLS = 5000
MAX_LIST_ITEMS = 100
MAX_ITEM_CHARS = 100
DELETED = "deleted"
SKIPPED = "skipped"
OUTCOMES = ("updated", "unchanged", DELETED, "rejected", SKIPPED)
LIST_FIELDS = ("tags", "allowed_roles")
SETTABLE = (
    "status",
    "category",
    *LIST_FIELDS,
    *(f"add_{name}" for name in LIST_FIELDS),
    *(f"remove_{name}" for name in LIST_FIELDS),
)
PROGRESS_EVERY = 10


@dataclass(frozen=True)
class BulkChange:
    """What to do to every tool of the set: ``values`` to set, or delete."""

    values: dict[str, Any] = field(default_factory=dict)
    delete: bool = False
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"set": self.values, "delete": self.delete, "reason": self.reason}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BulkChange:
        return cls(data.get("set") or {}, bool(data.get("delete")), data["reason"])

    @property
    def summary(self) -> str:
        if self.delete:
            return "delete"
        return "set " + ", ".join(sorted(self.values))


@dataclass
class BulkResult:
    """The counts of an inline edit, its rejections, or the jobs that will run it."""

    total: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    rejected: list[dict[str, str]] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)


def check_change(values: Any, delete: Any, reason: Any) -> BulkChange:
    """The change as validated; a ValidationError names each bad field
    (``set``, ``set.<key>``, ``delete``, ``reason``)."""
    if delete is not None and not isinstance(delete, bool):
        raise ValidationError({"delete": ["delete: must be true or false"]})
    if bool(delete) == (values is not None):
        raise ValidationError({"set": ["set: give either set or delete: true"]})
    cleaned_reason = clean_reason(reason)
    if delete:
        return BulkChange(delete=True, reason=cleaned_reason)
    if not isinstance(values, dict) or not values:
        raise ValidationError({"set": ["set: must be a non-empty JSON object"]})
    unknown = sorted(set(values) - set(SETTABLE))
    if unknown:
        raise ValidationError(
            {f"set.{unknown[0]}": [f"set.{unknown[0]}: may be one of {SETTABLE}"]}
        )
    cleaned = {key: _check_value(key, value) for key, value in values.items()}
    for name in LIST_FIELDS:
        if name in cleaned and ({f"add_{name}", f"remove_{name}"} & set(cleaned)):
            raise ValidationError(
                {f"set.{name}": [f"set.{name}: replace it, or add/remove, not both"]}
            )
    return BulkChange(cleaned, reason=cleaned_reason)


def _check_value(key: str, value: Any) -> Any:
    where = f"set.{key}"
    if key == "status":
        settable = [s for s in ToolStatus.values if s != ToolStatus.HELD]
        if value not in settable:
            rule = f"must be one of {settable} (only a review holds a tool)"
            raise ValidationError({where: [f"{where}: {rule}"]})
        return value
    if key == "category":
        if not isinstance(value, str) or len(value) > MAX_ITEM_CHARS:
            rule = f"must be a string of at most {MAX_ITEM_CHARS} characters"
            raise ValidationError({where: [f"{where}: {rule}"]})
        _refuse_hidden(where, value)
        return value.strip()
    if not isinstance(value, list) or len(value) > MAX_LIST_ITEMS:
        rule = f"must be a list of at most {MAX_LIST_ITEMS} strings"
        raise ValidationError({where: [f"{where}: {rule}"]})
    items: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_ITEM_CHARS:
            rule = f"each must be a non-empty string of at most {MAX_ITEM_CHARS} chars"
            raise ValidationError({where: [f"{where}: {rule}"]})
        _refuse_hidden(where, item)
        if item.strip() not in items:
            items.append(item.strip())
    return items


def _refuse_hidden(where: str, text: str) -> None:
    if hidden_characters(text):
        rule = "must not contain invisible or control characters"
        raise ValidationError({where: [f"{where}: {rule}"]})


def tool_ids(tools: ToolQuerySet, field_name: str) -> list[tuple[int, int]]:
    """(id, catalog id) of the set, in a stable order; a set past
    ``BULK_MAX_TOOLS`` is a ValidationError naming ``field_name``."""
    rows = list(
        tools.order_by("catalog_id", "id").values_list("id", "catalog_id")[
            : BULK_MAX_TOOLS + 1
        ]
    )
    if len(rows) > BULK_MAX_TOOLS:
        rule = f"the set has more than {BULK_MAX_TOOLS} tools; narrow it"
        raise ValidationError({field_name: [f"{field_name}: {rule}"]})
    return rows


def bulk_edit(
    tools: ToolQuerySet,
    change: BulkChange,
    *,
    actor: Actor,
    field_name: str = "ids",
    request_id: uuid.UUID | None = None,
) -> BulkResult:
    """Apply ``change`` to ``tools`` (narrowed to what ``actor`` manages): at once
    for a small set, else as one queued Job per catalog."""
    managed = tools & Tool.objects.managed_by(actor)
    rows = tool_ids(managed, field_name)
    result = BulkResult(total=len(rows))
    if len(rows) <= BULK_INLINE_MAX:
        for tool in managed.filter(pk__in=[pk for pk, _ in rows]).order_by("id"):
            _count(result, tool.name, *apply_change(tool, change, actor, request_id))
        return result
    result.jobs = start_bulk_jobs(rows, change, actor=actor, request_id=request_id)
    return result


def _count(result: BulkResult, name: str, outcome: str, why: str) -> None:
    result.counts[outcome] += 1
    if outcome == "rejected":
        result.rejected.append({"name": name, "reason": why})


def apply_change(
    tool: Tool, change: BulkChange, actor: Actor, request_id: uuid.UUID | None
) -> tuple[str, str]:
    """Change one tool through its service; (outcome, why it was refused)."""
    try:
        if change.delete:
            delete_tool(tool, actor=actor, request_id=request_id, reason=change.reason)
            return DELETED, ""
        if set(change.values) == {"status"}:
            result = set_tool_status(
                tool,
                change.values["status"],
                actor=actor,
                request_id=request_id,
                reason=change.reason,
            )
        else:
            result = update_tool(
                tool,
                spec_with(tool, change.values),
                actor=actor,
                request_id=request_id,
                reason=change.reason,
            )
    except (ValidationError, ToolConflict) as exc:
        messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
        return "rejected", "; ".join(messages)[:500]
    if result.outcome == ImportOutcome.UNCHANGED:
        return "unchanged", ""
    return "updated", ""


def spec_with(tool: Tool, values: dict[str, Any]) -> Any:
    """The tool's spec with the bulk values applied (lists replaced, or items
    added after the kept ones and removed)."""
    spec = tool_to_spec(tool)
    replaced = ("status", "category", *LIST_FIELDS)
    changes: dict[str, Any] = {k: values[k] for k in replaced if k in values}
    for name in LIST_FIELDS:
        add, remove = values.get(f"add_{name}", []), values.get(f"remove_{name}", [])
        if add or remove:
            kept = [item for item in getattr(spec, name) if item not in remove]
            changes[name] = kept + [item for item in add if item not in kept]
    return replace(spec, **changes)


def start_bulk_jobs(
    rows: Iterable[tuple[int, int]],
    change: BulkChange,
    *,
    actor: Actor,
    request_id: uuid.UUID | None,
) -> list[Job]:
    """One queued Job per catalog of the set, sent to a worker after commit."""
    by_catalog: dict[int, list[int]] = {}
    for tool_id, catalog_id in rows:
        by_catalog.setdefault(catalog_id, []).append(tool_id)
    shared_id = str(request_id or uuid.uuid4())
    created = []
    with transaction.atomic():
        for catalog_id, ids in sorted(by_catalog.items()):
            job = Job.objects.create(
                kind=JobKind.BULK,
                catalog_id=catalog_id,
                total=len(ids),
                payload={"ids": ids, "change": change.to_json()},
                options={
                    "action": change.summary,
                    "reason": change.reason,
                    "request_id": shared_id,
                },
                created_by=stored_user(actor),
                counts=dict.fromkeys(OUTCOMES, 0),
            )
            jobs.enqueue_job(job)
            created.append(job)
    return created


def run_bulk_job(job: Job) -> Job:
    """Apply the job's change to its tools from where it stopped; each tool is
    looked up again among those its creator manages now (else ``skipped``)."""
    payload: dict[str, Any] = job.payload or {}
    change = BulkChange.from_json(payload["change"])
    ids = payload["ids"]
    actor = job.created_by
    request_id = uuid.UUID(job.options["request_id"])
    managed = Tool.objects.managed_by(actor).filter(catalog_id=job.catalog_id)
    with jobs.keep_alive(job):
        for tool_id in ids[job.done :]:
            tool = managed.filter(pk=tool_id).first()
            outcome, why = (
                apply_change(tool, change, actor, request_id)
                if tool is not None
                else (SKIPPED, "")
            )
            job.counts[outcome] = job.counts.get(outcome, 0) + 1
            if outcome == "rejected" and tool is not None:
                item = {"index": job.done, "name": tool.name, "outcome": outcome}
                job.items = [*job.items, {**item, "reason": why}]
            job.done += 1
            if job.done % PROGRESS_EVERY == 0:
                jobs.save_progress(job, "done", "counts", "items")
    return jobs.finish_job(job, "done", "counts", "items")
