"""An approval's lifecycle, told to whoever listens once it is committed.

Every step of an approval (asked for, approved, denied, expired, used) calls
``announce`` inside the transaction that makes the step. ``announce`` takes a
snapshot of the approval as the step left it and hands it to each listener with
``transaction.on_commit``: a step that rolls back tells nobody, and a listener
that fails is logged (``robust``) without touching the committed step or the
caller's answer. The calls app knows nothing of its listeners: an app that wants
the news registers a function in its ``AppConfig.ready`` (notify does: webhooks
and email), as learning registers its rules with selection.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from calls.models import Approval, ApprovalStatus

REQUESTED = "approval.requested"
DECIDED = "approval.decided"
USED = "approval.used"
EVENT_TYPES = (REQUESTED, DECIDED, USED)


@dataclass(frozen=True)
class ApprovalEvent:
    """One step of one approval, as it stood when the step was made."""

    type: str
    at: datetime
    approval_id: uuid.UUID
    catalog_id: int
    catalog: str
    status: str
    tool: str
    tool_version: int
    arguments: Any
    arguments_hash: str
    requester: str
    requested_by_id: int | None
    selection_id: uuid.UUID | None
    requested: datetime | None
    expires: datetime
    decider: str
    reason: str
    decided: datetime | None
    used: datetime | None


Listener = Callable[[ApprovalEvent], object]
_listeners: list[Listener] = []


def listen(listener: Listener) -> None:
    """Call ``listener`` after each committed step (once, however often asked)."""
    if listener not in _listeners:
        _listeners.append(listener)


def announce(approval: Approval, event_type: str) -> None:
    """Tell every listener of this step once the current transaction commits
    (at once outside one). ``approval.catalog`` should already be loaded."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"event_type: one of {', '.join(EVENT_TYPES)}")
    if not _listeners:
        return
    event = snapshot(approval, event_type)
    for listener in list(_listeners):
        transaction.on_commit(_telling(listener, event), robust=True)


def _telling(listener: Listener, event: ApprovalEvent) -> Callable[[], None]:
    """``listener(event)`` as a function of its own (Django names a robust
    callback that fails by its ``__qualname__``)."""

    def tell() -> None:
        listener(event)

    tell.__qualname__ = (
        f"approval event to {getattr(listener, '__qualname__', listener)}"
    )
    return tell


def snapshot(approval: Approval, event_type: str) -> ApprovalEvent:
    """The approval as this step left it (a copy: later steps change the row)."""
    status = str(approval.status)
    if status == ApprovalStatus.PENDING and event_type == DECIDED:
        raise ValueError("status: a decided approval is not pending")
    return ApprovalEvent(
        type=event_type,
        at=timezone.now(),
        approval_id=approval.pk,
        catalog_id=approval.catalog_id,
        catalog=approval.catalog.slug,
        status=status,
        tool=approval.tool_name,
        tool_version=approval.tool_version,
        arguments=copy.deepcopy(approval.arguments),
        arguments_hash=approval.arguments_hash,
        requester=approval.requester_name,
        requested_by_id=approval.requested_by_id,
        selection_id=approval.selection_id,
        requested=approval.created,
        expires=approval.expires,
        decider=approval.decider_name,
        reason=approval.reason,
        decided=approval.decided,
        used=approval.used,
    )
