"""A person's side of an approval: approve it, deny it, or let it expire.

Each decision is taken only from ``pending``, on the row locked (``SELECT ... FOR
UPDATE``), so two people deciding at once get one decision and one 409 naming
``status``. Each writes one ``approval`` audit event (output ``{"status",
"reason"}``) in the same transaction as the change. An approval keeps the expiry
it was given when it was requested: approving it late does not lengthen it.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.actors import Actor, actor_name, stored_user
from audit.choices import EventType
from audit.services import record_event
from calls import lifecycle
from calls.models import Approval, ApprovalStatus
from config.exceptions import Conflict
from identity.access import approval_decision_problem

MAX_REASON = 2000
EXPIRY_BATCH = 500


class DecisionRefused(PermissionDenied):
    """A 403 naming the rule that keeps this person from deciding."""


def approve(
    approval: Approval,
    *,
    person: Any,
    reason: str = "",
    request_id: uuid.UUID | None = None,
) -> Approval:
    """Approve a pending call: the agent may now re-send exactly that call, once,
    until the approval's original expiry."""
    _may_decide(approval, person)
    text = _reason(reason)
    return _decide(approval, ApprovalStatus.APPROVED, person, text, request_id)


def deny(
    approval: Approval,
    *,
    person: Any,
    reason: str,
    request_id: uuid.UUID | None = None,
) -> Approval:
    """Deny a pending call; it never runs. A denial always says why."""
    _may_decide(approval, person)
    text = _reason(reason)
    if not text:
        raise ValidationError({"reason": "a denial needs a reason"})
    return _decide(approval, ApprovalStatus.DENIED, person, text, request_id)


def _may_decide(approval: Approval, person: Any) -> None:
    """Who decides is checked before what they send (identity.access's rule)."""
    problem = approval_decision_problem(person, approval)
    if problem:
        raise DecisionRefused(problem)


def _reason(reason: Any) -> str:
    if not isinstance(reason, str):
        raise ValidationError({"reason": "must be text"})
    text = reason.strip()
    if len(text) > MAX_REASON:
        raise ValidationError({"reason": f"at most {MAX_REASON} characters"})
    return text


def _decide(
    approval: Approval,
    status: ApprovalStatus,
    person: Any,
    reason: str,
    request_id: uuid.UUID | None,
) -> Approval:
    with transaction.atomic():
        # Lock the approval only, not the catalog row the join reads.
        locked = Approval.objects.select_for_update(of=("self",))
        locked = locked.select_related("catalog")
        row = locked.get(pk=approval.pk)
        _must_be_pending(row)
        now = timezone.now()
        if row.expires > now:
            row.status, row.reason, row.decided = status, reason, now
            row.decided_by = stored_user(person)
            row.decider_name = actor_name(person)
            row.full_clean()
            fields = ["status", "reason", "decided", "decided_by", "decider_name"]
            row.save(update_fields=fields)
            _record(row, actor=person, reason=reason, request_id=request_id)
            lifecycle.announce(row, lifecycle.DECIDED)
            return row
        _expire(row, now)
    # The expiry is committed; the decision that came too late is a conflict.
    expired = row.expires.isoformat(timespec="seconds")
    raise Conflict("status", f"status: the approval expired at {expired}")


def _must_be_pending(row: Approval) -> None:
    if row.status != ApprovalStatus.PENDING:
        raise Conflict(
            "status", f"status: the approval is already {row.status}, not pending"
        )


def _expire(row: Approval, now: Any) -> None:
    row.status, row.decided = ApprovalStatus.EXPIRED, now
    row.save(update_fields=["status", "decided"])
    _record(row, actor=None, reason="not decided before it expired", request_id=None)
    lifecycle.announce(row, lifecycle.DECIDED)


def _record(
    row: Approval, *, actor: Actor, reason: str, request_id: uuid.UUID | None
) -> None:
    record_event(
        EventType.APPROVAL,
        actor=actor,
        request_id=request_id or row.request_id,
        catalog_slug=row.catalog.slug,
        catalog_version=row.catalog.version,
        summary=f"{row.tool_name} {row.status}",
        input={
            "approval_id": str(row.pk),
            "tool": row.tool_name,
            "tool_version": row.tool_version,
            "arguments_hash": row.arguments_hash,
            "requester": row.requester_name,
            "selection_id": str(row.selection_id) if row.selection_id else None,
        },
        output={"status": str(row.status), "reason": reason},
    )


def expire_due(now: Any = None) -> int:
    """Expire every pending approval past its expiry; returns how many. Safe to
    run anywhere at once: each batch skips rows another run holds."""
    now = now or timezone.now()
    total = 0
    while True:
        with transaction.atomic():
            rows = list(
                Approval.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("catalog")
                .filter(status=ApprovalStatus.PENDING, expires__lte=now)
                .order_by("expires")[:EXPIRY_BATCH]
            )
            for row in rows:
                _expire(row, now)
        total += len(rows)
        if len(rows) < EXPIRY_BATCH:
            return total
