"""Putting a source behind tools its catalog already has, under their own names.

A catalog whose tools were written first (``make run``'s demo catalog) and a server
that serves them later meet here: each tool of the catalog named like one the source
lists, and that no source runs yet, gets a link to the source by that name, so calls
run on the source and its syncs keep the tool as they keep their own. Each link
records the tool as the source lists it, so a first sync finds it unchanged. Linking
makes tools runnable, so it is one ``source_changed`` audit event naming them.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from audit.actors import Actor
from audit.choices import EventType
from catalog import owned
from catalog.models import Tool
from sources.mapping import upstream_hash
from sources.models import Source, SourceTool
from sources.services import require_manager


def link_tools(
    source: Source,
    listed: dict[str, dict[str, Any]],
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> list[str]:
    """Link to ``source`` each tool of its catalog named in ``listed`` (upstream
    name -> the tool as the source lists it) that no source runs yet; the names
    linked, sorted (none: no event). ``actor`` None is the system (a command)."""
    if actor is not None:
        require_manager(actor, source.catalog)
    with transaction.atomic():
        free = (
            Tool.objects.select_for_update(of=("self",))
            .filter(catalog_id=source.catalog_id, name__in=list(listed))
            .filter(source_link__isnull=True)
            .order_by("name")
        )
        linked = [_link(source, tool, listed[tool.name]) for tool in free]
        if linked:
            _event(source, linked, actor, request_id)
    return linked


def _link(source: Source, tool: Tool, upstream: dict[str, Any]) -> str:
    SourceTool.objects.create(
        source=source,
        tool=tool,
        upstream_name=tool.name,
        upstream=upstream,
        upstream_hash=upstream_hash(upstream),
    )
    return tool.name


def _event(
    source: Source, names: list[str], actor: Actor, request_id: uuid.UUID | None
) -> None:
    owned.record_change(
        source,
        EventType.SOURCE_CHANGED,
        "link",
        actor=actor,
        request_id=request_id,
        details={"kind": source.kind, "tools": names},
        summary=f"source {source.name!r}: link {len(names)} existing tools",
    )
