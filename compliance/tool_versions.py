"""A tool as it stood at one version, found in the record of its changes, so it can
be shown after the tool was edited again or deleted.

The audit chain's ``tool_changed`` events are the first source (hash-chained, and
scoped by ``visible_to``); the catalog's ``ToolChange`` history answers for changes
made before tools were audited. A name deleted and created again starts over at
version 1: ``before_event`` (a selection's event id) picks the version that
selection saw; without it the latest record of that version wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.urls import reverse

from audit.choices import EventType
from audit.querysets import AuditEventQuerySet
from catalog.choices import ChangeAction
from catalog.models import ToolChange
from catalog.services.tools import content_hash
from catalog.spec import SpecError, spec_from_dict


@dataclass(frozen=True)
class ToolVersion:
    """One version of a tool, as recorded when it was made."""

    catalog: str
    name: str
    version: int
    definition: dict[str, Any]
    made: datetime
    made_by: str
    action: str
    event_id: int | None = None
    change_id: int | None = None
    later: list[dict[str, Any]] = field(default_factory=list)

    @property
    def content_hash(self) -> str:
        """The hash Quiver gives this definition (what a selection records)."""
        try:
            return content_hash(spec_from_dict(self.definition))
        except (SpecError, TypeError, ValueError):
            return ""

    @property
    def deleted(self) -> dict[str, Any] | None:
        """The deletion that followed this version, if any."""
        return next((c for c in self.later if c["action"] == ChangeAction.DELETE), None)


def _tool_events(events: AuditEventQuerySet, catalog: str, name: str) -> Any:
    return events.filter(
        event_type=EventType.TOOL_CHANGED,
        catalog_slug=catalog,
        input__contains={"tool": name},
    )


def find_version(
    events: AuditEventQuerySet,
    catalog: str,
    name: str,
    version: int,
    before_event: int | None = None,
) -> ToolVersion | None:
    """The tool ``name`` of ``catalog`` at ``version``, or None if no record has
    it (``events`` is the reader's visible audit log)."""
    found = _tool_events(events, catalog, name).filter(
        output__contains={"version": version}
    )
    if before_event is not None:
        found = found.filter(pk__lt=before_event)
    event = found.exclude(input__contains={"action": "delete"}).order_by("-pk").first()
    if event is None:
        return _from_history(catalog, name, version)
    return ToolVersion(
        catalog=catalog,
        name=name,
        version=version,
        definition=(event.output or {}).get("after") or {},
        made=event.created,
        made_by=event.actor_name,
        action=str((event.input or {}).get("action", "")),
        event_id=event.pk,
        later=_later(events, catalog, name, event.pk),
    )


def _later(
    events: AuditEventQuerySet, catalog: str, name: str, after_id: int
) -> list[dict[str, Any]]:
    """The changes of the same tool after this version, oldest first (until a
    deletion: a later tool of the same name is another tool)."""
    rows = (
        _tool_events(events, catalog, name)
        .filter(pk__gt=after_id)
        .order_by("pk")
        .values_list("pk", "created", "actor_name", "input__action", "output__version")
    )
    later = []
    for pk, created, actor, action, version in rows[:100]:
        later.append(
            {"event_id": pk, "made": created, "by": actor, "action": action}
            | {"version": version}
        )
        if action == ChangeAction.DELETE:
            break
    return later


def _from_history(catalog: str, name: str, version: int) -> ToolVersion | None:
    change = (
        ToolChange.objects.filter(
            catalog__slug=catalog, tool_name=name, version=version
        )
        .exclude(action=ChangeAction.DELETE)
        .order_by("-pk")
        .first()
    )
    if change is None or change.after is None:
        return None
    return ToolVersion(
        catalog=catalog,
        name=name,
        version=version,
        definition=change.after,
        made=change.created,
        made_by=change.actor_name or "system",
        action=change.action,
        change_id=change.pk,
    )


def version_at(
    events: AuditEventQuerySet, catalog: str, name: str, selection_id: int
) -> int | None:
    """The version the tool had when the selection event ``selection_id`` was
    written: its last change recorded before it (None if none, or deleted)."""
    last = (
        _tool_events(events, catalog, name)
        .filter(pk__lt=selection_id)
        .order_by("-pk")
        .values_list("input__action", "output__version")
        .first()
    )
    if last is None or last[0] == ChangeAction.DELETE:
        return None
    return int(last[1])


def change_links(event: Any) -> list[dict[str, str]]:
    """Links from a change's page to the versions it went between: a tool's
    version before and after, or the settings version before the one it made."""
    data, output = event.input or {}, event.output or {}
    if event.event_type == EventType.TOOL_CHANGED:
        return _tool_links(event, str(data.get("tool", "")), data.get("action"))
    version = int(output.get("settings_version") or 0)
    if event.event_type == EventType.SETTINGS and version > 1:
        url = reverse("audit:settings-version", args=[event.catalog_slug, version - 1])
        return [{"label": f"settings v{version - 1} (before)", "url": url}]
    return []


def _tool_links(event: Any, name: str, action: Any) -> list[dict[str, str]]:
    """``?at=`` keeps each link to this tool, not a later one of the same name."""
    version = int((event.output or {}).get("version") or 0)

    def link(number: int, at: int, note: str = "") -> dict[str, str]:
        url = reverse("audit:tool-version", args=[event.catalog_slug, name, number])
        return {"label": f"{name} v{number}{note}", "url": f"{url}?at={at}"}

    links = []
    if action != ChangeAction.DELETE:
        links.append(link(version, event.pk + 1))
    if version > 1:
        links.append(link(version - 1, event.pk, " (before)"))
    return links
