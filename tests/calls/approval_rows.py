"""Approvals and tool-call events as the call path (i22-calls' calls/approvals.py
and calls/services.py) writes them, made directly so the human side can be tested
on its own: a pending approval row, and a ``tool_call`` audit event of the shape
the shared design fixes."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from audit.choices import EventType
from audit.models import AuditEvent
from audit.services import record_event
from calls.models import Approval
from catalog.models import Catalog, Tool
from catalog.services import ensure_default_catalog
from tests.factories import make_tool


def arguments_hash(arguments: dict[str, Any]) -> str:
    """calls.hashing.arguments_hash's formula (the shared design's)."""
    text = json.dumps(
        arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode()).hexdigest()


def make_approval(
    requester: Any,
    *,
    catalog: Catalog | None = None,
    tool_name: str = "delete_file",
    arguments: dict[str, Any] | None = None,
    expires_in: timedelta = timedelta(hours=1),
    selection_id: uuid.UUID | None = None,
    **fields: Any,
) -> Approval:
    """A pending approval of ``tool_name`` asked by ``requester`` (a person or a
    key's service user)."""
    catalog = catalog or ensure_default_catalog()
    tool = Tool.objects.filter(catalog=catalog, name=tool_name).first()
    tool = tool or make_tool(catalog, tool_name)
    arguments = {"path": "/tmp/report.txt"} if arguments is None else arguments
    return Approval.objects.create(
        catalog=catalog,
        tool=tool,
        tool_name=tool.name,
        tool_version=tool.version,
        arguments=arguments,
        arguments_hash=arguments_hash(arguments),
        requested_by=requester,
        requester_name=requester.get_username(),
        selection_id=selection_id,
        request_id=uuid.uuid4(),
        expires=timezone.now() + expires_in,
        **fields,
    )


def record_call(
    actor: Any,
    *,
    tool: str = "delete_file",
    outcome: str = "ran",
    selection_id: str | None = None,
    catalog_slug: str = "default",
    reason: str = "",
    duration_ms: float = 12.5,
    call_id: int | None = None,
) -> AuditEvent:
    """One ``tool_call`` event as the call path records it (an outcome names its
    ``started`` event's id as ``call_id``)."""
    arguments = {"path": "/tmp/x"}
    more = {} if call_id is None else {"call_id": call_id}
    return record_event(
        EventType.TOOL_CALL,
        actor=actor,
        request_id=uuid.uuid4(),
        catalog_slug=catalog_slug,
        catalog_version=1,
        summary=f"{tool} {outcome}",
        input={
            "tool": tool,
            "tool_version": 2,
            "source": "files",
            "upstream_name": tool,
            "arguments": arguments,
            "arguments_hash": arguments_hash(arguments),
            "selection_id": selection_id,
            "approval_id": None,
            "channel": "api",
            **more,
        },
        output={
            "outcome": outcome,
            "reason": reason,
            "duration_ms": duration_ms,
            "result_hash": None,
            "result_bytes": None,
            "is_error": outcome != "ran",
        },
    )


def restore_approver_groups() -> None:
    """A transactional test's flush empties the groups calls/migrations/0002 made
    (the permission itself comes back with post_migrate): make them again."""
    from django.contrib.auth.models import Group, Permission

    decide = Permission.objects.get(
        content_type__app_label="calls", codename="decide_approval"
    )
    for name in ("approver", "admin"):
        Group.objects.get_or_create(name=name)[0].permissions.add(decide)
