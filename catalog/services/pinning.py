"""Deciding a review: approve a change or a new tool, allow a flagged definition
with a reason, or refuse either.

``approve_change`` puts a proposed definition or a new tool in service,
``allow_flagged`` does the same for a flagged definition with the curator's reason
(its hash remembered, so it is not held again), ``refuse_change`` drops a change or
disables a new or flagged tool. Each decision is taken only from ``pending`` on the
locked review row (two curators at once: one decision, one 409) and is one
``tool_review`` audit event in the transaction that changes the tool.
The rules: docs/how-to/review-tool-changes.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from audit.actors import Actor, Caller, actor_name, stored_user
from catalog.choices import ReviewKind, ReviewState, ToolStatus
from catalog.models import Tool, ToolReview
from catalog.services import holds
from catalog.services.tools import clean_reason, update_tool
from catalog.spec import ToolSpec
from config.exceptions import Conflict
from identity.access import access_for

DECIDERS = "permission: reviews are decided by the catalog's curators and admins"
READERS = (
    "permission: reviews are read by the catalog's curators, compliance and "
    "admins (they show definitions an agent may never be offered)"
)
# How a proposer's approved change becomes the tool's spec, by origin prefix
# (``source`` for ``source:<name>``): the review, the tool (locked), the actor,
# the request id -> the spec to write.
Applier = Callable[[ToolReview, Tool, Actor, "uuid.UUID | None"], ToolSpec]
_appliers: dict[str, Applier] = {}


def register_applier(prefix: str, applier: Applier) -> None:
    """A proposer of ``change`` reviews registers, at start-up, how an approved
    one is applied (a source's sync: the upstream definition over the tool)."""
    _appliers[prefix] = applier


def get_review_for_user(user: Caller, review_id: int) -> ToolReview:
    """The review if the caller may read its catalog's reviews, else 404 (one
    answer for a review that does not exist and one it may not read)."""
    review = (
        ToolReview.objects.visible_to(user)
        .select_related("catalog", "tool")
        .filter(pk=review_id)
        .first()
        if 0 < review_id < 2**63
        else None
    )
    if review is None:
        raise Http404(f"review: no review {review_id}")
    return review


def approve_change(
    review: ToolReview,
    *,
    actor: Actor,
    reason: str = "",
    request_id: uuid.UUID | None = None,
) -> ToolReview:
    """Accept the reviewed definition (not one screening flagged)."""
    return _decide(review, ReviewState.APPROVED, actor, reason, request_id)


def allow_flagged(
    review: ToolReview,
    *,
    actor: Actor,
    reason: str,
    request_id: uuid.UUID | None = None,
) -> ToolReview:
    """Accept a definition screening flagged; the reason is required."""
    return _decide(review, ReviewState.ALLOWED, actor, reason, request_id)


def refuse_change(
    review: ToolReview,
    *,
    actor: Actor,
    reason: str,
    request_id: uuid.UUID | None = None,
) -> ToolReview:
    """Refuse the reviewed definition; the reason is required."""
    return _decide(review, ReviewState.REFUSED, actor, reason, request_id)


def _decide(
    review: ToolReview,
    state: str,
    actor: Actor,
    reason: Any,
    request_id: uuid.UUID | None,
) -> ToolReview:
    access = access_for(actor)
    if not (access.can_write and access.may_see_catalog(review.catalog.slug)):
        raise PermissionDenied(DECIDERS)
    text = clean_reason(reason)
    if state != ReviewState.APPROVED and not text:
        raise ValidationError({"reason": ["reason: required to allow or refuse"]})
    with transaction.atomic():
        locked = ToolReview.objects.select_for_update(of=("self",))
        row = locked.select_related("catalog").get(pk=review.pk)
        _may_take(row, state)
        tools = Tool.objects.select_for_update()
        tool = tools.filter(pk=row.tool_id).first() if row.tool_id else None
        if tool is None:
            raise Conflict("state", "state: the tool was deleted")
        row.state, row.reason, row.decided = state, text, timezone.now()
        row.decided_by, row.decider_name = stored_user(actor), actor_name(actor)
        row.save(
            update_fields=["state", "reason", "decided", "decided_by", "decider_name"]
        )
        holds.record_review(row, str(state), actor, request_id)
        _apply(row, tool, actor, request_id)
    return row


def _may_take(row: ToolReview, state: str) -> None:
    if row.state != ReviewState.PENDING:
        raise Conflict("state", f"state: the review is already {row.state}")
    rules = sorted({finding["rule"] for finding in row.findings})
    if state == ReviewState.APPROVED and rules:
        raise ValidationError(
            {
                "state": [
                    f"state: screening flagged this definition ({', '.join(rules)}); "
                    "allow it with a reason instead of approving it"
                ]
            }
        )
    if state == ReviewState.ALLOWED and not rules:
        raise ValidationError(
            {"state": ["state: screening flagged nothing here; approve it instead"]}
        )


def _apply(
    row: ToolReview, tool: Tool, actor: Actor, request_id: uuid.UUID | None
) -> None:
    """What the decision does to the tool (see the module's docstring)."""
    why = f"review {row.pk} {row.state}"
    if row.state == ReviewState.REFUSED:
        back = None if row.kind == ReviewKind.CHANGE else ToolStatus.DISABLED
        holds.release(tool, row, actor=actor, request_id=request_id, status=back)
        return
    if row.kind == ReviewKind.CHANGE:
        prefix = row.origin.partition(":")[0]
        applier = _appliers.get(prefix)
        if applier is None:
            raise Conflict("state", f"state: nothing applies changes from {prefix!r}")
        spec = applier(row, tool, actor, request_id)
        tool = (
            update_tool(tool, spec, actor=actor, request_id=request_id, reason=why).tool
            or tool
        )
    holds.release(tool, row, actor=actor, request_id=request_id)
