"""A tool's change on record: its ToolChange row, the catalog's version bumped
and the same change in the audit chain, in the caller's transaction.

Every writer of a tool (``catalog.services.tools``, a review's decision in
``catalog.services.pinning``, a hold in ``catalog.services.holds``) records
its change here.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from audit.actors import Actor, actor_name, stored_user
from audit.choices import EventType
from audit.services import record_event
from catalog.choices import ChangeAction
from catalog.models import Catalog, Tool, ToolChange
from catalog.spec import ToolSpec
from catalog.versions import hides
from jobs import services as jobs

RELEARN_TASK = "learning.learn_tasks.relearn_if_due"
_HASHED_FIELDS = [name for name in ToolSpec.field_names() if name != "provider_name"]


def tool_to_spec(tool: Tool) -> ToolSpec:
    """The canonical ToolSpec a stored tool stands for."""
    values = {name: getattr(tool, name) for name in ToolSpec.field_names()}
    values["cost_per_call"] = tool.cost_per_call.normalize()
    return ToolSpec(**values)


def content_hash(spec: ToolSpec) -> str:
    """Hash of everything a curator wrote (the derived provider name excluded).

    The fields are read as they are (``to_dict``'s deep copies are not needed to
    write JSON): the same text, so the same hash."""
    data = {name: getattr(spec, name) for name in _HASHED_FIELDS}
    data["cost_per_call"] = format(spec.cost_per_call.normalize(), "f")
    encoded = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def record_change(
    tool: Tool,
    action: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    actor: Actor,
    request_id: uuid.UUID | None,
    reason: str = "",
) -> None:
    catalogs = Catalog.objects.filter(pk=tool.catalog_id)
    catalogs.update(version=F("version") + 1, updated=timezone.now())
    slug, catalog_version = catalogs.values_list("slug", "version").get()
    change = ToolChange.objects.create(
        catalog_id=tool.catalog_id,
        tool=tool if action != ChangeAction.DELETE else None,
        tool_name=tool.name,
        action=action,
        version=tool.version,
        before=before,
        after=after,
        actor=stored_user(actor),
        actor_name=actor_name(actor),
        request_id=request_id,
        reason=reason,
        catalog_version=catalog_version,
        hides=hides(before, after),
    )
    if action != ChangeAction.DELETE:
        tool.changed_version = catalog_version
        Tool.objects.filter(pk=tool.pk).update(changed_version=catalog_version)
    # The same change in the one audit chain, in the same transaction.
    record_event(
        EventType.TOOL_CHANGED,
        actor=actor,
        request_id=request_id,
        catalog_slug=slug,
        catalog_version=catalog_version,
        summary=f"tool {tool.name!r} v{tool.version}: {action}",
        input={
            "action": action,
            "tool": tool.name,
            "before": before,
            **({"reason": reason} if reason else {}),
        },
        output={"change_id": change.pk, "version": tool.version, "after": after},
    )
    if settings.QUIVER_RELEARN_ON_CHANGE:  # re-learn after tool edits
        jobs.enqueue(RELEARN_TASK, tool.catalog_id)


def spec_json(tool: Tool) -> dict[str, Any]:
    return tool_to_spec(tool).to_dict()


def write_status(
    tool: Tool,
    status: str,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    reason: str = "",
) -> Tool:
    """Set the status of ``tool`` (locked by the caller) and record the change:
    the one status write, under every rule its callers check first."""
    before = spec_json(tool)
    tool.status = status
    tool.version += 1
    tool.updated_by = stored_user(actor)
    tool.content_hash = content_hash(tool_to_spec(tool))
    tool.save(
        update_fields=["status", "version", "updated_by", "content_hash", "updated"]
    )
    record_change(
        tool, ChangeAction.UPDATE, before, spec_json(tool), actor, request_id, reason
    )
    return tool
