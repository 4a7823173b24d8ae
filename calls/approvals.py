"""Approvals on the call path: asking for one, and spending one on the call it
covers. (A person's decision is ``calls.decisions``.)

An approval covers exactly one tool at one version, with exactly those
arguments, for the caller who asked, once, until it expires."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.actors import Caller, actor_name, stored_user
from audit.choices import EventType
from audit.services import record_event
from calls import lifecycle
from calls.hashing import arguments_hash
from calls.models import Approval, ApprovalStatus
from catalog.models import Tool
from telemetry import tracing


class ApprovalRefused(Exception):
    """The approval does not cover this call; ``denied`` when a person said no."""

    def __init__(self, reason: str, *, denied: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.denied = denied


def approval_ttl() -> timedelta:
    return timedelta(
        seconds=int(getattr(settings, "QUIVER_APPROVAL_TTL_SECONDS", 3600))
    )


@tracing.traced("quiver.call.approval", **{"quiver.approval.step": "request"})
def request_approval(
    *,
    tool: Tool,
    arguments: dict[str, Any],
    caller: Caller,
    selection_id: uuid.UUID | None,
    request_id: uuid.UUID | None,
) -> Approval:
    """A pending approval for this exact call, and its ``approval`` audit event,
    in one transaction (the caller's, when it has one)."""
    with transaction.atomic():
        approval = Approval(
            catalog=tool.catalog,
            tool=tool,
            tool_name=tool.name,
            tool_version=tool.version,
            arguments=arguments,
            arguments_hash=arguments_hash(arguments),
            requested_by=stored_user(caller),
            requester_name=actor_name(caller),
            selection_id=selection_id,
            request_id=request_id,
            expires=timezone.now() + approval_ttl(),
        )
        # Not decided yet; the model leaves these nullable without blank=True.
        approval.full_clean(exclude=["decided_by", "decided", "used", "requested_by"])
        approval.save()
        record_event(
            EventType.APPROVAL,
            actor=caller,
            request_id=request_id,
            catalog_slug=tool.catalog.slug,
            catalog_version=tool.catalog.version,
            summary=f"{tool.name} approval requested",
            input=_approval_input(approval),
            output={"status": "requested", "reason": ""},
        )
        lifecycle.announce(approval, lifecycle.REQUESTED)
    tracing.annotate(**{"quiver.approval_id": str(approval.id)})
    return approval


@tracing.traced("quiver.call.approval", **{"quiver.approval.step": "use"})
def use_approval(
    approval_id: uuid.UUID | str,
    *,
    tool: Tool,
    arguments: dict[str, Any],
    caller: Caller,
) -> Approval:
    """Spend the approval on this call (``USED``), locking its row; raises
    ``ApprovalRefused`` naming the rule it breaks. Run it in the transaction
    that records the call's start (calls.attempts.claim), with ``record_use``,
    so the use, its event and the start commit together, before the upstream is
    contacted: a second call with it waits on the lock, then finds it used."""
    try:
        key = uuid.UUID(str(approval_id))
    except ValueError as exc:
        raise ApprovalRefused("approval_id: not an approval id") from exc
    tracing.annotate(**{"quiver.approval_id": str(key)})
    approval = (
        Approval.objects.select_for_update()
        .filter(pk=key, catalog=tool.catalog)
        .first()
    )
    owner = getattr(stored_user(caller), "pk", None)
    # By id only; no caller (None) matches a requester that is gone (None).
    if approval is None or owner is None or approval.requested_by_id != owner:
        # Another caller's approval is as unknown as a made-up id.
        raise ApprovalRefused(f"approval_id: no approval {str(key)!r} for this caller")
    _check(approval, tool, arguments)
    approval.catalog = tool.catalog  # the same row, already read
    approval.status = ApprovalStatus.USED
    approval.used = timezone.now()
    approval.save(update_fields=["status", "used"])
    return approval


def record_use(
    approval: Approval, *, caller: Caller, request_id: uuid.UUID | None, call_id: int
) -> None:
    """The ``approval`` event of its use (status ``used``) by the call
    ``call_id``, in the caller's transaction (the one that marked it used), and
    its announcement (``approval.used``) once that claim commits, before the
    upstream is contacted."""
    record_event(
        EventType.APPROVAL,
        actor=caller,
        request_id=request_id,
        catalog_slug=approval.catalog.slug,
        catalog_version=approval.catalog.version,
        summary=f"{approval.tool_name} used",
        input={**_approval_input(approval), "requester": approval.requester_name},
        output={"status": ApprovalStatus.USED.value, "reason": "", "call_id": call_id},
    )
    lifecycle.announce(approval, lifecycle.USED)


def _check(approval: Approval, tool: Tool, arguments: dict[str, Any]) -> None:
    if approval.status == ApprovalStatus.DENIED:
        why = f": {approval.reason}" if approval.reason else ""
        raise ApprovalRefused(f"approval_id: denied by a person{why}", denied=True)
    if approval.status == ApprovalStatus.PENDING:
        raise ApprovalRefused("approval_id: still waiting for a person")
    if approval.status == ApprovalStatus.USED:
        raise ApprovalRefused("approval_id: already used; an approval covers one call")
    if approval.status == ApprovalStatus.EXPIRED or approval.expires <= timezone.now():
        raise ApprovalRefused("approval_id: expired; ask again")
    if approval.tool_id != tool.pk:
        raise ApprovalRefused(
            f"approval_id: covers {approval.tool_name!r}, not this tool"
        )
    if approval.tool_version != tool.version:
        raise ApprovalRefused(
            f"approval_id: covers version {approval.tool_version} of "
            f"{tool.name!r}, which is now at version {tool.version}; ask again"
        )
    if approval.arguments_hash != arguments_hash(arguments):
        raise ApprovalRefused("approval_id: covers other arguments; ask again")


def _approval_input(approval: Approval) -> dict[str, Any]:
    return {
        "approval_id": str(approval.id),
        "tool": approval.tool_name,
        "tool_version": approval.tool_version,
        "arguments_hash": approval.arguments_hash,
        "selection_id": str(approval.selection_id) if approval.selection_id else None,
        "expires": approval.expires.isoformat(),
    }
