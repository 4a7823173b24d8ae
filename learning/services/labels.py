"""Labelled requests of a catalog: checked item by item, stored in bulk, reviewed,
deleted; every change one ``labels_changed`` audit event in the same transaction.

A label is a request (a ``query`` string or chat ``messages``, exactly one) and
the tools that fit it (``[]``: no tool fits). An upload keeps every good item and
refuses each bad one with its index and reason: a wrong shape, a text past the
size a selection may send (catalog.sizes), a tool the curator cannot see in the
catalog (an unknown tool gets the same answer), a tool named twice, or a request
already labelled (in the catalog, or earlier in the same upload).

The audit event keeps counts, the new labels' id range and at most
``AUDIT_REFUSALS`` refusals; the labels themselves (text cut to
``AUDIT_TEXT`` characters, and their tools) only when at most ``AUDIT_ITEMS``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from audit.actors import Actor, stored_user
from audit.choices import EventType
from audit.services import record_event
from catalog.models import Catalog, Tool
from catalog.services.changes import RELEARN_TASK
from catalog.sizes import MAX_STORED_CHARS, size_problem
from config.fast.copy_rows import copy_insert
from jobs import services as jobs
from learning.models import Label, LabelOrigin, LabelStatus

MAX_LABELS = 10_000  # a request's (or an upload's) labels
MAX_TOOLS = 100  # tools one label names
MAX_MESSAGES = 500  # as /select
AUDIT_ITEMS = 100
AUDIT_TEXT = 200
AUDIT_REFUSALS = 50
ITEM_KEYS = frozenset({"query", "messages", "tools"})
# The actions that change the accepted labels a learn reads, and the count in
# their result saying by how many (a proposal changes none: it awaits review).
RELEARN_ACTIONS = {
    "upload": "added",
    "delete": "deleted",
    "accept": "accepted",
    "reject": "rejected",
}


@dataclass(frozen=True)
class Refusal:
    index: int
    field: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "field": self.field, "reason": self.reason}


@dataclass(frozen=True)
class CleanLabel:
    """One checked item: its request and tools."""

    index: int
    query: str
    messages: list[dict[str, Any]] | None
    tools: list[str]

    @property
    def key(self) -> str:
        return request_key(self.query, self.messages)


@dataclass
class Checked:
    """An upload's items: the good ones and the refused ones, in order."""

    good: list[CleanLabel] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def request_key(query: str, messages: Any) -> str:
    """What makes two labels the same request: the query as written (ends
    trimmed), or the messages' canonical JSON."""
    if messages:
        text = json.dumps(messages, sort_keys=True, separators=(",", ":"))
        return "m:" + text
    return "q:" + query.strip()


def check_items(
    items: Sequence[Any],
    tool_names: set[str],
    slug: str,
    *,
    keep_repeats: bool = False,
) -> Checked:
    """Every item checked on its own (no database access): ``tool_names`` are the
    tools of the catalog the caller may see. A request seen earlier in the items
    is refused, unless ``keep_repeats`` (an evaluation counts and merges them)."""
    checked = Checked()
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        clean, problem = _check_item(index, item, tool_names, slug)
        if clean is not None and clean.key in seen and not keep_repeats:
            problem = Refusal(
                index,
                "query",
                f"labels[{index}]: the same request as labels[{seen[clean.key]}]",
            )
        if problem is not None or clean is None:
            checked.refused.append(problem or Refusal(index, "", "invalid"))
            continue
        seen.setdefault(clean.key, index)
        checked.good.append(clean)
    return checked


def _check_item(
    index: int, item: Any, tool_names: set[str], slug: str
) -> tuple[CleanLabel | None, Refusal | None]:
    at = f"labels[{index}]"
    if not isinstance(item, dict):
        return None, Refusal(index, "", f"{at}: must be an object")
    unknown = sorted(set(item) - ITEM_KEYS)
    if unknown:
        return None, Refusal(index, unknown[0], f"{at}.{unknown[0]}: unknown field")
    query, messages = item.get("query"), item.get("messages")
    if (query is None) == (messages is None):
        rule = "give exactly one of query or messages"
        return None, Refusal(index, "query", f"{at}.query: {rule}")
    problem = (
        _query_problem(query) if query is not None else _messages_problem(messages)
    )
    if problem:
        name = "query" if query is not None else "messages"
        return None, Refusal(index, name, f"{at}.{problem}")
    tools, problem = _tools(item.get("tools"), tool_names, slug)
    if problem:
        return None, Refusal(index, "tools", f"{at}.{problem}")
    return CleanLabel(index, query or "", messages, tools), None


def _query_problem(query: Any) -> str:
    if not isinstance(query, str):
        return "query: must be a string"
    if not query.strip():
        return "query: must not be empty"
    return size_problem("query", query, MAX_STORED_CHARS)


def _messages_problem(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        return "messages: must be a non-empty list of messages"
    if len(messages) > MAX_MESSAGES:
        return f"messages: at most {MAX_MESSAGES} messages"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f"messages[{i}].role: is required (system, user, ...)"
    return size_problem("messages", messages, MAX_STORED_CHARS)


def _tools(value: Any, tool_names: set[str], slug: str) -> tuple[list[str], str]:
    if value is None:
        return [], "tools: is required ([] when no tool fits)"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return [], "tools: must be a list of tool names"
    if len(value) > MAX_TOOLS:
        return [], f"tools: at most {MAX_TOOLS} tools"
    if len(set(value)) != len(value):
        return [], "tools: names a tool twice"
    for name in value:
        if name not in tool_names:
            return [], f"tools: no tool {name!r} in catalog {slug!r}"
    return list(value), ""


def visible_tool_names(catalog: Catalog, actor: Actor) -> set[str]:
    """The names of the catalog's tools the actor may see (the system: all)."""
    tools = Tool.objects.filter(catalog=catalog)
    if actor is not None:
        tools = tools & Tool.objects.visible_to(actor)
    return set(tools.values_list("name", flat=True))


def existing_keys(catalog: Catalog, keys: Iterable[str]) -> dict[str, int]:
    """Request key -> id of the catalog's label (not rejected) with that request."""
    wanted = set(keys)
    labels = Label.objects.filter(catalog=catalog).exclude(status=LabelStatus.REJECTED)
    queries = [key[2:] for key in wanted if key.startswith("q:")]
    found: dict[str, int] = {}
    for start in range(0, len(queries), 2000):
        chunk = queries[start : start + 2000]
        for pk, query in labels.filter(
            messages__isnull=True, query__in=chunk
        ).values_list("pk", "query"):
            found.setdefault("q:" + query.strip(), pk)
    if any(key.startswith("m:") for key in wanted):
        rows = labels.filter(messages__isnull=False).values_list("pk", "messages")
        for pk, messages in rows.iterator():
            found.setdefault(request_key("", messages), pk)
    return {key: pk for key, pk in found.items() if key in wanted}


@dataclass
class Upload:
    """What an upload did: how many labels were added, and what was refused."""

    added: int
    refused: list[Refusal]
    ids: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "refused_count": len(self.refused),
            "refused": [r.to_dict() for r in self.refused],
        }


def add_labels(
    catalog: Catalog,
    items: Sequence[Any],
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    channel: str = "api",
) -> Upload:
    """Check ``items`` (at most ``MAX_LABELS``), store the good ones in bulk as
    accepted uploads, refuse the rest item by item; one audit event."""
    if len(items) > MAX_LABELS:
        raise ValueError(f"labels: at most {MAX_LABELS} a request")
    checked = check_items(items, visible_tool_names(catalog, actor), catalog.slug)
    with transaction.atomic():
        # One upload of a catalog at a time, so two cannot add the same request.
        list(Catalog.objects.select_for_update().filter(pk=catalog.pk).values("pk"))
        good = _not_yet_labelled(catalog, checked)
        rows = [_new_label(catalog, clean, actor) for clean in good]
        # COPY, not bulk_create: psycopg's quoting of bulk_create's arrays was
        # most of an upload's time (config.fast.copy_rows).
        copy_insert(rows, with_ids=True)
        upload = Upload(len(rows), checked.refused, [r.pk for r in rows])
        record_labels_changed(
            catalog,
            "upload",
            actor,
            request_id,
            {
                "channel": channel,
                "received": len(items),
                "refused": [r.to_dict() for r in checked.refused[:AUDIT_REFUSALS]],
                **_kept(good),
            },
            {
                "added": upload.added,
                "refused": len(checked.refused),
                **_id_range(upload.ids),
            },
        )
    return upload


def _not_yet_labelled(catalog: Catalog, checked: Checked) -> list[CleanLabel]:
    """The good items whose request the catalog has no label for; the others
    join the refusals (kept in item order)."""
    known = existing_keys(catalog, (c.key for c in checked.good))
    good = []
    for clean in checked.good:
        if clean.key in known:
            reason = (
                f"labels[{clean.index}]: already labelled (label {known[clean.key]})"
            )
            checked.refused.append(Refusal(clean.index, "query", reason))
        else:
            good.append(clean)
    checked.refused.sort(key=lambda r: r.index)
    return good


def _new_label(catalog: Catalog, clean: CleanLabel, actor: Actor) -> Label:
    return Label(
        catalog=catalog,
        query=clean.query,
        messages=clean.messages,
        tools=clean.tools,
        origin=LabelOrigin.UPLOAD,
        status=LabelStatus.ACCEPTED,
        created_by=stored_user(actor),
    )


def _kept(good: list[CleanLabel]) -> dict[str, Any]:
    """The labels themselves for a small upload; counts only for a large one."""
    no_tool = sum(1 for c in good if not c.tools)
    summary: dict[str, Any] = {"no_tool": no_tool, "with_tools": len(good) - no_tool}
    if len(good) <= AUDIT_ITEMS:
        summary["labels"] = [
            {
                "query": c.query[:AUDIT_TEXT] if c.query else "(messages)",
                "tools": c.tools,
            }
            for c in good
        ]
    return summary


def _id_range(ids: list[int]) -> dict[str, Any]:
    return {"first_id": min(ids), "last_id": max(ids)} if ids else {}


def record_labels_changed(
    catalog: Catalog,
    action: str,
    actor: Actor,
    request_id: uuid.UUID | None,
    given: dict[str, Any],
    result: dict[str, Any],
) -> None:
    counts = ", ".join(f"{k} {v}" for k, v in result.items() if isinstance(v, int))
    record_event(
        EventType.LABELS_CHANGED,
        actor=actor,
        request_id=request_id,
        catalog_slug=catalog.slug,
        catalog_version=catalog.version,
        summary=f"labels of {catalog.slug}: {action} ({counts})",
        input={"action": action, **given},
        output=result,
    )
    changed = result.get(RELEARN_ACTIONS.get(action, ""), 0)
    if changed and settings.QUIVER_RELEARN_ON_CHANGE:
        jobs.enqueue(RELEARN_TASK, catalog.pk)  # after commit; the task debounces


def labels_of(
    catalog: Catalog, *, status: str = "", origin: str = ""
) -> QuerySet[Label]:
    """The catalog's labels, oldest first, optionally of one status or origin."""
    labels = Label.objects.filter(catalog=catalog)
    if status:
        labels = labels.filter(status=status)
    if origin:
        labels = labels.filter(origin=origin)
    return labels.order_by("id")


def delete_labels(
    catalog: Catalog,
    *,
    actor: Actor,
    label_id: int | None = None,
    status: str = "",
    origin: str = "",
    request_id: uuid.UUID | None = None,
) -> int:
    """Delete one label (``label_id``), or every label of the catalog matching the
    filters (none: all of them); one audit event with the count. Returns how many
    were deleted (0 for an unknown id: the caller answers 404)."""
    labels = labels_of(catalog, status=status, origin=origin)
    if label_id is not None:
        labels = labels.filter(pk=label_id)
    with transaction.atomic():
        ids = list(labels.select_for_update().values_list("pk", flat=True))
        if not ids:
            return 0
        deleted, _ = Label.objects.filter(pk__in=ids).delete()
        given: dict[str, Any] = {"status": status or None, "origin": origin or None}
        if label_id is not None:
            given = {"label_id": label_id}
        record_labels_changed(
            catalog, "delete", actor, request_id, given, {"deleted": deleted}
        )
    return deleted


def review_labels(
    catalog: Catalog,
    ids: Sequence[int],
    decision: str,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> int:
    """Accept or reject proposed labels of the catalog (others are left as they
    are); one audit event naming the labels. Returns how many changed."""
    if decision not in (LabelStatus.ACCEPTED, LabelStatus.REJECTED):
        raise ValueError("status: must be accepted or rejected")
    with transaction.atomic():
        rows = Label.objects.select_for_update().filter(
            catalog=catalog, pk__in=list(ids), status=LabelStatus.PROPOSED
        )
        changed = list(rows.values_list("pk", flat=True))
        if not changed:
            return 0
        Label.objects.filter(pk__in=changed).update(status=decision)
        action = "accept" if decision == LabelStatus.ACCEPTED else "reject"
        record_labels_changed(
            catalog,
            action,
            actor,
            request_id,
            {"label_ids": changed[:AUDIT_ITEMS]},
            {action + "ed": len(changed)},
        )
    return len(changed)
